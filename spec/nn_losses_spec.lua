-- spec/nn_losses_spec.lua — the loss functions (nn.functional) and modules:
-- values against formulas computed here, every reduction, PyTorch's edge
-- rules (log clamp, stable logits form, 0 log 0), Jacobian checks (float64,
-- cpu), device results against the cpu, and clear errors.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local nn = netcl.nn
local L = nn.functional
local dev = H.device

local function T(v) return netcl.tensor(v, { device = dev }) end

local X = { 0.2, -1.5, 0.7, 2.5, -0.1, 0.05 }
local Y = { 0.1, 0.5, 0.9, -1, 0.3, 0.05 }

local function reduce_ref(vals, reduction)
  if reduction == "none" then return vals end
  local s = 0
  for _, v in ipairs(vals) do s = s + v end
  return reduction == "sum" and s or s / #vals
end

local function check_all(fn, pointwise, x, y, extra)
  for _, red in ipairs({ "mean", "sum", "none" }) do
    local opts = { reduction = red }
    for k, v in pairs(extra or {}) do opts[k] = v end
    local vals = {}
    for i = 1, #x do vals[i] = pointwise(x[i], y[i]) end
    H.assert_close(fn(T(x), T(y), opts), reduce_ref(vals, red), 1e-5, 1e-6, red)
  end
end

TestLosses = {}

function TestLosses:test_regression_losses()
  check_all(L.mse_loss, function(a, b) return (a - b) ^ 2 end, X, Y)
  check_all(L.l1_loss, function(a, b) return math.abs(a - b) end, X, Y)
  for _, beta in ipairs({ 1, 0.5 }) do
    check_all(L.smooth_l1_loss, function(a, b)
      local d = math.abs(a - b)
      return d < beta and 0.5 * d * d / beta or d - 0.5 * beta
    end, X, Y, { beta = beta })
  end
  check_all(L.smooth_l1_loss, function(a, b) return math.abs(a - b) end, X, Y, { beta = 0 })
  check_all(L.huber_loss, function(a, b)
    local d = math.abs(a - b)
    return d < 0.7 and 0.5 * d * d or 0.7 * (d - 0.35)
  end, X, Y, { delta = 0.7 })
  H.assert_close(nn.HuberLoss({ delta = 0.7 })(T(X), T(Y)), L.huber_loss(T(X), T(Y), { delta = 0.7 }))
  H.assert_close(nn.MSELoss()(T(X), T(Y)), L.mse_loss(T(X), T(Y)))
  H.assert_close(nn.SmoothL1Loss({ beta = 0.5, reduction = "sum" })(T(X), T(Y)), L.smooth_l1_loss(T(X), T(Y), { beta = 0.5, reduction = "sum" }))
  H.assert_close(nn.L1Loss({ reduction = "none" })(T(X), T(Y)), L.l1_loss(T(X), T(Y), { reduction = "none" }))
end

function TestLosses:test_binary_cross_entropy()
  local p = { 0.1, 0.5, 0.9, 0.999, 0, 1 }
  local t = { 0, 1, 1, 0, 1, 0 }
  local function bce(a, b)
    local la = a > 0 and math.max(math.log(a), -100) or -100
    local lb = a < 1 and math.max(math.log(1 - a), -100) or -100
    return -(b * la + (1 - b) * lb)
  end
  check_all(L.binary_cross_entropy, bce, p, t)
  local w = { 1, 2, 0.5, 1, 1, 3 }
  local vals = {}
  for i = 1, 6 do vals[i] = bce(p[i], t[i]) * w[i] end
  H.assert_close(nn.BCELoss({ weight = T(w), reduction = "sum" })(T(p), T(t)), reduce_ref(vals, "sum"), 1e-5)
end

