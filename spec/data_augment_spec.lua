-- spec/data_augment_spec.lua — augmentations and filters: each one against
-- an independent pure-Lua reference on fixed randomness, on the device under
-- test (the OpenCL kernels thereby equal the cpu reference), for float32
-- and uint8 batches; the random forms' properties; bad input.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local aug = netcl.data.augment
local F = netcl.data.filters

-- a deterministic [N,C,H,W] batch as nested Lua tables and as a tensor
local function batch(n, c, h, w, dtype)
  local t = {}
  for a = 1, n do
    t[a] = {}
    for b = 1, c do
      t[a][b] = {}
      for i = 1, h do
        t[a][b][i] = {}
        for j = 1, w do
          local v = (a * 37 + b * 11 + i * 7 + j * 3) % 256
          t[a][b][i][j] = dtype == "uint8" and v or v / 10 - 5
        end
      end
    end
  end
  return t, netcl.tensor(t, { dtype = dtype, device = H.device })
end

-- reference: out[a][b][i][j] = f(a, i, j, v) over every element of a fresh copy
local function map(t, f)
  local out = {}
  for a = 1, #t do
    out[a] = {}
    for b = 1, #t[a] do
      out[a][b] = {}
      for i = 1, #t[a][b] do
        out[a][b][i] = {}
        for j = 1, #t[a][b][i] do out[a][b][i][j] = f(a, b, i, j, t[a][b][i][j]) end
      end
    end
  end
  return out
end

local function round_even(v)
  local f = math.floor(v)
  local d = v - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return f
end
local function u8(v) return math.max(0, math.min(255, round_even(v))) end

local function check(got, want, dtype, what)
  lu.assertEquals(got.device, H.device, what .. " device")
  lu.assertEquals(got.dtype, dtype, what .. " dtype")
  if dtype == "uint8" then lu.assertEquals(got:totable(), want, what) else H.assert_close(got, want, 1e-5, 1e-5, what) end
end

TestAugment = {}

function TestAugment:test_flip_horizontal()
  for _, dt in ipairs({ "float32", "uint8" }) do
    local t, x = batch(3, 2, 4, 5, dt)
    local mask = { true, false, 1 }
    local want = map(t, function(a, b, i, j) return t[a][b][i][(mask[a] and mask[a] ~= 0) and 6 - j or j] end)
    check(aug.flip_horizontal(x, mask), want, dt, "flip " .. dt)
    check(aug.gpu.flip_horizontal(x, netcl.tensor({ 1, 0, 1 }, { device = "cpu" })), want, dt, "flip (tensor mask) " .. dt)
  end
end

function TestAugment:test_color_jitter()
  for _, dt in ipairs({ "float32", "uint8" }) do
    local t, x = batch(3, 2, 3, 3, dt)
    local b, c = { 0.5, -20, 3.25 }, { 1.5, 0.75, 1 }
    local want = map(t, function(a, _, _, _, v)
      local r = (v * c[a]) + b[a]
      if dt == "uint8" then return u8(r) end
      return r
    end)
    check(aug.apply_color_jitter(x, b, c), want, dt, "jitter " .. dt)
  end
  -- uint8 half-way cases round to even and saturate
  local x = netcl.tensor({ { { { 1, 3, 250, 0 } } } }, { dtype = "uint8", device = H.device })
  lu.assertEquals(aug.apply_color_jitter(x, { 0.5 }, { 1 }):totable(), { { { { 2, 4, 250, 0 } } } })
  lu.assertEquals(aug.apply_color_jitter(x, { -10 }, { 2 }):totable(), { { { { 0, 0, 255, 0 } } } })
end

function TestAugment:test_cutout_and_erase()
  for _, dt in ipairs({ "float32", "uint8" }) do
    local t, x = batch(3, 2, 6, 6, dt)
    local centers = { { 1, 1 }, { 4, 3 }, { 6, 6 } }   -- 1-based, clipped at the borders
    local size = 3
    local want = map(t, function(a, _, i, j, v)
      local ci, cj = centers[a][1], centers[a][2]
      local top, left = ci - 1, cj - 1
      if i >= top and i < top + size and j >= left and j < left + size then return 0 end
      return v
    end)
    check(aug.gpu.cutout(x, centers, size), want, dt, "cutout " .. dt)
    local boxes = { { 2, 3, 2, 4 }, { 1, 1, 0, 0 }, { 5, 5, 9, 9 } }
    local want2 = map(t, function(a, _, i, j, v)
      local bx = boxes[a]
      if i >= bx[1] and i < bx[1] + bx[3] and j >= bx[2] and j < bx[2] + bx[4] then return 7 end
      return v
    end)
    check(aug.erase_boxes(x, boxes, 7), want2, dt, "erase " .. dt)
  end
end

function TestAugment:test_crop_reflect_and_constant()
  for _, dt in ipairs({ "float32", "uint8" }) do
    local t, x = batch(2, 2, 5, 4, dt)
    local pad, oh, ow = 2, 5, 4
    local offsets = { { 1, 1 }, { 4, 5 } }   -- 1-based in the padded image
    local function src(p, n, reflect)
      local s = p - pad        -- 1-based source index
      if s >= 1 and s <= n then return s end
      if not reflect then return nil end
      if s < 1 then return 2 - s end
      return 2 * n - s
    end
    for _, mode in ipairs({ "reflect", "constant" }) do
      local want = {}
      for a = 1, 2 do
        want[a] = {}
        for b = 1, 2 do
          want[a][b] = {}
          for i = 1, oh do
            want[a][b][i] = {}
            for j = 1, ow do
              local si = src(offsets[a][1] + i - 1, 5, mode == "reflect")
              local sj = src(offsets[a][2] + j - 1, 4, mode == "reflect")
              want[a][b][i][j] = (si and sj) and t[a][b][si][sj] or 9
            end
          end
        end
      end
      check(aug.crop(x, offsets, pad, oh, ow, mode, 9), want, dt, "crop " .. mode .. " " .. dt)
    end
  end
