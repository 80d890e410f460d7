-- netcl/optim/init.lua — the optim package: optimizers over flat buffers
-- (SGD, Momentum, Adam, AdamW, RMSprop, Adagrad), gradient clipping, and
-- optim.lr_scheduler.
local M = {}

M.Optimizer = require("netcl.optim.optimizer").Optimizer
for _, classes in ipairs({ require("netcl.optim.sgd"), require("netcl.optim.adam"), require("netcl.optim.rmsprop") }) do
  for name, cls in pairs(classes) do M[name] = cls end
end

local clip = require("netcl.optim.clip")
M.clip_grad_norm = clip.clip_grad_norm
M.clip_grad_norm_device = clip.clip_grad_norm_device
M.clip_grad_value = clip.clip_grad_value

M.lr_scheduler = require("netcl.optim.lr_scheduler")

return M
