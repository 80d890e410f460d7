-- netcl/data/augment.lua — per-sample image augmentations on NCHW float32
-- or uint8 batches, returning fresh tensors on x's device. The explicit
-- forms (flip_horizontal, apply_color_jitter, cutout_at, erase_boxes,
-- crop) take their randomness from the caller and are pure functions of
-- (x, randomness): the same kernels run on cpu and OpenCL. The random forms
-- (random_erase, cutout, color_jitter) draw that randomness on the host from
-- netcl's global generator (seeded per batch inside a DataLoader).
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local util = require("netcl.data.util")
local core = require("netcl.core")
local C, throw = lib.C, lib.throw

local M = {}
local KIND = lib.enum("netcl_augment_kind", "NETCL_AUGMENT_")
local size2 = ffi.new("int64_t[2]")

local function image_batch(x, who)
  if not tensor.is_tensor(x) then throw(who .. ": x must be a tensor [N,C,H,W], got " .. type(x)) end
  if x:dim() ~= 4 then throw(("%s: x must be [N,C,H,W], got %d dims"):format(who, x:dim())) end
  return x:size(1), x:size(2), x:size(3), x:size(4)
end

-- float32 cpu tensor [n,k] from fill(buf) writing buf[0 .. n*k)
local function params(n, k, fill)
  local buf = ffi.new("float[?]", math.max(n * k, 1))
  fill(buf)
  size2[0], size2[1] = n, k
  return tensor.call1(C.netcl_tensor_from_host, util.cpu_handle(), tensor.DTYPE.float32, 2, size2, buf)
end
M.params = params

-- n*k uniform draws in [0,1) from the global generator, as a double buffer
local function uniforms(n, k)
  return (tensor.to_doubles(core.rand(math.max(n * k, 1), { device = "cpu" })))
end

