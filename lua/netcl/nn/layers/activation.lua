-- netcl/nn/layers/activation.lua — activation modules over the engine's
-- elementwise ops (each differentiable in C) and small composites:
-- ReLU, ReLU6, LeakyReLU, PReLU, ELU, GELU, SiLU, Sigmoid, Tanh, Hardtanh,
-- Softplus, Softmax, LogSoftmax. Arguments and defaults are PyTorch's; dims
-- are 1-based. `inplace` is accepted and ignored (results are always new
-- tensors, which autograd needs anyway).
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local F = require("netcl.nn.functional")
local core = require("netcl.core")
local Module, Parameter, throw = module.Module, module.Parameter, lib.throw

local M = {}

-- A module with no parameters applying fn(self, x).
local function simple(name, fn, repr)
  local cls = Module:extend(name)
  cls.forward = fn
  if repr then cls.extra_repr = repr end
  M[name] = cls
  return cls
end

simple("ReLU", function(_, x) return x:relu() end)
M.ReLU._plain_relu_forward = M.ReLU.forward   -- a module before it may run it (module.fuses_relu)
simple("ReLU6", function(_, x) return x:relu6() end)
simple("Sigmoid", function(_, x) return x:sigmoid() end)
simple("Tanh", function(_, x) return x:tanh() end)
simple("SiLU", function(_, x) return x:silu() end)

local function number(who, what, v, default)
  if v == nil then return default end
  if type(v) ~= "number" then throw(("%s: %s must be a number, got %s"):format(who, what, type(v))) end
  return v
end

local LeakyReLU = simple("LeakyReLU", function(self, x) return x:leaky_relu(self.negative_slope) end,
                         function(self) return "negative_slope=" .. self.negative_slope end)
function LeakyReLU:__init(negative_slope) self.negative_slope = number("LeakyReLU", "negative_slope", negative_slope, 0.01) end

local ELU = simple("ELU", function(self, x) return x:elu(self.alpha) end,
                   function(self) return "alpha=" .. self.alpha end)
function ELU:__init(alpha) self.alpha = number("ELU", "alpha", alpha, 1) end

-- approximate: "none" (erf form) or "tanh"
local GELU = simple("GELU", function(self, x) return x:gelu(self.approximate) end,
                    function(self) return "approximate=" .. self.approximate end)
function GELU:__init(approximate)
  approximate = approximate or "none"
  if approximate ~= "none" and approximate ~= "tanh" then throw("GELU: approximate must be 'none' or 'tanh', got " .. tostring(approximate)) end
  self.approximate = approximate
end

local Hardtanh = simple("Hardtanh", function(self, x) return x:clamp(self.min_val, self.max_val) end,
                        function(self) return ("min_val=%g, max_val=%g"):format(self.min_val, self.max_val) end)
function Hardtanh:__init(min_val, max_val)
  self.min_val = number("Hardtanh", "min_val", min_val, -1)
  self.max_val = number("Hardtanh", "max_val", max_val, 1)
  if self.min_val > self.max_val then throw(("Hardtanh: min_val %g is above max_val %g"):format(self.min_val, self.max_val)) end
end

-- softplus(x) = log(1 + exp(beta x)) / beta, and x itself where beta x > threshold
local Softplus = simple("Softplus", function(self, x) return x:softplus(self.beta, self.threshold) end,
                        function(self) return ("beta=%g, threshold=%g"):format(self.beta, self.threshold) end)
function Softplus:__init(beta, threshold)
  self.beta = number("Softplus", "beta", beta, 1)
  self.threshold = number("Softplus", "threshold", threshold, 20)
end

local Softmax = simple("Softmax", function(self, x) return F.softmax(x, self.dim) end,
                       function(self) return "dim=" .. self.dim end)
function Softmax:__init(dim) self.dim = number("Softmax", "dim", dim, -1) end

local LogSoftmax = simple("LogSoftmax", function(self, x) return F.log_softmax(x, self.dim) end,
                          function(self) return "dim=" .. self.dim end)
function LogSoftmax:__init(dim) self.dim = number("LogSoftmax", "dim", dim, -1) end

-- ---- PReLU -------------------------------------------------------------------------------

local PReLU = Module:extend("PReLU")
M.PReLU = PReLU

-- prelu(x) = relu(x) - a * relu(-x), a learnable per channel (dim 2) or shared
function PReLU:__init(num_parameters, init, opts)
  opts = opts or {}
  num_parameters = num_parameters or 1
  if type(num_parameters) ~= "number" or num_parameters < 1 or num_parameters ~= math.floor(num_parameters) then
    throw("PReLU: num_parameters must be a positive integer, got " .. tostring(num_parameters))
  end
  self.num_parameters = num_parameters
  self.init = number("PReLU", "init", init, 0.25)
  self.weight = Parameter(core.full({ num_parameters }, self.init, { device = opts.device, dtype = opts.dtype }))
end

function PReLU:forward(x)
  local a = self.weight
  local n = self.num_parameters
  if n > 1 then
    if x:dim() < 2 or x:size(2) ~= n then
      throw(("PReLU: %d parameters need an input with %d channels in dim 2, got shape [%s]"):format(
        n, n, table.concat(x:size(), ", ")))
    end
    local shape = { n }
    for _ = 3, x:dim() do shape[#shape + 1] = 1 end
    a = a:view(shape)
  end
  return x:relu() - a * (-x):relu()
end

function PReLU:extra_repr() return "num_parameters=" .. self.num_parameters end

return M
