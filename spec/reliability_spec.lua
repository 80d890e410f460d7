-- spec/reliability_spec.lua — defects that once crashed the process, each
-- run in a child so a regression is a failed test, not a lost run
-- (docs/reliability.md), and silent wrong results once found, each with
-- the rule it now follows.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl

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

-- silent wrong results: clamp with the lower bound above the upper is the
-- upper everywhere (PyTorch's max-then-min), NaN passes, integers alike
function TestReliability:test_clamp_bounds_crossed()
  local x = netcl.tensor({ 1, 5, 9, 0 / 0 }, { device = H.device })
  local y = x:clamp(8, 2):totable()
  lu.assertEquals({ y[1], y[2], y[3] }, { 2, 2, 2 })
  lu.assertTrue(y[4] ~= y[4], "NaN stays NaN")
  lu.assertEquals(netcl.tensor({ 1, 5, 9 }, { device = H.device, dtype = "int32" }):clamp(8, 2):totable(), { 2, 2, 2 })
  lu.assertEquals(x:clamp(2, 8):totable()[2], 5)
end
