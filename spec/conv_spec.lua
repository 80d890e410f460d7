-- spec/conv_spec.lua — convolution and pooling values against direct
-- references written here, the adjoint identity of conv_transpose2d, and
-- bad-input errors.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local dev = H.device

-- direct convolution of nested tables (the definition, loop by loop)
local function direct_conv2d(x, w, b, s, p, d, groups)
  local N, C, Hh, W = #x, #x[1], #x[1][1], #x[1][1][1]
  local O, Cg, kh, kw = #w, #w[1], #w[1][1], #w[1][1][1]
  local oh = math.floor((Hh + 2 * p[1] - d[1] * (kh - 1) - 1) / s[1]) + 1
  local ow = math.floor((W + 2 * p[2] - d[2] * (kw - 1) - 1) / s[2]) + 1
  local out = {}
  for n = 1, N do
    out[n] = {}
    for o = 1, O do
      out[n][o] = {}
      local g = math.floor((o - 1) / (O / groups))
      for i = 1, oh do
        out[n][o][i] = {}
        for j = 1, ow do
          local acc = b and b[o] or 0
          for c = 1, Cg do
            for ki = 1, kh do
              for kj = 1, kw do
                local h = (i - 1) * s[1] - p[1] + (ki - 1) * d[1] + 1
                local ww = (j - 1) * s[2] - p[2] + (kj - 1) * d[2] + 1
                if h >= 1 and h <= Hh and ww >= 1 and ww <= W then
                  acc = acc + x[n][g * Cg + c][h][ww] * w[o][c][ki][kj]
                end
              end
            end
          end
          out[n][o][i][j] = acc
        end
      end
    end
  end
  return out
end

TestConv = {}

function TestConv:test_conv2d_against_direct_definition()
  netcl.manual_seed(3)
  local x = netcl.randn(2, 4, 7, 6, { device = dev })
  local w = netcl.randn(6, 2, 3, 2, { device = dev })
  local b = netcl.randn(6, { device = dev })
  local y = netcl.conv2d(x, w, b, { stride = { 2, 1 }, padding = { 1, 1 }, dilation = { 1, 2 }, groups = 2 })
  local want = direct_conv2d(x:totable(), w:totable(), b:totable(), { 2, 1 }, { 1, 1 }, { 1, 2 }, 2)
  H.assert_close(y, want, 1e-4, 1e-4)
  -- an unbatched input and conv1d as a height-1 conv2d
  lu.assertEquals(netcl.conv2d(x[1], w, b, { groups = 2 }):size(), { 6, 5, 5 })
  local x1, w1 = netcl.randn(2, 3, 9, { device = dev }), netcl.randn(4, 3, 3, { device = dev })
  H.assert_close(netcl.conv1d(x1, w1, nil, { padding = 2, dilation = 2 }),
                 netcl.conv2d(x1:unsqueeze(3), w1:unsqueeze(3), nil, { padding = { 0, 2 }, dilation = { 1, 2 } }):squeeze(3), 1e-5, 1e-5)
end

function TestConv:test_conv_transpose_is_the_adjoint()
  netcl.manual_seed(4)
  local o = { stride = 2, padding = 1 }
  local x = netcl.randn(2, 3, 7, 7, { device = dev })
  local w = netcl.randn(4, 3, 3, 3, { device = dev })
  local y = netcl.randn(2, 4, 4, 4, { device = dev })
  local lhs = (netcl.conv2d(x, w, nil, o) * y):sum():item()
  local rhs = (x * netcl.conv_transpose2d(y, w, nil, o)):sum():item()
  lu.assertAlmostEquals(lhs, rhs, 1e-3 * math.abs(lhs) + 1e-3)
  lu.assertEquals(netcl.conv_transpose2d(y, w, nil, { stride = 2, padding = 1, output_padding = 1 }):size(), { 2, 3, 8, 8 })
end

