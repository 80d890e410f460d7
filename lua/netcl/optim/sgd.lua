-- netcl/optim/sgd.lua — SGD (momentum, dampening, Nesterov, weight decay,
-- maximize) and Momentum (SGD with momentum 0.9 by default). PyTorch's
-- update, fused over each flat buffer:
--   g = grad + wd p;  b = g on the first step, else mu b + (1 - dampening) g
--   g = g + mu b (Nesterov) or b;  p = p - lr g
local base = require("netcl.optim.optimizer")
local lib = require("netcl.lib")
local throw = lib.throw
local KIND, FLAG = base.KIND, base.FLAG

local M = {}

local SGD = base.Optimizer:extend("SGD")
M.SGD = SGD
SGD.DEFAULTS = { lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false }
SGD.STATES = { "momentum_buffer" }

local function nonneg(who, g, k)
  if type(g[k]) ~= "number" or g[k] < 0 then throw(("%s: %s must be a non-negative number, got %s"):format(who, k, tostring(g[k]))) end
end

function SGD:validate(g)
  for _, k in ipairs({ "lr", "momentum", "dampening", "weight_decay" }) do nonneg(self.__name, g, k) end
  if g.nesterov and (g.momentum <= 0 or g.dampening ~= 0) then
    throw(self.__name .. ": Nesterov momentum needs momentum > 0 and dampening = 0")
  end
end

function SGD:update(g, b)
  local flags = (g.nesterov and FLAG.nesterov or 0) + (g.maximize and FLAG.maximize or 0)
  local buf
  if g.momentum ~= 0 then
    buf = "momentum_buffer"
    if not b.live[buf] then
      base.state_buffer(b, buf)
      b.live[buf] = true
      flags = flags + FLAG.first_step   -- the kernel starts the buffer as the gradient
    end
  end
  base.launch(KIND.sgd, flags, b, g.lr, g.weight_decay, g.momentum, g.dampening, 0, 1, 1, buf)
end

local Momentum = SGD:extend("Momentum")
M.Momentum = Momentum
Momentum.DEFAULTS = { lr = 1e-3, momentum = 0.9, dampening = 0, weight_decay = 0, nesterov = false, maximize = false }

function Momentum:validate(g)
  SGD.validate(self, g)
  if g.momentum <= 0 then throw("Momentum: momentum must be positive (use SGD for plain gradient descent)") end
end

return M
