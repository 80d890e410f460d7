-- netcl/nn/layers/conv.lua — Conv1d, Conv2d and ConvTranspose2d over the
-- engine's convolution ops (depthwise and grouped convolutions through
-- `groups`). Weights are [out, in/groups, k...] ([in, out/groups, kh, kw]
-- for the transposed one) with PyTorch's default initialisation:
-- kaiming_uniform(a = sqrt 5), i.e. U(+-1/sqrt(fan_in)), bias U(+-1/sqrt(fan_in)),
-- fan_in taken from the weight as PyTorch does. Options (a trailing table):
-- {stride = 1, padding = 0 | "same" | "valid", dilation = 1, groups = 1,
--  bias = true, padding_mode = "zeros" | "reflect" | "replicate" | "circular",
--  device =, dtype =}; sizes are numbers or {h, w} pairs.
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local init = require("netcl.nn.init_fns")
local F = require("netcl.nn.functional")
local core = require("netcl.core")
local Module, Parameter, throw = module.Module, module.Parameter, lib.throw

local M = {}

local function shape_str(x) return "[" .. table.concat(x:size(), ", ") .. "]" end

-- a positive (allow_zero: non-negative) integer, finite (lib.integer)
local function positive_int(who, what, v, allow_zero)
  lib.integer(who, what, v)
  if v < (allow_zero and 0 or 1) then
    lib.throw(("%s: %s must be a %s integer, got %s"):format(who, what, allow_zero and "non-negative" or "positive", tostring(v)))
  end
  return v
end

-- a number or a table of n numbers -> a list of n numbers
local function tuple(who, what, v, n, default, allow_zero)
  if v == nil then v = default end
  local out = {}
  if type(v) == "number" then
    for i = 1, n do out[i] = positive_int(who, what, v, allow_zero) end
  elseif type(v) == "table" and #v == n then
    for i = 1, n do out[i] = positive_int(who, what, v[i], allow_zero) end
  else
    throw(("%s: %s must be a number or a table of %d numbers, got %s"):format(who, what, n, tostring(v)))
  end
  return out
end

local MODES = { zeros = true, reflect = true, replicate = true, circular = true }

-- ---- the shared part ---------------------------------------------------------------

local ConvNd = Module:extend("_ConvNd")

