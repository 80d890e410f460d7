-- netcl/nn/functional.lua — the functional forms of the nn layers and
-- losses (PyTorch's names; options in a table). Every function is one
-- engine op or a short composition of ops, so all of them differentiate
-- with no hand-written backward. Class labels are 1-based.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local core = require("netcl.core")
local C, throw = lib.C, lib.throw
local H, call1, is_tensor = tensor.handle, tensor.call1, tensor.is_tensor
local M = {}

local function opt(h)
  return h and H(h) or nil
end

local function options(o, op)
  if o ~= nil and type(o) ~= "table" then throw(op .. ": options must be a table, got " .. type(o)) end
  return o or {}
end

local REDUCTIONS = lib.enum("netcl_reduction", "NETCL_REDUCTION_")
local function reduction(o, op, allow_batchmean)
  local r = o.reduction or "mean"
  local code = REDUCTIONS[r]
  if not code or (code == REDUCTIONS.batchmean and not allow_batchmean) then
    throw(("%s: reduction must be 'none', 'mean' or 'sum'%s, got %s"):format(op, allow_batchmean and " or 'batchmean'" or "",
      tostring(r)))
  end
  return code
end

-- ---- layers -------------------------------------------------------------------------

-- x [..., in] @ w[out, in]^T + b[out]
function M.linear(x, w, b) return core.linear(x, w, b) end
function M.bilinear(x1, x2, w, b)
  -- y[n, o] = x1[n, i] w[o, i, j] x2[n, j] + b[o]
  local o, i, j = w:size(1), w:size(2), w:size(3)
  local t = x1:matmul(w:permute(2, 1, 3):reshape(i, o * j)):view(-1, o, j)
  local y = (t * x2:unsqueeze(2)):sum(3)
  if b then y = y + b end
  return y
end

for _, name in ipairs({ "conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
                        "unfold", "fold" }) do
  M[name] = function(...) return core[name](...) end
end

for _, name in ipairs({ "relu", "relu6", "sigmoid", "tanh", "silu", "elu", "leaky_relu", "hardtanh", "gelu",
                        "softplus", "softmax", "log_softmax" }) do
  M[name] = function(x, ...)
    if not tensor.is_tensor(x) then throw(("%s: the input must be a tensor, got %s"):format(name, type(x))) end
    return x[name](x, ...)
  end
end
-- prelu(x, weight): weight of 1 or C elements, broadcast over dim 2
function M.prelu(x, weight)
  local w = weight
  if x:dim() >= 2 and weight:numel() > 1 then
    local shape = {}
    for d = 1, x:dim() do shape[d] = d == 2 and weight:numel() or 1 end
    w = weight:view(shape)
  end
  return x:relu() - w * (-x):relu()
end

-- batch_norm(x, running_mean, running_var, weight, bias, training, momentum = 0.1, eps = 1e-5,
--            {act = nil, slope = 0.01, residual = nil}): act(bn(x) + residual);
-- act ends it in an activation (as conv2d's); the residual (x's shape and
-- dtype) and a relu run inside the batch norm's own passes
function M.batch_norm(x, rm, rv, w, b, training, momentum, eps, o)
  o = options(o, "batch_norm")
  return call1(C.netcl_batch_norm_act, H(x), opt(o.residual), opt(rm), opt(rv), opt(w), opt(b), training and 1 or 0,
               momentum or 0.1, eps or 1e-5, lib.fused_act(o, "batch_norm"), o.slope or 0.01)
end
-- layer_norm(x, normalized_shape (a number or a table), weight, bias, eps = 1e-5)
function M.layer_norm(x, shape, w, b, eps)
  local n = type(shape) == "number" and 1 or (type(shape) == "table" and #shape) or nil
  if not n then throw("layer_norm: normalized_shape must be a number or a table of sizes") end
  if not is_tensor(x) then throw("layer_norm: expected a tensor input, got " .. type(x)) end
  -- the normalized shape must be the input's trailing sizes
  local sizes, want = x:size(), type(shape) == "number" and { shape } or shape
  local ok = n <= #sizes
  for i = 1, n do ok = ok and sizes[#sizes - n + i] == want[i] end
  if not ok then
    throw(("layer_norm: normalized_shape [%s] is not the trailing sizes of the input [%s]")
      :format(table.concat(want, ", "), table.concat(sizes, ", ")))
  end
  return call1(C.netcl_layer_norm, H(x), n, opt(w), opt(b), eps or 1e-5)
end
function M.group_norm(x, groups, w, b, eps)
  return call1(C.netcl_group_norm, H(x), groups, opt(w), opt(b), eps or 1e-5)
end
-- dropout(x, p = 0.5, training = true); dropout2d zeroes whole channels
local function probability(who, p)
  p = p == nil and 0.5 or p
  if type(p) ~= "number" or not (p >= 0 and p <= 1) then throw(("%s: p must be a probability in [0, 1], got %s"):format(who, tostring(p)), 3) end
  return p
end
function M.dropout(x, p, training)
  return call1(C.netcl_dropout, H(x), probability("dropout", p), training == false and 0 or 1, 0)
end
function M.dropout2d(x, p, training)
  return call1(C.netcl_dropout, H(x), probability("dropout2d", p), training == false and 0 or 1, 1)
end

-- interpolate(x, {size = n | {h, w}, scale_factor = f | {fh, fw},
--   mode = "nearest" | "linear" | "bilinear", align_corners = false})
local interp_size, interp_scale = ffi.new("int64_t[2]"), ffi.new("double[2]")
local NEAREST, LINEAR = C.NETCL_INTERP_NEAREST, C.NETCL_INTERP_LINEAR
function M.interpolate(x, o)
  o = options(o, "interpolate")
  local nsp = x:dim() - 2
  if nsp < 1 or nsp > 2 then throw("interpolate: expects [N, C, L] or [N, C, H, W], got " .. x:dim() .. " dims") end
  local mode = o.mode or "nearest"
  if mode ~= "nearest" and mode ~= "linear" and mode ~= "bilinear" then
    throw("interpolate: mode must be 'nearest', 'linear' or 'bilinear', got " .. tostring(mode))
  end
  if (o.size == nil) == (o.scale_factor == nil) then throw("interpolate: give exactly one of size and scale_factor") end
  local use_scale = o.scale_factor ~= nil
  for i = 1, nsp do
    local in_size = x:size(2 + i)
    if use_scale then
      local f = type(o.scale_factor) == "table" and o.scale_factor[i] or o.scale_factor
      if type(f) ~= "number" or f <= 0 then throw("interpolate: scale_factor must be positive numbers") end
      interp_scale[i - 1], interp_size[i - 1] = f, math.floor(in_size * f)
    else
      local s = type(o.size) == "table" and o.size[i] or o.size
      if type(s) ~= "number" then throw("interpolate: size must be a number or a table of numbers") end
      interp_scale[i - 1], interp_size[i - 1] = 0, s
    end
  end
  return call1(C.netcl_interpolate, H(x), interp_size, interp_scale, mode == "nearest" and NEAREST or LINEAR, o.align_corners and 1 or 0)
end

-- embedding(idx, weight, padding_idx): rows of weight [num, dim] at the
-- 1-based integer idx (any shape) -> [..., dim]; rows read at padding_idx
-- pass no gradient to the weight
local INT = { int32 = true, int64 = true, uint8 = true }
function M.embedding(idx, weight, padding_idx)
  if not is_tensor(idx) or not INT[idx.dtype] then
    throw("embedding: the indices must be an integer tensor, got " .. (is_tensor(idx) and idx.dtype or type(idx)))
  end
  local out = core.embedding(idx, weight)
  if padding_idx and weight.requires_grad and core.is_grad_enabled() then
    out = core.where(idx:ne(padding_idx):unsqueeze(-1), out, out:detach())
  end
  return out
end

-- pad(x, pads, value | {mode =, value =}): pads are (before, after) pairs, last dim first
function M.pad(x, pads, o) return x:pad(pads, o) end
-- upsample: PyTorch's older name of interpolate
M.upsample = function(x, o) return M.interpolate(x, o) end

-- labels (1-based integers) -> 0/1 one-hot of num_classes (float32 unless dtype), range-checked
function M.one_hot(labels, num_classes, dtype) return core.one_hot(labels, num_classes, dtype or "float32") end

-- ---- losses ------------------------------------------------------------------------

function M.mse_loss(a, b, o)
  o = options(o, "mse_loss")
  return call1(C.netcl_mse_loss, H(a), H(b), reduction(o, "mse_loss"))
end
function M.l1_loss(a, b, o)
  o = options(o, "l1_loss")
  return call1(C.netcl_l1_loss, H(a), H(b), reduction(o, "l1_loss"))
end
function M.smooth_l1_loss(a, b, o)
  o = options(o, "smooth_l1_loss")
  return call1(C.netcl_smooth_l1_loss, H(a), H(b), o.beta or 1, reduction(o, "smooth_l1_loss"))
end
function M.huber_loss(a, b, o)
  o = options(o, "huber_loss")
  return call1(C.netcl_huber_loss, H(a), H(b), o.delta or 1, reduction(o, "huber_loss"))
end
function M.binary_cross_entropy(p, y, o)
  o = options(o, "binary_cross_entropy")
  return call1(C.netcl_binary_cross_entropy, H(p), H(y), opt(o.weight), reduction(o, "binary_cross_entropy"))
end
function M.binary_cross_entropy_with_logits(x, y, o)
  o = options(o, "binary_cross_entropy_with_logits")
  return call1(C.netcl_binary_cross_entropy_with_logits, H(x), H(y), opt(o.weight), opt(o.pos_weight),
               reduction(o, "binary_cross_entropy_with_logits"))
end
-- kl_div(input log-probs, target, {reduction = "mean", log_target = false})
function M.kl_div(x, t, o)
  o = options(o, "kl_div")
  return call1(C.netcl_kl_div, H(x), H(t), reduction(o, "kl_div", true), o.log_target and 1 or 0)
end

-- cross_entropy(logits [N, C, ...], target [N, ...] of 1-based classes,
-- {weight = nil, ignore_index = -100, label_smoothing = 0, reduction = "mean"});
-- one fused kernel each way (log_softmax + nll)
local function target_handle(t, op)
  if not is_tensor(t) then throw(op .. ": target must be a tensor of 1-based class indices, got " .. type(t)) end
  return H(t)
end
function M.cross_entropy(logits, target, o)
  o = options(o, "cross_entropy")
  return call1(C.netcl_cross_entropy, H(logits), target_handle(target, "cross_entropy"), opt(o.weight), 1,
               o.ignore_index or -100, o.label_smoothing or 0, reduction(o, "cross_entropy"))
end
-- nll_loss(log-probabilities, target, {weight, ignore_index = -100, reduction = "mean"})
function M.nll_loss(logp, target, o)
  o = options(o, "nll_loss")
  return call1(C.netcl_nll_loss, H(logp), target_handle(target, "nll_loss"), opt(o.weight), 1, o.ignore_index or -100,
               reduction(o, "nll_loss"))
end
M.nll = M.nll_loss

tensor.name_functions(M)   -- messages about a bad argument name the function
return M
