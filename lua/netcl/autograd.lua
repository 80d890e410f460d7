-- netcl/autograd.lua — the explicit autograd forms on top of the C engine:
-- Tape (record a function, then backward) and gradcheck (finite
-- differences against backward, for tests and for users' own ops).
local ffi = require("ffi")
local tensor = require("netcl.tensor")
local netcl = require("netcl.core")
local lib = require("netcl.lib")
local lifetime = require("netcl.lifetime")
local C, throw = lib.C, lib.throw

local M = {}

-- ---- Function: an op with a backward of its own ------------------------------------
-- Function{name=, forward=function(ctx, ...) -> tensor, backward=function(ctx,
-- grad) -> one gradient per tensor argument (nil: none)}: calling it runs
-- forward without recording (any ops, or a user's kernel: netcl.kernel)
-- and records one node whose backward calls `backward`. ctx is a table
-- for what backward needs (ctx.saved = {...}, sizes, ...).
local fn_state, fn_key = {}, 0
local dead_buf = ffi.new("void *[64]")

-- states of nodes that died since: dropped here, outside any finalizer
local function drain_dead()
  while true do
    local n = C.netcl_autograd_function_dead(dead_buf, 64)
    for i = 0, n - 1 do fn_state[tonumber(ffi.cast("intptr_t", dead_buf[i]))] = nil end
    if n < 64 then return end
  end
end

local fn_dispatch = ffi.cast("netcl_backward_callback", function(ctx, g, nin, grads)
  local st = fn_state[tonumber(ffi.cast("intptr_t", ctx))]
  if not st then return 1 end
  C.netcl_tensor_retain(g)
  local res = { pcall(st.def.backward, st.ctx, tensor.wrap(g)) }
  if not res[1] then tensor.note_backward_error(tostring(res[2])); return 1 end
  for i = 1, nin do
    local r = res[i + 1]
    if r ~= nil then
      if not tensor.is_tensor(r) then
        tensor.note_backward_error(("%s: backward returned a %s as gradient %d; gradients are tensors or nil"):format(
          st.def.name or "Function", type(r), i))
        return 1
      end
      C.netcl_tensor_retain(tensor.handle(r))
      grads[i - 1] = tensor.handle(r)
    end
  end
  return 0
end)

-- how many Function calls still hold state (their nodes alive): a diagnostic
function M.live_function_states()
  drain_dead()
  local n = 0
  for _ in pairs(fn_state) do n = n + 1 end
  return n
end

local Function = {}
Function.__index = Function

function M.Function(def)
  if type(def) ~= "table" or type(def.forward) ~= "function" or type(def.backward) ~= "function" then
    throw("autograd.Function: expects {forward = function(ctx, ...), backward = function(ctx, grad)}", 2)
  end
  return setmetatable({ def = def, name = def.name or "Function" }, Function)
end

Function.__call = function(self, ...)
  drain_dead()
  local args = { n = select("#", ...), ... }
  local ctx = {}
  local out = tensor.with_grad_mode(false, self.def.forward, ctx, unpack(args, 1, args.n))
  lifetime.keep_within(ctx, 3)   -- what backward reads outlives the module call that made it
  if not tensor.is_tensor(out) then throw(("%s: forward must return a tensor, got %s"):format(self.name, type(out)), 2) end
  local ins = {}
  for i = 1, args.n do if tensor.is_tensor(args[i]) then ins[#ins + 1] = args[i] end end
  local hs = ffi.new("netcl_tensor *[?]", math.max(#ins, 1))
  for i, t in ipairs(ins) do hs[i - 1] = tensor.handle(t) end
  fn_key = fn_key + 1
  fn_state[fn_key] = { def = self.def, ctx = ctx }
  return tensor.call1(C.netcl_autograd_function, tensor.handle(out), #ins, hs, self.name, fn_dispatch,
    ffi.cast("void *", fn_key))
end

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
