-- spec/nn_norm_spec.lua — BatchNorm1d/2d (train/eval, running statistics,
-- momentum, affine, track_running_stats), LayerNorm, GroupNorm and
-- Embedding (padding_idx, from_pretrained) as modules: forward against
-- formulas in Lua doubles, Jacobian checks through the module (float64,
-- cpu), device vs cpu, save/load round trips, clear errors.
local lu = require("luaunit")
local H = require("helper")
local N = require("nn_helper")
local netcl = H.netcl
local nn = netcl.nn
local dev = H.device

-- per-channel (dim 2) mean and biased/unbiased variance of a [N, C, ...] table
local function channel_stats(t, C)
  local sums, sq, count = {}, {}, 0
  for c = 1, C do sums[c], sq[c] = 0, 0 end
  for n = 1, #t do
    for c = 1, C do
      local vals = H.flatten(t[n][c])
      if c == 1 then count = count + #vals end
      for _, v in ipairs(vals) do sums[c] = sums[c] + v end
    end
  end
  local mean, var_b, var_u = {}, {}, {}
  for c = 1, C do mean[c] = sums[c] / count end
  for n = 1, #t do
    for c = 1, C do
      for _, v in ipairs(H.flatten(t[n][c])) do sq[c] = sq[c] + (v - mean[c]) ^ 2 end
    end
  end
  for c = 1, C do var_b[c], var_u[c] = sq[c] / count, sq[c] / (count - 1) end
  return mean, var_b, var_u
end

-- (x - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c] over a [N, C, ...] table
local function normalise(t, mean, var, w, b, eps)
  local out = {}
  for n = 1, #t do
    out[n] = {}
    for c = 1, #t[n] do
      local function f(v)
        if type(v) == "table" then local r = {}; for k = 1, #v do r[k] = f(v[k]) end; return r end
        return (v - mean[c]) / math.sqrt(var[c] + eps) * (w and w[c] or 1) + (b and b[c] or 0)
      end
      out[n][c] = f(t[n][c])
    end
  end
  return out
end

TestNormLayers = {}

function TestNormLayers:test_batchnorm2d_train_and_eval()
  netcl.manual_seed(1)
  local m = nn.BatchNorm2d(3, { momentum = 0.2, device = dev })
  netcl.no_grad(function()
    m.weight:copy_(netcl.tensor({ 1, 2, 0.5 })); m.bias:copy_(netcl.tensor({ 0, -1, 3 }))
  end)
  local x = netcl.randn(4, 3, 3, 2, { device = dev }) * 2 + 1
  local xt = x:totable()
  local mean, var_b, var_u = channel_stats(xt, 3)
  local w, b = m.weight:totable(), m.bias:totable()
  H.assert_close(m(x), normalise(xt, mean, var_b, w, b, 1e-5), 1e-4, 1e-5, "train")
  local rm, rv = {}, {}
  for c = 1, 3 do rm[c], rv[c] = 0.2 * mean[c], 0.8 + 0.2 * var_u[c] end
  H.assert_close(m.running_mean, rm, 1e-5, 1e-6, "running_mean")
  H.assert_close(m.running_var, rv, 1e-5, 1e-6, "running_var (unbiased)")
  lu.assertEquals(m.num_batches_tracked:item(), 1)
  m(x)
  lu.assertEquals(m.num_batches_tracked:item(), 2)
  rm, rv = m.running_mean:totable(), m.running_var:totable()
  m:eval()
  H.assert_close(m(x), normalise(xt, rm, rv, w, b, 1e-5), 1e-4, 1e-5, "eval uses the running statistics")
  lu.assertEquals(m.num_batches_tracked:item(), 2)
  H.assert_close(m.running_mean, rm, 0, 0, "eval leaves the statistics alone")
  lu.assertStrContains(tostring(m), "BatchNorm2d(3, eps=1e-05, momentum=0.2, affine=true, track_running_stats=true)")
end

