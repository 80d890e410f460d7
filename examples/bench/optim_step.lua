-- examples/bench/optim_step.lua — time of one optimizer step on a
-- LeNet-5-sized parameter set (10 tensors, 61,706 floats): netcl's fused
-- flat-buffer Adam and SGD-momentum (one kernel per step) against the
-- same Adam written per parameter with tensor ops (about ten kernels per
-- tensor), on one device. Prints microseconds per step (median of runs).
--   netcl examples/bench/optim_step.lua [--device NAME] [--steps N]
local netcl = require("netcl")
local opts = { device = nil, steps = 200 }
local i = 1
while arg and arg[i] do
  local key = arg[i]:match("^%-%-(.+)$")
  if not key then error("unknown argument " .. arg[i]) end
  opts[key] = tonumber(arg[i + 1]) or arg[i + 1]
  i = i + 2
end
local dev = netcl.device(opts.device).name

local ffi = require("ffi")
pcall(ffi.cdef, "struct netcl_ts { long tv_sec; long tv_nsec; }; int clock_gettime(int, struct netcl_ts *);")
local ts = ffi.new("struct netcl_ts")
local function now() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end

local SHAPES = { { 6, 1, 5, 5 }, { 6 }, { 16, 6, 5, 5 }, { 16 }, { 120, 400 }, { 120 }, { 84, 120 }, { 84 }, { 10, 84 }, { 10 } }
local function make_params()
  netcl.manual_seed(1)
  local ps = {}
  for k, s in ipairs(SHAPES) do
    ps[k] = netcl.randn(s, { device = dev }):requires_grad_()
    ps[k].grad = netcl.randn(s, { device = dev }) * 0.01
  end
  return ps
end

-- median microseconds per call of fn over `n` calls, in 5 rounds
local function time_us(fn, n)
  fn(); netcl.synchronize(dev)
  local rounds = {}
  for r = 1, 5 do
    local t0 = now()
    for _ = 1, n do fn() end
    netcl.synchronize(dev)
    rounds[r] = (now() - t0) / n * 1e6
  end
  table.sort(rounds)
  return rounds[3]
end

local function unfused_adam(ps)
  local m, v, t = {}, {}, 0
  for k, p in ipairs(ps) do m[k], v[k] = netcl.zeros_like(p), netcl.zeros_like(p) end
  return function()
    t = t + 1
    netcl.no_grad(function()
      for k, p in ipairs(ps) do
        local g = p.grad
        m[k]:mul_(0.9):add_(g * 0.1)
        v[k]:mul_(0.999):add_(g:square() * 0.001)
        local denom = (v[k] / (1 - 0.999 ^ t)):sqrt():add_(1e-8)
        p:sub_(m[k] / denom * (1e-3 / (1 - 0.9 ^ t)))
      end
    end)
  end
end

local n = opts.steps
local launches0 = netcl.runtime_stats().kernels_launched
local adam = netcl.optim.Adam(make_params(), { lr = 1e-3 })
local t_adam = time_us(function() adam:step() end, n)
local sgd = netcl.optim.SGD(make_params(), { lr = 0.01, momentum = 0.9 })
local t_sgd = time_us(function() sgd:step() end, n)
local t_zero = time_us(function() sgd:zero_grad() end, n)
local t_ref = time_us(unfused_adam(make_params()), n)
print(("device %s, %d tensors, 61706 parameters, %d steps x 5 rounds"):format(dev, #SHAPES, n))
print(("  Adam, fused flat buffer      %8.1f us/step"):format(t_adam))
print(("  SGD momentum, fused          %8.1f us/step"):format(t_sgd))
print(("  zero_grad (one fill)         %8.1f us/call"):format(t_zero))
print(("  Adam, per-tensor tensor ops  %8.1f us/step  (fused is %.1fx faster)"):format(t_ref, t_ref / t_adam))
if netcl.runtime_stats().kernels_launched > launches0 then
  print(("  OpenCL launches in this run: %d"):format(netcl.runtime_stats().kernels_launched - launches0))
end
