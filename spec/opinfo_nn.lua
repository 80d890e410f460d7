-- spec/opinfo_nn.lua — cases for normalisation, dropout and the
-- elementwise losses.
return function(M)
  local R, P, T, U, case = M.R, M.P, M.T, M.U, M.case
  local F = require("netcl.nn.functional")
  case({ op = "batch_norm", inputs = { R(4, 3, 2, 3), R(3), R(3) },
         fn = function(x, w, b) return F.batch_norm(x, nil, nil, w, b, true) end })
  case({ op = "batch_norm", inputs = { R(5, 4) }, fn = function(x) return F.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-3) end })
  case({ op = "batch_norm", inputs = { R(2, 3, 4) }, label = "batch_norm_eval",
         fn = function(x, env) return F.batch_norm(x, env.tensor({ 0.1, -0.2, 0.3 }, env.dtype), env.tensor({ 1, 2, 0.5 }, env.dtype), nil, nil, false) end })
  case({ op = "layer_norm", inputs = { R(3, 4, 5), R(4, 5), R(4, 5) }, fn = function(x, w, b) return F.layer_norm(x, { 4, 5 }, w, b) end })
  case({ op = "layer_norm", inputs = { T(3, 6) }, fn = function(x) return F.layer_norm(x, 6) end })
  case({ op = "group_norm", inputs = { R(2, 6, 3, 2), R(6), R(6) }, fn = function(x, w, b) return F.group_norm(x, 3, w, b) end })
  case({ op = "group_norm", inputs = { R(3, 4, 5) }, fn = function(x) return F.group_norm(x, 2) end })
  local function seeded(f) return function(...) M.netcl.manual_seed(11); return f(...) end end
  case({ op = "dropout", inputs = { R(6, 7) }, fn = seeded(function(x) return F.dropout(x, 0.3) end) })
  case({ op = "dropout", inputs = { R(2, 3, 4, 4) }, fn = seeded(function(x) return F.dropout2d(x, 0.5) end), label = "dropout2d" })
  case({ op = "mse_loss", inputs = { R(3, 4), R(3, 4) }, fn = function(a, b) return F.mse_loss(a, b) end })
  case({ op = "mse_loss", inputs = { T(3, 4), R(3, 4) }, fn = function(a, b) return F.mse_loss(a, b, { reduction = "none" }) end })
  case({ op = "l1_loss", inputs = { R(5), R(5) }, fn = function(a, b) return F.l1_loss(a, b, { reduction = "sum" }) end })
  case({ op = "smooth_l1_loss", inputs = { U(-3, 3, 4, 5), U(-3, 3, 4, 5) },
         fn = function(a, b) return F.smooth_l1_loss(a, b, { beta = 0.5 }) end })
  case({ op = "huber_loss", inputs = { U(-3, 3, 4, 5), U(-3, 3, 4, 5) },
         fn = function(a, b) return F.huber_loss(a, b, { delta = 1.5, reduction = "sum" }) end })
  case({ op = "binary_cross_entropy", inputs = { U(0.05, 0.95, 3, 4), U(0, 1, 3, 4) },
         fn = function(p, y) return F.binary_cross_entropy(p, y) end })
  case({ op = "binary_cross_entropy", inputs = { U(0.05, 0.95, 6), U(0, 1, 6), P(6) },
         fn = function(p, y, w) return F.binary_cross_entropy(p, y, { weight = w, reduction = "none" }) end })
  case({ op = "binary_cross_entropy_with_logits", inputs = { U(-30, 30, 3, 4), U(0, 1, 3, 4) },
         fn = function(x, y) return F.binary_cross_entropy_with_logits(x, y) end })
  case({ op = "binary_cross_entropy_with_logits", inputs = { R(5, 3), U(0, 1, 5, 3), P(3) },
         fn = function(x, y, pw) return F.binary_cross_entropy_with_logits(x, y, { pos_weight = pw, reduction = "sum" }) end })
  case({ op = "kl_div", inputs = { R(4, 5), P(4, 5) }, fn = function(x, t) return F.kl_div(x, t, { reduction = "batchmean" }) end })
  case({ op = "kl_div", inputs = { R(4, 5), R(4, 5) }, fn = function(x, t) return F.kl_div(x, t, { log_target = true, reduction = "none" }) end })
  local function labels(env, n, c, seed, ignore_at)
    M.netcl.manual_seed(seed)
    local t = M.netcl.randint(1, c + 1, { n }, { device = env.device })
    if ignore_at then t[ignore_at] = -100 end
    return t
  end
  case({ op = "cross_entropy", inputs = { R(6, 5) }, fn = function(x, env) return F.cross_entropy(x, labels(env, 6, 5, 1)) end })
  -- class weights are constants (PyTorch gives them no gradient either)
  local function cw(env) return env.tensor({ 0.5, 1.5, 1, 2 }) end
  case({ op = "cross_entropy", inputs = { R(5, 4) }, label = "cross_entropy_weighted",
         fn = function(x, env) return F.cross_entropy(x, labels(env, 5, 4, 2, 3), { weight = cw(env), label_smoothing = 0.2 }) end })
  case({ op = "cross_entropy", inputs = { T(7, 3) }, label = "cross_entropy_sum",
         fn = function(x, env) return F.cross_entropy(x, labels(env, 7, 3, 3), { reduction = "sum", label_smoothing = 0.1 }) end })
  case({ op = "cross_entropy", inputs = { R(2, 4, 3, 2) }, label = "cross_entropy_spatial",
         fn = function(x, env) return F.cross_entropy(x, labels(env, 12, 4, 4):view(2, 3, 2), { reduction = "none" }) end })
  case({ op = "cross_entropy", inputs = { R(3, 300) }, label = "cross_entropy_wide",
         fn = function(x, env) return F.cross_entropy(x, labels(env, 3, 300, 5), { label_smoothing = 0.05 }) end })
  case({ op = { "nll_loss", "class_loss" }, inputs = { R(6, 5) }, fn = function(x, env) return F.nll_loss(x, labels(env, 6, 5, 6, 2)) end })
  case({ op = "nll_loss", inputs = { R(4, 4) }, label = "nll_weighted",
         fn = function(x, env) return F.nll_loss(x, labels(env, 4, 4, 7), { weight = cw(env), reduction = "none" }) end })
end
