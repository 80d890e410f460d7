-- spec/amp_spec.lua — mixed precision (lua/netcl/amp.lua, src/autograd/
-- autocast.c): the policy table of docs/amp.md enforced op by op in both
-- 16-bit dtypes, regions nesting and closing on error, the state per
-- thread (a C program with two threads), gradients under autocast against
-- float32, the unscale kernel against its reference, the GradScaler's
-- schedule (growth, backoff, skipped steps leaving parameters and state
-- alone, checkpoints), float32 master weights, a compiled step under
-- autocast, and the Fashion-MNIST CNN trained with AMP against float32.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local nn, amp, F = netcl.nn, netcl.amp, netcl.nn.functional
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

local function T(sizes, opts)
  opts = opts or {}
  opts.device = H.device
  return netcl.randn(sizes, opts)
end
local function on(fn, dtype) return amp.autocast(fn, { enabled = true, dtype = dtype or "float16" }) end

TestAmp = {}

-- ---- the policy ------------------------------------------------------------------------
-- each op of the docs' table, called on float32 arguments ("lower") or on
-- 16-bit ones ("float32", "keep")
local function I(n, hi) return netcl.randint(1, hi + 1, { n }, { device = H.device }) end
local CALLS = {
  matmul = function(a) return a(3, 4):matmul(a(4, 5)) end,
  mm = function(a) return netcl.mm(a(3, 4), a(4, 5)) end,
  bmm = function(a) return netcl.bmm(a(2, 3, 4), a(2, 4, 5)) end,
  linear = function(a) return F.linear(a(3, 4), a(5, 4), a(5)) end,
  addmm = function(a) return netcl.addmm(a(3, 5), a(3, 4), a(4, 5)) end,
  conv2d = function(a) return F.conv2d(a(1, 2, 5, 5), a(3, 2, 3, 3), a(3)) end,
  conv1d = function(a) return F.conv1d(a(1, 2, 7), a(3, 2, 3)) end,
  conv_transpose2d = function(a) return F.conv_transpose2d(a(1, 2, 4, 4), a(2, 3, 3, 3)) end,
  softmax = function(a) return a(3, 4):softmax(2) end,
  log_softmax = function(a) return a(3, 4):log_softmax(2) end,
  sum = function(a) return a(3, 4):sum() end,
  mean = function(a) return a(3, 4):mean(2) end,
  prod = function(a) return a(3, 4):prod(1) end,
  var = function(a) return a(3, 4):var() end,
  std = function(a) return a(3, 4):std(2) end,
  norm = function(a) return a(3, 4):norm() end,
  logsumexp = function(a) return a(3, 4):logsumexp(2) end,
  exp = function(a) return a(5):exp() end,
  expm1 = function(a) return a(5):expm1() end,
  log = function(a) return a(5):abs():log() end,
  log1p = function(a) return a(5):abs():log1p() end,
  log2 = function(a) return a(5):abs():log2() end,
  reciprocal = function(a) return a(5):reciprocal() end,
  rsqrt = function(a) return a(5):abs():rsqrt() end,
  pow = function(a) return a(5):abs() ^ a(5) end,
  batch_norm = function(a) return F.batch_norm(a(4, 3), nil, nil, a(3), a(3), true) end,
  layer_norm = function(a) return F.layer_norm(a(2, 6), { 6 }) end,
  group_norm = function(a) return F.group_norm(a(2, 4, 3), 2) end,
  cross_entropy = function(a) return F.cross_entropy(a(4, 3), I(4, 3)) end,
  nll_loss = function(a) return F.nll_loss(a(4, 3), I(4, 3)) end,
  mse_loss = function(a) return F.mse_loss(a(6), a(6)) end,
  l1_loss = function(a) return F.l1_loss(a(6), a(6)) end,
  smooth_l1_loss = function(a) return F.smooth_l1_loss(a(6), a(6)) end,
  huber_loss = function(a) return F.huber_loss(a(6), a(6)) end,
  binary_cross_entropy = function(a) return F.binary_cross_entropy(a(6):sigmoid(), a(6):sigmoid()) end,
  binary_cross_entropy_with_logits = function(a) return F.binary_cross_entropy_with_logits(a(6), a(6):sigmoid()) end,
  kl_div = function(a) return F.kl_div(a(2, 3):log_softmax(2), a(2, 3):softmax(2)) end,
}

