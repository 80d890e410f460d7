-- netcl/optim/adam.lua — Adam (L2 weight decay, amsgrad, maximize) and
-- AdamW (decoupled weight decay). PyTorch's update, fused over each flat
-- buffer, with the bias corrections computed here from the step count:
--   p = p (1 - lr wd) [AdamW];  g = grad + wd p [Adam]
--   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  vmax = max(vmax, v) [amsgrad]
--   p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
local base = require("netcl.optim.optimizer")
local lib = require("netcl.lib")
local throw = lib.throw
local KIND, FLAG = base.KIND, base.FLAG

local M = {}

local Adam = base.Optimizer:extend("Adam")
M.Adam = Adam
Adam.DEFAULTS = { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, amsgrad = false, maximize = false }
Adam.STATES = { "exp_avg", "exp_avg_sq", "max_exp_avg_sq" }
Adam.decoupled = false

function Adam:validate(g)
  local who = self.__name
  for _, k in ipairs({ "lr", "eps", "weight_decay" }) do
    if type(g[k]) ~= "number" or g[k] < 0 then throw(("%s: %s must be a non-negative number, got %s"):format(who, k, tostring(g[k]))) end
  end
  local b = g.betas
  if type(b) ~= "table" or type(b[1]) ~= "number" or type(b[2]) ~= "number" or b[1] < 0 or b[1] >= 1 or b[2] < 0 or b[2] >= 1 then
    throw(who .. ": betas must be {beta1, beta2} with each in [0, 1)")
  end
end

function Adam:update(g, b, step)
  local b1, b2 = g.betas[1], g.betas[2]
  base.live_state(b, "exp_avg")
  base.live_state(b, "exp_avg_sq")
  local vmax
  if g.amsgrad then
    vmax = "max_exp_avg_sq"
    base.live_state(b, vmax)
  end
  local flags = (g.amsgrad and FLAG.amsgrad or 0) + (g.maximize and FLAG.maximize or 0)
  local wd, scale = g.weight_decay, 1
  if self.decoupled then wd, scale = 0, 1 - g.lr * g.weight_decay end
  base.launch(KIND.adam, flags, b, g.lr / (1 - b1 ^ step), wd, b1, b2, g.eps, math.sqrt(1 - b2 ^ step), scale,
              "exp_avg", "exp_avg_sq", vmax)
end

local AdamW = Adam:extend("AdamW")
M.AdamW = AdamW
AdamW.DEFAULTS = { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 1e-2, amsgrad = false, maximize = false }
AdamW.decoupled = true

return M
