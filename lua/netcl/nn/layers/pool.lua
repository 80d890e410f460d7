-- netcl/nn/layers/pool.lua — MaxPool2d, AvgPool2d, AdaptiveAvgPool2d and
-- Upsample (with UpsamplingNearest2d / UpsamplingBilinear2d) over the
-- engine's pooling and interpolation ops. Arguments are PyTorch's, options
-- in a trailing table; sizes are numbers or {h, w} pairs; inputs
-- [N, C, H, W] or unbatched [C, H, W] (Upsample: [N, C, L] or [N, C, H, W]).
-- MaxPool2d's indices (return_indices) are 1-based positions h*W + w + 1 in
-- each input plane.
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local F = require("netcl.nn.functional")
local Module, throw = module.Module, lib.throw

local M = {}

local function shape_str(x) return "[" .. table.concat(x:size(), ", ") .. "]" end

local function options(who, opts, allowed)
  opts = opts or {}
  if type(opts) ~= "table" then throw(who .. ": options must be a table, got " .. type(opts)) end
  for k in pairs(opts) do
    if not allowed[k] then throw(("%s: unknown option '%s'"):format(who, tostring(k))) end
  end
  return opts
end

-- a non-negative (positive unless allow_zero) integer or an {h, w} pair of them
local function pair(who, what, v, allow_zero)
  local low = allow_zero and 0 or 1
  local function ok(n) return type(n) == "number" and n == math.floor(n) and n >= low and n < 2 ^ 31 end
  if ok(v) then return v end
  if type(v) == "table" and #v == 2 and ok(v[1]) and ok(v[2]) then return { v[1], v[2] } end
  throw(("%s: %s must be a %s integer or an {h, w} pair, got %s"):format(who, what, allow_zero and "non-negative" or "positive",
    tostring(v)))
end

local function pair_str(v) return type(v) == "table" and ("(" .. v[1] .. ", " .. v[2] .. ")") or tostring(v) end

local function check_2d(who, x)
  local d = x:dim()
  if d ~= 3 and d ~= 4 then throw(("%s: expected a 4-D [N, C, H, W] or 3-D [C, H, W] input, got shape %s"):format(who, shape_str(x))) end
end

-- ---- MaxPool2d --------------------------------------------------------------------------

-- MaxPool2d(kernel_size, {stride = kernel_size, padding = 0, dilation = 1,
-- return_indices = false, ceil_mode = false}); with return_indices forward
-- returns (values, indices)
local MaxPool2d = Module:extend("MaxPool2d")
M.MaxPool2d = MaxPool2d

function MaxPool2d:__init(kernel_size, opts)
  opts = options("MaxPool2d", opts, { stride = true, padding = true, dilation = true, return_indices = true, ceil_mode = true })
  self.kernel_size = pair("MaxPool2d", "kernel_size", kernel_size)
  self.stride = opts.stride ~= nil and pair("MaxPool2d", "stride", opts.stride) or self.kernel_size
  self.padding = pair("MaxPool2d", "padding", opts.padding or 0, true)
  self.dilation = pair("MaxPool2d", "dilation", opts.dilation or 1)
  self.return_indices = opts.return_indices == true
  self.ceil_mode = opts.ceil_mode == true
end

function MaxPool2d:forward(x)
  check_2d("MaxPool2d", x)
  return F.max_pool2d(x, self.kernel_size, { stride = self.stride, padding = self.padding, dilation = self.dilation,
                                            ceil_mode = self.ceil_mode, return_indices = self.return_indices })
end

function MaxPool2d:extra_repr()
  return ("kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s"):format(pair_str(self.kernel_size),
    pair_str(self.stride), pair_str(self.padding), pair_str(self.dilation), tostring(self.ceil_mode))
end

-- ---- AvgPool2d ----------------------------------------------------------------------------

-- AvgPool2d(kernel_size, {stride = kernel_size, padding = 0, ceil_mode = false,
-- count_include_pad = true, divisor_override = nil})
local AvgPool2d = Module:extend("AvgPool2d")
M.AvgPool2d = AvgPool2d

function AvgPool2d:__init(kernel_size, opts)
  opts = options("AvgPool2d", opts, { stride = true, padding = true, ceil_mode = true, count_include_pad = true,
                                      divisor_override = true })
  self.kernel_size = pair("AvgPool2d", "kernel_size", kernel_size)
  self.stride = opts.stride ~= nil and pair("AvgPool2d", "stride", opts.stride) or self.kernel_size
  self.padding = pair("AvgPool2d", "padding", opts.padding or 0, true)
  self.ceil_mode = opts.ceil_mode == true
  self.count_include_pad = opts.count_include_pad ~= false
  if opts.divisor_override ~= nil then
    local d = opts.divisor_override
    if type(d) ~= "number" or d ~= math.floor(d) or d < 1 then
      throw("AvgPool2d: divisor_override must be a positive integer, got " .. tostring(d))
    end
    self.divisor_override = d
  end