-- per-sample values: a Lua list, a number (every sample) or a cpu/device tensor of n values
local function per_sample(v, n, who, what)
  if type(v) == "number" or type(v) == "boolean" then
    local out = {}
    for i = 1, n do out[i] = v end
    return out
  end
  if tensor.is_tensor(v) then v = require("netcl.data.util").flat_table(v) end
  if type(v) ~= "table" or #v ~= n then
    throw(("%s: %s must have one value per sample (%d), got %s"):format(who, what, n, type(v) == "table" and #v or type(v)))
  end
  return v
end

-- ---- explicit randomness (the GPU augmentations; any device) ------------------

-- flip sample n left-right where mask[n] is true / non-zero
function M.flip_horizontal(x, mask)
  local n = image_batch(x, "flip_horizontal")
  local m = per_sample(mask, n, "flip_horizontal", "mask")
  local p = params(n, 1, function(b) for i = 1, n do b[i - 1] = (m[i] and m[i] ~= 0) and 1 or 0 end end)
  return tensor.call1(C.netcl_augment, KIND.flip, tensor.handle(x), tensor.handle(p))
end

-- x*c[n] + b[n] per sample (uint8: rounded half to even, clamped to 0..255)
function M.apply_color_jitter(x, b, c)
  local n = image_batch(x, "apply_color_jitter")
  local bb, cc = per_sample(b, n, "apply_color_jitter", "b"), per_sample(c, n, "apply_color_jitter", "c")
  local p = params(n, 2, function(buf) for i = 1, n do buf[2 * i - 2], buf[2 * i - 1] = bb[i], cc[i] end end)
  return tensor.call1(C.netcl_augment, KIND.jitter, tensor.handle(x), tensor.handle(p))
end

-- boxes: per sample {top, left, h, w} (1-based top/left; h or w 0 = none), filled with value
function M.erase_boxes(x, boxes, value)
  local n = image_batch(x, "erase_boxes")
  if type(boxes) ~= "table" or #boxes ~= n then throw(("erase_boxes: need one box per sample (%d)"):format(n)) end
  local p = params(n, 5, function(buf)
    for i = 1, n do
      local bx = boxes[i]
      buf[5 * i - 5], buf[5 * i - 4], buf[5 * i - 3], buf[5 * i - 2] = bx[1] - 1, bx[2] - 1, bx[3], bx[4]
      buf[5 * i - 1] = value or 0
    end
  end)
  return tensor.call1(C.netcl_augment, KIND.erase, tensor.handle(x), tensor.handle(p))
end

-- zero a size x size square centred at centers[n] = {row, col} (1-based), clipped
function M.cutout_at(x, centers, size)
  local n = image_batch(x, "cutout")
  if type(size) ~= "number" or size < 0 or size ~= math.floor(size) then throw("cutout: size must be an integer >= 0") end
  if tensor.is_tensor(centers) then centers = centers:totable() end
  if type(centers) ~= "table" or #centers ~= n then throw(("cutout: need one center {row, col} per sample (%d)"):format(n)) end
  local boxes, half = {}, math.floor(size / 2)
  for i = 1, n do boxes[i] = { centers[i][1] - half, centers[i][2] - half, size, size } end
  return M.erase_boxes(x, boxes, 0)
end

-- crop out_h x out_w at offsets[n] = {top, left} (1-based) of x padded by `padding`
-- (mode "reflect" or "constant" with `value`)
function M.crop(x, offsets, padding, out_h, out_w, mode, value)
  local n = image_batch(x, "random_crop")
  if mode ~= nil and mode ~= "reflect" and mode ~= "constant" then
    throw(("random_crop: pad_mode must be 'reflect' or 'constant', got %s"):format(tostring(mode)))
  end
  local p = params(n, 2, function(buf)
    for i = 1, n do buf[2 * i - 2], buf[2 * i - 1] = offsets[i][1] - 1, offsets[i][2] - 1 end
  end)
  return tensor.call1(C.netcl_augment_crop, tensor.handle(x), tensor.handle(p), padding, out_h, out_w,
                      mode == "constant" and 0 or 1, value or 0)
end

-- ---- host randomness (the CPU augmentations; any device) -----------------------

-- Random Erasing: with probability p per sample, a box of scale*H*W area and
-- aspect ratio in `ratio` (log-uniform) at a uniform position = value.
function M.random_erase(x, opts)
  opts = opts or {}
  local n, _, h, w = image_batch(x, "random_erase")
  local p, scale, ratio = opts.p or 0.5, opts.scale or { 0.02, 0.2 }, opts.ratio or { 0.3, 3.3 }
  local u = uniforms(n, 5)
  local boxes = {}
  for i = 0, n - 1 do
    local box = { 1, 1, 0, 0 }
    if u[5 * i] < p then
      local area = h * w * (scale[1] + (scale[2] - scale[1]) * u[5 * i + 1])
      local r = math.exp(math.log(ratio[1]) + (math.log(ratio[2]) - math.log(ratio[1])) * u[5 * i + 2])
      local bh = math.min(h, math.floor(math.sqrt(area * r) + 0.5))
      local bw = math.min(w, math.floor(math.sqrt(area / r) + 0.5))
      box = { 1 + math.floor(u[5 * i + 3] * (h - bh + 1)), 1 + math.floor(u[5 * i + 4] * (w - bw + 1)), bh, bw }
    end
    boxes[i + 1] = box
  end
  return M.erase_boxes(x, boxes, opts.value or 0)
end

-- Cutout: a size x size square at a uniform centre (clipped) per sample = 0.
function M.cutout(x, size, centers)
  if centers ~= nil then return M.cutout_at(x, centers, size) end   -- the seed's GPU form cutout(x, centers, size) is cutout_at
  local n, _, h, w = image_batch(x, "cutout")
  local u = uniforms(n, 2)
  local c = {}
  for i = 0, n - 1 do c[i + 1] = { 1 + math.floor(u[2 * i] * h), 1 + math.floor(u[2 * i + 1] * w) } end
  return M.cutout_at(x, c, size)
end

-- Brightness and contrast jitter per sample: x*c + b with b uniform in
-- [-brightness, brightness] (times 255 for uint8) and c in [1-contrast, 1+contrast].
function M.color_jitter(x, opts)
  opts = opts or {}
  if (opts.saturation or 0) ~= 0 then throw("color_jitter: saturation is not supported (brightness and contrast only)") end
  local n = image_batch(x, "color_jitter")
  local br, ct = opts.brightness or 0.2, opts.contrast or 0.2
  local unit = x.dtype == "uint8" and 255 or 1
  local u = uniforms(n, 2)
  local b, c = {}, {}
  for i = 0, n - 1 do
    b[i + 1] = (2 * u[2 * i] - 1) * br * unit
    c[i + 1] = 1 + (2 * u[2 * i + 1] - 1) * ct
  end
  return M.apply_color_jitter(x, b, c)
end

-- The seed's GPU names: explicit randomness, kernels on x's device.
M.gpu = { flip_horizontal = M.flip_horizontal, apply_color_jitter = M.apply_color_jitter,
          cutout = function(x, centers, size) return M.cutout_at(x, centers, size) end }

return M
