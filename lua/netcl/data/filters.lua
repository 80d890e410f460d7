-- netcl/data/filters.lua — filters on (x, y, ...) batches: plain functions
-- taking the batch's fields and returning them, composed left to right.
-- The built-in ones transform x (NCHW) and pass the other fields through;
-- their randomness comes from netcl's global generator (a DataLoader seeds
-- it per batch), and they run on whatever device x is on.
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local augment = require("netcl.data.augment")
local core = require("netcl.core")
local throw = lib.throw

local M = {}

-- apply_filters(filters, x, y, ...) -> x, y, ...: one function or a list, left to right.
function M.apply_filters(filters, ...)
  if type(filters) == "function" then return filters(...) end
  if type(filters) ~= "table" then throw("apply_filters: filters must be a function or a list of functions, got " .. type(filters)) end
  local function step(i, ...)
    local f = filters[i]
    if f == nil then return ... end
    if type(f) ~= "function" then throw(("apply_filters: filter %d is a %s, not a function"):format(i, type(f))) end
    return step(i + 1, f(...))
  end
  return step(1, ...)
end

local function check_x(x, who)
  if not tensor.is_tensor(x) then throw(who .. ": x must be a tensor, got " .. type(x)) end
end

-- Integer x -> float32 / scale; float x passes unchanged.
function M.to_float(scale)
  scale = scale or 255
  return function(x, ...)
    check_x(x, "to_float")
    local dt = x.dtype
    if dt == "float32" or dt == "float64" or dt == "float16" or dt == "bfloat16" then return x, ... end
    return x:float() / scale, ...
  end
end

-- (x - mean[c]) / std[c] over dim 2 of NCHW (numbers apply to every channel)
function M.normalize(mean, std)
  local function list(v, name)
    if type(v) == "number" then return { v } end
    if type(v) ~= "table" or #v == 0 then throw(("normalize: %s must be a number or a list of numbers"):format(name)) end
    return v
  end
  mean, std = list(mean, "mean"), list(std, "std")
  if #mean ~= #std then throw(("normalize: %d means but %d stds"):format(#mean, #std)) end
  for i = 1, #std do if std[i] == 0 then throw("normalize: std " .. i .. " is 0") end end
  local cache = {}   -- per device: [1,C,1,1] mean and 1/std
  return function(x, ...)
    check_x(x, "normalize")
    if x:dim() ~= 4 then throw(("normalize: x must be [N,C,H,W], got %d dims"):format(x:dim())) end
    local c = x:size(2)
    if #mean ~= 1 and #mean ~= c then throw(("normalize: %d means for %d channels"):format(#mean, c)) end
    local key = x.device .. ":" .. c .. ":" .. x.dtype
    local k = cache[key]
    if not k then
      local m, r = {}, {}
      for i = 1, c do m[i], r[i] = mean[#mean == 1 and 1 or i], 1 / std[#std == 1 and 1 or i] end
      local o = { device = x.device, dtype = x.dtype }
      k = { core.tensor(m, o):view(1, c, 1, 1), core.tensor(r, o):view(1, c, 1, 1) }
      cache[key] = k
    end
    return (x - k[1]) * k[2], ...
  end
end

-- Flip each sample left-right with probability p.
function M.horizontal_flip(p)
  p = p or 0.5
  return function(x, ...)
    check_x(x, "horizontal_flip")
    local n = x:size(1)
    local u = tensor.to_doubles(core.rand(n, { device = "cpu" }))
    local mask = {}
    for i = 1, n do mask[i] = u[i - 1] < p end
    return augment.flip_horizontal(x, mask), ...
  end
end

-- Pad by `padding` (reflect or constant `fill`), then cut a crop_size
-- (number or {h, w}) window at a uniform position per sample.
function M.random_crop(padding, crop_size, pad_mode, fill)
  padding, pad_mode = padding or 4, pad_mode or "reflect"
  if pad_mode ~= "reflect" and pad_mode ~= "constant" then
    throw(("random_crop: pad_mode must be 'reflect' or 'constant', got %s"):format(tostring(pad_mode)))
  end
  return function(x, ...)
    check_x(x, "random_crop")
    if x:dim() ~= 4 then throw(("random_crop: x must be [N,C,H,W], got %d dims"):format(x:dim())) end
    local n, h, w = x:size(1), x:size(3), x:size(4)
    local ch, cw = crop_size or h, crop_size or w
    if type(crop_size) == "table" then ch, cw = crop_size[1], crop_size[2] end
    local ry, rx = h + 2 * padding - ch + 1, w + 2 * padding - cw + 1
    if ry < 1 or rx < 1 then
      throw(("random_crop: crop %dx%d does not fit %dx%d images padded by %d"):format(ch, cw, h, w, padding))
    end
    local u = tensor.to_doubles(core.rand(2 * n, { device = "cpu" }))
    local off = {}
    for i = 0, n - 1 do off[i + 1] = { 1 + math.floor(u[2 * i] * ry), 1 + math.floor(u[2 * i + 1] * rx) } end
    return augment.crop(x, off, padding, ch, cw, pad_mode, fill), ...
  end
end

M.CIFAR10_MEAN = { 0.4914, 0.4822, 0.4465 }
M.CIFAR10_STD = { 0.2023, 0.1994, 0.2010 }

-- The standard CIFAR-10 recipe: reflect-pad 4 and crop 32, flip, to float, normalize.
function M.default_cifar10_filters()
  return { M.random_crop(4, 32, "reflect"), M.horizontal_flip(0.5), M.to_float(255),
           M.normalize(M.CIFAR10_MEAN, M.CIFAR10_STD) }
end

-- No augmentation: to float and normalize only.
function M.basic_cifar10_filters()
  return { M.to_float(255), M.normalize(M.CIFAR10_MEAN, M.CIFAR10_STD) }
end

return M
