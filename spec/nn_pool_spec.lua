-- spec/nn_pool_spec.lua — MaxPool2d (return_indices, padding, dilation,
-- ceil_mode), AvgPool2d (count_include_pad, divisor_override),
-- AdaptiveAvgPool2d and Upsample as modules: output shapes, forward
-- against loops in Lua doubles, Jacobian checks through the module
-- (float64, cpu), device vs cpu, save/load round trips, clear errors.
local lu = require("luaunit")
local H = require("helper")
local N = require("nn_helper")
local netcl = H.netcl
local nn, F = netcl.nn, netcl.nn.functional
local dev = H.device

-- a pool over every [H, W] plane of a [N, C, H, W] table: f(list of values, count incl. padding) per window
local function pool_ref(x, k, s, p, d, f, ceil)
  local Hh, W = #x[1][1], #x[1][1][1]
  local function osize(n)
    local v = (n + 2 * p - d * (k - 1) - 1) / s
    local o = (ceil and math.ceil(v) or math.floor(v)) + 1
    if ceil and (o - 1) * s >= n + p then o = o - 1 end
    return o
  end
  local OH, OW = osize(Hh), osize(W)
  local out = {}
  for n = 1, #x do
    out[n] = {}
    for c = 1, #x[n] do
      out[n][c] = {}
      for i = 1, OH do
        out[n][c][i] = {}
        for j = 1, OW do
          local vals, idx, padded = {}, {}, 0
          for ki = 0, k - 1 do
            for kj = 0, k - 1 do
              local r, q = (i - 1) * s - p + ki * d, (j - 1) * s - p + kj * d
              if r >= 0 and r < Hh and q >= 0 and q < W then
                vals[#vals + 1] = x[n][c][r + 1][q + 1]; idx[#idx + 1] = r * W + q + 1
              elseif r < Hh + p and q < W + p then
                padded = padded + 1
              end
            end
          end
          out[n][c][i][j] = f(vals, idx, #vals + padded)
        end
      end
    end
  end
  return out
end

local function max_of(vals) local m = -math.huge; for _, v in ipairs(vals) do m = math.max(m, v) end; return m end
local function argmax_of(vals, idx)
  local m, at = -math.huge, nil
  for i, v in ipairs(vals) do if v > m then m, at = v, idx[i] end end
  return at
end

TestPoolLayers = {}

function TestPoolLayers:test_max_pool()
  netcl.manual_seed(1)
  local x = netcl.randn(2, 3, 7, 6, { device = dev })
  local xt = x:totable()
  for _, c in ipairs({ { 2, {}, 2, 0, 1, false }, { 3, { stride = 2, padding = 1 }, 2, 1, 1, false },
                       { 2, { stride = 1, dilation = 2 }, 1, 0, 2, false }, { 3, { stride = 2, ceil_mode = true }, 2, 0, 1, true } }) do
    local k, o, s, p, d, ceil = unpack(c)
    local m = nn.MaxPool2d(k, o)
    H.assert_close(m(x), pool_ref(xt, k, s, p, d, max_of, ceil), 0, 0, tostring(m))
  end
  local m = nn.MaxPool2d(2, { return_indices = true })
  local v, idx = m(x)
  lu.assertEquals(idx.dtype, "int64")
  lu.assertEquals(idx:totable(), pool_ref(xt, 2, 2, 0, 1, argmax_of))
  lu.assertEquals(v:size(), { 2, 3, 3, 3 })
  lu.assertEquals(nn.MaxPool2d({ 2, 3 })(netcl.zeros(3, 6, 6, { device = dev })):size(), { 3, 3, 2 })   -- unbatched
  lu.assertStrContains(tostring(nn.MaxPool2d(3, { stride = 2, padding = 1 })), "MaxPool2d(kernel_size=3, stride=2, padding=1")
end

-- without return_indices no index tensor outlives the call: only the
-- output's bytes stay in use (an int64 index tensor would add twice as many)
function TestPoolLayers:test_max_pool_keeps_no_unasked_indices()
  local x = netcl.randn(4, 3, 16, 16, { device = dev })
  collectgarbage("collect")
  local before = netcl.memory_stats(dev).bytes_in_use
  local y = netcl.no_grad(function() return F.max_pool2d(x, 2) end)
  local grown = netcl.memory_stats(dev).bytes_in_use - before
  lu.assertTrue(grown >= y:numel() * 4 and grown < 2 * y:numel() * 4, "bytes kept: " .. grown)
end

function TestPoolLayers:test_avg_pools()
  netcl.manual_seed(2)
  local x = netcl.randn(2, 2, 6, 5, { device = dev })
  local xt = x:totable()
  local function mean_incl(vals, _, n) local s = 0; for _, v in ipairs(vals) do s = s + v end; return s / n end
  local function mean_excl(vals) local s = 0; for _, v in ipairs(vals) do s = s + v end; return s / #vals end
  local function sum9(vals) local s = 0; for _, v in ipairs(vals) do s = s + v end; return s / 9 end
  H.assert_close(nn.AvgPool2d(2)(x), pool_ref(xt, 2, 2, 0, 1, mean_incl), 1e-5, 1e-6, "k2")
  H.assert_close(nn.AvgPool2d(3, { stride = 2, padding = 1 })(x), pool_ref(xt, 3, 2, 1, 1, mean_incl), 1e-5, 1e-6, "count pad")
  H.assert_close(nn.AvgPool2d(3, { stride = 2, padding = 1, count_include_pad = false })(x), pool_ref(xt, 3, 2, 1, 1, mean_excl),
                 1e-5, 1e-6, "exclude pad")
  H.assert_close(nn.AvgPool2d(3, { stride = 1, padding = 1, divisor_override = 9 })(x), pool_ref(xt, 3, 1, 1, 1, sum9), 1e-5, 1e-6,
                 "divisor_override")
  -- adaptive: window i covers floor(i H / h) .. ceil((i + 1) H / h) - 1 (0-based)
  local a = nn.AdaptiveAvgPool2d({ 4, 3 })(x)
  lu.assertEquals(a:size(), { 2, 2, 4, 3 })
  local want = {}
  for n = 1, 2 do
    want[n] = {}
    for c = 1, 2 do
      want[n][c] = {}
      for i = 0, 3 do
        want[n][c][i + 1] = {}
        for j = 0, 2 do
          local r0, r1 = math.floor(i * 6 / 4), math.ceil((i + 1) * 6 / 4)
          local q0, q1 = math.floor(j * 5 / 3), math.ceil((j + 1) * 5 / 3)
          local s = 0
          for r = r0, r1 - 1 do for q = q0, q1 - 1 do s = s + xt[n][c][r + 1][q + 1] end end
          want[n][c][i + 1][j + 1] = s / ((r1 - r0) * (q1 - q0))
        end
      end
    end
  end
  H.assert_close(a, want, 1e-5, 1e-6, "adaptive")
  H.assert_close(nn.AdaptiveAvgPool2d(1)(x), x:mean({ 3, 4 }, true), 1e-5, 1e-6, "global average")
end

function TestPoolLayers:test_upsample()
  local x = netcl.arange(6, { device = dev }):float():view(1, 1, 2, 3)
  local up = nn.Upsample({ scale_factor = 2 })
  lu.assertEquals(up(x):totable()[1][1], { { 0, 0, 1, 1, 2, 2 }, { 0, 0, 1, 1, 2, 2 }, { 3, 3, 4, 4, 5, 5 }, { 3, 3, 4, 4, 5, 5 } })
  -- bilinear with align_corners: the corners stay and the rest is linear between them
  local b = nn.Upsample({ size = { 3, 5 }, mode = "bilinear", align_corners = true })(x)
  H.assert_close(b, { { { { 0, 0.5, 1, 1.5, 2 }, { 1.5, 2, 2.5, 3, 3.5 }, { 3, 3.5, 4, 4.5, 5 } } } }, 1e-6, 1e-6)
  local y = netcl.randn(2, 3, 4, 5, { device = dev })
  H.assert_close(nn.Upsample({ scale_factor = { 2, 1.5 }, mode = "bilinear" })(y),
                 F.interpolate(y, { scale_factor = { 2, 1.5 }, mode = "bilinear" }), 0, 0)
  H.assert_close(nn.UpsamplingBilinear2d({ scale_factor = 2 })(y), F.interpolate(y, { scale_factor = 2, mode = "bilinear",
                 align_corners = true }), 0, 0)
  lu.assertEquals(nn.UpsamplingNearest2d({ size = 7 })(y):size(), { 2, 3, 7, 7 })
  lu.assertEquals(nn.Upsample({ scale_factor = 3, mode = "linear" })(netcl.randn(2, 3, 4, { device = dev })):size(), { 2, 3, 12 })
  lu.assertStrContains(tostring(nn.Upsample({ scale_factor = 2, mode = "bilinear" })), "Upsample(scale_factor=2, mode=bilinear, align_corners=false)")
end

function TestPoolLayers:test_gradcheck_through_modules()
  lu.skipIf(not H.is_cpu, "gradchecks run on the cpu backend in float64")
  netcl.manual_seed(3)
  N.gradcheck(nn.MaxPool2d(3, { stride = 2, padding = 1 }), { N.f64(1, 2, 5, 5) })
  N.gradcheck(nn.MaxPool2d(2, { dilation = 2, stride = 1, ceil_mode = true }), { N.f64(1, 1, 5, 4) })
  N.gradcheck(nn.AvgPool2d(3, { stride = 2, padding = 1, count_include_pad = false }), { N.f64(1, 2, 5, 4) })
  N.gradcheck(nn.AdaptiveAvgPool2d({ 2, 3 }), { N.f64(2, 1, 5, 4) })
  N.gradcheck(nn.Upsample({ scale_factor = 2, mode = "bilinear" }), { N.f64(1, 2, 3, 3) })
  N.gradcheck(nn.Upsample({ size = { 5, 4 } }), { N.f64(1, 1, 3, 3) })
  N.gradcheck(nn.Upsample({ scale_factor = 1.5, mode = "linear", align_corners = true }), { N.f64(2, 2, 4) })
end

function TestPoolLayers:test_device_matches_cpu()
  H.against_cpu(function(d)
    netcl.manual_seed(4)
    local x = netcl.randn(2, 3, 9, 8, { device = d, requires_grad = true })
    local v, idx = nn.MaxPool2d(3, { stride = 2, padding = 1, return_indices = true })(x)
    local y = nn.Upsample({ scale_factor = 2, mode = "bilinear" })(v) + nn.Upsample({ size = { 10, 8 } })(nn.AvgPool2d(2)(x))
    local z = nn.AdaptiveAvgPool2d({ 3, 2 })(y)
    z:sum():backward()
    -- windows compiled into the OpenCL kernels (up to 7x7, strides up to 4)
    -- and larger ones that keep the run-time geometry
    local x2 = netcl.randn(2, 2, 19, 17, { device = d, requires_grad = true })
    local v2, i2 = nn.MaxPool2d(9, { stride = 5, padding = 4, return_indices = true })(x2)
    local v3, i3 = nn.MaxPool2d({ 3, 2 }, { stride = { 2, 3 }, dilation = 2, ceil_mode = true, return_indices = true })(x2)
    local a2 = nn.AvgPool2d(8, { stride = 6, padding = 3 })(x2)
    ;(v2:sum() + v3:sum() * 2 + a2:sum() * 3):backward()
    return z, idx, x.grad, v2, i2, v3, i3, a2, x2.grad
  end)
end

function TestPoolLayers:test_max_pool_operands_at_offsets()
  -- the forward writes its indices and the backward reads them each from
  -- the indices' own offset (a replayed program pointed at views: output
  -- 7, indices 5, the input's gradient 2 elements in), a window compiled
  -- into the kernels and one with the run-time geometry; values, indices
  -- and gradients equal the eager ones, nothing outside the views is written
  local ffi, C = require("ffi"), require("netcl.lib").C
  local handle = require("netcl.tensor").handle
  local function ffi_pair(v) return ffi.new("int64_t[2]", v, v) end
  for _, w in ipairs({ { k = 3, s = 2, p = 1 }, { k = 9, s = 5, p = 4 } }) do
    netcl.manual_seed(17)
    local x = netcl.randn(2, 3, 19, 17, { device = dev })
    local k, s, p, one = ffi_pair(w.k), ffi_pair(w.s), ffi_pair(w.p), ffi_pair(1)
    local function run()
      local xi = x:clone():requires_grad_()
      local v, i = H.call2(C.netcl_max_pool2d, handle(xi), k, s, p, one, 0)
      v:pow(2):sum():backward()
      return v, i, xi.grad
    end
    local want = { run() }
    local got, bigs = H.replay_at_offsets(run, { [1] = 7, [2] = 5, [3] = 2 }, -7)
    local what = ("%dx%d window"):format(w.k, w.k)
    H.assert_close(got[1], want[1], 0, 0, what .. " values")
    lu.assertEquals(got[2]:totable(), want[2]:totable(), what .. " indices")
    H.assert_close(got[3], want[3], 0, 0, what .. " input gradient")
    for r, off in pairs({ 7, 5, 2 }) do H.assert_untouched(bigs[r], off, want[r]:numel(), -7, what .. " result " .. r) end
  end
end

function TestPoolLayers:test_save_load_round_trip()
  -- no state: the round trip saves an empty state and reproduces the outputs
  local x = netcl.randn(1, 2, 6, 6, { device = dev })
  N.roundtrip(function() return nn.Sequential(nn.MaxPool2d(2), nn.Upsample({ scale_factor = 2, mode = "bilinear" }),
                                              nn.AvgPool2d(3, { stride = 1 }), nn.AdaptiveAvgPool2d(2)) end, x)
end

function TestPoolLayers:test_errors()
  H.assert_error(function() nn.MaxPool2d(2)(netcl.zeros(4, 4, { device = dev })) end, "MaxPool2d: expected a 4-D [N, C, H, W] or 3-D [C, H, W] input", "[4, 4]")
  H.assert_error(function() nn.MaxPool2d(0) end, "MaxPool2d: kernel_size must be a positive integer")
  H.assert_error(function() nn.AvgPool2d(2, { strides = 1 }) end, "AvgPool2d: unknown option 'strides'")
  H.assert_error(function() nn.AdaptiveAvgPool2d({ 1, 2, 3 }) end, "output_size must be a positive integer or an {h, w} pair")
  H.assert_error(function() nn.Upsample({ size = 4, scale_factor = 2 }) end, "give exactly one of size and scale_factor")
  H.assert_error(function() nn.Upsample({ scale_factor = 2, mode = "bicubic" }) end, "mode must be 'nearest', 'linear' or 'bilinear'")
  H.assert_error(function() nn.Upsample({ scale_factor = 2, align_corners = true }) end, "align_corners only applies")
  H.assert_error(function() nn.Upsample({ scale_factor = 2, mode = "bilinear" })(netcl.zeros(1, 2, 3, { device = dev })) end,
                 "Upsample: mode 'bilinear' expects a 4-D [N, C, H, W] input")
end
