-- netcl/trainer/plot.lua — the picture of a run: loss and accuracy per
-- epoch as a PNG (netcl.image, libpng) with axes, ticks, tick labels and a
-- legend, drawn into an RGB buffer. Text uses a 5x7 bitmap font of the
-- characters labels need (lower case, digits, . - + % : / e, space).
local ffi = require("ffi")
local core = require("netcl.core")
local tensor = require("netcl.tensor")
local lib = require("netcl.lib")

local M = {}

-- each glyph: 7 rows of 5 columns, '#' = ink
local GLYPHS = {
  ["0"] = { ".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###." },
  ["1"] = { "..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###." },
  ["2"] = { ".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####" },
  ["3"] = { "####.", "....#", "....#", ".###.", "....#", "....#", "####." },
  ["4"] = { "...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#." },
  ["5"] = { "#####", "#....", "####.", "....#", "....#", "#...#", ".###." },
  ["6"] = { "..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###." },
  ["7"] = { "#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..." },
  ["8"] = { ".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###." },
  ["9"] = { ".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.." },
  ["a"] = { ".....", ".....", ".###.", "....#", ".####", "#...#", ".####" },
  ["b"] = { "#....", "#....", "####.", "#...#", "#...#", "#...#", "####." },
  ["c"] = { ".....", ".....", ".####", "#....", "#....", "#....", ".####" },
  ["d"] = { "....#", "....#", ".####", "#...#", "#...#", "#...#", ".####" },
  ["e"] = { ".....", ".....", ".###.", "#...#", "#####", "#....", ".###." },
  ["f"] = { "..##.", ".#...", "####.", ".#...", ".#...", ".#...", ".#..." },
  ["g"] = { ".....", ".####", "#...#", "#...#", ".####", "....#", ".###." },
  ["h"] = { "#....", "#....", "####.", "#...#", "#...#", "#...#", "#...#" },
  ["i"] = { "..#..", ".....", ".##..", "..#..", "..#..", "..#..", ".###." },
  ["j"] = { "...#.", ".....", "..##.", "...#.", "...#.", "#..#.", ".##.." },
  ["k"] = { "#....", "#....", "#..#.", "#.#..", "##...", "#.#..", "#..#." },
  ["l"] = { ".##..", "..#..", "..#..", "..#..", "..#..", "..#..", ".###." },
  ["m"] = { ".....", ".....", "##.#.", "#.#.#", "#.#.#", "#.#.#", "#.#.#" },
  ["n"] = { ".....", ".....", "####.", "#...#", "#...#", "#...#", "#...#" },
  ["o"] = { ".....", ".....", ".###.", "#...#", "#...#", "#...#", ".###." },
  ["p"] = { ".....", "####.", "#...#", "#...#", "####.", "#....", "#...." },
  ["q"] = { ".....", ".####", "#...#", "#...#", ".####", "....#", "....#" },
  ["r"] = { ".....", ".....", "#.##.", "##..#", "#....", "#....", "#...." },
  ["s"] = { ".....", ".....", ".####", "#....", ".###.", "....#", "####." },
  ["t"] = { ".#...", ".#...", "####.", ".#...", ".#...", ".#..#", "..##." },
  ["u"] = { ".....", ".....", "#...#", "#...#", "#...#", "#..##", ".##.#" },
  ["v"] = { ".....", ".....", "#...#", "#...#", "#...#", ".#.#.", "..#.." },
  ["w"] = { ".....", ".....", "#...#", "#...#", "#.#.#", "#.#.#", ".#.#." },
  ["x"] = { ".....", ".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#" },
  ["y"] = { ".....", "#...#", "#...#", "#...#", ".####", "....#", ".###." },
  ["z"] = { ".....", ".....", "#####", "...#.", "..#..", ".#...", "#####" },
  ["."] = { ".....", ".....", ".....", ".....", ".....", ".##..", ".##.." },
  ["-"] = { ".....", ".....", ".....", "#####", ".....", ".....", "....." },
  ["+"] = { ".....", "..#..", "..#..", "#####", "..#..", "..#..", "....." },
  ["%"] = { "##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##" },
  [":"] = { ".....", ".##..", ".##..", ".....", ".##..", ".##..", "....." },
  ["/"] = { ".....", "....#", "...#.", "..#..", ".#...", "#....", "....." },
  ["_"] = { ".....", ".....", ".....", ".....", ".....", ".....", "#####" },
  [" "] = { ".....", ".....", ".....", ".....", ".....", ".....", "....." },
}

