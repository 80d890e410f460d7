-- netcl/image.lua — PNG files to and from uint8 tensors (libpng through
-- src/data/readers.c), and save_grid to look at a batch of images.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local core = require("netcl.core")
local C, throw = lib.C, lib.throw

local M = {}

-- load(path) -> uint8 cpu tensor [C,H,W] (C = 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA)
function M.load(path)
  if type(path) ~= "string" then throw("image.load: path must be a string, got " .. type(path)) end
  return tensor.call1(C.netcl_image_read_png, path)
end

-- float images in [0,1] -> uint8 (rounded, clamped); uint8 passes
local function to_uint8(t, who)
  if t.dtype == "uint8" then return t end
  if t.dtype == "float32" or t.dtype == "float64" or t.dtype == "float16" or t.dtype == "bfloat16" then
    return (t:float() * 255 + 0.5):clamp(0, 255):byte()
  end
  throw(("%s: need uint8 or float (0..1) pixels, got %s"):format(who, t.dtype))
end

-- save(t, path): uint8 [C,H,W] (C = 1..4) or [H,W] on any device; float
-- tensors are taken as 0..1 and scaled to 0..255.
function M.save(t, path)
  if not tensor.is_tensor(t) then throw("image.save: expected a tensor, got " .. type(t)) end
  if type(path) ~= "string" then throw("image.save: path must be a string, got " .. type(path)) end
  lib.check(C.netcl_image_write_png(tensor.handle(to_uint8(t, "image.save")), path))
end

-- save_grid(batch, path, {nrow=8, padding=2, normalize=true, pad_value=0}):
-- a [N,C,H,W] batch (C = 1 or 3) as one PNG of nrow images per row.
-- normalize maps the batch's min..max to 0..255 (float batches).
function M.save_grid(batch, path, opts)
  opts = opts or {}
  if not tensor.is_tensor(batch) or batch:dim() ~= 4 then throw("save_grid: batch must be a [N,C,H,W] tensor") end
  local n, c, h, w = unpack(batch:size())
  local nrow, pad = opts.nrow or 8, opts.padding or 2
  local x = batch:to("cpu")
  if x.dtype ~= "uint8" then
    x = x:float()
    if opts.normalize ~= false then
      local lo, hi = x:min():item(), x:max():item()
      x = (x - lo) / math.max(hi - lo, 1e-12)
    end
    x = to_uint8(x, "save_grid")
  end
  local cols = math.min(nrow, n)
  local rows = math.ceil(n / cols)
  local grid = core.full({ c, rows * (h + pad) + pad, cols * (w + pad) + pad }, opts.pad_value or 0,
                          { dtype = "uint8", device = "cpu" })
  for i = 0, n - 1 do
    local r, k = math.floor(i / cols), i % cols
    grid:narrow(2, r * (h + pad) + pad + 1, h):narrow(3, k * (w + pad) + pad + 1, w):copy_(x[i + 1])
  end
  M.save(grid, path)
  return grid
end

return M
