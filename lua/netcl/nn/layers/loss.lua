-- netcl/nn/layers/loss.lua — loss modules over nn.functional's losses:
-- MSELoss, L1Loss, SmoothL1Loss, HuberLoss, BCELoss, BCEWithLogitsLoss,
-- KLDivLoss, CrossEntropyLoss, NLLLoss. Options are PyTorch's, in a table
-- ({reduction = "mean", ...}); weight tensors are buffers, so they move with
-- the module and are saved in its state.
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local F = require("netcl.nn.functional")
local Module, throw = module.Module, lib.throw

local M = {}

local REDUCTIONS = { mean = true, sum = true, none = true }
local TENSOR_OPTS = { weight = true, pos_weight = true }

-- A loss class: fn(self, input, target, opts) with opts rebuilt from the
-- module's fields (option name -> default) at each call.
local function loss_class(name, fn, defaults, extra_reductions)
  local cls = Module:extend(name)
  function cls:__init(opts)
    if opts ~= nil and type(opts) ~= "table" then throw(name .. ": options must be a table, got " .. type(opts)) end
    opts = opts or {}
    self.reduction = opts.reduction or "mean"
    if not (REDUCTIONS[self.reduction] or (extra_reductions and extra_reductions[self.reduction])) then
      throw(("%s: reduction must be 'none', 'mean' or 'sum', got %s"):format(name, tostring(self.reduction)))
    end
    for key, default in pairs(defaults or {}) do
      local v = opts[key]
      if TENSOR_OPTS[key] then
        if v ~= nil then self:register_buffer(key, v) end
      else
        if v == nil then v = default end
        self[key] = v
      end
    end
    for key in pairs(opts) do
      if key ~= "reduction" and (defaults == nil or defaults[key] == nil) then throw(name .. ": unknown option '" .. tostring(key) .. "'") end
    end
  end
  function cls:forward(input, target)
    local o = { reduction = self.reduction }
    for key in pairs(defaults or {}) do o[key] = self[key] end
    return fn(input, target, o)
  end
  function cls:extra_repr() return "reduction=" .. self.reduction end
  M[name] = cls
  return cls
end

-- `false` marks an optional tensor option (no default)
loss_class("MSELoss", F.mse_loss)
loss_class("L1Loss", F.l1_loss)
loss_class("SmoothL1Loss", F.smooth_l1_loss, { beta = 1 })
loss_class("HuberLoss", F.huber_loss, { delta = 1 })
loss_class("BCELoss", F.binary_cross_entropy, { weight = false })
loss_class("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits, { weight = false, pos_weight = false })
loss_class("KLDivLoss", F.kl_div, { log_target = false }, { batchmean = true })
loss_class("CrossEntropyLoss", F.cross_entropy, { weight = false, ignore_index = -100, label_smoothing = 0 })
loss_class("NLLLoss", F.nll_loss, { weight = false, ignore_index = -100 })

return M