function TestConv:test_pooling_values()
  local x = netcl.tensor({ { { { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 }, { 13, 14, 15, 16 } } } }, { device = dev })
  local v, i = netcl.max_pool2d(x, 2, { return_indices = true })
  lu.assertEquals(v:totable(), { { { { 6, 8 }, { 14, 16 } } } })
  lu.assertEquals(i:totable(), { { { { 6, 8 }, { 14, 16 } } } })    -- 1-based h*W + w + 1
  lu.assertEquals(netcl.avg_pool2d(x, 2):totable(), { { { { 3.5, 5.5 }, { 11.5, 13.5 } } } })
  -- padding counts in the divisor unless count_include_pad = false
  lu.assertEquals(netcl.avg_pool2d(x, 2, { stride = 2, padding = 1 }):totable()[1][1][1][1], 0.25)
  lu.assertEquals(netcl.avg_pool2d(x, 2, { stride = 2, padding = 1, count_include_pad = false }):totable()[1][1][1][1], 1)
  lu.assertEquals(netcl.adaptive_avg_pool2d(x, 1):totable(), { { { { 8.5 } } } })
  H.assert_close(netcl.adaptive_avg_pool2d(x, { 3, 3 }):totable()[1][1][1], { 3.5, 4.5, 5.5 })
  lu.assertEquals(netcl.max_pool2d(x, 3, { stride = 2, ceil_mode = true }):size(), { 1, 1, 2, 2 })
  lu.assertEquals(netcl.max_pool2d(x, 3, { stride = 2 }):size(), { 1, 1, 1, 1 })
  -- NaN wins max pooling, as in PyTorch
  local nan = netcl.tensor({ { { { 1, 0 / 0 }, { 3, 4 } } } }, { device = dev })
  local m = netcl.max_pool2d(nan, 2):item()
  lu.assertTrue(m ~= m)
end

function TestConv:test_fold_sums_overlaps()
  local x = netcl.ones(1, 1, 3, 3, { device = dev })
  local cols = netcl.unfold(x, 2)
  lu.assertEquals(cols:size(), { 1, 4, 4 })
  lu.assertEquals(netcl.fold(cols, 3, 2):totable(), { { { { 1, 2, 1 }, { 2, 4, 2 }, { 1, 2, 1 } } } })
end

