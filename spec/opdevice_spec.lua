-- spec/opdevice_spec.lua — every case of spec/opinfo.lua on the device
-- under test against the cpu: the forward result and, for differentiable
-- cases, the gradients of sum(out * w) for a fixed random w.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local info = require("opinfo")

TestOpDevice = {}

function TestOpDevice:setUp() lu.skipIf(H.is_cpu, "the cpu is the reference these cases are compared against") end

for i, c in ipairs(info.cases) do
  local label = (c.label or (type(c.op) == "table" and c.op[1] or c.op)) .. "_" .. i
  TestOpDevice["test_" .. label] = function()
    H.device_check(c.op, function(d)
      local env = { device = d, dtype = "float32" }
      function env.tensor(v, dtype) return netcl.tensor(v, { device = d, dtype = dtype }) end
      local inputs = {}
      for k, mk in ipairs(c.inputs) do
        inputs[k] = mk(env, 1000 * i + k):detach()
        if c.grad ~= false then inputs[k]:requires_grad_() end
      end
      inputs[#c.inputs + 1] = env
      local out = c.fn(unpack(inputs, 1, #c.inputs + 1))
      if c.grad == false then return out end
      netcl.manual_seed(7)
      local w = netcl.randn(out:size(), { device = d, dtype = out.dtype })
      ;(out * w):sum():backward()
      local results = { out:detach() }
      for k = 1, #c.inputs do results[#results + 1] = inputs[k].grad end
      return unpack(results)
    end, c.rtol, c.atol)
  end
end
