-- spec/nn_layers_spec.lua — every phase-1 layer: output shapes, forward
-- against a reference computed here in Lua doubles, Jacobian checks through
-- the module (finite differences vs backward for the input and each
-- parameter; float64 on the cpu), device results against the cpu, a
-- save/load round trip giving identical outputs, and train/eval behaviour.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local nn = netcl.nn
local dev = H.device

local X = { -2.5, -1, -0.3, 0, 0.4, 1.2, 3, 25 }   -- covers each branch of the activations

local function erf(x)   -- Taylor series: exact to double rounding for |x| <= 6
  if math.abs(x) > 6 then return x > 0 and 1 or -1 end
  local sum, term, n = 0, x, 0
  while math.abs(term) > 1e-17 * math.abs(sum) + 1e-300 and n < 200 do
    sum = sum + term / (2 * n + 1)
    n = n + 1
    term = -term * x * x / n
  end
  return 2 / math.sqrt(math.pi) * sum
end

local function map(f) local out = {}; for i, v in ipairs(X) do out[i] = f(v) end; return out end

local function sigmoid(v) return 1 / (1 + math.exp(-v)) end
local ACTIVATIONS = {
  { nn.ReLU(), function(v) return math.max(v, 0) end },
  { nn.ReLU6(), function(v) return math.min(math.max(v, 0), 6) end },
  { nn.LeakyReLU(), function(v) return v > 0 and v or 0.01 * v end },
  { nn.LeakyReLU(0.2), function(v) return v > 0 and v or 0.2 * v end },
  { nn.ELU(0.7), function(v) return v > 0 and v or 0.7 * (math.exp(v) - 1) end },
  { nn.GELU(), function(v) return 0.5 * v * (1 + erf(v / math.sqrt(2))) end },
  { nn.GELU("tanh"), function(v) return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ^ 3))) end },
  { nn.SiLU(), function(v) return v * sigmoid(v) end },
  { nn.Sigmoid(), sigmoid },
  { nn.Tanh(), math.tanh },
  { nn.Hardtanh(-0.5, 2), function(v) return math.min(math.max(v, -0.5), 2) end },
  { nn.Softplus(), function(v) return v > 20 and v or math.log(1 + math.exp(v)) end },
  { nn.Softplus(2, 5), function(v) return 2 * v > 5 and v or math.log(1 + math.exp(2 * v)) / 2 end },
  { nn.PReLU(), function(v) return v > 0 and v or 0.25 * v end },
}

local function f64(...) return netcl.randn({ ... }, { dtype = "float64", device = "cpu", requires_grad = true }) end