function TestNormLayers:test_batchnorm_options_and_1d()
  netcl.manual_seed(2)
  local m = nn.BatchNorm1d(4, { affine = false, track_running_stats = false, eps = 1e-3, device = dev })
  lu.assertEquals(#m:parameters(), 0)
  lu.assertEquals(#m:buffers(), 0)
  local x = netcl.randn(6, 4, { device = dev })
  local mean, var_b = channel_stats(x:totable(), 4)
  H.assert_close(m(x), normalise(x:totable(), mean, var_b, nil, nil, 1e-3), 1e-4, 1e-5, "[N, C]")
  m:eval()   -- no running statistics: eval normalises with the batch's too
  H.assert_close(m(x), normalise(x:totable(), mean, var_b, nil, nil, 1e-3), 1e-4, 1e-5, "eval without running stats")
  local m3 = nn.BatchNorm1d(4, { device = dev })
  local x3 = netcl.randn(5, 4, 3, { device = dev })
  local mean3, var3 = channel_stats(x3:totable(), 4)
  H.assert_close(m3(x3), normalise(x3:totable(), mean3, var3, nil, nil, 1e-5), 1e-4, 1e-5, "[N, C, L]")
  local keys = {}
  for k in pairs(m3:state_dict()) do keys[#keys + 1] = k end
  table.sort(keys)
  lu.assertEquals(keys, { "bias", "num_batches_tracked", "running_mean", "running_var", "weight" })
  lu.assertEquals(m3.num_batches_tracked.dtype, "int64")
  m3:reset_running_stats()
  lu.assertEquals(m3.running_var:totable(), { 1, 1, 1, 1 })
  lu.assertEquals(m3.num_batches_tracked:item(), 0)
end

function TestNormLayers:test_layer_norm_and_group_norm()
  netcl.manual_seed(3)
  local ln = nn.LayerNorm({ 3, 4 }, { device = dev })
  netcl.no_grad(function() ln.weight:copy_(netcl.rand(3, 4) + 0.5); ln.bias:copy_(netcl.randn(3, 4)) end)
  local x = netcl.randn(2, 5, 3, 4, { device = dev })
  local want = {}
  local xt, w, b = x:totable(), H.flatten(ln.weight:totable()), H.flatten(ln.bias:totable())
  for n = 1, 2 do
    want[n] = {}
    for r = 1, 5 do
      local v = H.flatten(xt[n][r])
      local mean, var = 0, 0
      for _, e in ipairs(v) do mean = mean + e / 12 end
      for _, e in ipairs(v) do var = var + (e - mean) ^ 2 / 12 end
      local o = {}
      for k = 1, 12 do o[k] = (v[k] - mean) / math.sqrt(var + 1e-5) * w[k] + b[k] end
      want[n][r] = { { o[1], o[2], o[3], o[4] }, { o[5], o[6], o[7], o[8] }, { o[9], o[10], o[11], o[12] } }
    end
  end
  H.assert_close(ln(x), want, 1e-4, 1e-5, "LayerNorm")
  lu.assertEquals(#nn.LayerNorm(8, { elementwise_affine = false }):parameters(), 0)
  lu.assertEquals(#nn.LayerNorm(8, { bias = false }):parameters(), 1)
  -- GroupNorm: per sample over C/G channels at a time, then per-channel affine
  local gn = nn.GroupNorm(2, 4, { device = dev })
  netcl.no_grad(function() gn.weight:copy_(netcl.tensor({ 1, 2, 3, 4 })); gn.bias:copy_(netcl.tensor({ 0, 1, 0, 1 })) end)
  local y = netcl.randn(3, 4, 2, 2, { device = dev })
  local yt, gw = y:totable(), { 1, 2, 3, 4 }
  local gwant = {}
  for n = 1, 3 do
    gwant[n] = {}
    for g = 0, 1 do
      local vals = {}
      for c = 2 * g + 1, 2 * g + 2 do for _, e in ipairs(H.flatten(yt[n][c])) do vals[#vals + 1] = e end end
      local mean, var = 0, 0
      for _, e in ipairs(vals) do mean = mean + e / #vals end
      for _, e in ipairs(vals) do var = var + (e - mean) ^ 2 / #vals end
      for c = 2 * g + 1, 2 * g + 2 do
        local t = yt[n][c]
        gwant[n][c] = {}
        for i = 1, 2 do
          gwant[n][c][i] = {}
          for j = 1, 2 do gwant[n][c][i][j] = (t[i][j] - mean) / math.sqrt(var + 1e-5) * gw[c] + (c % 2 == 0 and 1 or 0) end
        end
      end
    end
  end
  H.assert_close(gn(y), gwant, 1e-4, 1e-5, "GroupNorm")
end

function TestNormLayers:test_gradcheck_through_modules()
  lu.skipIf(not H.is_cpu, "gradchecks run on the cpu backend in float64")
  netcl.manual_seed(4)
  local function perturbed(m)   -- non-trivial affine parameters
    for _, p in ipairs(m:parameters()) do netcl.no_grad(function() p:add_(netcl.randn(p:size(), { dtype = p.dtype, device = p.device }) * 0.3) end) end
    return m
  end
  N.gradcheck(perturbed(nn.BatchNorm2d(3):double()), { N.f64(3, 3, 2, 2) })
  N.gradcheck(perturbed(nn.BatchNorm1d(4):double()), { N.f64(5, 4) })
  N.gradcheck(nn.BatchNorm1d(2, { affine = false }):double(), { N.f64(3, 2, 3) })
  local ev = perturbed(nn.BatchNorm2d(2):double()):to("cpu")
  ev(N.f64(4, 2, 2, 2))
  N.gradcheck(ev:eval(), { N.f64(2, 2, 2, 2) })
  N.gradcheck(perturbed(nn.LayerNorm({ 2, 3 }):double()), { N.f64(3, 2, 3) })
  N.gradcheck(perturbed(nn.GroupNorm(2, 4):double()), { N.f64(2, 4, 3) })
end

-- batch norm with a fused relu (F.batch_norm's act; ResNet's blocks) is
-- batch norm and then relu: result, running statistics and the three
-- gradients, training and evaluation, float32 (the cpu's plane-wise path)
-- and float64; a non-finite gradient where the relu clipped is masked
-- there as relu's own backward masks it
function TestNormLayers:test_batch_norm_relu_matches_separate_ops()
  local F = netcl.nn.functional
  for _, dtype in ipairs({ "float32", "float64" }) do
    for _, training in ipairs({ true, false }) do
      local outs = {}
      for k, fused in ipairs({ false, true }) do
        netcl.manual_seed(50)
        local o = { device = dev, dtype = dtype }
        local x = netcl.randn(4, 3, 4, 4, o):requires_grad_()
        local w = (netcl.randn(3, o) + 1):detach():requires_grad_()
        local b = netcl.randn(3, o):detach():requires_grad_()
        local rm, rv = netcl.randn(3, o) * 0.1, netcl.rand(3, o) + 0.5
        local y = fused and F.batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5, { act = "relu" })
                  or F.batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5):relu()
        local g = netcl.randn(4, 3, 4, 4, o)
        g = netcl.where(y:detach():eq(0), g * math.huge, g)   -- infinite where the relu clipped
        y:backward(g)
        outs[k] = { y, x.grad, w.grad, b.grad, rm, rv }
      end
      for i = 1, 6 do
        local a, c = outs[1][i], outs[2][i]
        lu.assertTrue(a:isfinite():all():item(), ("operand %d not finite"):format(i))
        local tol = dtype == "float64" and 1e-12 or 1e-5
        lu.assertTrue((a - c):abs():max():item() <= tol * (1 + a:abs():max():item()),
          ("%s training %s: operand %d differs between fused and separate relu"):format(dtype, tostring(training), i))
      end
    end
  end
end

-- a residual added in the batch norm's pass (ResNet's shortcut), with and
-- without the relu after it, against bn + add (+ relu): result and the
-- four gradients; a residual that needs no gradient keeps relu's mask in
-- the backward kernels
function TestNormLayers:test_batch_norm_add_relu_matches_separate_ops()
  local F = netcl.nn.functional
  for _, dtype in ipairs({ "float32", "float64" }) do
    for _, case in ipairs({ { "relu", true }, { nil, true }, { "relu", false } }) do
      local act, rgrad = case[1], case[2]
      local outs = {}
      for k, fused in ipairs({ false, true }) do
        netcl.manual_seed(55)
        local o = { device = dev, dtype = dtype }
        local x = netcl.randn(4, 3, 4, 4, o):requires_grad_()
        local r = netcl.randn(4, 3, 4, 4, o):requires_grad_(rgrad)
        local w = (netcl.randn(3, o) + 1):detach():requires_grad_()
        local b = netcl.randn(3, o):detach():requires_grad_()
        local y
        if fused then
          y = F.batch_norm(x, nil, nil, w, b, true, 0.1, 1e-5, { act = act, residual = r })
          lu.assertEquals(y.grad_fn, act and "batch_norm_add_relu" or "batch_norm_add")
        else
          y = F.batch_norm(x, nil, nil, w, b, true, 0.1, 1e-5) + r
          if act then y = y:relu() end
        end
        y:backward(netcl.randn(4, 3, 4, 4, o))
        outs[k] = { y, x.grad, w.grad, b.grad, rgrad and r.grad or y }
      end
      for i = 1, 5 do
        local a, c = outs[1][i], outs[2][i]
        local tol = dtype == "float64" and 1e-12 or 1e-5
        lu.assertTrue((a - c):abs():max():item() <= tol * (1 + a:abs():max():item()),
          ("%s act %s: operand %d differs between fused and separate ops"):format(dtype, tostring(act), i))
      end
    end
  end
  local x = netcl.randn(2, 3, 4, 4, { device = dev })
  H.assert_error(function() F.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-5, { residual = netcl.randn(2, 3, 4, 5, { device = dev }) }) end,
    "batch_norm: the residual float32[2,3,4,5]")
  H.assert_error(function()
    F.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-5, { residual = netcl.randn(2, 3, 4, 4, { device = dev, dtype = "float64" }) })
  end, "input's shape and dtype")
end

function TestNormLayers:test_batch_norm_relu_gradcheck()
  lu.skipIf(not H.is_cpu, "gradchecks run on the cpu backend in float64")
  local F = netcl.nn.functional
  netcl.manual_seed(51)
  local ok, err = netcl.autograd.gradcheck(function(x, wt, bs)
    return F.batch_norm(x, nil, nil, wt, bs, true, 0.1, 1e-5, { act = "relu" })
  end, { N.f64(3, 3, 2, 2), N.f64(3), N.f64(3) })
  lu.assertTrue(ok, tostring(err))
  ok, err = netcl.autograd.gradcheck(function(x, r, wt, bs)
    return F.batch_norm(x, nil, nil, wt, bs, true, 0.1, 1e-5, { act = "relu", residual = r })
  end, { N.f64(3, 3, 2, 2), N.f64(3, 3, 2, 2), N.f64(3), N.f64(3) })
  lu.assertTrue(ok, tostring(err))
end

-- another activation runs as its own op after the batch norm; a name that
-- is none of the fusable ones is an error naming the op
function TestNormLayers:test_batch_norm_act_other_activations_and_errors()
  local F = netcl.nn.functional
  netcl.manual_seed(52)
  local x = netcl.randn(2, 3, 2, 2, { device = dev })
  local y = F.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-5, { act = "sigmoid" })
  local ref = F.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-5):sigmoid()
  lu.assertTrue((y - ref):abs():max():item() < 1e-6)
  H.assert_error(function() F.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-5, { act = "softmax" }) end, "batch_norm")
  H.assert_error(function() F.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-5, "relu") end, "options must be a table")
