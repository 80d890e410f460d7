-- spec/nnops_spec.lua — normalisation, dropout and the elementwise losses
-- against references computed here in Lua, and their bad-input errors.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local F = netcl.nn.functional
local dev = H.device

local function T(v, dtype) return netcl.tensor(v, { device = dev, dtype = dtype }) end

TestNorm = {}

function TestNorm:test_batch_norm_training_and_running_stats()
  local x = T({ { 1, 10 }, { 3, 20 }, { 5, 30 } })       -- [N=3, C=2]
  local rm, rv = T({ 0, 0 }), T({ 1, 1 })
  local y = F.batch_norm(x, rm, rv, T({ 2, 1 }), T({ 0, 1 }), true, 0.1, 0)
  local s1, s2 = math.sqrt(8 / 3), math.sqrt(200 / 3)      -- biased std per channel
  H.assert_close(y, { { -2 / s1 * 2, -10 / s2 + 1 }, { 0, 1 }, { 2 / s1 * 2, 10 / s2 + 1 } }, 1e-5, 1e-5)
  H.assert_close(rm, { 0.3, 2.0 }, 1e-5, 1e-6)
  H.assert_close(rv, { 0.9 + 0.1 * 4, 0.9 + 0.1 * 100 }, 1e-5, 1e-5)   -- unbiased variance
  local e = F.batch_norm(x, rm, rv, nil, nil, false, 0.1, 0)
  H.assert_close(e:select(2, 1), { (1 - 0.3) / math.sqrt(1.3), (3 - 0.3) / math.sqrt(1.3), (5 - 0.3) / math.sqrt(1.3) }, 1e-5, 1e-5)
  H.assert_error(function() F.batch_norm(x, nil, nil, nil, nil, false) end, "batch_norm", "running_mean")
  H.assert_error(function() F.batch_norm(T({ { 1, 2 } }), nil, nil, nil, nil, true) end, "more than 1 value per channel")
  H.assert_error(function() F.batch_norm(x, T({ 0, 0, 0 }), rv, nil, nil, true) end, "running_mean")
end

function TestNorm:test_layer_and_group_norm()
  local x = T({ { 1, 2, 3, 4 }, { 2, 2, 2, 6 } })
  local function ln_row(r)
    local m = (r[1] + r[2] + r[3] + r[4]) / 4
    local v = 0
    for i = 1, 4 do v = v + (r[i] - m) ^ 2 end
    v = v / 4
    local out = {}
    for i = 1, 4 do out[i] = (r[i] - m) / math.sqrt(v + 1e-5) end
    return out
  end
  H.assert_close(F.layer_norm(x, 4), { ln_row({ 1, 2, 3, 4 }), ln_row({ 2, 2, 2, 6 }) }, 1e-5, 1e-5)
  -- group norm with one group per channel pair equals layer norm over each pair's values
  local g = F.group_norm(x:view(1, 4, 2), 1)
  H.assert_close(g:view(-1), F.layer_norm(x:view(1, 8), 8):view(-1), 1e-5, 1e-5)
  H.assert_error(function() F.layer_norm(x, 4, T({ 1, 2 })) end, "layer_norm", "weight")
  H.assert_error(function() F.group_norm(x:view(1, 4, 2), 3) end, "group_norm", "divisible")
end

function TestNorm:test_dropout_is_seeded_and_scaled()
  netcl.manual_seed(5)
  local x = netcl.ones(200, 50, { device = dev })
  local y = F.dropout(x, 0.25)
  local kept = y:ne(0):float():mean():item()
  lu.assertTrue(math.abs(kept - 0.75) < 0.02, "kept fraction " .. kept)
  H.assert_close(y:max(), 1 / 0.75, 1e-6, 1e-6)
  netcl.manual_seed(5)
  H.assert_close(F.dropout(x, 0.25), y, 0, 0)             -- reproducible by seed
  lu.assertTrue(F.dropout(x, 0.5, false):shares_storage(x))   -- identity when not training
  local c = F.dropout2d(netcl.ones(8, 16, 3, 3, { device = dev }), 0.5)
  H.assert_close(c:amax({ 3, 4 }), c:amin({ 3, 4 }), 0, 0) -- whole channels kept or dropped
  H.assert_error(function() F.dropout(x, 1.5) end, "dropout", "[0, 1]")
end

TestLosses = {}

