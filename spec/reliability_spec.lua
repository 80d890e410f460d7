-- spec/reliability_spec.lua — defects that once crashed the process, each
-- run in a child so a regression is a failed test, not a lost run
-- (docs/reliability.md).
local lu = require("luaunit")
local H = require("helper")

TestReliability = {}

-- An out-of-memory error retries once after a full collection; an input
-- that is an unreferenced temporary (its Lua box garbage) must survive the
-- collection: the retry holds a reference to every argument.
function TestReliability:test_oom_retry_keeps_temporary_inputs()
  local dev = H.device
  local big = "2^40"   -- 4 TiB of float32: more than any device holds
  local cases = {
    ("netcl.ones(1, {device = %q}):expand(%s):contiguous()"):format(dev, big),
    ("netcl.ones(1, {device = %q}):expand(%s):exp()"):format(dev, big),
    ("netcl.ones(1, 1, {device = %q}):expand(2^20, %s / 2^20):add(1)"):format(dev, big),
    ("netcl.ones(2, {device = %q})['repeat'](netcl.ones(2, {device = %q}), %s)"):format(dev, dev, big),
    ("netcl.nn.functional.pad(netcl.ones(1, 1, 1, 1, {device = %q}):expand(1, 1, 2^20, %s / 2^20), {1, 1, 1, 1})")
      :format(dev, big),
  }
  for _, expr in ipairs(cases) do
    local code = ("local netcl = require('netcl'); local ok, err = pcall(function() return %s end); "
      .. "io.write(ok and 'no error' or tostring(err))"):format(expr)
    local out, exit = H.run_lua(code)
    lu.assertEquals(exit, 0, expr .. ": the child died: " .. out)
    lu.assertStrContains(out, "out of memory", false, expr)
  end
end