end

-- ResNet's blocks fuse bn1's relu, except where bn1 has a forward hook,
-- which then sees the batch norm's output before the relu
function TestNormLayers:test_resnet_block_fuses_unless_hooked()
  netcl.manual_seed(53)
  local blk = nn.models.BasicBlock(4, 4, { device = dev })
  local x = netcl.randn(2, 4, 5, 5, { device = dev })
  local y1 = blk(x)
  local seen
  local h = blk.bn1:register_forward_hook(function(_, _, out) seen = out:detach():min():item() end)
  local y2 = blk(x)
  h:remove()
  lu.assertTrue(seen < 0, "the hook sees bn1's output before the relu")
  lu.assertTrue((y1 - y2):abs():max():item() < 1e-5)
  -- bn2 takes the shortcut and the last relu; a hook on it sees bn2's own output
  lu.assertEquals(y1.grad_fn, "batch_norm_add_relu")
  h = blk.bn2:register_forward_hook(function(_, _, out) seen = out:detach():min():item() end)
  local y3 = blk(x)
  h:remove()
  lu.assertEquals(y3.grad_fn, "relu")
  lu.assertTrue(seen < 0, "the hook sees bn2's output before the add")
  lu.assertTrue((y1 - y3):abs():max():item() < 1e-5)