function TestLosses:test_values()
  local a, b = T({ 1, 2, 4 }), T({ 1.5, 2, 1 })
  H.assert_close(F.mse_loss(a, b), (0.25 + 9) / 3, 1e-6, 1e-6)
  H.assert_close(F.l1_loss(a, b, { reduction = "sum" }), 3.5, 1e-6, 1e-6)
  H.assert_close(F.smooth_l1_loss(a, b, { reduction = "none" }), { 0.125, 0, 2.5 }, 1e-6, 1e-6)
  H.assert_close(F.huber_loss(a, b, { delta = 2, reduction = "none" }), { 0.125, 0, 4 }, 1e-6, 1e-6)
  local p, y = T({ 0.9, 0.2 }), T({ 1, 0 })
  H.assert_close(F.binary_cross_entropy(p, y), -(math.log(0.9) + math.log(0.8)) / 2, 1e-6, 1e-6)
  H.assert_close(F.binary_cross_entropy(T({ 0, 1 }), T({ 1, 0 }), { reduction = "none" }), { 100, 100 })   -- log clamped
  local z = T({ 2.1972245, -1.3862944 })                   -- logit(0.9), logit(0.2)
  H.assert_close(F.binary_cross_entropy_with_logits(z, y), F.binary_cross_entropy(p, y), 1e-5, 1e-5)
  H.assert_close(F.binary_cross_entropy_with_logits(T({ 1000, -1000 }), T({ 0, 1 }), { reduction = "none" }), { 1000, 1000 })
  local lp, t = T({ { math.log(0.5), math.log(0.5) } }), T({ { 0.25, 0.75 } })
  H.assert_close(F.kl_div(lp, t, { reduction = "sum" }), 0.25 * math.log(0.5) + 0.75 * math.log(1.5), 1e-6, 1e-6)
  H.assert_close(F.kl_div(lp, T({ { 0, 1 } }), { reduction = "sum" }), math.log(2), 1e-6, 1e-6)   -- 0 log 0 = 0
  H.assert_error(function() F.mse_loss(a, T({ 1, 2 })) end, "mse_loss", "same shape")
  H.assert_error(function() F.l1_loss(a, b, { reduction = "avg" }) end, "l1_loss", "reduction")
  H.assert_error(function() F.smooth_l1_loss(a, b, { beta = -1 }) end, "smooth_l1_loss", ">= 0")
end

-- PyTorch's formula written out: (1 - eps) nll + eps/C smooth, mean over
-- the target weights of the rows not ignored
local function ce_reference(x, t, w, ignore, eps, reduction)
  local total, wsum, rows = 0, 0, {}
  for i, row in ipairs(x) do
    local C = #row
    local m = -math.huge
    for _, v in ipairs(row) do m = math.max(m, v) end
    local s = 0
    for _, v in ipairs(row) do s = s + math.exp(v - m) end
    local lse = m + math.log(s)
    local l, wy = 0, 0
    if t[i] ~= ignore then
      wy = w and w[t[i]] or 1
      local smooth = 0
      for c = 1, C do smooth = smooth - (w and w[c] or 1) * (row[c] - lse) end
      l = (1 - eps) * wy * (lse - row[t[i]]) + eps / C * smooth
    end
    rows[i] = l
    total, wsum = total + l, wsum + wy
  end
  if reduction == "none" then return rows end
  if reduction == "sum" then return total end
  return total / wsum
end

function TestLosses:test_cross_entropy_against_formula()
  local x = { { 1, 2, 0.5 }, { -1, 0, 3 }, { 0.2, 0.2, 0.2 }, { 5, -5, 0 } }
  local t = { 2, 3, 1, -100 }
  local w = { 0.5, 2, 1 }
  local X, Tt, W = T(x), T(t, "int64"), T(w)
  for _, red in ipairs({ "mean", "sum", "none" }) do
    for _, eps in ipairs({ 0, 0.2 }) do
      H.assert_close(F.cross_entropy(X, Tt, { weight = W, label_smoothing = eps, reduction = red }),
                     ce_reference(x, t, w, -100, eps, red), 1e-5, 1e-6)
      H.assert_close(F.cross_entropy(X, Tt, { label_smoothing = eps, reduction = red }),
                     ce_reference(x, t, nil, -100, eps, red), 1e-5, 1e-6)
    end
  end
  -- nll of log_softmax equals cross_entropy
  H.assert_close(F.nll_loss(X:log_softmax(2), Tt, { weight = W }), F.cross_entropy(X, Tt, { weight = W }), 1e-5, 1e-6)
  -- spatial form: classes in dim 2
  local x4 = netcl.randn(2, 3, 4, 5, { device = dev })
  local t3 = netcl.randint(1, 4, { 2, 4, 5 }, { device = dev })
  H.assert_close(F.cross_entropy(x4, t3), F.cross_entropy(x4:permute(1, 3, 4, 2):reshape(40, 3), t3:reshape(40)), 1e-5, 1e-6)