local function policy()
  local f = assert(io.open(root .. "/docs/amp.md"))
  local text = f:read("*a")
  f:close()
  local block = assert(text:match("```amp%-policy\n(.-)```"), "docs/amp.md has an amp-policy block")
  local rows = {}
  for kind, names in block:gmatch("(%w+):%s*([^\n]*)") do
    for name in names:gmatch("%S+") do rows[#rows + 1] = { kind = kind, name = name } end
  end
  return rows
end

function TestAmp:test_policy_table_op_by_op()
  local rows = policy()
  lu.assertTrue(#rows > 30, "the policy block lists the ops")
  for _, dt in ipairs({ "float16", "bfloat16" }) do
    for _, row in ipairs(rows) do
      local call = CALLS[row.name]
      lu.assertNotNil(call, "no check for " .. row.name .. " in spec/amp_spec.lua")
      local argdt = row.kind == "lower" and "float32" or dt
      local function a(...) return T({ ... }, { dtype = argdt }) end
      local got = on(function() return call(a) end, dt)
      local want = row.kind == "float32" and "float32" or dt
      lu.assertEquals(got.dtype, want, ("%s under autocast(%s) on %s arguments"):format(row.name, dt, argdt))
      -- outside a region the op keeps its arguments' dtype
      lu.assertEquals(call(a).dtype, argdt, row.name .. " outside autocast")
    end
  end
  -- every other op runs in its arguments' dtype
  local y = on(function() return T({ 4 }, { dtype = "float16" }):relu() + T({ 4 }, { dtype = "float16" }) end)
  lu.assertEquals(y.dtype, "float16")
end

-- a 16-bit batch norm against a float32 one: values, the input's, weight's
-- and bias's gradients at tol, the running statistics at 1e-5
local function bn_close(what, tol, got, want)
  local names = { "values", "input gradient", "weight gradient", "bias gradient", "running mean", "running var" }
  for i, name in ipairs(names) do
    local t = i <= 4 and tol or 1e-5
    H.assert_close(got[i], want[i], t, t, what .. name)
  end
end

-- batch norm keeps a 16-bit input's dtype: its values, running statistics
-- and gradients match a float32 batch norm of the same 16-bit values, and
-- the graph holds the 16-bit input (not a float32 copy)
-- also with a fused relu (ResNet's blocks), whose node saves its 16-bit
-- result too, and with a 16-bit residual added before it
function TestAmp:test_batch_norm_keeps_16_bit_inputs()
  for _, dt in ipairs({ "float16", "bfloat16" }) do
    for _, case in ipairs({ {}, { act = "relu" }, { act = "relu", residual = true } }) do
      local act = case.act
      netcl.manual_seed(5)
      local x0 = T({ 8, 3, 16, 16 }):to(dt):float():requires_grad_()   -- values a 16-bit dtype holds exactly
      local x = x0:to(dt)                                               -- recorded: the graph saves x
      local r0 = case.residual and T({ 8, 3, 16, 16 }):to(dt):float():requires_grad_()
      local w, b = T({ 3 }, { requires_grad = true }), T({ 3 }, { requires_grad = true })
      local rm, rv = netcl.zeros(3, { device = H.device }), netcl.ones(3, { device = H.device })
      local rm2, rv2 = rm:clone(), rv:clone()
      local o = act and { act = act, residual = r0 and r0:to(dt) } or nil
      local saved0 = netcl.memory_stats(H.device).by_owner.saved
      local y = on(function() return F.batch_norm(x, rm, rv, w, b, true, nil, nil, o) end, dt)
      lu.assertEquals(y.dtype, dt)
      local saved, n = netcl.memory_stats(H.device).by_owner.saved - saved0, 8 * 3 * 16 * 16
      local per = act and 4 or 2   -- x (and the relu's result) in 16 bits
      lu.assertTrue(saved >= n * per and saved < n * (per + 2),
        "the graph keeps 16-bit tensors, not a float32 copy: " .. saved .. " bytes saved")
      local g = netcl.randn(y:size(), { device = H.device }):to(dt)
      y:backward(g)
      local xr = x0:detach():clone():requires_grad_()
      local wr, br = w:detach():clone():requires_grad_(), b:detach():clone():requires_grad_()
      local rr = r0 and r0:detach():clone():requires_grad_()
      local yr = F.batch_norm(xr, rm2, rv2, wr, br, true)
      if rr then yr = yr + rr end
      if act then yr = yr:relu() end
      yr:backward(g:float())
      local tol, what = dt == "float16" and 2e-2 or 8e-2, dt .. (act and " relu " or " ") .. (rr and "residual " or "")
      if rr then H.assert_close(r0.grad, rr.grad, tol, tol, what .. "residual gradient") end
      bn_close(what, tol, { y:float(), x0.grad, w.grad, b.grad, rm, rv }, { yr, xr.grad, wr.grad, br.grad, rm2, rv2 })
    end
  end
end

-- the mixed batch norm itself (no autocast): 16-bit data with float32
-- statistics, weight and bias, in training and evaluation, with rows of odd
-- length (scalar kernels) and of a multiple of 4 (vector ones), against a
-- float32 batch norm of the same values; vectors of a third dtype refused
function TestAmp:test_batch_norm_mixed_dtypes()
  for _, dt in ipairs({ "float16", "bfloat16" }) do
    for _, shape in ipairs({ { 4, 3, 5, 3 }, { 4, 3, 4, 4 } }) do
      for _, training in ipairs({ true, false }) do
        netcl.manual_seed(9)
        local x0 = T(shape):to(dt):float()
        local x = x0:to(dt):requires_grad_()
        local w, b = T({ 3 }, { requires_grad = true }), T({ 3 }, { requires_grad = true })
        local rm, rv = T({ 3 }), T({ 3 }):abs() + 0.5
        local rm2, rv2 = rm:clone(), rv:clone()
        local y = F.batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5, { act = "relu" })
        lu.assertEquals(y.dtype, dt)
        local g = T(shape):to(dt)
        y:backward(g)
        local xr = x0:clone():requires_grad_()
        local wr, br = w:detach():clone():requires_grad_(), b:detach():clone():requires_grad_()
        local yr = F.batch_norm(xr, rm2, rv2, wr, br, training, 0.1, 1e-5):relu()
        yr:backward(g:float())
        local tol, what = dt == "float16" and 2e-2 or 8e-2, dt .. " " .. table.concat(shape, "x") .. (training and " train " or " eval ")
        lu.assertEquals(x.grad.dtype, dt)
        lu.assertEquals(w.grad.dtype, "float32")
        bn_close(what, tol, { y:float(), x.grad:float(), w.grad, b.grad, rm, rv }, { yr, xr.grad, wr.grad, br.grad, rm2, rv2 })
      end
    end
  end
  local x = T({ 4, 3, 2, 2 }):to("bfloat16")
  H.assert_error(function() F.batch_norm(x, nil, nil, T({ 3 }, { dtype = "float64" }), nil, true) end,
    "batch_norm: the running statistics, weight and bias must be bfloat16 or float32")
  H.assert_error(function() F.batch_norm(x, nil, nil, T({ 3 }), T({ 3 }):to("bfloat16"), true) end,
    "batch_norm: bias bfloat16[3]")
end

function TestAmp:test_regions_nest_and_close_on_error()
  lu.assertFalse(amp.is_autocast_enabled())
  on(function()
    lu.assertTrue(amp.is_autocast_enabled())
    lu.assertEquals(amp.autocast_dtype(), "float16")
    amp.autocast(function()
      lu.assertFalse(amp.is_autocast_enabled(), "an inner disabled region wins")
      lu.assertEquals(T({ 2, 2 }):matmul(T({ 2, 2 })).dtype, "float32")
    end, { enabled = false })
    on(function() lu.assertEquals(amp.autocast_dtype(), "bfloat16") end, "bfloat16")
    lu.assertEquals(amp.autocast_dtype(), "float16")
  end)
  lu.assertFalse(amp.is_autocast_enabled())
  -- an error inside closes the regions opened inside, even ones opened by hand
  local ok, err = pcall(on, function()
    amp.autocast_begin({ enabled = true })
    error("boom")
  end)
  lu.assertFalse(ok)
  lu.assertStrContains(tostring(err), "boom")
  lu.assertEquals(netcl.C.netcl_autocast_depth(), 0)
  H.assert_error(function() amp.autocast_end() end, "autocast_end", "no autocast region")
  H.assert_error(function() amp.autocast(function() end, { dtype = "float64" }) end, "float16 or bfloat16")
  H.assert_error(function() amp.autocast(function() end, { enabeld = true }) end, "unknown option 'enabeld'")
  lu.assertFalse(amp.supports_fp16("no such device"))
  lu.assertEquals(type(amp.supports_fp16()), "boolean")
end

function TestAmp:test_state_is_per_thread()
  if not H.is_cpu then lu.skip("the thread test is device independent (cpu only)") end
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local src = io.open(dir .. "/threads.c", "w")
  src:write([[
#include "netcl.h"
#include <pthread.h>
#include <stdio.h>
static int seen = -1;
static void *other(void *arg) { (void)arg; seen = netcl_autocast_enabled(); return NULL; }
int main(void)
{
    if (netcl_autocast_begin(1, NETCL_DTYPE_FLOAT16) != NETCL_OK) return 2;
    pthread_t t;
    pthread_create(&t, NULL, other, NULL);
    pthread_join(t, NULL);
    printf("%d %d\n", netcl_autocast_enabled(), seen);
    return netcl_autocast_end() == NETCL_OK ? 0 : 3;
}
]])
  src:close()
  local lib = os.getenv("NETCL_LIB") and os.getenv("NETCL_LIB"):match("^(.*)/[^/]*$") or (root .. "/build")
  local out, code = H.run(("gcc -std=c11 -Wall -Werror -I%s/src %s/threads.c -o %s/threads -L%s -lnetcl -pthread -Wl,-rpath,%s")
    :format(root, dir, dir, lib, lib))
  lu.assertEquals(code, 0, out)
  out, code = H.run(dir .. "/threads")
  os.execute("rm -rf " .. dir)
  lu.assertEquals(code, 0, out)
  lu.assertEquals(out, "1 0\n", "the region is the main thread's alone")
end

-- an MLP's gradients under autocast against float32 (float16 products)
function TestAmp:test_gradients_match_float32()
  netcl.manual_seed(3)
  local model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4)):to(H.device)
  local x, t = T({ 8, 12 }), netcl.randint(1, 5, { 8 }, { device = H.device })
  local function grads(autocast)
    model:zero_grad()
    local loss = amp.autocast(function() return F.cross_entropy(model(x), t) end, { enabled = autocast })
    lu.assertEquals(loss.dtype, "float32")
    loss:backward()
    local g = {}
    for i, p in ipairs(model:parameters()) do
      lu.assertEquals(p.grad.dtype, "float32")
      g[i] = p.grad:clone()
    end
    return g
  end
  local g32, g16 = grads(false), grads(true)
  for i = 1, #g32 do
    local scale = g32[i]:abs():max():item()
    lu.assertTrue((g32[i] - g16[i]):abs():max():item() <= 2e-2 * scale + 1e-4, "parameter " .. i)
  end
end

-- the unscale kernel against the same arithmetic through ops
function TestAmp:test_unscale_kernel()
  for _, dt in ipairs({ "float32", "float16", "bfloat16" }) do
    local g = T({ 1000 }, { dtype = dt })
    local want = (g:float() * 0.125):to(dt)
    local inv, found = netcl.full({}, 0.125, { device = H.device }), netcl.zeros({}, { device = H.device })
    local tensor = require("netcl.tensor")
    lu.assertEquals(tonumber(netcl.C.netcl_amp_unscale_(tensor.handle(g), tensor.handle(inv), tensor.handle(found))), 0)
    lu.assertEquals((g:float() - want:float()):abs():max():item(), 0, dt)
    lu.assertEquals(found:item(), 0, dt .. ": all finite")
    g[7] = 0 / 0
    lu.assertEquals(tonumber(netcl.C.netcl_amp_unscale_(tensor.handle(g), tensor.handle(inv), tensor.handle(found))), 0)
    lu.assertEquals(found:item(), 1, dt .. ": a NaN is found")
  end
end

local function scaled_step(scaler, model, opt, x, poison)
  opt:zero_grad()
  local loss = model(x):pow(2):mean()
  if poison then loss = loss * poison end
  scaler:scale_loss(loss):backward()
  scaler:step(opt)
  scaler:update()
end

function TestAmp:test_scaler_schedule_and_skipped_steps()
  netcl.manual_seed(4)
  local model = nn.Linear(5, 3):to(H.device)
  local opt = netcl.optim.Adam(model, { lr = 1e-2 })
  local scaler = amp.GradScaler({ init_scale = 256, growth_factor = 4, backoff_factor = 0.25, growth_interval = 3 })
  local x = T({ 6, 5 })
  for _ = 1, 3 do scaled_step(scaler, model, opt, x) end
  lu.assertEquals(scaler:get_scale(), 1024, "grown after growth_interval clean steps")
  scaled_step(scaler, model, opt, x)
  lu.assertEquals(scaler:get_scale(), 1024)
  -- inf and NaN: the step is skipped, parameters and Adam's state are untouched, the scale backs off
  for _, poison in ipairs({ math.huge, 0 / 0 }) do
    local w = model.weight:clone()
    local sd = opt:state_dict()
    local avg, step = sd.state[1].exp_avg:clone(), sd.state[1].step
    scaled_step(scaler, model, opt, x, poison)
    lu.assertEquals((model.weight - w):abs():max():item(), 0, "parameters untouched")
    sd = opt:state_dict()
    lu.assertEquals((sd.state[1].exp_avg - avg):abs():max():item(), 0, "optimizer state untouched")
    lu.assertEquals(sd.state[1].step, step, "step count untouched")
  end
  lu.assertEquals(scaler:get_scale(), 1024 * 0.25 * 0.25)
  -- the growth count restarted at the backoff
  scaled_step(scaler, model, opt, x)
  scaled_step(scaler, model, opt, x)
  lu.assertEquals(scaler:get_scale(), 64)
  scaled_step(scaler, model, opt, x)
  lu.assertEquals(scaler:get_scale(), 256)
  -- checkpoints keep the scale and the tracker
  local path = os.tmpname()
  netcl.save({ scaler = scaler }, path)
  local other = amp.GradScaler()
  other:load_state_dict(netcl.load(path).scaler)
  os.remove(path)
  lu.assertEquals(other:get_scale(), 256)
  lu.assertEquals(other:state_dict()._growth_tracker, scaler:state_dict()._growth_tracker)
  -- misuse is named
  H.assert_error(function() scaler:update() end, "no step() or unscale_grads() since the last update()")
  H.assert_error(function() amp.GradScaler({ growth_factor = 0.5 }) end, "growth_factor must be a finite number above 1")
  -- disabled: everything passes through
  local off = amp.GradScaler({ enabled = false })
  local l = model(x):sum()
  lu.assertTrue(rawequal(off:scale_loss(l), l))
  lu.assertEquals(off:get_scale(), 1)
end

function TestAmp:test_master_weights_in_float32()
  for _, dt in ipairs({ "float16", "bfloat16" }) do
    local p = netcl.ones({ 4 }, { dtype = dt, device = H.device }):requires_grad_()
    local opt = netcl.optim.SGD({ p }, { lr = 1 })
    for _ = 1, 20 do
      opt:zero_grad()
      local loss = (p:float() * 1e-4):sum()
      loss:backward()
      opt:step()
    end
    lu.assertEquals(p.dtype, dt)
    local master = opt:state_dict().state[1].master
    lu.assertEquals(master.dtype, "float32")
    local g = netcl.tensor(1e-4):to(dt):float():item()   -- the gradient, in the parameter's dtype
    lu.assertTrue(math.abs(master:max():item() - (1 - 20 * g)) < 1e-6, dt .. ": the master adds every update")
    lu.assertEquals((p:float() - master:to(dt):float()):abs():max():item(), 0, dt .. ": parameters are its rounding")
    -- a parameter written outside a step is taken into the master
    netcl.no_grad(function() p:fill_(3) end)
    opt:zero_grad()
    local loss = (p:float() * 0):sum()
    loss:backward()
    opt:step()
    lu.assertEquals(p:float():max():item(), 3)
  end
end

function TestAmp:test_compiled_step_under_autocast()
  local function make()
    netcl.manual_seed(5)
    local model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)):to(H.device)
    local opt = netcl.optim.SGD(model, { lr = 0.05 })
    return model, function(x, t)
      opt:zero_grad()
      local loss = on(function() return F.cross_entropy(model(x), t) end)
      loss:backward()
      opt:step()
      return loss
    end
  end
  local x, t = T({ 5, 6 }), netcl.randint(1, 4, { 5 }, { device = H.device })
  local m1, s1 = make()
  local m2, s2 = make()
  s1(x, t); s1(x, t)
  local c = netcl.compile(s2, x, t)
  for _ = 1, 5 do s1(x, t); c(x, t) end
  for i, p in ipairs(m1:parameters()) do
    local d = (p - m2:parameters()[i]):abs():max():item()
    lu.assertTrue(d <= 1e-6, ("parameter %d differs by %g"):format(i, d))
  end
