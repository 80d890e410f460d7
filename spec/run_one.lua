-- spec/run_one.lua — runs one spec file with luaunit on the device named by
-- NETCL_TEST_DEVICE and prints its failures, then "N passed, N failed".
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
print(("%d passed, %d failed"):format(r.successCount or 0, failed))
os.exit(failed == 0 and 0 or 1, true)