end

function TestLosses:test_cross_entropy_float32_against_float64()
  -- float32 rows (vector tails, exp scratch blocks past 256 classes) with
  -- weights, label smoothing, ignored rows, and nll, against float64
  H.skip_without_fp64()
  netcl.manual_seed(49)
  for _, C in ipairs({ 1, 7, 33, 1000, 2051 }) do
    local x = netcl.randn(6, C, { device = dev }) * 3
    local t = netcl.randint(1, C + 1, { 6 }, { device = dev })
    t:narrow(1, 3, 1):fill_(-100)
    local w = netcl.rand(C, { device = dev }) + 0.5
    for _, o in ipairs({ {}, { weight = true }, { label_smoothing = 0.1 }, { weight = true, label_smoothing = 0.3 } }) do
      for _, red in ipairs({ "none", "mean" }) do
        local function run(dt)
          local xr = x:to(dt):clone():requires_grad_()
          local opts = { weight = o.weight and w:to(dt) or nil, label_smoothing = o.label_smoothing, reduction = red }
          local l = F.cross_entropy(xr, t, opts)
          l:sum():backward()
          return l, xr.grad
        end
        local l32, g32 = run("float32")
        local l64, g64 = run("float64")
        local what = ("C=%d %s%s %s"):format(C, o.weight and "weight " or "", o.label_smoothing or 0, red)
        H.assert_close(l32, l64:float(), 2e-6, 1e-6, "loss " .. what)
        H.assert_close(g32, g64:float(), 1e-5, 1e-7, "grad " .. what)
      end
    end
    local lp = x:log_softmax(2)
    local xr = lp:clone():requires_grad_()
    F.nll_loss(xr, t, { weight = w }):backward()
    local xr64 = lp:double():requires_grad_()
    F.nll_loss(xr64, t, { weight = w:double() }):backward()
    H.assert_close(xr.grad, xr64.grad:float(), 1e-6, 1e-8, "nll grad C=" .. C)
  end
end

function TestLosses:test_cpu_cross_entropy_row_ignores_position()
  lu.skipIf(not H.is_cpu, "checks the cpu backend's threaded cross-entropy rows: cpu only")
  netcl.manual_seed(50)
  local x = netcl.randn(40, 300, { device = dev }) * 2
  local t = netcl.randint(1, 301, { 40 }, { device = dev })
  local function per_row(xs, ts)
    local xr = xs:clone():requires_grad_()
    local l = F.cross_entropy(xr, ts, { reduction = "none", label_smoothing = 0.1 })
    l:sum():backward()
    return l, xr.grad
  end
  local l, g = per_row(x, t)
  for _, r in ipairs({ 1, 21, 40 }) do
    local l1, g1 = per_row(x:narrow(1, r, 1), t:narrow(1, r, 1))
    lu.assertEquals(l1:totable()[1], l:totable()[r])
    lu.assertEquals(g1:totable()[1], g:select(1, r):totable())
  end
end

function TestLosses:test_cross_entropy_bad_input()
  local x = netcl.randn(4, 3, { device = dev })
  H.assert_error(function() F.cross_entropy(x, netcl.tensor({ 1, 2, 3 }, { device = dev, dtype = "int64" })) end,
    "cross_entropy", "do not match")
  H.assert_error(function() F.cross_entropy(x, netcl.ones(4, { device = dev })) end, "cross_entropy", "integer")
  H.assert_error(function() F.cross_entropy(x, { 1, 2, 3, 1 }) end, "cross_entropy", "target must be a tensor")
  H.assert_error(function() F.cross_entropy(x, netcl.ones(4, { device = dev, dtype = "int64" }), { label_smoothing = 2 }) end,
    "label_smoothing")
  H.assert_error(function() F.cross_entropy(x, netcl.ones(4, { device = dev, dtype = "int64" }), { weight = netcl.ones(2, { device = dev }) }) end,
    "weight")
  local bad = netcl.tensor({ 1, 4, 2, 1 }, { device = dev, dtype = "int64" })
  if H.is_cpu then
    H.assert_error(function() F.cross_entropy(x, bad) end, "cross_entropy", "target 4 of row 1 is out of range for 3 classes")
  else -- devices report asynchronously: at the next blocking read
    local l = F.cross_entropy(x, bad, { reduction = "none" })
    H.assert_error(function() l:totable() end, "cross_entropy", "index 4 out of range", "size 3", "reported by the device")
    lu.assertEquals(F.cross_entropy(x, netcl.ones(4, { device = dev, dtype = "int64" })):size(), {})   -- usable again
  end
end