end

function AvgPool2d:forward(x)
  check_2d("AvgPool2d", x)
  return F.avg_pool2d(x, self.kernel_size, { stride = self.stride, padding = self.padding, ceil_mode = self.ceil_mode,
                                            count_include_pad = self.count_include_pad, divisor_override = self.divisor_override })
end

function AvgPool2d:extra_repr()
  return ("kernel_size=%s, stride=%s, padding=%s"):format(pair_str(self.kernel_size), pair_str(self.stride), pair_str(self.padding))
end

-- ---- AdaptiveAvgPool2d ----------------------------------------------------------------------

-- AdaptiveAvgPool2d(output_size): averages over PyTorch's adaptive windows
-- (start floor(i H / h), end ceil((i + 1) H / h)) to [.., h, w]
local AdaptiveAvgPool2d = Module:extend("AdaptiveAvgPool2d")
M.AdaptiveAvgPool2d = AdaptiveAvgPool2d

function AdaptiveAvgPool2d:__init(output_size)
  self.output_size = pair("AdaptiveAvgPool2d", "output_size", output_size)
end

function AdaptiveAvgPool2d:forward(x)
  check_2d("AdaptiveAvgPool2d", x)
  return F.adaptive_avg_pool2d(x, self.output_size)
end

function AdaptiveAvgPool2d:extra_repr() return "output_size=" .. pair_str(self.output_size) end

-- ---- Upsample ----------------------------------------------------------------------------------

-- Upsample({size = n | {h, w}, scale_factor = f | {fh, fw}, mode = "nearest"
-- | "linear" | "bilinear", align_corners = false}) over F.interpolate
local Upsample = Module:extend("Upsample")
M.Upsample = Upsample

local MODES = { nearest = true, linear = true, bilinear = true }

function Upsample:__init(opts)
  opts = options("Upsample", opts, { size = true, scale_factor = true, mode = true, align_corners = true })
  if (opts.size == nil) == (opts.scale_factor == nil) then throw("Upsample: give exactly one of size and scale_factor") end
  self.size, self.scale_factor = opts.size, opts.scale_factor
  self.mode = opts.mode or "nearest"
  if not MODES[self.mode] then throw("Upsample: mode must be 'nearest', 'linear' or 'bilinear', got " .. tostring(self.mode)) end
  if opts.align_corners ~= nil and self.mode == "nearest" then
    throw("Upsample: align_corners only applies to the linear and bilinear modes")
  end
  self.align_corners = opts.align_corners == true
end

function Upsample:forward(x)
  local want = self.mode == "linear" and 3 or (self.mode == "bilinear" and 4 or nil)
  if (want and x:dim() ~= want) or (not want and x:dim() ~= 3 and x:dim() ~= 4) then
    throw(("Upsample: mode '%s' expects a %s input, got shape %s"):format(self.mode,
      want == 3 and "3-D [N, C, L]" or (want == 4 and "4-D [N, C, H, W]" or "3-D [N, C, L] or 4-D [N, C, H, W]"), shape_str(x)))
  end
  return F.interpolate(x, { size = self.size, scale_factor = self.scale_factor, mode = self.mode,
                            align_corners = self.mode ~= "nearest" and self.align_corners or nil })
end

local function list_str(v) return type(v) == "table" and ("{" .. table.concat(v, ", ") .. "}") or tostring(v) end
function Upsample:extra_repr()
  local s = self.size and ("size=" .. list_str(self.size)) or ("scale_factor=" .. list_str(self.scale_factor))
  s = s .. ", mode=" .. self.mode
  if self.mode ~= "nearest" then s = s .. ", align_corners=" .. tostring(self.align_corners) end
  return s
end

-- UpsamplingNearest2d({size =} | {scale_factor =}); UpsamplingBilinear2d: align_corners = true (PyTorch's)
local UpsamplingNearest2d = Upsample:extend("UpsamplingNearest2d")
M.UpsamplingNearest2d = UpsamplingNearest2d
function UpsamplingNearest2d:__init(opts)
  opts = options("UpsamplingNearest2d", opts, { size = true, scale_factor = true })
  Upsample.__init(self, { size = opts.size, scale_factor = opts.scale_factor, mode = "nearest" })
end

local UpsamplingBilinear2d = Upsample:extend("UpsamplingBilinear2d")
M.UpsamplingBilinear2d = UpsamplingBilinear2d
function UpsamplingBilinear2d:__init(opts)
  opts = options("UpsamplingBilinear2d", opts, { size = true, scale_factor = true })
  Upsample.__init(self, { size = opts.size, scale_factor = opts.scale_factor, mode = "bilinear", align_corners = true })
end

return M
