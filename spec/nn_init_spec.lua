-- spec/nn_init_spec.lua — nn.init: fans and gains, the bounds and moments
-- of each random initialiser, orthogonality of orthogonal_, PyTorch's
-- default Linear initialisation, and identical weights on every device for
-- one seed.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local nn = netcl.nn
local init = nn.init
local dev = H.device

local function stats(t)
  local v = H.flatten(t:totable())
  local sum, sq, lo, hi = 0, 0, math.huge, -math.huge
  for _, x in ipairs(v) do sum = sum + x; sq = sq + x * x; lo = math.min(lo, x); hi = math.max(hi, x) end
  local mean = sum / #v
  return mean, math.sqrt(sq / #v - mean * mean), lo, hi
end

TestInit = {}

function TestInit:test_fans_and_gains()
  local fi, fo = init.calculate_fan_in_and_fan_out(netcl.empty(4, 3))
  lu.assertEquals({ fi, fo }, { 3, 4 })
  fi, fo = init.calculate_fan_in_and_fan_out(netcl.empty(8, 4, 3, 3))
  lu.assertEquals({ fi, fo }, { 36, 72 })
  lu.assertAlmostEquals(init.calculate_gain("relu"), math.sqrt(2), 1e-12)
  lu.assertAlmostEquals(init.calculate_gain("tanh"), 5 / 3, 1e-12)
  lu.assertAlmostEquals(init.calculate_gain("leaky_relu", 0.2), math.sqrt(2 / 1.04), 1e-12)
  lu.assertEquals(init.calculate_gain("conv2d"), 1)
  H.assert_error(function() init.calculate_gain("swish") end, "unsupported nonlinearity 'swish'")
  H.assert_error(function() init.calculate_fan_in_and_fan_out(netcl.empty(3)) end, "at least 2 dims")
end

function TestInit:test_constant_uniform_normal()
  local t = netcl.empty(200, 200, { device = dev })
  lu.assertEquals(init.constant_(t, 0.5):sum():item(), 20000)
  lu.assertEquals(init.zeros_(t):abs():sum():item(), 0)
  lu.assertEquals(init.ones_(t):sum():item(), 40000)
  lu.assertEquals(init.eye_(netcl.empty(3, 4, { device = dev })):totable()[2], { 0, 1, 0, 0 })
  netcl.manual_seed(1)
  local mean, std, lo, hi = stats(init.uniform_(t, -2, 3))
  lu.assertTrue(lo >= -2 and hi < 3 and math.abs(mean - 0.5) < 0.05 and math.abs(std - 5 / math.sqrt(12)) < 0.03)
  mean, std = stats(init.normal_(t, 1, 0.5))
  lu.assertTrue(math.abs(mean - 1) < 0.01 and math.abs(std - 0.5) < 0.01, mean .. " " .. std)
  H.assert_error(function() init.uniform_(netcl.zeros(2, { dtype = "int32" })) end, "nn.init.uniform_: expected a float tensor")
  H.assert_error(function() init.constant_(t, "x") end, "value must be a number")
end

function TestInit:test_xavier_and_kaiming()
  netcl.manual_seed(2)
  local t = netcl.empty(300, 200, { device = dev })
  local bound = math.sqrt(6 / 500)
  local _, std, lo, hi = stats(init.xavier_uniform_(t))
  lu.assertTrue(lo >= -bound and hi <= bound and hi > 0.99 * bound)
  _, std = stats(init.glorot_normal_(t, 2))
  lu.assertTrue(math.abs(std - 2 * math.sqrt(2 / 500)) < 0.003, std)
  _, std, lo, hi = stats(init.kaiming_uniform_(t))   -- a = 0, fan_in, leaky_relu: gain sqrt(2)
  bound = math.sqrt(2) * math.sqrt(3 / 200)
  lu.assertTrue(lo >= -bound and hi <= bound and hi > 0.99 * bound)
  _, std = stats(init.he_normal_(t, { mode = "fan_out", nonlinearity = "relu" }))
  lu.assertTrue(math.abs(std - math.sqrt(2 / 300)) < 0.002, std)
  H.assert_error(function() init.kaiming_normal_(t, 0, "fan_both") end, "mode must be 'fan_in' or 'fan_out'")
end

local function gram_is_identity(m, gain)
  local g = m:matmul(m:t()):totable()
  for i = 1, #g do
    for j = 1, #g do lu.assertAlmostEquals(g[i][j], i == j and gain * gain or 0, 1e-5) end
  end
end

function TestInit:test_orthogonal()
  netcl.manual_seed(3)
  gram_is_identity(init.orthogonal_(netcl.empty(3, 5, { device = dev })), 1)              -- orthonormal rows
  gram_is_identity(init.orthogonal_(netcl.empty(5, 3, { device = dev })):t(), 1)          -- orthonormal columns
  gram_is_identity(init.orthogonal_(netcl.empty(4, 4, { device = dev }), 2), 2)
  gram_is_identity(init.orthogonal_(netcl.empty(4, 2, 2, 2, { device = dev })):view(4, 8), 1)
  H.assert_error(function() init.orthogonal_(netcl.empty(4)) end, "at least 2 dims")
end

function TestInit:test_linear_default()
  netcl.manual_seed(4)
  local m = nn.Linear(50, 30, { device = dev })
  local b = 1 / math.sqrt(50)
  local _, _, lo, hi = stats(m.weight)
  lu.assertTrue(lo >= -b and hi <= b and hi > 0.95 * b)
  _, _, lo, hi = stats(m.bias)
  lu.assertTrue(lo >= -b and hi <= b)
  local bl = nn.Bilinear(4, 5, 6, { device = dev })
  _, _, lo, hi = stats(bl.weight)
  lu.assertTrue(lo >= -0.5 and hi <= 0.5)
  lu.assertEquals(nn.PReLU(3, nil, { device = dev }).weight:totable(), { 0.25, 0.25, 0.25 })
end

function TestInit:test_same_weights_on_every_device()
  H.against_cpu(function(d)
    netcl.manual_seed(5)
    local l = nn.Linear(7, 3, { device = d })
    return l.weight, l.bias, init.orthogonal_(netcl.empty(3, 6, { device = d })), init.xavier_normal_(netcl.empty(4, 4, { device = d }))
  end)
end
