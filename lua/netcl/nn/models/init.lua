-- netcl/nn/models/init.lua — the model zoo: LeNet-5, an MLP builder and
-- the residual networks (ImageNet layout, CIFAR variants), each a plain
-- nn.Module built from the layers, with PyTorch/torchvision parameter
-- counts and initialisation. `nn.models.NAME(opts)`.
local lib = require("netcl.lib")
local containers = require("netcl.nn.containers")
local conv = require("netcl.nn.layers.conv")
local pool = require("netcl.nn.layers.pool")
local linear = require("netcl.nn.layers.linear")
local activation = require("netcl.nn.layers.activation")
local dropout = require("netcl.nn.layers.dropout")
local norm = require("netcl.nn.layers.norm")
local resnet = require("netcl.nn.models.resnet")
local module = require("netcl.nn.module")
local throw = lib.throw
local Sequential = containers.Sequential

local M = {}
for k, v in pairs(resnet) do M[k] = v end

local function options(who, opts, allowed)
  opts = opts or {}
  if type(opts) ~= "table" then throw(who .. ": options must be a table, got " .. type(opts)) end
  for k in pairs(opts) do if not allowed[k] then throw(("%s: unknown option '%s'"):format(who, tostring(k))) end end
  return opts
end

-- LeNet-5 for 28x28 inputs (LeCun et al. 1998, with today's ReLU and max-pooling):
-- conv 5x5 (6, padding 2) -> pool -> conv 5x5 (16) -> pool -> 400 -> 120 -> 84 -> classes.
-- 61,706 parameters for 1 channel and 10 classes.
-- opts: {num_classes = 10, in_channels = 1, activation = "relu" | "tanh", pool = "max" | "avg", device, dtype}
function M.lenet5(opts)
  opts = options("lenet5", opts, { num_classes = true, in_channels = true, activation = true, pool = true, device = true, dtype = true })
  local f = { device = opts.device, dtype = opts.dtype }
  local act = opts.activation or "relu"
  if act ~= "relu" and act ~= "tanh" then throw("lenet5: activation must be 'relu' or 'tanh', got " .. tostring(act)) end
  local kind = opts.pool or "max"
  if kind ~= "max" and kind ~= "avg" then throw("lenet5: pool must be 'max' or 'avg', got " .. tostring(kind)) end
  local function A() return act == "relu" and activation.ReLU() or activation.Tanh() end
  local function P() return kind == "max" and pool.MaxPool2d(2) or pool.AvgPool2d(2) end
  return Sequential(
    conv.Conv2d(opts.in_channels or 1, 6, 5, { padding = 2, device = f.device, dtype = f.dtype }), A(), P(),
    conv.Conv2d(6, 16, 5, f), A(), P(),
    linear.Flatten(),
    linear.Linear(400, 120, f), A(),
    linear.Linear(120, 84, f), A(),
    linear.Linear(84, opts.num_classes or 10, f))
end

local ACTIVATIONS = { relu = "ReLU", tanh = "Tanh", sigmoid = "Sigmoid", gelu = "GELU", silu = "SiLU", elu = "ELU",
                      leaky_relu = "LeakyReLU" }

-- mlp({in, hidden..., out}, {activation = "relu" (a name, a module class or a
-- function returning a module), dropout = 0, batch_norm = false, flatten = false,
-- bias = true, device, dtype}): Linear layers with the activation (and
-- batch-norm, dropout) between them, none after the last.
function M.mlp(sizes, opts)
  opts = options("mlp", opts, { activation = true, dropout = true, batch_norm = true, flatten = true, bias = true,
                                device = true, dtype = true })
  if type(sizes) ~= "table" or #sizes < 2 then throw("mlp: sizes must be a table {in, hidden..., out} of at least 2 sizes") end
  local act = opts.activation or "relu"
  local make_act
  if type(act) == "string" then
    local cls = ACTIVATIONS[act] and activation[ACTIVATIONS[act]]
    if not cls then throw("mlp: unknown activation '" .. act .. "'") end
    make_act = function() return cls() end
  elseif module.is_module(act) or (type(act) == "table" and act.__is_module) then
    make_act = function() return act() end
  elseif type(act) == "function" then
    make_act = act
  else
    throw("mlp: activation must be a name, an nn module class or a function, got " .. type(act))
  end
  local p = opts.dropout or 0
  local f = { device = opts.device, dtype = opts.dtype, bias = opts.bias }
  local seq = Sequential()
  if opts.flatten then seq:add(linear.Flatten()) end
  for i = 1, #sizes - 1 do
    seq:add(linear.Linear(sizes[i], sizes[i + 1], f))
    if i < #sizes - 1 then
      if opts.batch_norm then seq:add(norm.BatchNorm1d(sizes[i + 1], { device = f.device, dtype = f.dtype })) end
      seq:add(make_act())
      if p > 0 then seq:add(dropout.Dropout(p)) end
    end
  end
  return seq
end

return M
