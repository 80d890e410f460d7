-- spec/nn_conv_spec.lua — Conv1d, Conv2d (grouped, depthwise, strided,
-- dilated, padding modes, 'same') and ConvTranspose2d as modules: output
-- shapes, forward against direct loops in Lua doubles, PyTorch's default
-- initialisation bounds, Jacobian checks through the module (float64 on
-- the cpu), device vs cpu, save/load round trips, clear errors.
local lu = require("luaunit")
local H = require("helper")
local N = require("nn_helper")
local netcl = H.netcl
local nn, F = netcl.nn, netcl.nn.functional
local dev = H.device

-- y[n][o][i][j] = b[o] + sum_{c in o's group, ki, kj} x[n][c][i s - p + ki d][j s - p + kj d] w[o][c'][ki][kj]
local function conv2d_ref(x, w, b, s, p, d, g)
  local N_, C, Hh, W = #x, #x[1], #x[1][1], #x[1][1][1]
  local O, Cg, KH, KW = #w, #w[1], #w[1][1], #w[1][1][1]
  local OH = math.floor((Hh + 2 * p - d * (KH - 1) - 1) / s) + 1
  local OW = math.floor((W + 2 * p - d * (KW - 1) - 1) / s) + 1
  local Og = O / g
  local y = {}
  for n = 1, N_ do
    y[n] = {}
    for o = 1, O do
      y[n][o] = {}
      local grp = math.floor((o - 1) / Og)
      for i = 1, OH do
        y[n][o][i] = {}
        for j = 1, OW do
          local acc = b and b[o] or 0
          for c = 1, Cg do
            for ki = 1, KH do
              for kj = 1, KW do
                local r, q = (i - 1) * s - p + (ki - 1) * d + 1, (j - 1) * s - p + (kj - 1) * d + 1
                if r >= 1 and r <= Hh and q >= 1 and q <= W then
                  acc = acc + x[n][grp * Cg + c][r][q] * w[o][c][ki][kj]
                end
              end
            end
          end
          y[n][o][i][j] = acc
        end
      end
    end
  end
  return y, C
end

