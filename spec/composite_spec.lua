-- spec/composite_spec.lua — values against hand-computed references and
-- bad-input errors for where, logical ops, fmod, atan2, softmax, the
-- composite reductions and the matrix-product composites.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local dev = H.device

local function T(v, dtype) return netcl.tensor(v, { device = dev, dtype = dtype }) end

TestSelect = {}

function TestSelect:test_where_values_and_dtypes()
  local c = T({ true, false, true })
  lu.assertEquals(netcl.where(c, T({ 1, 2, 3 }), T({ 10, 20, 30 })):totable(), { 1, 20, 3 })
  lu.assertEquals(netcl.where(c, 7, T({ 10, 20, 30 })):totable(), { 7, 20, 7 })
  local i = netcl.where(c, T({ 1, 2, 3 }, "int32"), 0.5)
  lu.assertEquals(i.dtype, "float32")
  lu.assertEquals(i:totable(), { 1, 0.5, 3 })
  lu.assertEquals(netcl.where(T({ { 1 }, { 0 } }), 1, 0):totable(), { { 1 }, { 0 } })   -- non-bool cond
  local inf = T({ math.huge, 1 }):where(T({ false, true }), 0)   -- no 0 * inf = nan
  lu.assertEquals(inf:totable(), { 0, 1 })
  H.assert_error(function() netcl.where(T({ true, false }), T({ 1, 2, 3 }), 0) end, "where", "broadcast")
  H.assert_error(function() netcl.where(T({ true }), "x", 0) end, "where", "tensor or a number")
end

function TestSelect:test_logical_fmod_atan2()
  local a, b = T({ 0, 1, 2, 0 }), T({ 0, 0, 3, 1 })
  lu.assertEquals(a:logical_and(b):totable(), { false, false, true, false })
  lu.assertEquals(a:logical_or(b):totable(), { false, true, true, true })
  lu.assertEquals(a:logical_xor(b):totable(), { false, true, false, true })
  lu.assertEquals(a:logical_not():totable(), { true, false, false, true })
  H.assert_close(T({ 5.5, -5.5 }):fmod(2), { 1.5, -1.5 })
  lu.assertEquals(T({ 7, -7, 3 }, "int64"):fmod(T({ 2, 2, 0 }, "int64")):totable(), { 1, -1, 0 })
  H.assert_close(T({ 1, -1 }):atan2(T({ 1, 1 })), { math.pi / 4, -math.pi / 4 }, 1e-6, 1e-6)
end

function TestSelect:test_softmax_values()
  local x = T({ { 1, 2, 3 }, { 0, 0, 0 } })
  local s = x:softmax(2):totable()
  local e = { math.exp(1), math.exp(2), math.exp(3) }
  local z = e[1] + e[2] + e[3]
  H.assert_close(s[1], { e[1] / z, e[2] / z, e[3] / z }, 1e-6, 1e-7)
  H.assert_close(s[2], { 1 / 3, 1 / 3, 1 / 3 }, 1e-6, 1e-7)
  H.assert_close(x:log_softmax(2):exp(), x:softmax(2), 1e-6, 1e-7)
  H.assert_close(x:softmax(1):sum(1), { 1, 1, 1 }, 1e-6, 1e-7)
  H.assert_close(T({ 1000, 0 }):softmax(), { 1, 0 })            -- no overflow
  local big = netcl.randn(7, 5000, { device = dev })
  H.assert_close(big:softmax(2):sum(2), netcl.ones(7), 1e-4, 1e-5)
  H.assert_error(function() T({ 1, 2 }, "int32"):softmax(1) end, "softmax", "floating")
  H.assert_error(function() x:softmax(3) end, "softmax", "dim 3 out of range")
end

function TestSelect:test_softmax_float32_against_float64()
  -- float32 rows of odd lengths (vector tails), past 256 (exp scratch
  -- blocks) and with -inf entries (exactly 0), against a float64 softmax
  H.skip_without_fp64()
  netcl.manual_seed(47)
  for _, n in ipairs({ 1, 3, 17, 257, 1000, 4099 }) do
    local x = netcl.randn(5, n, { device = dev }) * 4
    if n > 3 then x:narrow(2, 2, 2):fill_(-math.huge) end
    local g = netcl.randn(5, n, { device = dev })
    local x64, g64 = x:double(), g:double()
    for _, log in ipairs({ false, true }) do
      local f = log and "log_softmax" or "softmax"
      local xr, xr64 = x:clone():requires_grad_(), x64:clone():requires_grad_()
      local y, y64 = xr[f](xr, 2), xr64[f](xr64, 2)
      H.assert_close(y, y64:float(), 2e-6, 1e-7, f .. " " .. n)
      y:backward(g)
      y64:backward(g64)
      H.assert_close(xr.grad, xr64.grad:float(), 1e-5, 1e-6, f .. " backward " .. n)
      if n > 3 and not log then lu.assertEquals(y:select(2, 2):totable(), { 0, 0, 0, 0, 0 }) end
    end
  end
end

function TestSelect:test_softmax_float32_special_rows()
  local inf, nan = math.huge, 0 / 0
  local x = T({ { -inf, -inf, -inf }, { 1, nan, 2 }, { 1, inf, 2 }, { -inf, 0, -inf } })
  for _, f in ipairs({ "softmax", "log_softmax" }) do
    local y = x[f](x, 2):totable()
    for r = 1, 3 do for j = 1, 3 do lu.assertTrue(y[r][j] ~= y[r][j], f .. " row " .. r) end end
  end
  lu.assertEquals(x:softmax(2):totable()[4], { 0, 1, 0 })
  lu.assertEquals(x:log_softmax(2):totable()[4], { -inf, 0, -inf })
end