-- fold reads columns with samples adjacent ([K, N, L] storage, as the
-- convolutions' single GEMM writes them) or any other unit-stride layout in
-- place, and gives the same bits as from contiguous columns
function TestConv:test_fold_strided_columns()
  netcl.manual_seed(52)
  for _, geom in ipairs({ { 3, { padding = 1 } }, { 3, { stride = 2, padding = 1 } }, { 9, { padding = 4 } } }) do
    local x = netcl.randn(3, 2, 6, 5, { device = dev })
    local cols = netcl.unfold(x, geom[1], geom[2])
    local kn = cols:transpose(1, 2):contiguous():transpose(1, 2)     -- strides (L, N*L, 1)
    lu.assertEquals(kn:stride(), { cols:size(3), cols:size(1) * cols:size(3), 1 })
    local want = netcl.fold(cols, { 6, 5 }, geom[1], geom[2]):totable()
    lu.assertEquals(netcl.fold(kn, { 6, 5 }, geom[1], geom[2]):totable(), want, "[K, N, L] storage")
    local wide = netcl.zeros(cols:size(1), cols:size(2) + 3, cols:size(3) + 2, { device = dev })
    local part = wide:narrow(2, 2, cols:size(2)):narrow(3, 2, cols:size(3))   -- padded rows, an offset
    part:copy_(cols)
    lu.assertEquals(netcl.fold(part, { 6, 5 }, geom[1], geom[2]):totable(), want, "padded storage")
  end
end

function TestConv:test_cpu_float32_paths_match_reference()
  -- float32 unfold/fold and max pooling (forward, backward) take their own
  -- loops on the cpu; float64 runs the reference loops, whose results
  -- rounded to float32 must be the same bits
  lu.skipIf(not H.is_cpu, "checks the cpu backend's own float32 unfold/fold and pooling loops: cpu only")
  netcl.manual_seed(51)
  local geoms = {
    { k = 3, o = {} },
    { k = 3, o = { padding = 1 } },
    { k = { 2, 3 }, o = { stride = 2, padding = { 1, 0 } } },
    { k = 3, o = { stride = { 1, 3 }, padding = 2, dilation = 2 } },
    { k = 5, o = { stride = 2, padding = 2 } },
  }
  local x = netcl.randn(2, 3, 9, 11, { device = dev })
  x:narrow(4, 4, 2):fill_(1.5)                                       -- ties
  for _, width in ipairs({ 11, 37 }) do   -- short rows copy element by element, long ones by runs
    local xw = width == 11 and x or netcl.randn(2, 3, 9, width, { device = dev })
    for gi, gm in ipairs(geoms) do
      local what = (" %d, width %d"):format(gi, width)
      local c32, c64 = netcl.unfold(xw, gm.k, gm.o), netcl.unfold(xw:double(), gm.k, gm.o)
      lu.assertEquals(c32:totable(), c64:float():totable(), "unfold" .. what)
      local r = netcl.randn(unpack(c32:size())):to(dev)
      lu.assertEquals(netcl.fold(r, { 9, width }, gm.k, gm.o):totable(),
                      netcl.fold(r:double(), { 9, width }, gm.k, gm.o):float():totable(), "fold" .. what)
    end
  end
  local pools = { { k = 2, o = {} }, { k = 3, o = { stride = 2, padding = 1 } }, { k = 3, o = { stride = 1, padding = 1 } },
                  { k = { 3, 2 }, o = { stride = { 2, 1 }, dilation = 2, ceil_mode = true } } }
  for pi, pm in ipairs(pools) do
    local opts = { return_indices = true }
    for k, v in pairs(pm.o) do opts[k] = v end
    local s = netcl.max_pool2d(x, pm.k, opts):size()
    local g = netcl.randn(s[1], s[2], s[3], s[4], { device = dev })
    g:narrow(4, 1, 1):fill_(-0.0)   -- a pixel's sum of one -0 term is +0
    local function run(dt)
      local xr = x:to(dt):clone():requires_grad_()
      local v, i = netcl.max_pool2d(xr, pm.k, opts)
      v:backward(g:to(dt))
      return v, i, xr.grad
    end
    local v32, i32, g32 = run("float32")
    local v64, i64, g64 = run("float64")
    lu.assertEquals(v32:totable(), v64:float():totable(), "max_pool2d " .. pi)
    lu.assertEquals(i32:totable(), i64:totable(), "max_pool2d indices " .. pi)
    lu.assertEquals(g32:totable(), g64:float():totable(), "max_pool2d backward " .. pi)
  end
  -- windows holding NaNs (first, middle, last tap, two of them) and ties:
  -- the same winners in float32 (the 2x2 path and the general one) as in float64
  local xn = x:clone()
  xn:narrow(3, 1, 1):narrow(4, 1, 1):fill_(0 / 0)
  xn:narrow(3, 4, 1):narrow(4, 6, 1):fill_(0 / 0)
  xn:narrow(3, 6, 2):narrow(4, 8, 1):fill_(0 / 0)
  xn:narrow(3, 9, 1):narrow(4, 2, 2):fill_(2.5)
  for pi, pm in ipairs({ { k = 2, o = {} }, { k = 3, o = { stride = 2, padding = 1 } } }) do
    local opts = { return_indices = true }
    for k, v in pairs(pm.o) do opts[k] = v end
    local _, i32 = netcl.max_pool2d(xn, pm.k, opts)
    local _, i64 = netcl.max_pool2d(xn:double(), pm.k, opts)
    lu.assertEquals(i32:totable(), i64:totable(), "max_pool2d indices with NaNs " .. pi)
  end
  -- rows of 8 or more 2x2 windows take eight at a time as vectors: NaNs in
  -- each tap position and in several lanes, ties, -0 against +0, a tail
  local xw = netcl.randn(2, 3, 6, 37, { device = dev })
  xw:narrow(3, 1, 1):narrow(4, 1, 1):fill_(0 / 0)     -- tap a, lane 1
  xw:narrow(3, 1, 1):narrow(4, 6, 1):fill_(0 / 0)     -- tap b, lane 3
  xw:narrow(3, 2, 1):narrow(4, 11, 1):fill_(0 / 0)    -- tap c, lane 6
  xw:narrow(3, 4, 1):narrow(4, 16, 1):fill_(0 / 0)    -- tap d, lane 8
  xw:narrow(3, 3, 2):narrow(4, 20, 2):fill_(0 / 0)    -- a whole window
  xw:narrow(3, 5, 2):narrow(4, 3, 4):fill_(1.25)      -- ties
  xw:narrow(3, 5, 1):narrow(4, 25, 1):fill_(-0.0)
  xw:narrow(3, 6, 1):narrow(4, 25, 2):fill_(0)
  local v32, i32 = netcl.max_pool2d(xw, 2, { return_indices = true })
  local v64, i64 = netcl.max_pool2d(xw:double(), 2, { return_indices = true })
  lu.assertEquals(i32:totable(), i64:totable(), "max_pool2d indices, eight windows a vector")
  local a, b = v32:view(-1):totable(), v64:float():view(-1):totable()
  for k = 1, #a do
    lu.assertTrue(a[k] == b[k] or (a[k] ~= a[k] and b[k] ~= b[k]), "max_pool2d value " .. k)
  end
end

function TestConv:test_bad_input()
  local x = netcl.randn(2, 3, 5, 5, { device = dev })
  H.assert_error(function() netcl.conv2d(x, netcl.randn(4, 2, 3, 3, { device = dev })) end, "conv2d", "does not match")
  H.assert_error(function() netcl.conv2d(x, netcl.randn(4, 3, 3, 3, { device = dev }), nil, { groups = 3 }) end,
    "conv2d", "groups")
  H.assert_error(function() netcl.conv2d(x:view(6, 25), netcl.randn(4, 3, 3, 3, { device = dev })) end, "conv2d")
  H.assert_error(function() netcl.conv2d(x, netcl.randn(4, 3, 7, 7, { device = dev })) end, "does not fit")
  H.assert_error(function() netcl.conv2d(x, netcl.randn(4, 3, 3, 3, { device = dev }), netcl.zeros(3, { device = dev })) end,
    "bias")
  H.assert_error(function() netcl.conv2d(x, netcl.randn(4, 3, 3, 3, { device = dev }), nil, { stride = 0 }) end, "positive")
  H.assert_error(function() netcl.max_pool2d(x, 2, { padding = 2 }) end, "max_pool2d", "half the kernel")
  H.assert_error(function() netcl.max_pool2d(x, "big") end, "max_pool2d", "kernel_size")
  H.assert_error(function() netcl.avg_pool2d(x:long(), 2) end, "avg_pool2d", "floating")
  H.assert_error(function() netcl.conv_transpose2d(x, netcl.randn(3, 2, 3, 3, { device = dev }), nil,
    { stride = 2, output_padding = 2 }) end, "output_padding")
  H.assert_error(function() netcl.fold(netcl.randn(1, 5, 4, { device = dev }), 3, 2) end, "fold", "multiple")
end

function TestConv:test_interpolate_values()
  local F = netcl.nn.functional
  local x = netcl.tensor({ { { { 1, 2 }, { 3, 4 } } } }, { device = dev })
  H.assert_close(F.interpolate(x, { scale_factor = 2, mode = "bilinear" }),
    { { { { 1, 1.25, 1.75, 2 }, { 1.5, 1.75, 2.25, 2.5 }, { 2.5, 2.75, 3.25, 3.5 }, { 3, 3.25, 3.75, 4 } } } })
  H.assert_close(F.interpolate(x, { size = 3, mode = "bilinear", align_corners = true })[1][1][1], { 1, 1.5, 2 })
  lu.assertEquals(F.interpolate(x, { scale_factor = 2 }):totable()[1][1][1], { 1, 1, 2, 2 })
  lu.assertEquals(F.interpolate(x, { size = { 1, 3 } }):totable()[1][1], { { 1, 1, 2 } })
  H.assert_error(function() F.interpolate(x, { size = 2, scale_factor = 2 }) end, "exactly one")
  H.assert_error(function() F.interpolate(x, { size = 2, mode = "cubic" }) end, "mode")
  H.assert_error(function() F.interpolate(x:view(4), { size = 2 }) end, "interpolate")
end