end

-- Sequential runs a BatchNorm followed by an nn.ReLU as one fused call
-- (its grad_fn says so), with the same result and gradients; a hook on
-- either, or a subclass with its own forward, keeps them apart
function TestNormLayers:test_sequential_fuses_batch_norm_and_relu()
  local function build()
    netcl.manual_seed(54)
    return nn.Sequential(nn.Conv2d(2, 4, 3, { padding = 1, device = dev }), nn.BatchNorm2d(4, { device = dev }), nn.ReLU())
  end
  local x = netcl.randn(3, 2, 5, 5, { device = dev })
  local fused, plain = build(), build()
  local y = fused(x)
  lu.assertEquals(y.grad_fn, "batch_norm_relu")
  local seen = 0
  plain:get(3):register_forward_hook(function() seen = seen + 1 end)
  local yp = plain(x)
  lu.assertEquals(seen, 1)
  lu.assertEquals(yp.grad_fn, "relu")
  lu.assertTrue((y - yp):abs():max():item() < 1e-5)
  y:sum():backward()
  yp:sum():backward()
  for i, p in ipairs(fused:parameters()) do
    lu.assertTrue((p.grad - plain:parameters()[i].grad):abs():max():item() < 1e-4, "parameter " .. i)
  end
  local Own = nn.BatchNorm2d:extend("OwnBN")
  function Own:forward(t) return nn.BatchNorm2d.forward(self, t) * 2 end
  local own = nn.Sequential(Own(2, { device = dev }), nn.ReLU())
  lu.assertEquals(own(x).grad_fn, "relu")