-- drawn two font pixels lower: their tails hang below the line
local DESCENDERS = { g = true, j = true, p = true, q = true, y = true }

local Canvas = {}
Canvas.__index = Canvas

local function canvas(w, h)
  local c = setmetatable({ w = w, h = h, px = ffi.new("uint8_t[?]", 3 * w * h) }, Canvas)
  ffi.fill(c.px, 3 * w * h, 255)
  return c
end

function Canvas:set(x, y, rgb)
  x, y = math.floor(x + 0.5), math.floor(y + 0.5)
  if x < 0 or y < 0 or x >= self.w or y >= self.h then return end
  local plane = self.w * self.h
  for k = 0, 2 do self.px[k * plane + y * self.w + x] = rgb[k + 1] end
end

function Canvas:rect(x0, y0, x1, y1, rgb)
  for y = math.floor(y0), math.floor(y1) do for x = math.floor(x0), math.floor(x1) do self:set(x, y, rgb) end end
end

-- a line `width` pixels wide
function Canvas:line(x0, y0, x1, y1, rgb, width)
  local steps = math.max(math.abs(x1 - x0), math.abs(y1 - y0), 1)
  local r = math.floor((width or 1) / 2)
  for i = 0, steps do
    local x, y = x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps
    for dy = -r, (width or 1) - 1 - r do for dx = -r, (width or 1) - 1 - r do self:set(x + dx, y + dy, rgb) end end
  end
end

-- text at (x, y) = its top-left corner, `scale` pixels per font pixel;
-- returns its width
function Canvas:text(x, y, s, rgb, scale)
  scale = scale or 1
  s = tostring(s):lower()
  for i = 1, #s do
    local ch = s:sub(i, i)
    local g = GLYPHS[ch] or GLYPHS[" "]
    local y = y + (DESCENDERS[ch] and 2 * scale or 0)
    for row = 1, 7 do
      for col = 1, 5 do
        if g[row]:sub(col, col) == "#" then
          self:rect(x + (i - 1) * 6 * scale + (col - 1) * scale, y + (row - 1) * scale,
            x + (i - 1) * 6 * scale + col * scale - 1, y + row * scale - 1, rgb)
        end
      end
    end
  end
  return #s * 6 * scale
end

function M.text_width(s, scale) return #tostring(s) * 6 * (scale or 1) end

