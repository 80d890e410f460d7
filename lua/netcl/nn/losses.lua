-- netcl/nn/losses.lua — loss functions composed from autograd ops, with
-- PyTorch's formulas and options: mse_loss, l1_loss, smooth_l1_loss,
-- binary_cross_entropy, binary_cross_entropy_with_logits, kl_div. Each takes
-- (input, target, opts) with opts.reduction "mean" (default), "sum" or
-- "none"; input and target must have one shape. None reads the device
-- back (no value checks that would need a sync: out-of-range inputs give NaN).
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local throw, is_tensor = lib.throw, tensor.is_tensor

local M = {}

local function shape_str(t) return "[" .. table.concat(t:size(), ", ") .. "]" end

local function check_pair(who, input, target)
  if not is_tensor(input) then throw(who .. ": input must be a tensor, got " .. type(input)) end
  if not is_tensor(target) then throw(who .. ": target must be a tensor, got " .. type(target)) end
  local a, b = input:size(), target:size()
  local same = #a == #b
  for i = 1, #a do same = same and a[i] == b[i] end
  if not same then
    throw(("%s: input %s and target %s must have the same shape (%s vs %s)"):format(
      who, shape_str(input), shape_str(target), input.dtype, target.dtype))
  end
end

local function options(who, opts)
  if opts ~= nil and type(opts) ~= "table" then throw(who .. ": options must be a table, got " .. type(opts)) end
  return opts or {}
end

function M.reduce(who, loss, reduction)
  if reduction == nil or reduction == "mean" then return loss:mean() end
  if reduction == "sum" then return loss:sum() end
  if reduction == "none" then return loss end
  throw(("%s: reduction must be 'none', 'mean' or 'sum', got %s"):format(who, tostring(reduction)))
end
local reduce = M.reduce

local function weighted(loss, w)
  if w == nil then return loss end
  if not is_tensor(w) then throw("loss weight must be a tensor, got " .. type(w)) end
  return loss * w
end

-- (input - target)^2
function M.mse_loss(input, target, opts)
  check_pair("mse_loss", input, target)
  return reduce("mse_loss", (input - target):square(), options("mse_loss", opts).reduction)
end

-- |input - target|
function M.l1_loss(input, target, opts)
  check_pair("l1_loss", input, target)
  return reduce("l1_loss", (input - target):abs(), options("l1_loss", opts).reduction)
end

-- 0.5 d^2 / beta where d = |input - target| < beta, else d - 0.5 beta (beta = 1)
function M.smooth_l1_loss(input, target, opts)
  check_pair("smooth_l1_loss", input, target)
  opts = options("smooth_l1_loss", opts)
  local beta = opts.beta == nil and 1 or opts.beta
  if type(beta) ~= "number" or beta < 0 then throw("smooth_l1_loss: beta must be a non-negative number, got " .. tostring(beta)) end
  local d = (input - target):abs()
  if beta == 0 then return reduce("smooth_l1_loss", d, opts.reduction) end
  local near = d:lt(beta):cast(d.dtype)
  local loss = d - beta * 0.5 + near * (d:square() * (0.5 / beta) - d + beta * 0.5)
  return reduce("smooth_l1_loss", loss, opts.reduction)
end

-- -(t log x + (1 - t) log(1 - x)), each log clamped at -100 (PyTorch's rule);
-- input holds probabilities in [0, 1]
function M.binary_cross_entropy(input, target, opts)
  check_pair("binary_cross_entropy", input, target)
  opts = options("binary_cross_entropy", opts)
  local lx = input:log():clamp(-100, nil)
  local l1x = (1 - input):log():clamp(-100, nil)
  local loss = -(target * lx + (1 - target) * l1x)
  return reduce("binary_cross_entropy", weighted(loss, opts.weight), opts.reduction)
end

-- BCE on logits in the stable form (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x);
-- pos_weight [C] weighs the positives of each class (the last dim)
function M.binary_cross_entropy_with_logits(input, target, opts)
  check_pair("binary_cross_entropy_with_logits", input, target)
  opts = options("binary_cross_entropy_with_logits", opts)
  local sp = (-input):softplus()
  local pw = opts.pos_weight
  local lw = sp
  if pw ~= nil then
    if not is_tensor(pw) then throw("binary_cross_entropy_with_logits: pos_weight must be a tensor, got " .. type(pw)) end
    lw = (target * (pw - 1) + 1) * sp
  end
  local loss = (1 - target) * input + lw
  return reduce("binary_cross_entropy_with_logits", weighted(loss, opts.weight), opts.reduction)
end

-- KL(target || input) pointwise with input as log-probabilities:
-- t (log t - x) (0 where t = 0), or exp(t) (t - x) when log_target.
-- reduction "batchmean" divides the sum by the batch size (dim 1).
function M.kl_div(input, target, opts)
  check_pair("kl_div", input, target)
  opts = options("kl_div", opts)
  local loss
  if opts.log_target then
    loss = target:exp() * (target - input)
  else
    local zero = target:eq(0):cast(target.dtype)   -- log(t + [t == 0]) makes t log t = 0 at t = 0
    loss = target * ((target + zero):log() - input)
  end
  if opts.reduction == "batchmean" then
    return loss:sum() / (input:dim() > 0 and input:size(1) or 1)
  end
  return reduce("kl_div", loss, opts.reduction)
end

return M
