-- netcl/autograd.lua — the explicit autograd forms on top of the C engine:
-- Tape (record a function, then backward) and gradcheck (finite
-- differences against backward, for tests and for users' own ops).
local tensor = require("netcl.tensor")
local netcl = require("netcl.core")

local M = {}

local Tape = {}
Tape.__index = Tape

-- Runs fn(...) with grad mode set to `enabled`, restoring it afterwards,
-- also when fn raises.
M.with_grad_mode = tensor.with_grad_mode

-- A tape records with grad mode on, whatever the surrounding mode is.
function M.Tape() return setmetatable({}, Tape) end

function Tape:record(fn, ...) return M.with_grad_mode(true, fn, ...) end

function Tape:backward(loss, grad, retain_graph)
  loss:backward(grad, retain_graph)
end

-- Linear index i (1-based, row-major) -> a slice spec selecting that element.
local function element_spec(sizes, i)
  local spec, rest = {}, i - 1
  for d = #sizes, 1, -1 do
    spec[d] = rest % sizes[d] + 1
    rest = math.floor(rest / sizes[d])
  end
  return spec
end

-- Compares backward's gradients of sum(fn(inputs...) * w) (w a fixed random
-- weight, so every output element matters) with central differences.
-- inputs: tensors that require grad (float64 recommended; any strides).
-- Returns true, or false and a message naming the input, element and both
-- values.
function M.gradcheck(fn, inputs, opts)
  opts = opts or {}
  local eps, atol, rtol = opts.eps or 1e-6, opts.atol or 1e-5, opts.rtol or 1e-3
  local out = fn(unpack(inputs))
  local w = netcl.rand_like(out, { requires_grad = false }) + 0.5
  local function objective()
    return netcl.no_grad(function() return (fn(unpack(inputs)) * w):sum():item() end)
  end
  for _, x in ipairs(inputs) do x.grad = nil end
  ;(out * w):sum():backward()
  for k, x in ipairs(inputs) do
    local analytic = x.grad and x.grad:contiguous():view(-1):totable() or {}
    local sizes = x:size()
    for i = 1, x:numel() do
      local spec = element_spec(sizes, i)
      local v = x[spec]:item()
      netcl.no_grad(function() x[spec] = v + eps end)
      local hi = objective()
      netcl.no_grad(function() x[spec] = v - eps end)
      local lo = objective()
      netcl.no_grad(function() x[spec] = v end)
      local num, ana = (hi - lo) / (2 * eps), analytic[i] or 0
      if math.abs(num - ana) > atol + rtol * math.abs(num) then
        return false, ("gradcheck: input %d element %d: backward %.10g, finite difference %.10g"):format(k, i, ana, num)
      end
    end
  end
  return true
end

return M
