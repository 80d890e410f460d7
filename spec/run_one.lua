-- spec/run_one.lua — runs one spec file with luaunit on the device named by
-- NETCL_TEST_DEVICE and prints its failures, one line per skipped test
-- ("netcl-skip NAME<tab>REASON"), then "N passed, N failed, N skipped".
-- spec/run.lua reads those lines; a skip must give a reason, and one that
-- gives none counts as a failure.
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. root .. "/spec/?.lua;" .. package.path
package.cpath = root .. "/build/?.so;" .. package.cpath

local lu = require("luaunit")
local file = assert(arg[1], "usage: run_one.lua spec_file")
local chunk = assert(loadfile(file))
chunk()

local runner = lu.LuaUnit.new()
runner:setOutputType("text")
runner.verbosity = lu.VERBOSITY_QUIET
local ok, err = pcall(runner.runSuite, runner, "--quiet")
if not ok then print("runner error: " .. tostring(err)) end
local r = runner.result
-- program-cache figures for the runner's summary (a warm second run compiles 0)
local okn, netcl = pcall(require, "netcl")
if okn then
  local st = netcl.runtime_stats()
  print(("netcl-stats compiled=%d loaded=%d"):format(st.programs_compiled, st.programs_loaded))
end
local failed = (r.failureCount or 0) + (r.errorCount or 0) + (ok and 0 or 1)
local skipped = 0
for _, node in ipairs(r.skippedTests or {}) do
  local why = tostring(node.msg or ""):gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")
  if why == "" then
    print(("FAIL: %s was skipped without a reason (lu.skip/skipIf must say why)"):format(node.testName))
    failed = failed + 1
  else
    print(("netcl-skip %s\t%s"):format(node.testName, why))
    skipped = skipped + 1
  end
end
print(("%d passed, %d failed, %d skipped"):format(r.successCount or 0, failed, skipped))
os.exit(failed == 0 and 0 or 1, true)
