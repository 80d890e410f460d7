-- spec/opgrad_spec.lua — the gradient check (float64, cpu, central
-- differences) of every differentiable case in spec/opinfo.lua; each one
-- counts towards the op table's coverage.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local info = require("opinfo")

TestOpGrad = {}

function TestOpGrad:setUp() lu.skipIf(not H.is_cpu, "gradchecks run on the cpu backend in float64") end

local env = { device = "cpu", dtype = "float64" }
function env.tensor(v, dtype) return netcl.tensor(v, { device = "cpu", dtype = dtype }) end

for i, c in ipairs(info.cases) do
  if c.grad ~= false then
    local label = (c.label or (type(c.op) == "table" and c.op[1] or c.op)) .. "_" .. i
    TestOpGrad["test_" .. label] = function()
      local inputs = {}
      for k, mk in ipairs(c.inputs) do inputs[k] = mk(env, 1000 * i + k):detach():requires_grad_() end
      local fn = function(...)
        local args = { ... }
        args[#c.inputs + 1] = env
        return c.fn(unpack(args, 1, #c.inputs + 1))
      end
      H.gradcheck(c.op, fn, inputs, c.gtol)
    end
  end
end