-- (the gradchecks run on the cpu in float64, whatever the default device is)
local function gradcheck(m, inputs)
  m:to("cpu")
  local ps = m:parameters()
  local all = { unpack(inputs) }
  for _, p in ipairs(ps) do all[#all + 1] = p end
  local n = #inputs
  local ok, err = netcl.autograd.gradcheck(function(...)
    local args = { ... }
    return m(unpack(args, 1, n))
  end, all)
  lu.assertTrue(ok, m.__name .. ": " .. tostring(err))
end

TestLayers = {}

function TestLayers:test_activations_forward()
  for _, case in ipairs(ACTIVATIONS) do
    local m, f = case[1], case[2]
    m:to(dev)
    local y = m(netcl.tensor(X, { device = dev }))
    H.assert_close(y, map(f), 1e-5, 1e-6, tostring(m))
  end
end

function TestLayers:test_activations_gradcheck()
  lu.skipIf(not H.is_cpu, "gradchecks run on the cpu backend in float64")
  netcl.manual_seed(1)
  for _, case in ipairs(ACTIVATIONS) do
    local m = case[1]:to("cpu"):double()
    local x = f64(3, 4)
    netcl.no_grad(function() x:mul_(2):add_(0.05) end)   -- keeps kinks away from 0
    gradcheck(m, { x })
  end
end

function TestLayers:test_prelu_channels_and_softmax()
  netcl.manual_seed(2)
  local m = nn.PReLU(3, 0.1, { device = dev })
  netcl.no_grad(function() m.weight:copy_(netcl.tensor({ 0.1, 0.2, 0.3 })) end)
  local x = netcl.tensor({ { { -1, 2 }, { -1, 2 }, { -1, 2 } } }, { device = dev })   -- [1, 3, 2]
  H.assert_close(m(x), { { { -0.1, 2 }, { -0.2, 2 }, { -0.3, 2 } } })
  H.assert_error(function() m(netcl.zeros(2, 4, { device = dev })) end, "PReLU: 3 parameters need an input with 3 channels")
  local sm = nn.Softmax(2)(netcl.tensor({ { 1, 2, 3 } }, { device = dev }))
  local e = { math.exp(1), math.exp(2), math.exp(3) }
  local z = e[1] + e[2] + e[3]
  H.assert_close(sm, { { e[1] / z, e[2] / z, e[3] / z } })
  H.assert_close(nn.LogSoftmax(-1)(netcl.tensor({ { 1, 2, 3 } }, { device = dev })),
                 { { 1 - math.log(z), 2 - math.log(z), 3 - math.log(z) } })
  if H.is_cpu then
    local p = nn.PReLU(3):double()
    gradcheck(p, { f64(2, 3, 4) })
    gradcheck(nn.Softmax(2):double(), { f64(2, 5) })
    gradcheck(nn.LogSoftmax(1):double(), { f64(4, 2) })
  end
end

function TestLayers:test_linear()
  netcl.manual_seed(3)
  local m = nn.Linear(3, 2, { device = dev })
  local w, b = m.weight:totable(), m.bias:totable()
  local xs = { { 1, -2, 0.5 }, { 0, 3, -1 } }
  local want = {}
  for r, x in ipairs(xs) do
    want[r] = {}
    for o = 1, 2 do want[r][o] = b[o] + w[o][1] * x[1] + w[o][2] * x[2] + w[o][3] * x[3] end
  end
  H.assert_close(m(netcl.tensor(xs, { device = dev })), want)
  lu.assertEquals(m(netcl.zeros(4, 5, 3, { device = dev })):size(), { 4, 5, 2 })
  local nb = nn.Linear(3, 2, { bias = false, device = dev })
  lu.assertNil(nb.bias)
  lu.assertEquals(#nb:parameters(), 1)
  lu.assertStrContains(tostring(nb), "bias=false")
  H.assert_error(function() m(netcl.zeros(2, 4, { device = dev })) end, "Linear: expected input with 3 features")
  H.assert_error(function() nn.Linear(0, 2) end, "in_features must be a positive integer")
  if H.is_cpu then
    gradcheck(nn.Linear(4, 3):double(), { f64(5, 4) })
    gradcheck(nn.Linear(4, 3, { bias = false }):double(), { f64(2, 3, 4) })
  end
end

function TestLayers:test_bilinear()
  netcl.manual_seed(4)
  local m = nn.Bilinear(2, 3, 2, { device = dev })
  local W, b = m.weight:totable(), m.bias:totable()
  local x1, x2 = { { 1, -1 }, { 0.5, 2 } }, { { 1, 0, 2 }, { -1, 1, 0.5 } }
  local want = {}
  for n = 1, 2 do
    want[n] = {}
    for o = 1, 2 do
      local s = b[o]
      for i = 1, 2 do for j = 1, 3 do s = s + x1[n][i] * W[o][i][j] * x2[n][j] end end
      want[n][o] = s
    end
  end
  H.assert_close(m(netcl.tensor(x1, { device = dev }), netcl.tensor(x2, { device = dev })), want)
  lu.assertEquals(m(netcl.zeros(4, 5, 2, { device = dev }), netcl.zeros(4, 5, 3, { device = dev })):size(), { 4, 5, 2 })
  H.assert_error(function() m(netcl.zeros(4, 2, { device = dev }), netcl.zeros(3, 3, { device = dev })) end, "differ in their leading dims")
  if H.is_cpu then gradcheck(nn.Bilinear(3, 2, 4):double(), { f64(5, 3), f64(5, 2) }) end
end

function TestLayers:test_shape_modules()
  local x = netcl.arange(24, { device = dev }):view(2, 3, 4)
  lu.assertTrue(rawequal(nn.Identity(1, 2)(x), x))
  lu.assertEquals(nn.Flatten()(x):size(), { 2, 12 })
  lu.assertEquals(nn.Flatten(1, 2)(x):size(), { 6, 4 })
  lu.assertEquals(nn.Flatten(1, -1)(x):size(), { 24 })
  lu.assertEquals(nn.Unflatten(3, { 2, 2 })(x):size(), { 2, 3, 2, 2 })
  lu.assertEquals(nn.Unflatten(-1, { -1, 2 })(x):size(), { 2, 3, 2, 2 })
  H.assert_close(nn.Flatten()(x:transpose(2, 3)), x:transpose(2, 3):contiguous():view(2, 12))   -- non-contiguous input
  H.assert_error(function() nn.Flatten(3, 2)(x) end, "start_dim 3 comes after end_dim 2")
  H.assert_error(function() nn.Flatten(5)(x) end, "dim 5 out of range")
  if H.is_cpu then
    gradcheck(nn.Flatten(), { f64(2, 3, 2) })
    gradcheck(nn.Unflatten(2, { 2, 3 }), { f64(2, 6) })
  end
end

function TestLayers:test_layers_match_cpu()
  local function model(d)
    netcl.manual_seed(5)
    return nn.Sequential(nn.Linear(6, 5, { device = d }), nn.GELU(), nn.PReLU(5, 0.3, { device = d }), nn.Linear(5, 4, { device = d }),
                         nn.Softplus(), nn.LogSoftmax(2))
  end
  H.against_cpu(function(d)
    local m = model(d)
    netcl.manual_seed(6)
    local x = netcl.randn(7, 6, { device = d })
    local y = m(x)
    y:sum():backward()
    return y, m[1].weight.grad, m[3].weight.grad
  end)
end

function TestLayers:test_save_load_gives_identical_outputs()
  local path = os.tmpname()
  netcl.manual_seed(7)
  local a = nn.Sequential(nn.Linear(4, 3, { device = dev }), nn.PReLU(3, 0.2, { device = dev }), nn.Bilinear(3, 3, 2, { device = dev }))
  local fwd = function(m, x) return m[3](m[2](m[1](x)), x:narrow(2, 1, 3)) end
  netcl.save(a, path)
  netcl.manual_seed(8)
  local b = nn.Sequential(nn.Linear(4, 3, { device = dev }), nn.PReLU(3, 0.2, { device = dev }), nn.Bilinear(3, 3, 2, { device = dev }))
  b:load_state_dict(netcl.load(path, { device = dev }))
  local x = netcl.randn(5, 4, { device = dev })
  H.assert_close(fwd(b, x), fwd(a, x), 0, 0)
  os.remove(path)
end

function TestLayers:test_dropout_train_and_eval()
  netcl.manual_seed(9)
  local d = nn.Dropout(0.25)
  local x = netcl.ones(100, 100, { device = dev })
  local y = d(x):totable()
  local zeros, kept = 0, 0
  for _, row in ipairs(y) do
    for _, v in ipairs(row) do
      if v == 0 then zeros = zeros + 1 else kept = kept + 1; lu.assertAlmostEquals(v, 1 / 0.75, 1e-6) end
    end
  end
  lu.assertTrue(zeros > 2000 and zeros < 3000, "dropped " .. zeros .. " of 10000 at p = 0.25")
  d:eval()
  lu.assertTrue(rawequal(d(x), x))
  lu.assertEquals(nn.Dropout(1)(x):abs():sum():item(), 0)
  local d2 = nn.Dropout2d(0.5)
  local y2 = d2(netcl.ones(4, 8, 3, 3, { device = dev }))
  local per_channel = y2:sum(4):sum(3):totable()   -- [4, 8]: 0 or 9 * 2 each
  for _, row in ipairs(per_channel) do
    for _, v in ipairs(row) do lu.assertTrue(v == 0 or math.abs(v - 18) < 1e-4, "channel sum " .. v) end
  end
  H.assert_error(function() nn.Dropout(1.5) end, "p must be a probability")
  H.assert_error(function() nn.Dropout2d()(netcl.zeros(2, 2, { device = dev })) end, "3-D or 4-D input")
  lu.assertStrContains(tostring(nn.Sequential(nn.Dropout(0.1))), "Dropout(p=0.1)")
end