function TestLosses:test_bce_with_logits_is_stable()
  local x = { -50, -2, 0, 0.5, 3, 60 }
  local t = { 0, 1, 0.3, 1, 0, 1 }
  local function sp(v) return math.max(v, 0) + math.log(1 + math.exp(-math.abs(v))) end   -- log(1 + e^v)
  check_all(L.binary_cross_entropy_with_logits, function(a, b) return b * sp(-a) + (1 - b) * sp(a) end, x, t)
  local pw = T({ 2, 2, 2, 2, 2, 2 })
  check_all(L.binary_cross_entropy_with_logits, function(a, b) return 2 * b * sp(-a) + (1 - b) * sp(a) end, x, t, { pos_weight = pw })
  local m = nn.BCEWithLogitsLoss({ pos_weight = netcl.tensor({ 3 }) })
  m:to(dev)
  lu.assertEquals(m.pos_weight.device, dev)
  local y = m(T({ { 1 }, { -1 } }), T({ { 1 }, { 0 } }))
  H.assert_close(y, (3 * sp(-1) + sp(-1)) / 2, 1e-5)
end

function TestLosses:test_kl_div()
  local lp = { math.log(0.2), math.log(0.5), math.log(0.3), math.log(0.6) }
  local t = { 0.1, 0.6, 0.3, 0 }
  check_all(L.kl_div, function(a, b) return b > 0 and b * (math.log(b) - a) or 0 end, lp, t)
  local lt = { math.log(0.1), math.log(0.6), math.log(0.3), -2 }
  check_all(L.kl_div, function(a, b) return math.exp(b) * (b - a) end, lp, lt, { log_target = true })
  local x2, t2 = T({ lp }), T({ t })
  local s = L.kl_div(x2, t2, { reduction = "sum" }):item()
  H.assert_close(L.kl_div(x2, t2, { reduction = "batchmean" }), s / 1)
  H.assert_close(nn.KLDivLoss({ reduction = "batchmean" })(T({ lp, lp }), T({ t, t })), s)
end

function TestLosses:test_classification_modules()
  netcl.manual_seed(1)
  local logits = netcl.randn(5, 4, { device = dev })
  local labels = netcl.tensor({ 1, 4, 2, 2, 3 }, { device = dev, dtype = "int64" })
  local ce = nn.CrossEntropyLoss()(logits, labels):item()
  local rows, want = logits:totable(), 0
  for i, r in ipairs(rows) do
    local z = 0
    for _, v in ipairs(r) do z = z + math.exp(v) end
    want = want - (r[labels:totable()[i]] - math.log(z))
  end
  lu.assertAlmostEquals(ce, want / 5, 1e-5)
  lu.assertAlmostEquals(nn.NLLLoss()(nn.LogSoftmax(2)(logits), labels):item(), want / 5, 1e-5)
end

function TestLosses:test_gradcheck()
  lu.skipIf(not H.is_cpu, "gradchecks run on the cpu backend in float64")
  netcl.manual_seed(2)
  local o = { dtype = "float64", device = "cpu" }
  local x = netcl.randn(3, 4, o):requires_grad_()
  local y = netcl.randn(3, 4, o)
  local p = (netcl.rand(3, 4, o) * 0.8 + 0.1):requires_grad_()
  local t = netcl.rand(3, 4, o)
  local lp = netcl.randn(3, 4, o):requires_grad_()
  local function ok(f, inputs) local r, err = netcl.autograd.gradcheck(f, inputs); lu.assertTrue(r, err) end
  ok(function(a) return L.mse_loss(a, y) end, { x })
  ok(function(a) return L.l1_loss(a, y, { reduction = "sum" }) end, { x })
  ok(function(a) return L.smooth_l1_loss(a, y, { beta = 0.7, reduction = "none" }) end, { x })
  ok(function(a) return L.binary_cross_entropy(a, t) end, { p })
  ok(function(a) return L.binary_cross_entropy_with_logits(a, t, { pos_weight = netcl.tensor({ 1, 2, 3, 0.5 }, o) }) end, { x })
  ok(function(a) return L.kl_div(a, t, { reduction = "batchmean" }) end, { lp })
  ok(function(a) return L.kl_div(a, y, { log_target = true }) end, { lp })
