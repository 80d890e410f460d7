-- netcl/nn/layers/norm.lua — BatchNorm1d/2d, LayerNorm and GroupNorm over
-- nn.functional's normalisation ops (composites in the engine, so each
-- differentiates with no hand-written backward). Defaults and state are
-- PyTorch's: weight ones, bias zeros; BatchNorm keeps running_mean (zeros),
-- running_var (ones) and num_batches_tracked (int64) as buffers, uses the
-- batch's statistics in training mode (updating the running ones with
-- `momentum`, the variance unbiased) and the running ones in eval mode;
-- with track_running_stats = false it always uses the batch's.
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local init = require("netcl.nn.init_fns")
local F = require("netcl.nn.functional")
local core = require("netcl.core")
local Module, Parameter, throw = module.Module, module.Parameter, lib.throw

local M = {}

local function shape_str(x) return "[" .. table.concat(x:size(), ", ") .. "]" end

local function positive_int(who, what, v)
  lib.integer(who, what, v)
  if v < 1 then lib.throw(("%s: %s must be a positive integer, got %s"):format(who, what, tostring(v))) end
  return v
end

local function options(who, opts, allowed)
  opts = opts or {}
  if type(opts) ~= "table" then throw(who .. ": options must be a table, got " .. type(opts)) end
  for k in pairs(opts) do
    if not allowed[k] then throw(("%s: unknown option '%s'"):format(who, tostring(k))) end
  end
  return opts
end

local function number(who, what, v, default)
  if v == nil then return default end
  if type(v) ~= "number" then throw(("%s: %s must be a number, got %s"):format(who, what, type(v))) end
  return v
end

-- ---- BatchNorm --------------------------------------------------------------------------

local BN_OPTS = { eps = true, momentum = true, affine = true, track_running_stats = true, device = true, dtype = true }

local BatchNorm = Module:extend("_BatchNorm")

function BatchNorm:_setup(who, num_features, opts)
  opts = options(who, opts, BN_OPTS)
  self.num_features = positive_int(who, "num_features", num_features)
  self.eps = number(who, "eps", opts.eps, 1e-5)
  self.momentum = number(who, "momentum", opts.momentum, 0.1)
  self.affine = opts.affine ~= false
  self.track_running_stats = opts.track_running_stats ~= false
  local f = { device = opts.device, dtype = opts.dtype or "float32" }
  if self.affine then
    self.weight = Parameter(core.ones(num_features, f))
    self.bias = Parameter(core.zeros(num_features, f))
  end
  if self.track_running_stats then
    self:register_buffer("running_mean", core.zeros(num_features, f))
    self:register_buffer("running_var", core.ones(num_features, f))
    self:register_buffer("num_batches_tracked", core.zeros({}, { device = opts.device, dtype = "int64" }))
  end
end

-- running_mean = 0, running_var = 1, num_batches_tracked = 0
function BatchNorm:reset_running_stats()
  if not self.track_running_stats then return end
  core.no_grad(function()
    self.running_mean:zero_(); self.running_var:fill_(1); self.num_batches_tracked:zero_()
  end)
end

function BatchNorm:reset_parameters()
  self:reset_running_stats()
  if self.affine then init.ones_(self.weight); init.zeros_(self.bias) end
end