-- nsp spatial dims; transposed: weight [in, out/groups, k...]
function ConvNd:_setup(who, nsp, transposed, in_channels, out_channels, kernel_size, opts)
  opts = opts or {}
  if type(opts) ~= "table" then throw(who .. ": options must be a table, got " .. type(opts)) end
  for k in pairs(opts) do
    if not (k == "stride" or k == "padding" or k == "dilation" or k == "groups" or k == "bias" or k == "padding_mode" or
            k == "device" or k == "dtype" or (transposed and k == "output_padding")) then
      throw(("%s: unknown option '%s'"):format(who, tostring(k)))
    end
  end
  self.in_channels = positive_int(who, "in_channels", in_channels)
  self.out_channels = positive_int(who, "out_channels", out_channels)
  self.kernel_size = tuple(who, "kernel_size", kernel_size, nsp)
  self.stride = tuple(who, "stride", opts.stride, nsp, 1)
  self.dilation = tuple(who, "dilation", opts.dilation, nsp, 1)
  self.groups = positive_int(who, "groups", opts.groups or 1)
  if in_channels % self.groups ~= 0 or out_channels % self.groups ~= 0 then
    throw(("%s: in_channels (%d) and out_channels (%d) must both be divisible by groups (%d)"):format(
      who, in_channels, out_channels, self.groups))
  end
  self.padding_mode = opts.padding_mode or "zeros"
  if not MODES[self.padding_mode] then
    throw(who .. ": padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', got " .. tostring(self.padding_mode))
  end
  local p = opts.padding or 0
  if p == "valid" then p = 0 end
  if p == "same" then
    if transposed then throw(who .. ": padding 'same' is not supported for transposed convolutions") end
    for i = 1, nsp do
      if self.stride[i] ~= 1 then throw(who .. ": padding 'same' needs stride 1") end
    end
    self.padding = "same"
    -- total padding d (k - 1) per dim, the odd unit on the right (PyTorch's rule)
    self._pads = {}
    for i = 1, nsp do
      local total = self.dilation[i] * (self.kernel_size[i] - 1)
      self._pads[i] = { math.floor(total / 2), total - math.floor(total / 2) }
    end
  else
    self.padding = tuple(who, "padding", p, nsp, 0, true)
    self._pads = {}
    for i = 1, nsp do self._pads[i] = { self.padding[i], self.padding[i] } end
  end
  if transposed then
    if self.padding_mode ~= "zeros" then throw(who .. ": only padding_mode 'zeros' is supported") end
    self.output_padding = tuple(who, "output_padding", opts.output_padding, nsp, 0, true)
    for i = 1, nsp do
      if self.output_padding[i] >= math.max(self.stride[i], self.dilation[i]) then
        throw(("%s: output_padding %d must be smaller than stride or dilation"):format(who, self.output_padding[i]))
      end
    end
  end
  self.transposed = transposed
  self._nsp = nsp
  local f = { device = opts.device, dtype = opts.dtype or "float32" }
  local wshape = transposed and { in_channels, out_channels / self.groups } or { out_channels, in_channels / self.groups }
  for i = 1, nsp do wshape[#wshape + 1] = self.kernel_size[i] end
  self.weight = Parameter(core.empty(wshape, f))
  if opts.bias ~= false then self.bias = Parameter(core.empty(out_channels, f)) end
  self:reset_parameters()
end

-- PyTorch's _ConvNd.reset_parameters
function ConvNd:reset_parameters()
  init.kaiming_uniform_(self.weight, math.sqrt(5))
  if self.bias then
    local fan_in = init.calculate_fan_in_and_fan_out(self.weight)
    local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
    init.uniform_(self.bias, -bound, bound)
  end
end

-- x must be [N, C, spatial...] or unbatched [C, spatial...] with C = in_channels
function ConvNd:_check(x)
  local nsp = self._nsp
  local d = x:dim()
  if d ~= nsp + 1 and d ~= nsp + 2 then
    throw(("%s: expected a %d-D or %d-D input ([N, C, %s] or unbatched), got shape %s"):format(
      self.__name, nsp + 2, nsp + 1, nsp == 1 and "L" or "H, W", shape_str(x)))
  end
  local c = x:size(d - nsp)
  if c ~= self.in_channels then
    throw(("%s: expected %d input channels, got %d (input shape %s)"):format(self.__name, self.in_channels, c, shape_str(x)))
  end
end

-- the explicit padding this module needs before the op (padding_mode or
-- an asymmetric 'same'), and the padding left to the op itself
function ConvNd:_pad(x)
  local nsp, pads = self._nsp, self._pads
  local symmetric = true
  for i = 1, nsp do if pads[i][1] ~= pads[i][2] then symmetric = false end end
  if self.padding_mode == "zeros" and symmetric then
    local p = {}
    for i = 1, nsp do p[i] = pads[i][1] end
    return x, p
  end
  local list, any = {}, false
  for i = nsp, 1, -1 do   -- F.pad order: last dim first
    list[#list + 1] = pads[i][1]; list[#list + 1] = pads[i][2]
    if pads[i][1] ~= 0 or pads[i][2] ~= 0 then any = true end
  end
  local zero = {}
  for i = 1, nsp do zero[i] = 0 end
  if not any then return x, zero end
  local mode = self.padding_mode == "zeros" and "constant" or self.padding_mode
  return x:pad(list, { mode = mode, value = 0 }), zero
end

function ConvNd:extra_repr()
  local k = table.concat(self.kernel_size, ", ")
  local s = ("%d, %d, kernel_size=(%s), stride=(%s)"):format(self.in_channels, self.out_channels, k, table.concat(self.stride, ", "))
  if self.padding == "same" then s = s .. ", padding=same"
  elseif self.padding[1] ~= 0 or (self.padding[2] or 0) ~= 0 then s = s .. ", padding=(" .. table.concat(self.padding, ", ") .. ")" end
  if self.dilation[1] ~= 1 or (self.dilation[2] or 1) ~= 1 then s = s .. ", dilation=(" .. table.concat(self.dilation, ", ") .. ")" end
  if self.output_padding and (self.output_padding[1] ~= 0 or (self.output_padding[2] or 0) ~= 0) then
    s = s .. ", output_padding=(" .. table.concat(self.output_padding, ", ") .. ")"
  end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  if not self.bias then s = s .. ", bias=false" end
  if self.padding_mode ~= "zeros" then s = s .. ", padding_mode=" .. self.padding_mode end
  return s
end

-- ---- Conv1d ------------------------------------------------------------------------

-- x [N, C_in, L] -> [N, C_out, L_out]; weight [C_out, C_in/groups, k]
local Conv1d = ConvNd:extend("Conv1d")
M.Conv1d = Conv1d
function Conv1d:__init(in_channels, out_channels, kernel_size, opts)
  self:_setup("Conv1d", 1, false, in_channels, out_channels, kernel_size, opts)
end
function Conv1d:forward(x)
  self:_check(x)
  local unbatched = x:dim() == 2
  if unbatched then x = x:unsqueeze(1) end
  local xp, p = self:_pad(x)
  local y = F.conv1d(xp, self.weight, self.bias, { stride = self.stride[1], padding = p[1], dilation = self.dilation[1],
                                                  groups = self.groups })
  return unbatched and y:squeeze(1) or y
end

-- ---- Conv2d ------------------------------------------------------------------------

-- x [N, C_in, H, W] -> [N, C_out, H_out, W_out]; weight [C_out, C_in/groups, kh, kw]
local Conv2d = ConvNd:extend("Conv2d")
M.Conv2d = Conv2d
function Conv2d:__init(in_channels, out_channels, kernel_size, opts)
  self:_setup("Conv2d", 2, false, in_channels, out_channels, kernel_size, opts)
end
function Conv2d:forward(x)
  self:_check(x)
  local xp, p = self:_pad(x)
  return F.conv2d(xp, self.weight, self.bias, { stride = self.stride, padding = p, dilation = self.dilation, groups = self.groups })
end

-- ---- ConvTranspose2d ----------------------------------------------------------------

-- x [N, C_in, H, W] -> [N, C_out, (H-1) s - 2 p + d (k-1) + output_padding + 1, ...];
-- weight [C_in, C_out/groups, kh, kw]. forward(x, output_size) picks
-- output_padding so that the result has output_size ({h, w}) spatially.
local ConvTranspose2d = ConvNd:extend("ConvTranspose2d")
M.ConvTranspose2d = ConvTranspose2d
function ConvTranspose2d:__init(in_channels, out_channels, kernel_size, opts)
  self:_setup("ConvTranspose2d", 2, true, in_channels, out_channels, kernel_size, opts)
end
function ConvTranspose2d:forward(x, output_size)
  self:_check(x)
  local op = self.output_padding
  if output_size ~= nil then
    if type(output_size) ~= "table" or #output_size < 2 then throw("ConvTranspose2d: output_size must be a table {..., h, w}") end
    op = {}
    local d = x:dim()
    for i = 1, 2 do
      local want = output_size[#output_size - 2 + i]
      local min = (x:size(d - 2 + i) - 1) * self.stride[i] - 2 * self.padding[i] + self.dilation[i] * (self.kernel_size[i] - 1) + 1
      op[i] = want - min
      if op[i] < 0 or op[i] >= math.max(self.stride[i], self.dilation[i]) then
        throw(("ConvTranspose2d: output size %d is not reachable from input %s (between %d and %d)"):format(
          want, shape_str(x), min, min + math.max(self.stride[i], self.dilation[i]) - 1))
      end
    end
  end
  return F.conv_transpose2d(x, self.weight, self.bias, { stride = self.stride, padding = self.padding, output_padding = op,
                                                        dilation = self.dilation, groups = self.groups })
end

return M