end

-- float32 batch norm (the cpu's plane-wise path) against the same op in
-- float64: forward, running statistics and all three gradients, training
-- and evaluation, with and without the affine parameters
function TestNormLayers:test_batch_norm_float32_matches_float64()
  local F = netcl.nn.functional
  netcl.manual_seed(6)
  local x64 = netcl.randn({ 3, 5, 7, 3 }, { dtype = "float64", device = dev }) * 2 + 0.5
  local g64 = netcl.randn({ 3, 5, 7, 3 }, { dtype = "float64", device = dev })
  local w64 = netcl.rand({ 5 }, { dtype = "float64", device = dev }) + 0.5
  local b64 = netcl.randn({ 5 }, { dtype = "float64", device = dev })
  for _, training in ipairs({ true, false }) do
    for _, affine in ipairs({ true, false }) do
      local function run(dtype)
        local x = x64:to(dtype):detach():requires_grad_()
        local w = affine and w64:to(dtype):detach():requires_grad_() or nil
        local b = affine and b64:to(dtype):detach():requires_grad_() or nil
        local rm = netcl.full({ 5 }, 0.25, { dtype = dtype, device = dev })
        local rv = netcl.full({ 5 }, 2, { dtype = dtype, device = dev })
        local y = F.batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5)
        y:backward(g64:to(dtype))
        return { y = y, rm = rm, rv = rv, dx = x.grad, dw = w and w.grad, db = b and b.grad }
      end
      local f, d = run("float32"), run("float64")
      local what = ("training %s, affine %s"):format(tostring(training), tostring(affine))
      for _, k in ipairs({ "y", "rm", "rv", "dx", "dw", "db" }) do
        if d[k] then H.assert_close(f[k], d[k]:float(), 1e-5, 1e-5, k .. ", " .. what) end
      end
    end
  end
