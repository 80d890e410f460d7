-- netcl/nn/layers/loss.lua — loss modules: MSELoss, L1Loss, SmoothL1Loss,
-- BCELoss, BCEWithLogitsLoss, KLDivLoss (nn/losses.lua) and
-- CrossEntropyLoss, NLLLoss (nn.functional). Options are PyTorch's, in a
-- table: {reduction = "mean", ...}; weight tensors are buffers (they move
-- with the module and are saved in its state).
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local losses = require("netcl.nn.losses")
local F = require("netcl.nn.functional")
local Module, throw = module.Module, lib.throw

local M = {}

local REDUCTIONS = { mean = true, sum = true, none = true }

local function loss_class(name, fn, extra_keys, extra_reductions)
  local cls = Module:extend(name)
  function cls:__init(opts)
    if opts ~= nil and type(opts) ~= "table" then throw(name .. ": options must be a table, got " .. type(opts)) end
    opts = opts or {}
    self.reduction = opts.reduction or "mean"
    if not (REDUCTIONS[self.reduction] or (extra_reductions and extra_reductions[self.reduction])) then
      throw(("%s: reduction must be 'none', 'mean' or 'sum', got %s"):format(name, tostring(self.reduction)))
    end
    for key, default in pairs(extra_keys or {}) do
      local v = opts[key]
      if v == nil then v = default end
      if key == "weight" or key == "pos_weight" then
        if v then self:register_buffer(key, v) end
      else
        self[key] = v
      end
    end
  end
  function cls:forward(input, target) return fn(self, input, target) end
  function cls:extra_repr() return "reduction=" .. self.reduction end
  M[name] = cls
  return cls
end

loss_class("MSELoss", function(self, x, t) return losses.mse_loss(x, t, { reduction = self.reduction }) end)
loss_class("L1Loss", function(self, x, t) return losses.l1_loss(x, t, { reduction = self.reduction }) end)
loss_class("SmoothL1Loss", function(self, x, t)
  return losses.smooth_l1_loss(x, t, { reduction = self.reduction, beta = self.beta })
end, { beta = 1 })
loss_class("BCELoss", function(self, x, t)
  return losses.binary_cross_entropy(x, t, { reduction = self.reduction, weight = self.weight })
end, { weight = false })
loss_class("BCEWithLogitsLoss", function(self, x, t)
  return losses.binary_cross_entropy_with_logits(x, t, { reduction = self.reduction, weight = self.weight,
                                                         pos_weight = self.pos_weight })
end, { weight = false, pos_weight = false })
loss_class("KLDivLoss", function(self, x, t)
  return losses.kl_div(x, t, { reduction = self.reduction, log_target = self.log_target })
end, { log_target = false }, { batchmean = true })

-- options for nn.functional's classification losses; the first
-- nn.functional (cross_entropy(logits, labels), nll) takes none
local function class_opts(self, who)
  local o = { weight = self.weight, ignore_index = self.ignore_index, label_smoothing = self.label_smoothing,
              reduction = self.reduction }
  if F.nll_loss == nil and (o.weight or o.ignore_index ~= -100 or (o.label_smoothing or 0) ~= 0 or o.reduction ~= "mean") then
    throw(who .. ": weight, ignore_index, label_smoothing and reductions other than 'mean' need an " ..
          "nn.functional with nll_loss (this build's cross_entropy takes no options)")
  end
  return o
end

loss_class("CrossEntropyLoss", function(self, x, t) return F.cross_entropy(x, t, class_opts(self, "CrossEntropyLoss")) end,
           { weight = false, ignore_index = -100, label_smoothing = 0 })
loss_class("NLLLoss", function(self, x, t)
  local o = class_opts(self, "NLLLoss")
  if F.nll_loss then return F.nll_loss(x, t, o) end
  return F.nll(x, t)
end, { weight = false, ignore_index = -100 })

return M