end

function TestAugment:test_random_forms_are_seeded_and_sane()
  local _, x = batch(8, 3, 10, 10, "float32")
  netcl.manual_seed(3)
  local a = aug.random_erase(x, { p = 1 }):totable()
  netcl.manual_seed(3)
  lu.assertEquals(aug.random_erase(x, { p = 1 }):totable(), a)
  H.assert_close(aug.random_erase(x, { p = 0 }), x, 0, 0, "p = 0 is the identity")
  local erased = (aug.random_erase(x, { p = 1, value = 1000 }):eq(1000)):sum(4):sum(3):sum(2):totable()
  for i = 1, 8 do lu.assertTrue(erased[i] >= 1 and erased[i] <= 3 * 100 * 0.2 * 1.6, "erased area " .. erased[i]) end
  local c = aug.cutout(x, 4)
  lu.assertEquals(c:size(), { 8, 3, 10, 10 })
  local j = aug.color_jitter(netcl.ones(4, 1, 2, 2, { device = H.device }), { brightness = 0.1, contrast = 0.2 }):totable()
  for i = 1, 4 do lu.assertTrue(j[i][1][1][1] >= 0.7 and j[i][1][1][1] <= 1.3) end
  H.assert_error(function() aug.color_jitter(x, { saturation = 0.3 }) end, "saturation")
end

function TestAugment:test_bad_input()
  H.assert_error(function() aug.flip_horizontal(netcl.zeros(2, 3, { device = H.device }), { 1, 1 }) end, "[N,C,H,W]")
  H.assert_error(function() aug.flip_horizontal(netcl.zeros(2, 1, 2, 2, { device = H.device }), { 1 }) end, "one value per sample")
  H.assert_error(function() aug.flip_horizontal(netcl.zeros(1, 1, 2, 2, { dtype = "int32", device = H.device }), { 1 }) end,
                 "float32 or uint8", "int32")
  H.assert_error(function() aug.crop(netcl.zeros(1, 1, 4, 4, { device = H.device }), { { 4, 4 } }, 1, 4, 4, "reflect") end,
                 "does not fit")
  H.assert_error(function() aug.crop(netcl.zeros(1, 1, 2, 2, { device = H.device }), { { 1, 1 } }, 2, 2, 2, "reflect") end,
                 "reflect padding 2 must be smaller")
  H.assert_error(function() F.random_crop(2, 8, "wrap") end, "pad_mode")
end

TestFilters = {}

function TestFilters:test_to_float_and_normalize()
  local t, x = batch(2, 3, 2, 2, "uint8")
  local y = netcl.tensor({ 1, 2 }, { dtype = "int64", device = H.device })
  local mean, std = { 0.1, 0.2, 0.3 }, { 0.5, 0.25, 2 }
  local xf, yy = F.apply_filters({ F.to_float(255), F.normalize(mean, std) }, x, y)
  local want = map(t, function(_, b, _, _, v) return (v / 255 - mean[b]) * (1 / std[b]) end)
  H.assert_close(xf, want, 1e-5, 1e-6, "to_float + normalize")
  lu.assertEquals(yy:totable(), { 1, 2 })
  lu.assertEquals(F.to_float()(xf).dtype, "float32")
end

function TestFilters:test_random_filters_follow_the_generator()
  local _, x32 = batch(2, 3, 32, 32, "uint8")
  netcl.manual_seed(4)
  local a = F.apply_filters(F.default_cifar10_filters(), x32):totable()
  netcl.manual_seed(4)
  local b = F.apply_filters(F.default_cifar10_filters(), x32)
  lu.assertEquals(b:size(), { 2, 3, 32, 32 })
  lu.assertEquals(b.dtype, "float32")
  lu.assertEquals(b:totable(), a)
  lu.assertEquals(F.apply_filters(F.basic_cifar10_filters(), x32):size(), { 2, 3, 32, 32 })
  local _, x = batch(6, 3, 8, 8, "uint8")
  -- p = 1 flips every sample, p = 0 none
  H.assert_close(F.horizontal_flip(1)(x), aug.flip_horizontal(x, { 1, 1, 1, 1, 1, 1 }), 0, 0, "p = 1")
  H.assert_close(F.horizontal_flip(0)(x), x, 0, 0, "p = 0")
  -- a crop the size of the padded image has one position
  local c = F.random_crop(1, 10, "constant")(x)
  lu.assertEquals(c:size(), { 6, 3, 10, 10 })
  lu.assertEquals(c:narrow(3, 1, 1):sum():item(), 0)
  -- user filters are plain functions, composed left to right
  local order = {}
  local f1 = function(u, v) order[#order + 1] = 1; return u, v end
  local f2 = function(u, v) order[#order + 1] = 2; return u, v end
  F.apply_filters({ f1, f2 }, x, 1)
  lu.assertEquals(order, { 1, 2 })
end
