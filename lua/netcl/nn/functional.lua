-- netcl/nn/functional.lua — neural-network functions composed from autograd
-- ops (so they differentiate with no hand-written backward): linear,
-- log_softmax, softmax, one_hot, nll and cross_entropy with 1-based labels.
local throw = require("netcl.lib").throw
local M = {}

local function netcl() return require("netcl") end

-- x [..., in] @ w[out, in]^T + b[out]
function M.linear(x, w, b) return netcl().linear(x, w, b) end

function M.relu(x) return x:relu() end

-- softmax / log_softmax along dim (default: the last), one kernel each way
function M.log_softmax(x, dim) return x:log_softmax(dim) end
function M.softmax(x, dim) return x:softmax(dim) end

-- labels [N] (1-based integers) -> float [N, C] of 0/1
function M.one_hot(labels, num_classes, dtype)
  local n = labels:numel()
  local classes = netcl().arange(1, num_classes + 1, { device = labels.device, dtype = "int64" }):view(1, num_classes)
  return labels:long():view(n, 1):eq(classes):cast(dtype or "float32")
end

-- mean negative log-likelihood of log-probabilities logp [N, C] at labels
function M.nll(logp, labels)
  local n, c = logp:size(1), logp:size(2)
  local lo, hi = labels:min():item(), labels:max():item()
  if lo < 1 or hi > c then
    throw(("nll: labels must be 1-based class indices in 1..%d, got %d..%d"):format(c, lo, hi))
  end
  return -(logp * M.one_hot(labels, c, logp.dtype)):sum() / n
end

function M.cross_entropy(logits, labels) return M.nll(M.log_softmax(logits, 2), labels) end

return M