end

-- statistics of values far from zero with a small spread: the float32
-- path's single shifted pass must not cancel (a plain sum of squares would)
function TestNormLayers:test_batch_norm_statistics_far_from_zero()
  local F = netcl.nn.functional
  netcl.manual_seed(8)
  local x64 = netcl.randn({ 4, 3, 9, 9 }, { dtype = "float64", device = dev }) * 0.01 + 1000
  local x32 = x64:float()
  local function stats(x)
    local rm, rv = netcl.zeros({ 3 }, { dtype = x.dtype, device = dev }), netcl.zeros({ 3 }, { dtype = x.dtype, device = dev })
    local y = F.batch_norm(x, rm, rv, nil, nil, true, 1, 1e-5)
    return y, rm, rv
  end
  local y32, rm32, rv32 = stats(x32)
  local y64, rm64, rv64 = stats(x32:double())
  H.assert_close(rm32, rm64:float(), 1e-6, 0, "mean")
  H.assert_close(rv32, rv64:float(), 1e-3, 0, "variance")
  -- the mean is kept in float32: an ulp of 1000 (6e-5) is 6e-3 of the
  -- spread, so the outputs agree to about that
  H.assert_close(y32, y64:float(), 0, 1.5e-2, "normalized")
end

function TestNormLayers:test_embedding()
  netcl.manual_seed(5)
  local e = nn.Embedding(6, 3, { padding_idx = 2, device = dev })
  lu.assertEquals(e.weight[2]:totable(), { 0, 0, 0 })
  local idx = netcl.tensor({ { 1, 2, 6 }, { 2, 4, 1 } }, { dtype = "int64", device = dev })
  local y = e(idx)
  lu.assertEquals(y:size(), { 2, 3, 3 })
  local w = e.weight:totable()
  H.assert_close(y, { { w[1], w[2], w[6] }, { w[2], w[4], w[1] } }, 0, 0)
  ;(y * netcl.randn(2, 3, 3, { device = dev })):sum():backward()
  lu.assertEquals(e.weight.grad[2]:totable(), { 0, 0, 0 })     -- padding row: no gradient
  lu.assertEquals(e.weight.grad[3]:abs():sum():item(), 0)        -- unused row
  lu.assertTrue(e.weight.grad[1]:abs():sum():item() > 0)
  lu.assertEquals(nn.Embedding(5, 2, { padding_idx = -1 }).padding_idx, 5)
  lu.assertEquals(nn.Embedding(4, 2, { device = dev })(netcl.tensor({ 3 }, { dtype = "int32", device = dev })):size(), { 1, 2 })
  local pre = nn.Embedding.from_pretrained(netcl.tensor({ { 1, 2 }, { 3, 4 } }, { device = dev }))
  lu.assertFalse(pre.weight.requires_grad)
  H.assert_close(pre(netcl.tensor({ 2, 1 }, { dtype = "int64", device = dev })), { { 3, 4 }, { 1, 2 } }, 0, 0)
  lu.assertTrue(nn.Embedding.from_pretrained(netcl.zeros(2, 2), { freeze = false }).weight.requires_grad)
  lu.assertStrContains(tostring(e), "Embedding(6, 3, padding_idx=2)")
  H.assert_error(function() e(netcl.tensor({ 1.5 }, { device = dev })) end, "embedding: the indices must be an integer tensor, got float32")
  H.assert_error(function() nn.Embedding(4, 2, { padding_idx = 5 }) end, "padding_idx must be an index in 1..4")
  if H.is_cpu then
    H.assert_error(function() e(netcl.tensor({ 7 }, { dtype = "int64", device = dev })) end, "index 7 out of range")
    -- the padding row's gradient is zero by design, so the Jacobian check runs without one
    local ix = netcl.tensor({ { 1, 3 }, { 5, 1 } }, { dtype = "int64" })
    N.gradcheck(nn.Embedding(5, 2):double(), {}, nil, ix)
  end
