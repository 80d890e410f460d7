-- netcl/optim/rmsprop.lua — RMSProp and Adagrad, PyTorch's updates fused
-- over each flat buffer.
-- RMSProp:  g = grad + wd p;  s = a s + (1 - a) g^2;  c = a c + (1 - a) g [centered]
--           d = sqrt(s - c^2) [centered] or sqrt(s), plus eps
--           b = mu b + g / d, p = p - lr b [momentum]; else p = p - lr g / d
-- Adagrad:  g = grad + wd p;  s = s + g^2;  p = p - lr / (1 + (t - 1) lr_decay) g / (sqrt(s) + eps)
local base = require("netcl.optim.optimizer")
local lib = require("netcl.lib")
local throw = lib.throw
local KIND, FLAG = base.KIND, base.FLAG

local M = {}

local function nonneg(who, g, keys)
  for _, k in ipairs(keys) do
    if type(g[k]) ~= "number" or g[k] < 0 then throw(("%s: %s must be a non-negative number, got %s"):format(who, k, tostring(g[k]))) end
  end
end

local RMSprop = base.Optimizer:extend("RMSprop")
M.RMSprop = RMSprop
RMSprop.DEFAULTS = { lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false, maximize = false }
RMSprop.STATES = { "square_avg", "momentum_buffer", "grad_avg" }

function RMSprop:validate(g) nonneg(self.__name, g, { "lr", "alpha", "eps", "weight_decay", "momentum" }) end

function RMSprop:update(g, b)
  base.live_state(b, "square_avg")
  local buf, avg
  if g.momentum ~= 0 then buf = "momentum_buffer"; base.live_state(b, buf) end
  if g.centered then avg = "grad_avg"; base.live_state(b, avg) end
  local flags = (g.centered and FLAG.centered or 0) + (g.maximize and FLAG.maximize or 0)
  base.launch(KIND.rmsprop, flags, b, g.lr, g.weight_decay, g.momentum, g.alpha, g.eps, 1, 1, "square_avg", buf, avg)
end

local Adagrad = base.Optimizer:extend("Adagrad")
M.Adagrad = Adagrad
Adagrad.DEFAULTS = { lr = 1e-2, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0, eps = 1e-10, maximize = false }
Adagrad.STATES = { "sum" }

function Adagrad:validate(g) nonneg(self.__name, g, { "lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps" }) end

function Adagrad:update(g, b, step)
  base.live_state(b, "sum", g.initial_accumulator_value)
  local clr = g.lr / (1 + (step - 1) * g.lr_decay)
  base.launch(KIND.adagrad, g.maximize and FLAG.maximize or 0, b, clr, g.weight_decay, 0, 0, g.eps, 1, 1, "sum")
end

M.RMSProp = RMSprop
return M