-- x [N, C, ...]: dims accepted by the subclass (`_dims`); act (optional:
-- "relu", or another of conv2d's activations) ends it in that activation
-- and residual (optional, x's shape and dtype) is added before it, both
-- inside the batch norm's own passes (F.batch_norm's act and residual)
function BatchNorm:forward(x, act, residual)
  local d = x:dim()
  if not self._dims[d] then
    throw(("%s: expected a %s input, got shape %s"):format(self.__name, self._dims_text, shape_str(x)))
  end
  if x:size(2) ~= self.num_features then
    throw(("%s: expected %d channels in dim 2, got shape %s"):format(self.__name, self.num_features, shape_str(x)))
  end
  local use_batch = self.training or not self.track_running_stats
  if use_batch and x:numel() / self.num_features <= 1 then
    throw(("%s: expected more than 1 value per channel when training, got input shape %s"):format(self.__name, shape_str(x)))
  end
  local rm, rv
  if self.training and self.track_running_stats then
    rm, rv = self.running_mean, self.running_var
    local nbt = self.num_batches_tracked
    core.no_grad(nbt.add_, nbt, 1)
  elseif not self.training and self.track_running_stats then
    rm, rv = self.running_mean, self.running_var
  end
  return F.batch_norm(x, rm, rv, self.weight, self.bias, use_batch, self.momentum, self.eps,
                      (act or residual) and { act = act, residual = residual } or nil)
end

-- forward(x, "relu"[, residual]): Sequential and ResNet fuse a ReLU (and
-- ResNet a block's shortcut) into it
BatchNorm._relu_forward = BatchNorm.forward

function BatchNorm:extra_repr()
  return ("%d, eps=%g, momentum=%g, affine=%s, track_running_stats=%s"):format(self.num_features, self.eps, self.momentum,
    tostring(self.affine), tostring(self.track_running_stats))
end

-- [N, C] or [N, C, L]
local BatchNorm1d = BatchNorm:extend("BatchNorm1d")
M.BatchNorm1d = BatchNorm1d
BatchNorm1d._dims, BatchNorm1d._dims_text = { [2] = true, [3] = true }, "2-D [N, C] or 3-D [N, C, L]"
function BatchNorm1d:__init(num_features, opts) self:_setup("BatchNorm1d", num_features, opts) end

-- [N, C, H, W]
local BatchNorm2d = BatchNorm:extend("BatchNorm2d")
M.BatchNorm2d = BatchNorm2d
BatchNorm2d._dims, BatchNorm2d._dims_text = { [4] = true }, "4-D [N, C, H, W]"
function BatchNorm2d:__init(num_features, opts) self:_setup("BatchNorm2d", num_features, opts) end

-- ---- LayerNorm ---------------------------------------------------------------------------

-- normalises over the last #normalized_shape dims; weight/bias of that shape
local LayerNorm = Module:extend("LayerNorm")
M.LayerNorm = LayerNorm

function LayerNorm:__init(normalized_shape, opts)
  opts = options("LayerNorm", opts, { eps = true, elementwise_affine = true, bias = true, device = true, dtype = true })
  if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
  if type(normalized_shape) ~= "table" or #normalized_shape == 0 then
    throw("LayerNorm: normalized_shape must be a positive integer or a non-empty table of them")
  end
  local shape = {}
  for i, v in ipairs(normalized_shape) do shape[i] = positive_int("LayerNorm", "normalized_shape", v) end
  self.normalized_shape = shape
  self.eps = number("LayerNorm", "eps", opts.eps, 1e-5)
  self.elementwise_affine = opts.elementwise_affine ~= false
  local f = { device = opts.device, dtype = opts.dtype or "float32" }
  if self.elementwise_affine then
    self.weight = Parameter(core.ones(shape, f))
    if opts.bias ~= false then self.bias = Parameter(core.zeros(shape, f)) end
  end
end

function LayerNorm:reset_parameters()
  if self.weight then init.ones_(self.weight) end
  if self.bias then init.zeros_(self.bias) end
end

function LayerNorm:forward(x)
  local n, d = #self.normalized_shape, x:dim()
  local ok = d >= n
  for i = 1, n do
    if ok and x:size(d - n + i) ~= self.normalized_shape[i] then ok = false end
  end
  if not ok then
    throw(("LayerNorm: expected an input whose last dims are [%s], got shape %s"):format(
      table.concat(self.normalized_shape, ", "), shape_str(x)))
  end
  return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
end

function LayerNorm:extra_repr()
  return ("{%s}, eps=%g, elementwise_affine=%s"):format(table.concat(self.normalized_shape, ", "), self.eps,
    tostring(self.elementwise_affine))
end

-- ---- GroupNorm ---------------------------------------------------------------------------

-- x [N, C, ...] normalised per sample over groups of C/num_groups channels;
-- weight/bias [C] per channel
local GroupNorm = Module:extend("GroupNorm")
M.GroupNorm = GroupNorm

function GroupNorm:__init(num_groups, num_channels, opts)
  opts = options("GroupNorm", opts, { eps = true, affine = true, device = true, dtype = true })
  self.num_groups = positive_int("GroupNorm", "num_groups", num_groups)
  self.num_channels = positive_int("GroupNorm", "num_channels", num_channels)
  if num_channels % num_groups ~= 0 then
    throw(("GroupNorm: num_channels (%d) must be divisible by num_groups (%d)"):format(num_channels, num_groups))
  end
  self.eps = number("GroupNorm", "eps", opts.eps, 1e-5)
  self.affine = opts.affine ~= false
  local f = { device = opts.device, dtype = opts.dtype or "float32" }
  if self.affine then
    self.weight = Parameter(core.ones(num_channels, f))
    self.bias = Parameter(core.zeros(num_channels, f))
  end
end

function GroupNorm:reset_parameters()
  if self.affine then init.ones_(self.weight); init.zeros_(self.bias) end
end

function GroupNorm:forward(x)
  if x:dim() < 2 or x:size(2) ~= self.num_channels then
    throw(("GroupNorm: expected an input [N, %d, ...], got shape %s"):format(self.num_channels, shape_str(x)))
  end
  return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)
end

function GroupNorm:extra_repr()
  return ("%d, %d, eps=%g, affine=%s"):format(self.num_groups, self.num_channels, self.eps, tostring(self.affine))
end

return M