end

function TestLosses:test_match_cpu()
  H.against_cpu(function(d)
    netcl.manual_seed(3)
    local x, y = netcl.randn(4, 5, { device = d }), netcl.rand(4, 5, { device = d })
    return L.mse_loss(x, y), L.smooth_l1_loss(x, y, { reduction = "none" }), L.binary_cross_entropy_with_logits(x, y),
           L.kl_div(x:sigmoid():log(), y, { reduction = "sum" })
  end)
end

function TestLosses:test_class_loss_operands_at_offsets()
  -- the class losses (cross-entropy with label smoothing, nll) write the
  -- rows' losses and weights, and the backward its input's gradient, each
  -- from its own offset (a replayed program pointed at views: 3, 6 and 9
  -- elements in), reading logits and class weights that are views at
  -- offsets too; the results (and the logits' gradient after them) equal
  -- the eager ones on contiguous copies, and nothing outside the views is
  -- written
  local C, handle = require("netcl.lib").C, require("netcl.tensor").handle
  netcl.manual_seed(23)
  local rows, classes = 7, 5
  local xs = netcl.randn(rows * classes + 4, { device = dev })
  local ws = netcl.rand(classes + 3, { device = dev }) + 0.5
  local t = netcl.tensor({ 0, 4, 2, 1, 3, 2, 4 }, { dtype = "int64", device = dev })
  for _, case in ipairs({ { logp = 0, eps = 0.1, what = "cross-entropy" }, { logp = 1, eps = 0, what = "nll" } }) do
    local function run(x, w)
      local xi = x:clone():requires_grad_()
      local input = case.logp == 1 and xi:log_softmax(2) or xi
      local gin   -- the loss kernel's backward output, as it flows into input
      input:register_hook(function(g) gin = g end)
      local loss, wsum = H.call2(C.netcl_class_loss, handle(input), handle(t), handle(w), case.logp, 0, 2, case.eps)
      loss:pow(2):sum():backward()
      return loss, wsum, gin, xi.grad
    end
    local x, w = xs:narrow(1, 3, rows * classes):view(rows, classes), ws:narrow(1, 2, classes)
    local want = { run(x:contiguous(), w:contiguous()) }
    local got, bigs = H.replay_at_offsets(function() return run(x, w) end, { [1] = 3, [2] = 6, [3] = 9 }, -7)
    for r, name in ipairs({ "losses", "weights", "input gradient" }) do
      H.assert_close(got[r], want[r], 1e-6, 1e-7, case.what .. " " .. name)
      H.assert_untouched(bigs[r], 3 * r, want[r]:numel(), -7, case.what .. " " .. name)
    end
    H.assert_close(got[4], want[4], 1e-6, 1e-7, case.what .. " logits' gradient")
  end
end

function TestLosses:test_errors()
  H.assert_error(function() L.mse_loss(T({ 1, 2 }), T({ 1, 2, 3 })) end, "mse_loss: input float32[2]", "target float32[3]", "must have the same shape")
  H.assert_error(function() L.l1_loss(T({ 1 }), T({ 1 }), { reduction = "avg" }) end, "reduction must be 'none', 'mean' or 'sum', got avg")
  H.assert_error(function() nn.MSELoss({ reduction = "max" }) end, "MSELoss: reduction must be")
  H.assert_error(function() L.smooth_l1_loss(T({ 1 }), T({ 1 }), { beta = -1 }) end, "smooth_l1_loss: beta/delta must be >= 0")
  H.assert_error(function() L.kl_div(3, T({ 1 })) end, "expected a netcl tensor, got number")
  H.assert_error(function() nn.MSELoss({ beta = 1 }) end, "MSELoss: unknown option 'beta'")
end