end

function TestNormLayers:test_device_matches_cpu()
  H.against_cpu(function(d)
    netcl.manual_seed(6)
    local bn = nn.BatchNorm2d(4, { device = d })
    local gn = nn.GroupNorm(2, 4, { device = d })
    local ln = nn.LayerNorm(5, { device = d })
    local emb = nn.Embedding(7, 5, { padding_idx = 1, device = d })
    netcl.manual_seed(7)
    local x = netcl.randn(3, 4, 5, 5, { device = d })
    local idx = netcl.tensor({ 1, 3, 7, 3 }, { dtype = "int64", device = d })
    local y = ln(gn(bn(x))) + emb(idx):view(1, 4, 1, 5)
    y:sum():backward()
    bn:eval()
    return y, bn(x), bn.running_mean, bn.running_var, bn.weight.grad, gn.weight.grad, ln.bias.grad, emb.weight.grad
  end, 1e-4, 1e-4)
end

-- the device's batch norm moves rows of 4-aligned length as vectors and
-- others element by element; both, at an offset, training and eval, with
-- and without a fused relu
function TestNormLayers:test_device_matches_cpu_by_row_shape()
  local F = netcl.nn.functional
  H.against_cpu(function(d)
    local outs = {}
    for _, shape in ipairs({ { 3, 4, 4, 4 }, { 2, 3, 5, 5 }, { 5, 2, 1, 3 } }) do
      for _, offset in ipairs({ 0, 1 }) do
        netcl.manual_seed(40 + offset)
        local n = shape[1] * shape[2] * shape[3] * shape[4]
        local x = netcl.randn(n + offset, { device = d }):narrow(1, 1 + offset, n):view(unpack(shape)):detach()
        x:requires_grad_()
        local C = shape[2]
        local w = netcl.randn(C, { device = d, requires_grad = true })
        local b = netcl.randn(C, { device = d, requires_grad = true })
        local rm, rv = netcl.zeros(C, { device = d }), netcl.ones(C, { device = d })
        for _, mode in ipairs({ "train", "eval", "train relu", "eval relu" }) do
          local act = mode:find("relu") and { act = "relu" } or nil
          local y = F.batch_norm(x, rm, rv, w, b, mode:find("train") ~= nil, 0.1, 1e-5, act)
          ;(y * y:sin()):sum():backward()
          for _, t in ipairs({ y, x.grad, w.grad, b.grad, rm, rv }) do outs[#outs + 1] = t:clone() end
          x.grad, w.grad, b.grad = nil, nil, nil
        end
      end
    end
    return unpack(outs)
  end, 1e-4, 1e-4)
end

function TestNormLayers:test_save_load_round_trip()
  local x = netcl.randn(4, 3, 5, 5, { device = dev })
  local train = function(m) m(netcl.randn(4, 3, 5, 5, { device = dev }) * 3 + 1) end   -- moves the running statistics
  local b = N.roundtrip(function() return nn.BatchNorm2d(3, { device = dev }) end, x, nil, train)
  lu.assertEquals(b.num_batches_tracked:item(), 1)
  N.roundtrip(function() return nn.LayerNorm({ 5, 5 }, { device = dev }) end, x)
  N.roundtrip(function() return nn.GroupNorm(3, 3, { device = dev }) end, x)
  local idx = netcl.tensor({ { 1, 4 }, { 2, 2 } }, { dtype = "int64", device = dev })
  N.roundtrip(function() return nn.Embedding(4, 3, { device = dev }) end, idx)
end

function TestNormLayers:test_errors()
  local bn = nn.BatchNorm2d(3, { device = dev })
  H.assert_error(function() bn(netcl.zeros(2, 3, 4, { device = dev })) end, "BatchNorm2d: expected a 4-D [N, C, H, W] input", "[2, 3, 4]")
  H.assert_error(function() bn(netcl.zeros(2, 4, 2, 2, { device = dev })) end, "BatchNorm2d: expected 3 channels in dim 2")
  H.assert_error(function() nn.BatchNorm1d(3)(netcl.zeros(1, 3)) end, "expected more than 1 value per channel when training")
  H.assert_error(function() nn.BatchNorm1d(3, { momentun = 0.1 }) end, "unknown option 'momentun'")
  H.assert_error(function() nn.LayerNorm({ 4 }, { device = dev })(netcl.zeros(2, 3, { device = dev })) end,
                 "LayerNorm: expected an input whose last dims are [4]")
  H.assert_error(function() nn.GroupNorm(3, 4) end, "num_channels (4) must be divisible by num_groups (3)")
  H.assert_error(function() nn.GroupNorm(2, 4, { device = dev })(netcl.zeros(2, 6, 2, { device = dev })) end, "GroupNorm: expected an input [N, 4, ...]")
end

-- weights, biases and running statistics that are views at an offset into
-- a bigger buffer (an optimizer's flat buffers): every kernel must read and
-- write them where they are, forward and backward, training and eval
function TestNormLayers:test_batch_norm_operands_at_offsets()
  local F = netcl.nn.functional
  netcl.manual_seed(12)
  local C = 5
  local x = netcl.randn(6, C, 3, 3, { device = dev })
  local flat = netcl.randn(64, { device = dev })
  local function views()   -- weight, bias, running mean, running var: at offsets 3, 17, 33, 49
    local w, b = flat:narrow(1, 4, C):clone(), flat:narrow(1, 18, C):clone()
    local rm, rv = flat:narrow(1, 34, C):clone(), flat:narrow(1, 50, C):abs():clone()
    local buf = netcl.zeros(64, { device = dev })
    local vw, vb, vrm, vrv = buf:narrow(1, 4, C), buf:narrow(1, 18, C), buf:narrow(1, 34, C), buf:narrow(1, 50, C)
    vw:copy_(w); vb:copy_(b); vrm:copy_(rm); vrv:copy_(rv)
    return { w, b, rm, rv }, { vw, vb, vrm, vrv }
  end
  for _, training in ipairs({ true, false }) do
    local own, off = views()
    local outs = {}
    for k, set in ipairs({ own, off }) do
      local w, b = set[1]:detach():requires_grad_(), set[2]:detach():requires_grad_()
      if k == 2 then   -- the offset views themselves must be leaves that take gradients
        w, b = set[1], set[2]
        w.requires_grad = true
        b.requires_grad = true
      end
      local xi = x:clone():requires_grad_()
      local y = F.batch_norm(xi, set[3], set[4], w, b, training, 0.1, 1e-5)
      y:pow(2):sum():backward()
      outs[k] = { y, xi.grad, w.grad, b.grad, set[3], set[4] }
    end
    for i = 1, 6 do
      lu.assertTrue((outs[1][i] - outs[2][i]):abs():max():item() < 1e-5,
        ("training %s: operand %d differs when the parameters sit at offsets"):format(tostring(training), i))
    end
  end
end