end

-- the demo CNN for one epoch on 8192 images, float32 and AMP, same seed:
-- the test accuracies agree within 2 points (the full 6-epoch runs'
-- comparison is in docs/performance.md); on the cpu only, where it takes
-- seconds (the other devices' AMP arithmetic is checked above)
function TestAmp:test_fashion_mnist_with_amp()
  if not H.is_cpu and H.device_info().type ~= "opencl_gpu" then
    lu.skip("a training run per dtype on the cpu and on GPUs (on PoCL it would repeat the cpu's arithmetic at several times the time)")
  end
  local dir = "/usr/share/datasets/fashion-mnist"
  local f = io.open(dir .. "/t10k-labels-idx1-ubyte.gz")
  if not f then lu.skip("dataset-fashion-mnist is not installed") end
  f:close()
  local cmd = ("%s/build/netcl %s/examples/fashion_mnist.lua --epochs 1 --limit 8192 --test-limit 2000 --device %s --save none")
    :format(root, root, H.device)
  local out32, c1 = H.run(cmd)
  local out16, c2 = H.run(cmd .. " --amp")
  lu.assertEquals(c1, 0, out32)
  lu.assertEquals(c2, 0, out16)
  local pat = "final test accuracy ([%d%.]+)%%"
  local a32, a16 = tonumber(out32:match(pat)), tonumber(out16:match(pat))
  lu.assertNotNil(a16, out16)
  lu.assertTrue(a32 > 75, out32)
  lu.assertTrue(math.abs(a32 - a16) <= 2,
    ("test accuracy float32 %.2f%%, AMP %.2f%% (within 2 points needed)"):format(a32, a16))
end