-- transposed: every x[n][c][i][j] spreads w[c][o'][ki][kj] to y[.][i s - p + ki d][j s - p + kj d]
local function conv_transpose2d_ref(x, w, b, s, p, op, d, g)
  local N_, C, Hh, W = #x, #x[1], #x[1][1], #x[1][1][1]
  local Og, KH, KW = #w[1], #w[1][1], #w[1][1][1]
  local O, Cg = Og * g, C / g
  local OH = (Hh - 1) * s - 2 * p + d * (KH - 1) + op + 1
  local OW = (W - 1) * s - 2 * p + d * (KW - 1) + op + 1
  local y = {}
  for n = 1, N_ do
    y[n] = {}
    for o = 1, O do
      y[n][o] = {}
      for i = 1, OH do
        y[n][o][i] = {}
        for j = 1, OW do y[n][o][i][j] = b and b[o] or 0 end
      end
    end
    for c = 1, C do
      local grp = math.floor((c - 1) / Cg)
      for i = 1, Hh do
        for j = 1, W do
          for oo = 1, Og do
            for ki = 1, KH do
              for kj = 1, KW do
                local r, q = (i - 1) * s - p + (ki - 1) * d + 1, (j - 1) * s - p + (kj - 1) * d + 1
                if r >= 1 and r <= OH and q >= 1 and q <= OW then
                  local o = grp * Og + oo
                  y[n][o][r][q] = y[n][o][r][q] + x[n][c][i][j] * w[c][oo][ki][kj]
                end
              end
            end
          end
        end
      end
    end
  end
  return y
end

local function bound_check(m, fan_in, what)
  local bound = 1 / math.sqrt(fan_in)
  lu.assertTrue(m.weight:abs():max():item() <= bound + 1e-7, what .. " weight within 1/sqrt(fan_in)")
  lu.assertTrue(m.weight:abs():max():item() > 0.5 * bound, what .. " weight spread")
  if m.bias then lu.assertTrue(m.bias:abs():max():item() <= bound + 1e-7, what .. " bias within 1/sqrt(fan_in)") end
end

TestConvLayers = {}

function TestConvLayers:test_conv2d_forward_against_loops()
  netcl.manual_seed(1)
  for _, c in ipairs({ { 4, 6, 3, {}, 1, 0, 1, 1 }, { 4, 6, 3, { stride = 2, padding = 1 }, 2, 1, 1, 1 },
                       { 4, 4, 3, { padding = 2, dilation = 2, groups = 2 }, 1, 2, 2, 2 },
                       { 4, 4, 3, { padding = 1, groups = 4, bias = false }, 1, 1, 1, 4 } }) do
    local cin, cout, k, o, s, p, d, g = unpack(c)
    o.device = dev
    local m = nn.Conv2d(cin, cout, k, o)
    local x = netcl.randn(2, cin, 7, 6, { device = dev })
    local want = conv2d_ref(x:totable(), m.weight:totable(), m.bias and m.bias:totable(), s, p, d, g)
    local y = m(x)
    H.assert_close(y, want, 1e-4, 1e-5, tostring(m))
    H.assert_close(y, F.conv2d(x, m.weight, m.bias, { stride = s, padding = p, dilation = d, groups = g }), 0, 0)
  end
end

function TestConvLayers:test_shapes_init_and_unbatched()
  netcl.manual_seed(2)
  local m = nn.Conv2d(3, 8, { 3, 5 }, { stride = { 2, 1 }, padding = { 1, 2 }, device = dev })
  lu.assertEquals(m.weight:size(), { 8, 3, 3, 5 })
  lu.assertEquals(m(netcl.zeros(2, 3, 9, 10, { device = dev })):size(), { 2, 8, 5, 10 })
  lu.assertEquals(m(netcl.zeros(3, 9, 10, { device = dev })):size(), { 8, 5, 10 })
  bound_check(nn.Conv2d(16, 32, 3), 16 * 9, "Conv2d")
  bound_check(nn.Conv2d(16, 32, 3, { groups = 4 }), 4 * 9, "Conv2d groups 4")
  bound_check(nn.Conv1d(6, 4, 5), 30, "Conv1d")
  -- the transposed weight is [in, out/groups, kh, kw]; PyTorch's fan_in reads its dim 2
  local t = nn.ConvTranspose2d(8, 6, 3, { groups = 2 })
  lu.assertEquals(t.weight:size(), { 8, 3, 3, 3 })
  bound_check(t, 3 * 9, "ConvTranspose2d")
  local c1 = nn.Conv1d(3, 5, 3, { stride = 2, device = dev })
  lu.assertEquals(c1(netcl.zeros(4, 3, 11, { device = dev })):size(), { 4, 5, 5 })
  lu.assertEquals(c1(netcl.zeros(3, 11, { device = dev })):size(), { 5, 5 })
  local dw = nn.Conv2d(6, 12, 3, { groups = 6, padding = 1, device = dev })     -- depthwise, multiplier 2
  lu.assertEquals(dw.weight:size(), { 12, 1, 3, 3 })
  lu.assertEquals(dw(netcl.zeros(1, 6, 5, 5, { device = dev })):size(), { 1, 12, 5, 5 })
  lu.assertStrContains(tostring(dw), "Conv2d(6, 12, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=6)")
  lu.assertEquals(#nn.Conv2d(2, 2, 1, { bias = false }):parameters(), 1)
end

function TestConvLayers:test_conv1d_matches_conv2d()
  netcl.manual_seed(3)
  local m = nn.Conv1d(4, 6, 3, { stride = 2, padding = 1, dilation = 2, groups = 2, device = dev })
  local x = netcl.randn(3, 4, 13, { device = dev })
  local want = F.conv2d(x:unsqueeze(3), m.weight:unsqueeze(3), m.bias, { stride = { 1, 2 }, padding = { 0, 1 }, dilation = { 1, 2 },
                                                                          groups = 2 }):squeeze(3)
  H.assert_close(m(x), want, 1e-5, 1e-6)
end

function TestConvLayers:test_padding_modes_and_same()
  netcl.manual_seed(4)
  local x = netcl.randn(2, 3, 6, 7, { device = dev })
  for _, mode in ipairs({ "reflect", "replicate", "circular" }) do
    local m = nn.Conv2d(3, 4, 3, { padding = 1, padding_mode = mode, device = dev })
    local want = F.conv2d(x:pad({ 1, 1, 1, 1 }, { mode = mode }), m.weight, m.bias)
    H.assert_close(m(x), want, 0, 0, mode)
  end
  -- 'same' with an even kernel pads one more on the right/bottom (PyTorch's rule)
  local m = nn.Conv2d(3, 4, { 4, 3 }, { padding = "same", device = dev })
  local y = m(x)
  lu.assertEquals(y:size(), { 2, 4, 6, 7 })
  H.assert_close(y, F.conv2d(x:pad({ 1, 1, 1, 2 }), m.weight, m.bias), 0, 0)
  local v = nn.Conv1d(3, 2, 5, { padding = "same", dilation = 2, device = dev })
  lu.assertEquals(v(netcl.zeros(1, 3, 9, { device = dev })):size(), { 1, 2, 9 })
  lu.assertEquals(nn.Conv2d(3, 4, 3, { padding = "valid", device = dev })(x):size(), { 2, 4, 4, 5 })
  H.assert_error(function() nn.Conv2d(3, 4, 3, { padding = "same", stride = 2 }) end, "padding 'same' needs stride 1")
end

function TestConvLayers:test_conv_transpose2d_forward_against_loops()
  netcl.manual_seed(5)
  for _, c in ipairs({ { 4, 6, 3, {}, 1, 0, 0, 1, 1 }, { 4, 6, 3, { stride = 2, padding = 1, output_padding = 1 }, 2, 1, 1, 1, 1 },
                       { 4, 4, 2, { stride = 2, dilation = 2, groups = 2 }, 2, 0, 0, 2, 2 } }) do
    local cin, cout, k, o, s, p, op, d, g = unpack(c)
    o.device = dev
    local m = nn.ConvTranspose2d(cin, cout, k, o)
    local x = netcl.randn(2, cin, 4, 3, { device = dev })
    H.assert_close(m(x), conv_transpose2d_ref(x:totable(), m.weight:totable(), m.bias:totable(), s, p, op, d, g), 1e-4, 1e-5, tostring(m))
  end
  -- output_size chooses the output padding
  local up = nn.ConvTranspose2d(3, 2, 3, { stride = 2, padding = 1, device = dev })
  local x = netcl.randn(1, 3, 5, 5, { device = dev })
  lu.assertEquals(up(x):size(), { 1, 2, 9, 9 })
  lu.assertEquals(up(x, { 10, 10 }):size(), { 1, 2, 10, 10 })
  H.assert_error(function() up(x, { 12, 12 }) end, "output size 12 is not reachable")
end

function TestConvLayers:test_gradcheck_through_modules()
  lu.skipIf(not H.is_cpu, "gradchecks run on the cpu backend in float64")
  netcl.manual_seed(6)
  N.gradcheck(nn.Conv2d(4, 4, 3, { stride = 2, padding = 1, groups = 2 }):double(), { N.f64(2, 4, 5, 5) })
  N.gradcheck(nn.Conv2d(3, 3, 3, { groups = 3, dilation = 2, padding = 2 }):double(), { N.f64(1, 3, 5, 4) })
  N.gradcheck(nn.Conv2d(2, 3, 3, { padding = 1, padding_mode = "reflect" }):double(), { N.f64(1, 2, 4, 4) })
  N.gradcheck(nn.Conv2d(2, 2, 2, { padding = "same", bias = false }):double(), { N.f64(1, 2, 4, 3) })
  N.gradcheck(nn.Conv1d(3, 4, 3, { stride = 2, padding = 1 }):double(), { N.f64(2, 3, 7) })
  N.gradcheck(nn.ConvTranspose2d(4, 2, 3, { stride = 2, padding = 1, output_padding = 1, groups = 2 }):double(), { N.f64(1, 4, 3, 3) })
end

function TestConvLayers:test_device_matches_cpu()
  H.against_cpu(function(d)
    netcl.manual_seed(7)
    local c = nn.Conv2d(3, 8, 3, { padding = 1, device = d })
    local dw = nn.Conv2d(8, 8, 3, { stride = 2, groups = 8, device = d })
    local t = nn.ConvTranspose2d(8, 4, 2, { stride = 2, device = d })
    local c1 = nn.Conv1d(4, 2, 3, { device = d })
    netcl.manual_seed(8)
    local x = netcl.randn(2, 3, 9, 9, { device = d })
    local y = t(dw(c(x)))
    local z = c1(y:view(2, 4, -1))
    z:sum():backward()
    return z, c.weight.grad, dw.weight.grad, t.weight.grad, t.bias.grad
  end, 1e-4, 1e-4)
end

function TestConvLayers:test_save_load_round_trip()
  local x = netcl.randn(2, 4, 6, 6, { device = dev })
  N.roundtrip(function() return nn.Conv2d(4, 6, 3, { padding = 1, groups = 2, device = dev }) end, x)
  N.roundtrip(function() return nn.ConvTranspose2d(4, 3, 3, { stride = 2, device = dev }) end, x)
  N.roundtrip(function() return nn.Conv1d(4, 5, 3, { device = dev }) end, x:view(2, 4, 36))
end

function TestConvLayers:test_errors()
  local m = nn.Conv2d(3, 4, 3, { device = dev })
  H.assert_error(function() m(netcl.zeros(1, 2, 5, 5, { device = dev })) end, "Conv2d: expected 3 input channels, got 2", "[1, 2, 5, 5]")
  H.assert_error(function() m(netcl.zeros(5, 5, { device = dev })) end, "Conv2d: expected a 4-D or 3-D input")
  H.assert_error(function() nn.Conv2d(3, 4, 3, { groups = 2 }) end, "divisible by groups")
  H.assert_error(function() nn.Conv2d(3, 4, 3, { pading = 1 }) end, "unknown option 'pading'")
  H.assert_error(function() nn.Conv2d(3, 4, 0) end, "kernel_size must be a positive integer")
  H.assert_error(function() nn.Conv2d(3, 4, 3, { padding_mode = "mirror" }) end, "padding_mode must be")
  H.assert_error(function() nn.ConvTranspose2d(3, 4, 3, { stride = 2, output_padding = 2 }) end, "output_padding 2 must be smaller")
  H.assert_error(function() nn.Conv1d(2, 2, 3)(netcl.zeros(1, 3, 8, { device = dev })) end, "Conv1d: expected 2 input channels")
end
