-- spec/convalgo_spec.lua — every convolution strategy against the direct
-- reference (forward, backward-data, backward-weight) over strides,
-- paddings, dilations and groups, each forced with netcl.set_conv_algo; a
-- float64 gradient check per strategy on the cpu; the planner's choices
-- and the tuner's cache.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local F = netcl.nn.functional
local dev = H.device

-- (netcl.set_conv_algo, not the environment: an OpenCL driver's threads may be reading it)
local function with_algo(name, fn)
  netcl.set_conv_algo(name)
  local ok, a, b, c, d = pcall(fn)
  netcl.set_conv_algo(nil)
  if not ok then error(a, 0) end
  return a, b, c, d
end

-- geometries: {N, C, H, W, O, kh, kw, opts}
local GEOMS = {
  { 2, 3, 7, 6, 4, 3, 3, { padding = 1 } },
  { 1, 4, 9, 9, 6, 3, 3, { padding = 0 } },
  { 2, 4, 8, 7, 6, 3, 2, { stride = { 2, 1 }, padding = { 1, 0 }, dilation = { 1, 2 }, groups = 2 } },
  { 2, 6, 5, 5, 6, 3, 3, { padding = 1, groups = 6 } },
  { 3, 5, 4, 4, 7, 1, 1, {} },
  { 1, 3, 11, 11, 2, 3, 3, { padding = 2 } },
  -- 256 or more output pixels: im2col's per-sample GEMMs (src/ops/conv.c)
  { 2, 3, 18, 17, 4, 3, 3, { padding = 1 } },
  { 2, 2, 33, 32, 3, 3, 3, { stride = 2, padding = 1 } },
  -- more than 4096 Winograd tiles: backward-weight splits them into blocks
  { 4, 3, 130, 129, 4, 3, 3, { padding = 1 } },
  -- 5x5 dilated, more output channels than one tiled block (8), odd sizes
  { 2, 3, 12, 13, 10, 5, 5, { padding = 2, dilation = 2 } },
  -- size-1 image and kernel covering the input
  { 1, 2, 1, 1, 3, 1, 1, {} },
  { 2, 3, 5, 5, 2, 5, 5, {} },
  -- depthwise: channel multipliers 2 and 3, strides, a dilated non-square
  -- window, padding past half the window, a 1x1 image
  { 2, 4, 9, 8, 8, 3, 3, { stride = 2, padding = 1, groups = 4 } },
  { 1, 3, 10, 11, 3, 5, 3, { padding = { 2, 0 }, dilation = 2, groups = 3 } },
  { 3, 5, 7, 6, 15, 3, 3, { stride = { 1, 3 }, padding = 2, groups = 5 } },
  { 2, 3, 1, 1, 6, 1, 1, { groups = 3 } },
}

-- forward value and both gradients for one geometry, seeded
local function run(gm, dtype, d)
  netcl.manual_seed(21)
  local o = { device = d, dtype = dtype }
  local x = netcl.randn(gm[1], gm[2], gm[3], gm[4], o):requires_grad_()
  local groups = gm[8].groups or 1
  local w = netcl.randn(gm[5], gm[2] / groups, gm[6], gm[7], o):requires_grad_()
  local y = F.conv2d(x, w, nil, gm[8])
  local g = netcl.randn(y:size(), o)
  y:backward(g)
  return y:detach(), x.grad, w.grad
end

local ALGOS = { "direct", "im2col", "gemm1x1", "winograd2", "winograd4", "depthwise", "implicit_gemm", "tiled" }

-- the strategies a forced algo really runs for geometry gm (forward,
-- backward-data, backward-weight): itself where it applies, the planner's
-- choice elsewhere
local function strategies(gm, algo)
  local o = gm[8]
  return { with_algo(algo, function()
    return netcl.conv2d_strategy({ gm[1], gm[2], gm[3], gm[4] }, { gm[5], gm[2] / (o.groups or 1), gm[6], gm[7] },
      { device = dev, stride = o.stride, padding = o.padding, dilation = o.dilation, groups = o.groups })
  end) }
end

-- Each strategy of algos against direct (float32 FMAs) on every geometry
-- of geoms: forward value and both gradients, errors scaled by the largest
-- value (float32 sums of many terms). mode: the fp32_precision the
-- strategies run in (default "ieee"); label prefixes failure messages.
-- Returns, per strategy, how many geometries each pass really ran it on
-- (a forced strategy that does not apply falls back to the planner).
local function check_against_direct(geoms, algos, mode, label)
  local ran = {}
  for _, algo in ipairs(algos) do ran[algo] = { 0, 0, 0 } end
  for gi, gm in ipairs(geoms) do
    local want = { with_algo("direct", function() return run(gm, "float32", dev) end) }
    for _, algo in ipairs(algos) do
      for k, name in ipairs(strategies(gm, algo)) do
        if name == algo then ran[algo][k] = ran[algo][k] + 1 end
      end
      netcl.backends.fp32_precision = mode or "ieee"
      local ok, a, b, c = pcall(with_algo, algo, function() return run(gm, "float32", dev) end)
      netcl.backends.fp32_precision = "ieee"
      if not ok then error(a, 0) end
      local got = { a, b, c }
      local tol = algo == "winograd4" and 2e-3 or 1e-4
      for k = 1, 3 do
        local atol = tol * math.max(1, want[k]:abs():max():item())
        H.assert_close(got[k], want[k], tol, atol, ("%sgeometry %d %s result %d"):format(label or "", gi, algo, k))
      end
    end
  end
  return ran
end

TestConvAlgos = {}

-- How many of GEOMS each strategy covers per pass (forward, backward-data,
-- backward-weight), from the applicability rules (src/ops/conv_plan.c): the
-- general ones all sixteen; Winograd the 3x3 stride-1 undilated ungrouped
-- ones (1, 2, 6, 7, 9); gemm1x1 the 1x1 stride-1 unpadded ungrouped ones
-- (5, 11); depthwise geometries 4 and 13-16; tiled every forward,
-- backward-data but at a stride or with groups (3, 4, 8, 13-16),
-- backward-weight where an image and its outputs fit the staged local
-- memory (not geometry 9's 130 x 129 images).
local COVERED = {
  direct = { 16, 16, 16 }, im2col = { 16, 16, 16 }, implicit_gemm = { 16, 16, 16 },
  winograd2 = { 5, 5, 5 }, winograd4 = { 5, 5, 5 }, gemm1x1 = { 2, 2, 2 }, depthwise = { 5, 5, 5 },
  tiled = { 16, 9, 15 },
}

function TestConvAlgos:test_every_strategy_matches_direct()
  local ran = check_against_direct(GEOMS, ALGOS)
  for _, algo in ipairs(ALGOS) do
    lu.assertEquals(ran[algo], COVERED[algo], algo .. ": geometries each pass ran it on")
  end
  H.cover("device", { "conv2d" })
end

-- float32 through 3xTF32 (netcl.backends.fp32_precision = "tf32x3"): the
-- GEMM-based strategies keep float32's tolerances against the direct
-- reference in float32 FMAs. Where the device has no tensor cores the mode
-- multiplies in float32, so one geometry checks the switch there.
function TestConvAlgos:test_tf32x3_keeps_float32_tolerances()
  local tc = H.device_info().tensor_cores or ""
  local geoms = tc:find("tf32", 1, true) and { GEOMS[1], GEOMS[3], GEOMS[7], GEOMS[8], GEOMS[9] } or { GEOMS[1] }
  check_against_direct(geoms, { "im2col", "gemm1x1", "winograd2", "winograd4", "implicit_gemm" }, "tf32x3", "tf32x3 ")
end

function TestConvAlgos:test_gradcheck_per_strategy()
  lu.skipIf(not H.is_cpu, "gradchecks run on the cpu backend in float64")
  for _, algo in ipairs(ALGOS) do
    for _, gi in ipairs({ 1, 3, 4, 5, 13 }) do
      local gm = GEOMS[gi]
      netcl.manual_seed(22)
      local o = { device = "cpu", dtype = "float64" }
      local x = netcl.randn(gm[1], gm[2], gm[3], gm[4], o):requires_grad_()
      local w = netcl.randn(gm[5], gm[2] / (gm[8].groups or 1), gm[6], gm[7], o):requires_grad_()
      with_algo(algo, function()
        H.gradcheck("conv2d", function(a, b) return F.conv2d(a, b, nil, gm[8]) end, { x, w })
      end)
    end
  end
end

-- an empty batch through every strategy: an empty output and input
-- gradient, a weight gradient of zeros (never uninitialised memory)
function TestConvAlgos:test_empty_batch()
  for _, gm in ipairs({ { 4, 4, 3, 3, { padding = 1 } }, { 4, 8, 3, 3, { groups = 4, stride = 2, padding = 1 } },
                        { 4, 6, 1, 1, {} } }) do
    for _, algo in ipairs(ALGOS) do
      local x = netcl.randn(0, gm[1], 8, 8, { device = dev }):requires_grad_()
      local w = netcl.randn(gm[2], gm[1] / (gm[5].groups or 1), gm[3], gm[4], { device = dev }):requires_grad_()
      local y = with_algo(algo, function() return F.conv2d(x, w, nil, gm[5]) end)
      lu.assertEquals(y:size()[1], 0, algo)
      with_algo(algo, function() y:backward(netcl.ones(y:size(), { device = dev })) end)
      lu.assertEquals(x.grad:size(), x:size(), algo)
      lu.assertEquals(w.grad:abs():sum():item(), 0, algo .. ": weight gradient of an empty batch")
    end
  end
end

function TestConvAlgos:test_transposed_strategies()
  netcl.manual_seed(23)
  local x = netcl.randn(2, 4, 5, 5, { device = dev })
  local w = netcl.randn(4, 3, 3, 3, { device = dev })
  local b = netcl.randn(3, { device = dev })
  for _, o in ipairs({ { padding = 1 }, { stride = 2, padding = 1, output_padding = 1 }, { padding = 0, dilation = 2 } }) do
    local want = with_algo("direct", function() return F.conv_transpose2d(x, w, b, o) end)
    for _, algo in ipairs({ "im2col", "winograd2", "winograd4", "implicit_gemm", "tiled" }) do
      local got = with_algo(algo, function() return F.conv_transpose2d(x, w, b, o) end)
      H.assert_close(got, want, 2e-3, 2e-3, algo)
    end
  end
  -- depthwise transposed convolutions (groups = output channels: channel
  -- multipliers 2 and 1 in the forward convolutions they transpose) with
  -- their gradients; out: the output's channels and size
  for _, c in ipairs({ { o = { groups = 2, padding = 1 }, out = { 2, 5 } },
                       { o = { groups = 4, stride = 2, padding = 1, output_padding = 1 }, out = { 4, 10 } } }) do
    local o = c.o
    local xs, ws = netcl.randn(2, 4, 5, 5, { device = dev }), netcl.randn(4, 1, 3, 3, { device = dev })
    local _, data = with_algo("depthwise", function()
      return netcl.conv2d_strategy({ 2, c.out[1], c.out[2], c.out[2] }, { 4, 1, 3, 3 },
        { device = dev, groups = o.groups, stride = o.stride, padding = o.padding })
    end)
    lu.assertEquals(data, "depthwise")
    local res = {}
    for i, algo in ipairs({ "direct", "depthwise" }) do
      local xr, wr = xs:clone():requires_grad_(), ws:clone():requires_grad_()
      local y = with_algo(algo, function() return F.conv_transpose2d(xr, wr, nil, o) end)
      lu.assertEquals(y:size(), { 2, c.out[1], c.out[2], c.out[2] })
      with_algo(algo, function() y:backward(netcl.ones(y:size(), { device = dev })) end)
      res[i] = { y:detach(), xr.grad, wr.grad }
    end
    for k = 1, 3 do H.assert_close(res[2][k], res[1][k], 1e-4, 1e-4, "depthwise transposed, result " .. k) end
  end
end

-- bias and activation fused into the strategies' kernels (no gradient
-- recorded), or applied after those that cannot: the same values as the
-- unfused sequence, forward and transposed
function TestConvAlgos:test_fused_epilogue_matches_unfused()
  netcl.manual_seed(24)
  local x = netcl.randn(2, 4, 9, 8, { device = dev })
  local w = netcl.randn(6, 4, 3, 3, { device = dev })
  local wt = netcl.randn(4, 6, 3, 3, { device = dev })
  local b, bt = netcl.randn(6, { device = dev }), netcl.randn(6, { device = dev })
  local o = { padding = 1 }
  for _, act in ipairs({ "relu", "sigmoid", "leaky_relu", "gelu" }) do
    local plain = with_algo("direct", function() return F.conv2d(x, w, b, o) end)
    local want = act == "leaky_relu" and F.leaky_relu(plain, 0.2) or plain[act](plain)
    local plain_t = with_algo("direct", function() return F.conv_transpose2d(x, wt, bt, o) end)
    for _, algo in ipairs(ALGOS) do
      local got = with_algo(algo, function() return F.conv2d(x, w, b, { padding = 1, act = act, slope = 0.2 }) end)
      H.assert_close(got, want, 1e-4, 1e-4, algo .. " " .. act)
      local got_t = with_algo(algo, function() return F.conv_transpose2d(x, wt, bt, { padding = 1, act = "relu" }) end)
      H.assert_close(got_t, plain_t:relu(), 1e-4, 1e-4, algo .. " transposed relu")
    end
  end
  -- with a gradient recorded the activation is its own op: gradients flow through it
  local xr = x:clone():requires_grad_()
  local y = F.conv2d(xr, w, b, { padding = 1, act = "relu" })
  y:sum():backward()
  local xr2 = x:clone():requires_grad_()
  F.conv2d(xr2, w, b, { padding = 1 }):relu():sum():backward()
  H.assert_close(xr.grad, xr2.grad, 1e-5, 1e-5)
  lu.assertErrorMsgContains("unknown or unfusable activation", function() F.conv2d(x, w, b, { act = "softmax" }) end)
end

-- the cpu's float32 tiled pass (src/backend/cpu/conv_vec.c): 16 output
-- channels a vector, blocks of 4, 2 and 1 vectors (112 channels), blocks
-- of pixels of every width it picks (rows of 23, 13 and 4 pixels), strides,
-- a dilation, uneven padding, the fused bias and activations, the
-- backward-data pass as the flipped convolution, and backward-weight with
-- channels as vectors, against direct
function TestConvAlgos:test_cpu_tiled_vector_paths()
  lu.skipIf(not H.is_cpu, "the cpu backend's own float32 kernel: cpu only")
  netcl.manual_seed(25)
  local cases = {
    { { 2, 5, 23, 23 }, { 112, 5, 3, 3 }, { padding = 1 } },
    { { 2, 7, 13, 27 }, { 40, 7, 3, 2 }, { stride = { 1, 2 }, padding = { 2, 0 }, dilation = { 2, 1 } } },
    { { 3, 9, 6, 6 }, { 20, 9, 3, 3 }, { padding = 1 } },
    { { 1, 3, 9, 9 }, { 16, 3, 5, 5 }, { stride = 2, padding = 2 } },
  }
  for ci, c in ipairs(cases) do
    local x = netcl.randn(c[1]):requires_grad_()
    local w = netcl.randn(c[2]) * 0.2
    local b = netcl.randn(c[2][1])
    local function run(algo, act)
      return with_algo(algo, function()
        local opts = { act = act, slope = 0.2 }
        for k, v in pairs(c[3]) do opts[k] = v end
        local y = netcl.no_grad(function() return F.conv2d(x, w, b, opts) end)
        local xg = x:detach():clone():requires_grad_()
        local y2 = F.conv2d(xg, w, nil, c[3])
        y2:backward(netcl.ones(y2:size()))
        return y, xg.grad
      end)
    end
    -- backward-weight through the vector kernel (the implicit_gemm entry)
    local function weight(algo)
      return with_algo(algo, function()
        local wg = w:detach():clone():requires_grad_()
        local y = F.conv2d(x:detach(), wg, nil, c[3])
        y:backward(netcl.ones(y:size()))
        return wg.grad
      end)
    end
    local ww = weight("direct")
    H.assert_close(weight("implicit_gemm"), ww, 1e-4, 1e-4 * math.max(1, ww:abs():max():item()), ("case %d weight"):format(ci))
    for _, act in ipairs({ false, "relu", "silu" }) do
      local want, wantg = run("direct", act or nil)
      local got, gotg = run("tiled", act or nil)
      local what = ("case %d %s"):format(ci, tostring(act))
      H.assert_close(got, want, 1e-4, 1e-4 * math.max(1, want:abs():max():item()), what)
      H.assert_close(gotg, wantg, 1e-4, 1e-4 * math.max(1, wantg:abs():max():item()), what .. " backward-data")
    end
  end
end

-- the lower-precision storage types through the GEMM-based strategies and
-- Winograd (whose transforms run in float32 for 16-bit operands: they match
-- direct to the output's rounding)
function TestConvAlgos:test_half_types()
  for _, dt in ipairs({ "float16", "bfloat16", "float64" }) do
    netcl.manual_seed(25)
    local x = netcl.randn(2, 3, 8, 8, { device = dev }):to(dt)
    local w = netcl.randn(5, 3, 3, 3, { device = dev }):to(dt)
    local want = with_algo("direct", function() return F.conv2d(x, w, nil, { padding = 1 }):to("float32") end)
    local tol = dt == "float64" and 1e-10 or dt == "float16" and 1e-2 or 5e-2
    for _, algo in ipairs({ "implicit_gemm", "tiled", "im2col", "winograd2", "winograd4" }) do
      lu.assertEquals(with_algo(algo, function()
        return netcl.conv2d_strategy({ 2, 3, 8, 8 }, { 5, 3, 3, 3 }, { device = dev, padding = 1, dtype = dt })
      end), algo)
      local got = with_algo(algo, function() return F.conv2d(x, w, nil, { padding = 1 }):to("float32") end)
      H.assert_close(got, want, tol, tol * 4, dt .. " " .. algo)
      -- Winograd's TF32 products for 16-bit layers leave the process's mode alone
      lu.assertEquals(netcl.backends.fp32_precision, "ieee", dt .. " " .. algo)
    end
  end
end

function TestConvAlgos:test_unknown_or_inapplicable_algorithm_falls_back()
  local gm = GEOMS[3]   -- strided, grouped: no Winograd
  local want = { with_algo(nil, function() return run(gm, "float32", dev) end) }
  local got = { with_algo("winograd4", function() return run(gm, "float32", dev) end) }
  H.assert_close(got[1], want[1], 1e-4, 1e-4)
end

-- a forced tiled pass whose input patch cannot be staged is refused with a
-- clear error (OpenCL: an 8 x 32 tile under an 11 x 11 window at stride 4,
-- dilation 2, in float64: 58 KB for one channel)
function TestConvAlgos:test_tiled_patch_too_large_is_refused()
  lu.skipIf(H.is_cpu, "the refusal is OpenCL's: the cpu's tiled rows stage no input patch")
  local x = netcl.zeros(1, 1, 200, 200, { device = dev, dtype = "float64" })
  local w = netcl.zeros(1, 1, 11, 11, { device = dev, dtype = "float64" })
  with_algo("tiled", function()
    local ok, msg = pcall(F.conv2d, x, w, nil, { stride = 4, dilation = 2 })
    lu.assertFalse(ok)
    lu.assertStrContains(msg, "conv2d (tiled) forward of float64[1,1,200,200]")
    lu.assertStrContains(msg, "does not fit")
  end)
end

-- the tiled kernel's wide block (a stem: 32 or more output channels from
-- 32 taps or fewer, 17-32 columns; 4 columns x 32 channels an item): 40
-- channels leave the second block 8 wide, 19 x 21 outputs leave partial
-- tiles (2 of 10 rows, 6 items of 4 columns); with a fused bias and ReLU,
-- at strides 1 and 2, against direct
function TestConvAlgos:test_tiled_wide_block()
  netcl.manual_seed(27)
  local w = netcl.randn(40, 3, 3, 3, { device = dev })
  local b = netcl.randn(40, { device = dev })
  for _, c in ipairs({ { { 2, 3, 19, 21 }, { padding = 1 } }, { { 2, 3, 37, 41 }, { stride = 2, padding = 1 } } }) do
    local x, o = netcl.randn(c[1], { device = dev }), c[2]
    local want = with_algo("direct", function() return F.conv2d(x, w, b, o):relu() end)
    lu.assertEquals(want:size(), { 2, 40, 19, 21 })
    local got = with_algo("tiled", function()
      return F.conv2d(x, w, b, { stride = o.stride, padding = o.padding, act = "relu" })
    end)
    H.assert_close(got, want, 1e-4, 1e-4, "tiled wide block")
  end
end

-- the planner's rules (docs/ops.md), as netcl.conv2d_strategy reports them
function TestConvAlgos:test_planner_choices()
  local info = H.device_info()
  local o = { device = dev }
  -- a forced strategy wins wherever it applies, and only there
  with_algo("implicit_gemm", function()
    lu.assertEquals({ netcl.conv2d_strategy({ 2, 3, 8, 8 }, { 4, 3, 3, 3 }, o) }, { "implicit_gemm", "implicit_gemm", "implicit_gemm" })
  end)
  with_algo("winograd4", function()
    lu.assertNotEquals(netcl.conv2d_strategy({ 2, 3, 8, 8 }, { 4, 3, 3, 3 }, { device = dev, stride = 2 }), "winograd4")
  end)
  lu.assertEquals(netcl.conv2d_strategy({ 2, 6, 8, 8 }, { 6, 1, 3, 3 }, { device = dev, groups = 6 }), "depthwise")
  -- a channel multiplier (2) keeps the depthwise kernels; windows past
  -- their 81 taps take the direct kernels on GPUs
  lu.assertEquals({ netcl.conv2d_strategy({ 2, 6, 8, 8 }, { 12, 1, 9, 9 }, { device = dev, groups = 6, padding = 4 }) },
    { "depthwise", "depthwise", "depthwise" })
  local wide = netcl.conv2d_strategy({ 2, 6, 16, 16 }, { 6, 1, 11, 11 }, { device = dev, groups = 6, padding = 5 })
  lu.assertNotEquals(wide, "depthwise")
  if info.type == "opencl_gpu" then lu.assertEquals(wide, "direct") end
  lu.assertEquals(netcl.conv2d_strategy({ 2, 8, 8, 8 }, { 4, 8, 1, 1 }, o), "gemm1x1")
  -- a GPU leaves 1x1 layers whose H*W is not a multiple of 4 (ResNet-50's
  -- 7x7 stage) to one product over N*H*W columns
  local s7 = netcl.conv2d_strategy({ 64, 512, 7, 7 }, { 2048, 512, 1, 1 }, o)
  if info.type == "opencl_gpu" then lu.assertNotEquals(s7, "gemm1x1") else lu.assertEquals(s7, "gemm1x1") end
  -- an unfolded input past an eighth of the device's memory is gathered instead
  local big = { 4096, 64, 224, 224 }
  -- (the cpu's vector tiled pass, which unfolds nothing either, comes first there)
  lu.assertEquals(netcl.conv2d_strategy(big, { 64, 64, 3, 3 }, { device = dev, stride = 2 }),
    H.is_cpu and "tiled" or "implicit_gemm")
  local lenet = { netcl.conv2d_strategy({ 256, 1, 28, 28 }, { 6, 1, 5, 5 }, { device = dev, padding = 2 }) }
  local resnet = netcl.conv2d_strategy({ 128, 64, 32, 32 }, { 64, 64, 3, 3 }, { device = dev, padding = 1 })
  local lenet2 = { netcl.conv2d_strategy({ 256, 6, 14, 14 }, { 16, 6, 5, 5 }, { device = dev }) }
  local stem = { netcl.conv2d_strategy({ 128, 3, 32, 32 }, { 64, 3, 3, 3 }, { device = dev, padding = 1 }) }
  if info.type == "opencl_gpu" then
    lu.assertEquals(lenet[1], "tiled")         -- thin layers
    lu.assertEquals(lenet[3], "tiled")         -- small weights: image by image
    lu.assertEquals(lenet2[1], "tiled")        -- 10 x 10 outputs: one 10 x 10 tile
    lu.assertEquals(lenet2[2], "tiled")
    lu.assertEquals(lenet2[3], "tiled")
    lu.assertEquals(stem[1], "tiled")         -- 3 -> 64: the wide block
  else
    lu.assertEquals(lenet[1], "im2col")
  end
  if info.type == "opencl_gpu" then lu.assertEquals(resnet, "winograd4")
  elseif H.is_cpu then
    -- float32 3x3 stride-1 layers of 64 channels or more: Winograd
    lu.assertEquals(resnet, "winograd4")
    lu.assertEquals(netcl.conv2d_strategy({ 128, 64, 14, 14 }, { 64, 64, 3, 3 }, { device = dev, padding = 1 }), "winograd4")
    lu.assertEquals(netcl.conv2d_strategy({ 8, 64, 2, 2 }, { 64, 64, 3, 3 }, { device = dev, padding = 1 }), "winograd2")
    for _, s in ipairs({ netcl.conv2d_strategy({ 128, 32, 32, 32 }, { 32, 32, 3, 3 }, { device = dev, padding = 1 }) }) do
      lu.assertNotStrContains(s, "winograd")   -- fewer than 64 channels: the direct kernels
    end
    -- backward-data: 6 channels fill too little of a vector; backward-weight
    -- as vectors (the implicit_gemm entry) for small weights
    lu.assertEquals(lenet2, { "tiled", "im2col", "implicit_gemm" })
    lu.assertEquals({ netcl.conv2d_strategy({ 128, 32, 14, 14 }, { 64, 32, 3, 3 }, { device = dev, padding = 1 }) },
      { "tiled", "tiled", "implicit_gemm" })
    lu.assertEquals(netcl.conv2d_strategy({ 128, 512, 4, 4 }, { 512, 512, 3, 3 }, { device = dev, padding = 1 }), "winograd4")
    lu.assertEquals(netcl.conv2d_strategy({ 128, 512, 4, 4 }, { 512, 512, 3, 3 }, { device = dev, padding = 1, dtype = "float64" }), "im2col")
  else lu.assertEquals(resnet, "im2col") end
  -- 16-bit layers take Winograd on GPUs as float32 ones do (float32
  -- transforms, TF32 products)
  for _, dt in ipairs({ "float16", "bfloat16" }) do
    local r16 = { netcl.conv2d_strategy({ 128, 64, 32, 32 }, { 64, 64, 3, 3 }, { device = dev, padding = 1, dtype = dt }) }
    if info.type == "opencl_gpu" then
      for k = 1, 3 do lu.assertStrContains(r16[k], "winograd", dt) end
    end
  end
  lu.assertErrorMsgContains("do not match weight", function() netcl.conv2d_strategy({ 1, 3, 8, 8 }, { 4, 2, 3, 3 }, o) end)
end

-- The forward and backward-weight passes as implicit GEMMs on the FFMA
-- kernel (x gathered by its copies, geometry compiled in): on NVIDIA sm_80+
-- as it is, on other OpenCL devices through NETCL_MMA_EMULATE (plain
-- copies for cp.async). Odd sizes, padding, strides, a dilation, a fused
-- bias and ReLU, a partial k-tile (K = 36 over 32-deep tiles), k-tiles of
-- 16 and 32 pixels, and on a 2-core PoCL device backward-weight slices of
-- 2 images over 5 (the last one short); the planner takes the kernel for
-- a stride-2 3x3 layer where it serves.
function TestConvAlgos:test_ffma_implicit_passes()
  lu.skipIf(H.is_cpu, "the FFMA kernel is an OpenCL kernel")
  local ffi = require("ffi")
  pcall(ffi.cdef, "int setenv(const char *, const char *, int); int unsetenv(const char *);")
  local nvidia = H.device_info().vendor:find("NVIDIA") ~= nil
  if not nvidia then ffi.C.setenv("NETCL_MMA_EMULATE", "1", 1) end
  local ok, err = pcall(function()
    for _, gm in ipairs({ { 5, 4, 33, 32, 8, 3, 3, { stride = 2, padding = 1 } },
                          { 2, 8, 12, 16, 5, 3, 3, { padding = 2, dilation = 2, stride = { 2, 1 } } } }) do
      netcl.manual_seed(26)
      local x = netcl.randn(gm[1], gm[2], gm[3], gm[4], { device = dev })
      local w = netcl.randn(gm[5], gm[2], gm[6], gm[7], { device = dev })
      local b = netcl.randn(gm[5], { device = dev })
      local o = { stride = gm[8].stride, padding = gm[8].padding, dilation = gm[8].dilation, act = "relu" }
      local want = with_algo("direct", function() return F.conv2d(x, w, b, o) end)
      local got = with_algo("implicit_gemm", function() return F.conv2d(x, w, b, o) end)
      H.assert_close(got, want, 1e-4, 1e-4, "implicit forward")
      local dw = {}
      for i, algo in ipairs({ "direct", "implicit_gemm" }) do
        local wr = w:clone():requires_grad_()
        local y = with_algo(algo, function() return F.conv2d(x, wr, nil, gm[8]) end)
        netcl.manual_seed(27)
        with_algo(algo, function() y:backward(netcl.randn(y:size(), { device = dev })) end)
        dw[i] = wr.grad
      end
      H.assert_close(dw[2], dw[1], 1e-4, 1e-4 * math.max(1, dw[1]:abs():max():item()), "implicit backward-weight")
    end
    if not nvidia or (H.device_info().tensor_cores or ""):find("tf32", 1, true) then
      lu.assertEquals(netcl.conv2d_strategy({ 128, 64, 32, 32 }, { 128, 64, 3, 3 }, { device = dev, stride = 2, padding = 1 }),
        "implicit_gemm")
      -- not for 4x4 outputs an image (ResNet's 256->512 stride-2 layer:
      -- im2col's GEMMs win both passes); 1x1 windows gather in the forward
      -- pass alone (src/backend/cl/conv_implicit.c)
      lu.assertEquals({ netcl.conv2d_strategy({ 128, 256, 8, 8 }, { 512, 256, 3, 3 }, { device = dev, stride = 2, padding = 1 }) },
        { "im2col", "im2col", "im2col" })
      lu.assertEquals({ netcl.conv2d_strategy({ 128, 128, 16, 16 }, { 256, 128, 1, 1 }, { device = dev, stride = 2 }) },
        { "implicit_gemm", "im2col", "im2col" })
    end
  end)
  if not nvidia then ffi.C.unsetenv("NETCL_MMA_EMULATE") end
  if not ok then error(err, 0) end
end

function TestConvAlgos:test_set_conv_algo()
  lu.assertErrorMsgContains("unknown strategy 'fft'", function() netcl.set_conv_algo("fft") end)
  netcl.set_conv_algo("auto")
  lu.assertNotEquals(netcl.conv2d_strategy({ 2, 3, 8, 8 }, { 4, 3, 3, 3 }, { device = dev }), "auto")
  netcl.set_conv_algo(nil)
end

-- NETCL_CONV_ALGO forces a strategy for a whole process where it applies;
-- set_conv_algo overrides it (a child process: the variable is read at
-- every plan, and this one's OpenCL driver threads may be reading the environment)
function TestConvAlgos:test_conv_algo_environment()
  local code = [[
    local netcl = require("netcl")
    local d = os.getenv("DEV")
    local s = function(o) return (netcl.conv2d_strategy({2, 3, 8, 8}, {4, 3, 3, 3}, o)) end
    print(s({device = d, padding = 1}), s({device = d, stride = 2}))
    netcl.set_conv_algo("direct")
    print(s({device = d, padding = 1}))
  ]]
  local out = H.run_lua(code, "DEV=" .. dev .. " NETCL_CONV_ALGO=winograd2")
  local first, strided, overridden = out:match("(%S+)%s+(%S+)%s+(%S+)")
  lu.assertEquals(first, "winograd2")
  lu.assertNotEquals(strided, "winograd2")     -- not where it does not apply
  lu.assertEquals(overridden, "direct")
end

function TestConvAlgos:test_benchmark_cache()
  lu.skipIf(not H.is_cpu, "the benchmark cache is tested once, in a cpu child process, on the cpu pass")
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local code = [[
    local netcl = require("netcl")
    netcl.C.netcl_set_conv_benchmark(1)
    local x, w = netcl.randn(2, 3, 8, 8, {device = "cpu"}), netcl.randn(4, 3, 3, 3, {device = "cpu"})
    print(netcl.nn.functional.conv2d(x, w, nil, {padding = 1}):size(4))
  ]]
  local out = H.run_lua(code, "NETCL_CACHE_DIR=" .. dir)
  lu.assertStrContains(out, "8")
  local f = io.open(dir .. "/conv-tuned.txt")
  lu.assertNotNil(f, "the tuner wrote its cache")
  local text = f:read("*a")
  f:close()
  lu.assertStrContains(text, "|float32|0|")
  -- every forward pass has a line naming the strategy that measured fastest
  local named = false
  for _, algo in ipairs(ALGOS) do named = named or text:find(" " .. algo .. "\n", 1, true) ~= nil end
  lu.assertTrue(named, text)
  -- a later process reads the winners back without measuring: rewritten
  -- by hand to "direct", the forward pass follows the file; a winner that
  -- does not apply (Winograd at stride 2) and another device's line are
  -- passed over
  local key = text:match("([^\n]*|float32|0|0|2,3,8,8,4,1,3,3,1,1,1,1,1,1) %S+")
  lu.assertNotNil(key, text)
  local strided = key:gsub("3,3,1,1,1,1,1,1$", "3,3,2,2,1,1,1,1")
  local other = key:gsub("^[^|]*", "another device")
  f = assert(io.open(dir .. "/conv-tuned.txt", "w"))
  f:write(key, " direct\n", strided, " winograd2\n", (other:gsub("3,3,1,1,1,1,1,1$", "3,3,2,2,1,1,1,1")), " direct\n")
  f:close()
  local reread = [[
    local netcl = require("netcl")
    local s = function(o) return (netcl.conv2d_strategy({2, 3, 8, 8}, {4, 3, 3, 3}, o)) end
    print(s({device = "cpu", padding = 1}), s({device = "cpu", padding = 1, stride = 2}))
  ]]
  out = H.run_lua(reread, "NETCL_CACHE_DIR=" .. dir)
  local plain, at_stride = out:match("(%S+)%s+(%S+)")
  lu.assertEquals(plain, "direct", out)
  lu.assertNotEquals(at_stride, "winograd2", out)
  lu.assertNotEquals(at_stride, "direct", out)   -- the cpu planner picks direct for no layer
  os.execute("rm -rf " .. dir)
end

-- A strategy whose scratch passes netcl.backends.conv_workspace_limit gives
-- way to implicit GEMM; a forced strategy is not held to it; nil restores
-- the default (an eighth of the device's memory).
function TestConvAlgos:test_workspace_limit_steers_the_planner()
  local x, w, o = { 8, 64, 28, 28 }, { 64, 64, 3, 3 }, { device = dev, padding = 1 }
  local free_fwd = netcl.conv2d_strategy(x, w, o)
  lu.assertIsNil(netcl.backends.conv_workspace_limit)
  netcl.backends.conv_workspace_limit = 0
  local ok, err = pcall(function()
    lu.assertEquals(netcl.backends.conv_workspace_limit, 0)
    local fwd, data, wt = netcl.conv2d_strategy(x, w, o)
    for _, s in ipairs({ fwd, data, wt }) do
      lu.assertTrue(s ~= "im2col" and s ~= "winograd2" and s ~= "winograd4", s .. " takes scratch past the limit")
    end
    if free_fwd == "im2col" or free_fwd:match("^winograd") then lu.assertEquals(fwd, "implicit_gemm") end
    lu.assertEquals(with_algo("im2col", function() return (netcl.conv2d_strategy(x, w, o)) end), "im2col")
    -- the limited plan computes what the reference does
    local xs, ws = netcl.randn(2, 8, 6, 6, { device = dev }), netcl.randn(4, 8, 3, 3, { device = dev })
    local want = with_algo("direct", function() return netcl.nn.functional.conv2d(xs, ws, nil, { padding = 1 }) end)
    H.assert_close(netcl.nn.functional.conv2d(xs, ws, nil, { padding = 1 }), want, 1e-4, 1e-4)
  end)
  netcl.backends.conv_workspace_limit = nil
  lu.assertTrue(ok, err)
  lu.assertIsNil(netcl.backends.conv_workspace_limit)
  lu.assertEquals((netcl.conv2d_strategy(x, w, o)), free_fwd)
  H.assert_error(function() netcl.backends.conv_workspace_limit = -5 end, "conv_workspace_limit")
end

-- Whatever the limit, no plan takes scratch past half of the device memory
-- not in use: an unfolding larger than the device itself never gets planned.
function TestConvAlgos:test_no_plan_takes_more_scratch_than_the_device_has()
  local mem = H.device_info().global_mem
  local n = math.ceil(mem / (64 * 9 * 56 * 56 * 4)) + 1        -- im2col's unfolded input > the device
  netcl.backends.conv_workspace_limit = 2 ^ 50
  local ok, r = pcall(function() return { netcl.conv2d_strategy({ n, 64, 56, 56 }, { 64, 64, 3, 3 }, { device = dev, padding = 1 }) } end)
  netcl.backends.conv_workspace_limit = nil
  lu.assertTrue(ok, r)
  for _, s in ipairs(r) do lu.assertTrue(s ~= "im2col", "im2col planned for a batch of " .. n) end
end