function TestSelect:test_cpu_softmax_row_ignores_position()
  -- a row's result depends on its values only: alone, in a batch split
  -- across threads, or reached through a transpose, the bits agree
  lu.skipIf(not H.is_cpu, "checks the cpu backend's threaded softmax rows: cpu only")
  netcl.manual_seed(48)
  local x = netcl.randn(64, 300, { device = dev }) * 3
  for _, f in ipairs({ "softmax", "log_softmax" }) do
    local all = x[f](x, 2)
    local viat = x:t():contiguous()[f](x:t():contiguous(), 1):t()
    for _, r in ipairs({ 1, 33, 64 }) do
      local row = x:select(1, r):clone()
      lu.assertEquals(row[f](row, 1):totable(), all:select(1, r):totable())
      lu.assertEquals(viat:select(1, r):totable(), all:select(1, r):totable())
    end
  end
end

TestComposite = {}

function TestComposite:test_var_std_norm_logsumexp()
  local x = T({ { 1, 2, 3, 4 }, { 2, 2, 2, 2 } })
  H.assert_close(x:var(2), { 5 / 3, 0 }, 1e-6, 1e-6)
  H.assert_close(x:var(2, false), { 1.25, 0 }, 1e-6, 1e-6)
  H.assert_close(x:std(), math.sqrt(((1 - 2.25) ^ 2 + (2 - 2.25) ^ 2 * 5 + (3 - 2.25) ^ 2 + (4 - 2.25) ^ 2) / 7), 1e-6, 1e-6)
  H.assert_close(T({ 3, -4 }):norm(), 5)
  H.assert_close(T({ 3, -4 }):norm(1), 7)
  H.assert_close(T({ 3, -4 }):norm(math.huge), 4)
  H.assert_close(x:norm(2, 1), { math.sqrt(5), math.sqrt(8), math.sqrt(13), math.sqrt(20) }, 1e-6, 1e-6)
  H.assert_close(T({ 0, 0 }):logsumexp(), math.log(2), 1e-6, 1e-6)
  H.assert_close(T({ -math.huge, -math.huge }):logsumexp(), -math.huge)
  H.assert_close(T({ 1000, 1000 }):logsumexp(), 1000 + math.log(2), 1e-6, 1e-6)
  lu.assertEquals(x:sum({ 1, 2 }):item(), 18)
  lu.assertEquals(x:sum({ 1, 2 }, true):size(), { 1, 1 })
  lu.assertEquals(T({ { 0, 1 }, { 0, 0 } }):any(2):totable(), { true, false })
  lu.assertEquals(T({ { 0, 1 }, { 2, 3 } }):all(2):totable(), { false, true })
  lu.assertEquals(T({ { 0, 1 }, { 2, 3 } }):all():item(), false)
  H.assert_error(function() x:var({ 1, 1 }) end, "var", "repeated")
  H.assert_error(function() x:norm(-1) end, "norm", "positive")
  H.assert_error(function() x:sum({ 3 }) end, "dim 3 out of range")
end

function TestComposite:test_matrix_products()
  local a, b = T({ { 1, 2 }, { 3, 4 } }), T({ { 5, 6 }, { 7, 8 } })
  lu.assertEquals(a:mm(b):totable(), { { 19, 22 }, { 43, 50 } })
  lu.assertEquals(T({ 1, 1 }):addmm(a, b, { beta = 2, alpha = 0.5 }):totable(), { { 11.5, 13 }, { 23.5, 27 } })
  lu.assertEquals(netcl.linear(a, b, T({ 1, -1 })):totable(), { { 18, 22 }, { 40, 52 } })
  lu.assertEquals(T({ 1, 2 }):outer(T({ 3, 4, 5 })):totable(), { { 3, 4, 5 }, { 6, 8, 10 } })
  lu.assertEquals(T({ 1, 2, 3 }):dot(T({ 4, 5, 6 })):item(), 32)
  lu.assertEquals(a:view(1, 2, 2):bmm(b:view(1, 2, 2)):size(), { 1, 2, 2 })
  H.assert_error(function() a:mm(T({ 1, 2 })) end, "mm", "2-dimensional")
  H.assert_error(function() a:view(1, 2, 2):bmm(netcl.ones(2, 2, 2, { device = dev })) end, "bmm", "batch")
  H.assert_error(function() netcl.linear(a, T({ { 1, 2, 3 } })) end, "linear", "does not match")
  H.assert_error(function() T({ 1, 2 }):dot(T({ 1, 2, 3 })) end, "dot", "lengths differ")
end

TestMixedDevices = {}

function TestMixedDevices:test_every_family_names_both_devices()
  lu.skipIf(H.is_cpu, "mixes the device under test with the cpu: needs an OpenCL device under test")
  local F = netcl.nn.functional
  local d = netcl.randn(2, 3, 4, 4, { device = dev })
  local c = netcl.randn(2, 3, 4, 4, { device = "cpu" })
  local cases = {
    function() return d + c end,
    function() return netcl.where(d:gt(0), d, c) end,
    function() return d:matmul(c) end,
    function() return F.conv2d(d, netcl.randn(2, 3, 3, 3, { device = "cpu" })) end,
    function() return F.batch_norm(d, nil, nil, netcl.ones(3, { device = "cpu" }), nil, true) end,
    function() return F.cross_entropy(d:view(2, 48), netcl.ones(2, { device = "cpu", dtype = "int64" })) end,
    function() return F.mse_loss(d, c) end,
  }
  for i, f in ipairs(cases) do
    local err = H.assert_error(f, "different devices")
    lu.assertTrue(err:find(dev, 1, true) ~= nil and err:find("cpu", 1, true) ~= nil, "case " .. i .. ": " .. err)
  end
end