-- "nice" ticks over [lo, hi]: steps of 1, 2 or 5 times a power of ten
local function ticks(lo, hi, want)
  local span = hi - lo
  if span <= 0 then span = math.abs(hi) > 0 and math.abs(hi) or 1 end
  local raw = span / (want or 5)
  local p = 10 ^ math.floor(math.log10(raw))
  local step = p
  for _, m in ipairs({ 1, 2, 5, 10 }) do if m * p >= raw then step = m * p; break end end
  local out, v = {}, math.ceil(lo / step - 1e-9) * step
  while v <= hi + step * 1e-9 do
    out[#out + 1] = math.abs(v) < step * 1e-9 and 0 or v
    v = v + step
  end
  return out, step
end
M.ticks = ticks

local function label(v, step)
  local digits = math.max(0, -math.floor(math.log10(step) + 1e-9))
  return ("%." .. math.min(digits, 6) .. "f"):format(v)
end

local COLORS = { { 31, 119, 180 }, { 255, 127, 14 }, { 44, 160, 44 }, { 214, 39, 40 } }
local AXIS, GRID = { 40, 40, 40 }, { 225, 225, 225 }

-- one panel: series = { {name=, values={...}}, ... } over epochs 1..n
local function panel(c, x0, y0, w, h, title, series)
  local left, right, top, bottom = 62, 12, 26, 40
  local px0, px1, py0, py1 = x0 + left, x0 + w - right, y0 + top, y0 + h - bottom
  local lo, hi, n = math.huge, -math.huge, 1
  for _, s in ipairs(series) do
    for i, v in ipairs(s.values) do
      if v == v and math.abs(v) ~= math.huge then lo, hi = math.min(lo, v), math.max(hi, v) end
      n = math.max(n, i)
    end
  end
  if lo == math.huge then lo, hi = 0, 1 end
  if hi - lo < 1e-12 then lo, hi = lo - 0.5 * math.max(math.abs(lo), 1e-3), hi + 0.5 * math.max(math.abs(hi), 1e-3) end
  local pad = 0.06 * (hi - lo)
  lo, hi = lo - pad, hi + pad
  local function X(e) return n == 1 and (px0 + px1) / 2 or px0 + (px1 - px0) * (e - 1) / (n - 1) end
  local function Y(v) return py1 - (py1 - py0) * (v - lo) / (hi - lo) end
  c:text(x0 + (w - M.text_width(title, 2)) / 2, y0 + 4, title, AXIS, 2)
  -- y ticks, labels and grid
  local yt, ystep = ticks(lo, hi, 5)
  for _, v in ipairs(yt) do
    local y = Y(v)
    c:line(px0, y, px1, y, GRID, 1)
    c:line(px0 - 5, y, px0, y, AXIS, 1)
    local s = label(v, ystep)
    c:text(px0 - 8 - M.text_width(s), y - 3, s, AXIS, 1)
  end
  -- x ticks: epochs
  local xt = ticks(1, n, math.min(n, 8))
  for _, e in ipairs(xt) do
    if e == math.floor(e) and e >= 1 and e <= n then
      local x = X(e)
      c:line(x, py1, x, py1 + 5, AXIS, 1)
      local s = tostring(math.floor(e))
      c:text(x - M.text_width(s) / 2, py1 + 9, s, AXIS, 1)
    end
  end
  c:text((px0 + px1 - M.text_width("epoch")) / 2, py1 + 22, "epoch", AXIS, 1)
  -- axes
  c:line(px0, py0, px0, py1, AXIS, 2)
  c:line(px0, py1, px1, py1, AXIS, 2)
  -- the series: lines and point markers
  for k, s in ipairs(series) do
    local col = COLORS[(k - 1) % #COLORS + 1]
    local prev
    for i, v in ipairs(s.values) do
      if v == v and math.abs(v) ~= math.huge then
        local x, y = X(i), Y(v)
        if prev then c:line(prev[1], prev[2], x, y, col, 2) end
        c:rect(x - 2, y - 2, x + 2, y + 2, col)
        prev = { x, y }
      end
    end
  end
  -- legend, inside the plot at the right, in the half the curves end away from
  local lw, ends, count = 0, 0, 0
  for _, s in ipairs(series) do
    lw = math.max(lw, M.text_width(s.name))
    local v = s.values[#s.values]
    if v and v == v and math.abs(v) ~= math.huge then ends, count = ends + Y(v), count + 1 end
  end
  local low = count > 0 and ends / count < (py0 + py1) / 2
  local lx, ly = px1 - lw - 34, low and py1 - 10 - 12 * #series or py0 + 6
  c:rect(lx - 6, ly - 4, px1 - 4, ly + 12 * #series, { 255, 255, 255 })
  for k, s in ipairs(series) do
    local col = COLORS[(k - 1) % #COLORS + 1]
    c:line(lx, ly + 3 + (k - 1) * 12, lx + 20, ly + 3 + (k - 1) * 12, col, 2)
    c:text(lx + 26, ly + (k - 1) * 12, s.name, AXIS, 1)
  end
end

-- curves(history, path): history = list of per-epoch metric tables
-- (train_loss, val_loss, train_accuracy, val_accuracy, ...). Writes a PNG
-- with a loss panel and, when any accuracy was measured, an accuracy panel.
function M.curves(history, path)
  local function series(keys)
    local out = {}
    for _, k in ipairs(keys) do
      local vals, any = {}, false
      for i, h in ipairs(history) do
        vals[i] = h[k] or 0 / 0
        any = any or h[k] ~= nil
      end
      if any then out[#out + 1] = { name = k:gsub("_", " "), values = vals } end
    end
    return out
  end
  local loss, acc = series({ "train_loss", "val_loss" }), series({ "train_accuracy", "val_accuracy" })
  local panels = #acc > 0 and 2 or 1
  local W, Hh = 420 * panels, 320
  local c = canvas(W, Hh)
  panel(c, 0, 0, 420, Hh, "loss", loss)
  if #acc > 0 then panel(c, 420, 0, 420, Hh, "accuracy", acc) end
  local t = tensor.call1(lib.C.netcl_tensor_from_host, core.device("cpu").handle, lib.C.NETCL_DTYPE_UINT8, 3,
    ffi.new("int64_t[3]", 3, Hh, W), c.px)
  require("netcl.image").save(t, path)
  return t
end

return M
