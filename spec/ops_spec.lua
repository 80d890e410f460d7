-- spec/ops_spec.lua — the first op set on the device under test: results
-- against values computed in Lua, and (on OpenCL) against the cpu backend,
-- with broadcast and non-contiguous operands.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local dev = H.device

-- deterministic inputs: the same numbers on every device
local function inputs(d, seed, ...)
  netcl.manual_seed(seed)
  return netcl.randn({ ... }, { device = d })
end

TestElementwise = {}

function TestElementwise:test_binary_against_lua()
  local a = netcl.tensor({ 1, -2, 3.5 }, { device = dev })
  local b = netcl.tensor({ 2, 4, -0.5 }, { device = dev })
  H.assert_close((a + b):totable(), { 3, 2, 3 })
  H.assert_close((a - b):totable(), { -1, -6, 4 })
  H.assert_close((a * b):totable(), { 2, -8, -1.75 })
  H.assert_close((a / b):totable(), { 0.5, -0.5, -7 })
  H.assert_close((b ^ 2):totable(), { 4, 16, 0.25 })
  H.assert_close(a:maximum(b):totable(), { 2, 4, 3.5 })
  H.assert_close(a:minimum(b):totable(), { 1, -2, -0.5 })
  H.assert_close((-a):totable(), { -1, 2, -3.5 })
  H.assert_close((2 - a):totable(), { 1, 4, -1.5 })
  H.assert_close((1 / b):totable(), { 0.5, 0.25, -2 })
end

function TestElementwise:test_unary_against_lua()
  local xs = { -2, -0.5, 0.25, 3 }
  local x = netcl.tensor(xs, { device = dev })
  local function map(f) local r = {} for i, v in ipairs(xs) do r[i] = f(v) end return r end
  H.assert_close(x:exp():totable(), map(math.exp))
  H.assert_close(x:abs():totable(), map(math.abs))
  H.assert_close(x:abs():log():totable(), map(function(v) return math.log(math.abs(v)) end))
  H.assert_close(x:abs():sqrt():totable(), map(function(v) return math.sqrt(math.abs(v)) end))
  H.assert_close(x:relu():totable(), map(function(v) return math.max(v, 0) end))
  H.assert_close(x:sigmoid():totable(), map(function(v) return 1 / (1 + math.exp(-v)) end))
  H.assert_close(x:tanh():totable(), map(function(v) local e = math.exp(2 * v) return (e - 1) / (e + 1) end))
end

function TestElementwise:test_more_unary_against_lua()
  local xs = { -2.5, -0.5, 0.3, 1.5, 4 }
  local x = netcl.tensor(xs, { device = dev })
  local function map(f) local r = {} for i, v in ipairs(xs) do r[i] = f(v) end return r end
  local function erf(v) -- Abramowitz-Stegun 7.1.26 is too coarse; integrate instead
    local s, n = 0, 2000
    for k = 0, n - 1 do local t = v * (k + 0.5) / n; s = s + math.exp(-t * t) end
    return 2 / math.sqrt(math.pi) * s * v / n
  end
  local sig = function(v) return 1 / (1 + math.exp(-v)) end
  H.assert_close(x:sign():totable(), map(function(v) return v > 0 and 1 or (v < 0 and -1 or 0) end))
  H.assert_close(x:reciprocal():totable(), map(function(v) return 1 / v end))
  H.assert_close(x:square():totable(), map(function(v) return v * v end))
  H.assert_close(x:abs():rsqrt():totable(), map(function(v) return 1 / math.sqrt(math.abs(v)) end))
  H.assert_close(x:expm1():totable(), map(function(v) return math.exp(v) - 1 end))
  H.assert_close(x:abs():log1p():totable(), map(function(v) return math.log(1 + math.abs(v)) end))
  H.assert_close(x:abs():log2():totable(), map(function(v) return math.log(math.abs(v)) / math.log(2) end))
  H.assert_close(x:sin():totable(), map(math.sin))
  H.assert_close(x:cos():totable(), map(math.cos))
  H.assert_close(x:tan():totable(), map(math.tan))
  H.assert_close(x:floor():totable(), map(math.floor))
  H.assert_close(x:ceil():totable(), map(math.ceil))
  H.assert_close(x:round():totable(), { -2, -0, 0, 2, 4 })          -- half to even
  H.assert_close(x:trunc():totable(), { -2, -0, 0, 1, 4 })
  H.assert_close(x:silu():totable(), map(function(v) return v * sig(v) end))
  H.assert_close(x:gelu():totable(), map(function(v) return 0.5 * v * (1 + erf(v / math.sqrt(2))) end), 1e-4, 1e-5)
  H.assert_close(x:gelu("tanh"):totable(), map(function(v)
    local u = math.sqrt(2 / math.pi) * (v + 0.044715 * v ^ 3)
    return 0.5 * v * (1 + (math.exp(2 * u) - 1) / (math.exp(2 * u) + 1)) end))
  H.assert_close(x:softplus():totable(), map(function(v) return math.log(1 + math.exp(v)) end))
  H.assert_close(x:relu6():totable(), map(function(v) return math.min(math.max(v, 0), 6) end))
  H.assert_close(x:leaky_relu(0.1):totable(), map(function(v) return v > 0 and v or 0.1 * v end))
  H.assert_close(x:elu():totable(), map(function(v) return v > 0 and v or math.exp(v) - 1 end))
  H.assert_close(x:clamp(-1, 2):totable(), map(function(v) return math.min(math.max(v, -1), 2) end))
  H.assert_close(x:hardtanh():totable(), map(function(v) return math.min(math.max(v, -1), 1) end))
  H.assert_close(x:erf():totable(), map(erf), 1e-4, 1e-5)
  local i = netcl.tensor({ -3, 0, 5 }, { device = dev, dtype = "int32" })
  lu.assertEquals(i:clamp(-1, 2).dtype, "int32")
  lu.assertEquals(i:clamp(-1, 2):totable(), { -1, 0, 2 })
  lu.assertEquals(i:sign():totable(), { -1, 0, 1 })
  lu.assertEquals(i:square():totable(), { 9, 0, 25 })
  lu.assertEquals(i:sin().dtype, "float32")
end

function TestElementwise:test_more_unary_against_cpu_strided()
  H.against_cpu(function(d)
    local a = inputs(d, 60, 7, 9):t()
    local out = {}
    for _, name in ipairs({ "sign", "square", "expm1", "sin", "cos", "tan", "floor", "ceil", "round", "trunc", "silu",
                            "gelu", "softplus", "relu6", "leaky_relu", "elu", "hardtanh", "erf" }) do
      out[#out + 1] = a[name](a)
    end
    local p = a:abs() + 0.1
    for _, name in ipairs({ "reciprocal", "rsqrt", "log1p", "log2" }) do out[#out + 1] = p[name](p) end
    out[#out + 1] = a:gelu("tanh")
    out[#out + 1] = a:clamp(-0.3, 0.4)
    return unpack(out)
  end, 1e-4, 1e-5)
end

function TestElementwise:test_comparisons_return_bool()
  local a = netcl.tensor({ 1, 2, 3 }, { device = dev })
  local b = netcl.tensor({ 3, 2, 1 }, { device = dev })
  local r = a:lt(b)
  lu.assertEquals(r.dtype, "bool")
  lu.assertEquals(r:totable(), { true, false, false })
  lu.assertEquals(a:le(b):totable(), { true, true, false })
  lu.assertEquals(a:eq(b):totable(), { false, true, false })
  lu.assertEquals(a:ne(2):totable(), { true, false, true })
  lu.assertEquals(a:gt(1.5):totable(), { false, true, true })
  lu.assertEquals(a:ge(b):totable(), { false, true, true })
end

-- where over every element size (1, 2, 4, 8 bytes), with tensor and scalar
-- branches, broadcast and transposed operands, against Lua
function TestElementwise:test_where_every_element_size()
  netcl.manual_seed(11)
  local m = netcl.rand(6, 37, { device = dev }):gt(0.5)
  local mt = m:totable()
  for _, dtype in ipairs({ "bool", "uint8", "float16", "bfloat16", "float32", "int32", "float64", "int64" }) do
    local function t(lo) return (netcl.rand(6, 37, { device = dev }) * 4 + lo):to(dtype) end
    local a, b = t(0), t(5)
    local at, bt = a:totable(), b:totable()
    local row = b[{ 2 }]:reshape(1, 37)                  -- broadcast along rows
    local rt = row:totable()[1]
    local bT = b:t():contiguous():t()                    -- the same values, transposed storage
    local want1, want2, want3, want4 = {}, {}, {}, {}
    for i = 1, 6 do
      want1[i], want2[i], want3[i], want4[i] = {}, {}, {}, {}
      for j = 1, 37 do
        local s = mt[i][j]
        want1[i][j] = s and at[i][j] or bt[i][j]
        want2[i][j] = s and at[i][j] or 1
        want3[i][j] = s and 0 or rt[j]
        want4[i][j] = s and bt[i][j] or at[i][j]
      end
    end
    local what = "where " .. dtype
    lu.assertEquals(netcl.where(m, a, b):totable(), want1, what)
    if dtype ~= "bool" then   -- a number with a bool tensor promotes
      lu.assertEquals(netcl.where(m, a, 1):totable(), want2, what .. ", scalar b")
      lu.assertEquals(netcl.where(m, 0, row):totable(), want3, what .. ", scalar a, broadcast b")
    end
    lu.assertEquals(netcl.where(m, bT, a):totable(), want4, what .. ", transposed a")
    -- contiguous operands at different offsets (and a tail past a multiple of 4)
    local mf, af, bf = m:reshape(-1), a:reshape(-1), b:reshape(-1)
    local got = netcl.where(mf:narrow(1, 3, 101), af:narrow(1, 6, 101), bf:narrow(1, 2, 101)):totable()
    local mft, aft, bft = mf:totable(), af:totable(), bf:totable()
    for i = 1, 101 do
      local want
      if mft[i + 2] then want = aft[i + 5] else want = bft[i + 1] end
      lu.assertEquals(got[i], want, what .. ", offsets, element " .. i)
    end
  end
end

function TestElementwise:test_broadcasting()
  local a = netcl.tensor({ { 1 }, { 2 } }, { device = dev })     -- 2x1
  local b = netcl.tensor({ 10, 20, 30 }, { device = dev })       -- 3
  lu.assertEquals((a + b):totable(), { { 11, 21, 31 }, { 12, 22, 32 } })
  lu.assertEquals((b * a):size(), { 2, 3 })
end

function TestElementwise:test_against_cpu_broadcast_and_strided()
  H.against_cpu(function(d)
    local a = inputs(d, 1, 4, 5, 6)
    local b = inputs(d, 2, 5, 1)
    local at = a:transpose(1, 3)                  -- non-contiguous [6,5,4]
    local c = inputs(d, 3, 4)
    return a + b, a * b, at - c, (at / 1.5):relu(), a:maximum(b), at:sigmoid(), at:tanh(),
           a:exp(), (a:abs() + 0.1):log(), a:abs():sqrt(), a:gt(b), a:abs() ^ 1.5
  end)
end

function TestElementwise:test_integer_ops()
  local a = netcl.tensor({ 7, -7, 4 }, { device = dev, dtype = "int32" })
  local b = netcl.tensor({ 2, 2, 3 }, { device = dev, dtype = "int32" })
  lu.assertEquals((a + b).dtype, "int32")
  lu.assertEquals((a + b):totable(), { 9, -5, 7 })
  lu.assertEquals((a * b):totable(), { 14, -14, 12 })
  local q = a / b                                  -- true division gives float
  lu.assertEquals(q.dtype, "float32")
  H.assert_close(q:totable(), { 3.5, -3.5, 4 / 3 })
  lu.assertEquals((a * 2.5).dtype, "float32")      -- non-integral scalar promotes
  lu.assertEquals(a:abs():totable(), { 7, 7, 4 })
  lu.assertEquals(a:lt(2.5):totable(), { false, true, false })
end

function TestElementwise:test_dtype_promotion()
  local i = netcl.tensor({ 1, 2 }, { device = dev, dtype = "int64" })
  local f = netcl.tensor({ 0.5, 0.5 }, { device = dev })
  local r = i + f
  lu.assertEquals(r.dtype, "float32")
  lu.assertEquals(r:totable(), { 1.5, 2.5 })
  local h = netcl.tensor({ 1, 2 }, { device = dev, dtype = "float16" })
  lu.assertEquals((h + h).dtype, "float16")
  lu.assertEquals((h + h):totable(), { 2, 4 })
  lu.assertEquals((h + f).dtype, "float32")
end

function TestElementwise:test_half_storage_against_cpu()
  H.against_cpu(function(d)
    local a = inputs(d, 4, 33, 7)
    return (a:half() * 2 + 1):float(), a:bfloat16():sigmoid():float()
  end, 1e-2, 1e-3)
end

TestReduce = {}

function TestReduce:test_against_lua()
  local t = netcl.tensor({ { 1, 5, 2 }, { 4, 3, 6 } }, { device = dev })
  lu.assertEquals(t:sum():item(), 21)
  lu.assertEquals(t:sum(1):totable(), { 5, 8, 8 })
  lu.assertEquals(t:sum(2):totable(), { 8, 13 })
  lu.assertEquals(t:sum(2, true):size(), { 2, 1 })
  lu.assertEquals(t:sum(-1):totable(), { 8, 13 })
  H.assert_close(t:mean():item(), 3.5)
  H.assert_close(t:mean(1):totable(), { 2.5, 4, 4 })
  lu.assertEquals(t:prod(2):totable(), { 10, 72 })
  lu.assertEquals(t:max():item(), 6)
  lu.assertEquals(t:min():item(), 1)
  local v, i = t:max(2)
  lu.assertEquals(v:totable(), { 5, 6 })
  lu.assertEquals(i:totable(), { 2, 3 })            -- 1-based
  lu.assertEquals(i.dtype, "int64")
  v, i = t:min(1)
  lu.assertEquals(v:totable(), { 1, 3, 2 })
  lu.assertEquals(i:totable(), { 1, 2, 1 })
  lu.assertEquals(t:argmax(2):totable(), { 2, 3 })
  lu.assertEquals(t:argmax():item(), 6)
  lu.assertEquals(t:argmin(2):totable(), { 1, 2 })
end

function TestReduce:test_ties_pick_first_and_nan_wins()
  local t = netcl.tensor({ 3, 7, 7, 1 }, { device = dev })
  lu.assertEquals(t:argmax():item(), 2)
  local n = netcl.tensor({ 1, 0 / 0, 5 }, { device = dev })
  local v = n:max():item()
  lu.assertTrue(v ~= v)
  lu.assertEquals(n:argmax():item(), 2)
end

function TestReduce:test_integer_sum_is_int64()
  local t = netcl.tensor({ 1, 2, 3 }, { device = dev, dtype = "int32" })
  lu.assertEquals(t:sum().dtype, "int64")
  lu.assertEquals(t:sum():item(), 6)
  lu.assertEquals(netcl.tensor({ 1, 0, 1 }, { device = dev, dtype = "bool" }):sum():item(), 2)
end

function TestReduce:test_against_cpu_large_and_strided()
  H.against_cpu(function(d)
    local a = inputs(d, 5, 37, 129)
    local at = a:t()
    local v, i = at:max(2)
    local w, j = a:min(1)
    return a:sum(), a:sum(1), a:sum(2), at:sum(2), a:mean(2), at:mean(), v, i, w, j, a:argmax(2), at:argmin(1)
  end, 1e-4, 1e-4)
end

function TestReduce:test_leading_dim_few_columns()
  -- a reduction over a leading dim with fewer outputs than the device has
  -- lanes (OpenCL: reduce_cols, 32 outputs a work-group, their elements
  -- shared among the group's other lanes): 45 and 300 columns (a last
  -- block part full), two outer dims, a strided view, ties and NaNs for
  -- the extrema (the lower index wins; NaN beats numbers)
  H.against_cpu(function(d)
    local a = inputs(d, 47, 300, 45)
    local b = inputs(d, 48, 40, 3, 100)
    local ties = (inputs(d, 49, 64, 300) * 2):floor()
    ties[{ 5, 7 }] = 0 / 0
    ties[{ 9, 7 }] = 0 / 0
    ties[{ 3, 200 }] = 0 / 0
    local v = inputs(d, 50, 90, 140):narrow(2, 3, 130)
    local mx, imx = ties:max(1)
    local mn, imn = a:min(1)
    return a:sum(1), a:mean(1), (a * 0.1 + 1):prod(1), b:sum(1), v:sum(1), mx, imx, mn, imn, ties:argmax(1),
      ties:argmin(1), v:t():contiguous():t():sum(1)
  end, 1e-4, 1e-4)
end

function TestReduce:test_values_and_indices_at_their_own_offsets()
  -- max/min with indices write the values and the indices each from its
  -- own offset (a replayed program pointed at views, 3 and 11 elements
  -- in): short rows (a work item a row), long rows (split, their parts
  -- combined) and a leading dim (strided rows); the results equal the
  -- eager ones, and nothing outside the views is written
  local C, tensor_lib = require("netcl.lib").C, require("netcl.tensor")
  local function case(a, op, dim, what)
    local function run() return H.call2(C.netcl_reduce_with_index, tensor_lib.OP[op], tensor_lib.handle(a), dim, 0) end
    local v, i = run()
    local res, bigs = H.replay_at_offsets(run, { [1] = 3, [2] = 11 }, -7)
    H.assert_close(res[1], v, 0, 0, what .. " values")
    lu.assertEquals(res[2]:totable(), i:totable(), what .. " indices")
    H.assert_untouched(bigs[1], 3, v:numel(), -7, what .. " values")
    H.assert_untouched(bigs[2], 11, i:numel(), -7, what .. " indices")
  end
  case(inputs(dev, 51, 6, 9), "max", 1, "short rows")
  case(inputs(dev, 52, 3, 50000), "min", 1, "long rows")
  case(inputs(dev, 53, 300, 40), "max", 0, "a leading dim")
end

function TestReduce:test_long_row_sum()
  local n = 3 * 1000 * 1000
  local t = netcl.full({ n }, 0.5, { device = dev })
  H.assert_close(t:sum():item(), n * 0.5, 1e-5)
  H.assert_close(t:mean():item(), 0.5, 1e-5)
end

function TestReduce:test_cpu_float32_sum_ignores_layout()
  -- the contiguous float32 loop and the gathered/column loops share one
  -- lane arithmetic (src/backend/cpu/reduce.c): the same values give the same bits
  lu.skipIf(not H.is_cpu, "checks the cpu backend's float32 reduction loops (src/backend/cpu/reduce.c): cpu only")
  netcl.manual_seed(46)
  for _, n in ipairs({ 1001, 70001, 150007 }) do
    local base = netcl.rand(2 * n + 3, { device = dev }) - 0.3
    local v = base:narrow(1, 2, n)
    local want = v:sum():item()
    lu.assertEquals(v:view(-1, 1):sum(1):item(), want)                     -- a column
    lu.assertEquals(base:narrow(1, 2, 2 * n):view(n, 2):select(2, 1):sum():item(),
                    base:narrow(1, 2, 2 * n):view(n, 2):select(2, 1):contiguous():sum():item())
    local rows = v:view(1, n):expand(3, n)
    lu.assertEquals(rows:t():contiguous():t():sum(2):totable(), { want, want, want })
  end
  -- 260 columns of 300 rows: two column blocks, the second 4 wide
  local m = netcl.rand(300, 260, { device = dev }) - 0.5
  local cols = m:sum(1):totable()
  for _, j in ipairs({ 1, 200, 256, 257, 260 }) do
    lu.assertEquals(cols[j], m:select(2, j):contiguous():sum():item())
  end
end

TestMatmul = {}

local function lua_matmul(a, b)
  local r = {}
  for i = 1, #a do
    r[i] = {}
    for j = 1, #b[1] do
      local s = 0
      for k = 1, #b do s = s + a[i][k] * b[k][j] end
      r[i][j] = s
    end
  end
  return r
end

function TestMatmul:test_against_lua()
  netcl.manual_seed(7)
  local a = netcl.randn(5, 7, { device = dev })
  local b = netcl.randn(7, 3, { device = dev })
  H.assert_close(a:matmul(b):totable(), lua_matmul(a:totable(), b:totable()), 1e-4, 1e-5)
  -- transposed (non-contiguous) operands
  local bt = netcl.randn(3, 7, { device = dev }):t()
  H.assert_close(a:matmul(bt):totable(), lua_matmul(a:totable(), bt:totable()), 1e-4, 1e-5)
end

function TestMatmul:test_vector_forms()
  local v = netcl.tensor({ 1, 2, 3 }, { device = dev })
  local m = netcl.tensor({ { 1, 0 }, { 0, 1 }, { 1, 1 } }, { device = dev })
  lu.assertEquals(v:matmul(v):item(), 14)
  lu.assertEquals(v:matmul(m):totable(), { 4, 5 })
  lu.assertEquals(m:t():matmul(v):totable(), { 4, 5 })
end

function TestMatmul:test_batched_broadcast_against_cpu()
  H.against_cpu(function(d)
    local a = inputs(d, 8, 2, 3, 17, 33)
    local b = inputs(d, 9, 3, 33, 65)
    local c = inputs(d, 10, 33, 9)
    return netcl.matmul(a, b), a:matmul(c), inputs(d, 11, 70, 130):matmul(inputs(d, 12, 130, 66))
  end, 1e-4, 1e-4)
end

TestInplace = {}

function TestInplace:test_inplace_forms_against_cpu()
  H.against_cpu(function(d)
    netcl.manual_seed(31)
    local a = netcl.randn(5, 7, { device = d })
    local b = netcl.randn(7, { device = d })
    local s = a:clone():add_(b):mul_(2):sub_(0.5):div_(a:abs() + 1)
    local u = a:clone():tanh_():clamp_(-0.5, 0.5)
    local t = a:clone():t()                 -- a strided target
    t:mul_(3):exp_()
    local over = a:narrow(1, 1, 5):clone()
    local sq = netcl.arange(9, { device = d }):view(3, 3):float()
    sq:add_(sq:t())                         -- the operand overlaps the target
    local ints = netcl.arange(6, { device = d, dtype = "int32" })
    ints:mul_(2.5)                          -- computed in float, stored as int32
    return s, u, t, over, sq, ints
  end)
end

function TestInplace:test_values()
  local sq = netcl.arange(4, { device = dev }):view(2, 2)
  sq:add_(sq:t())
  lu.assertEquals(sq:totable(), { { 0, 3 }, { 3, 6 } })
  local i = netcl.arange(3, { device = dev, dtype = "int32" }):mul_(2.5)
  lu.assertEquals(i.dtype, "int32")
  lu.assertEquals(i:totable(), { 0, 2, 5 })
  H.assert_error(function() netcl.zeros(2, 3, { device = dev }):add_(netcl.ones(3, 2, { device = dev })) end,
    "add", "broadcast")
  H.assert_error(function() netcl.zeros(1, 3, { device = dev }):add_(netcl.ones(2, 3, { device = dev })) end,
    "add_", "does not fit in place")
end

function TestMatmul:test_blas_and_builtin_kernel_agree()
  lu.skipIf(not H.is_cpu, "compares the cpu backend's two matmul paths (BLAS, built-in): cpu only")
  local code = [[
    local netcl = require("netcl")
    netcl.manual_seed(5)
    local a, b = netcl.randn(37, 53, { device = "cpu" }), netcl.randn(61, 53, { device = "cpu" })
    local c = a:matmul(b:t()):matmul(netcl.randn(61, 3, { device = "cpu" }))
    io.write(table.concat(c:view(-1):totable(), " "))
  ]]
  local with_blas = H.run_lua(code)
  local without = H.run_lua(code, "NETCL_BLAS=0")
  local x, y = {}, {}
  for v in with_blas:gmatch("%S+") do x[#x + 1] = tonumber(v) end
  for v in without:gmatch("%S+") do y[#y + 1] = tonumber(v) end
  lu.assertEquals(#x, 37 * 3)
  H.assert_close(x, y, 1e-4, 1e-4, "BLAS vs built-in")
end

-- The cpu products of a child process run with the environment `env`,
-- as the bytes of the checkpoint it saves and as tensors.
local function cpu_products_in_child(env)
  local code = [[
    local netcl = require("netcl")
    local o = { device = "cpu" }
    netcl.manual_seed(11)
    local r = {}
    r.f32 = netcl.randn(300, 1000, o):matmul(netcl.randn(1000, 257, o))
    r.f32_trans = netcl.randn(517, 131, o):t():matmul(netcl.randn(93, 517, o):t())
    r.f64 = netcl.randn(129, 300, o):double():matmul(netcl.randn(300, 200, o):double())
    r.row = netcl.randn(1, 2048, o):matmul(netcl.randn(2048, 1000, o))
    r.bmm = netcl.randn(16, 33, 200, o):matmul(netcl.randn(16, 200, 47, o))
    r.broadcast = netcl.randn(4, 65, 300, o):matmul(netcl.randn(300, 129, o))
    netcl.save(r, PATH)
  ]]
  local path = os.tmpname()
  code = code:gsub("PATH", ("%q"):format(path))
  local out, rc = H.run_lua(code, env)
  lu.assertEquals(rc, 0, out)
  local f = assert(io.open(path, "rb"))
  local bytes = f:read("*a")
  f:close()
  local tensors = netcl.load(path)
  os.remove(path)
  return bytes, tensors
end

function TestMatmul:test_cpu_matmul_bits_ignore_thread_count()
  -- OpenBLAS (or the built-in kernel) on 1, 2 or 3 threads: the same bits,
  -- odd sizes, transposed operands, float64, batches and broadcasts included
  -- (and the same for the built-in kernel, NETCL_BLAS=0)
  lu.skipIf(not H.is_cpu, "checks the cpu backend's thread pool: cpu only")
  for _, env in ipairs({ "", "NETCL_BLAS=0 " }) do
    local one = cpu_products_in_child(env .. "NETCL_NUM_THREADS=1")
    lu.assertTrue(#one > 500000)
    for _, n in ipairs({ 2, 3 }) do
      lu.assertTrue(cpu_products_in_child(env .. "NETCL_NUM_THREADS=" .. n) == one, env .. n .. " threads change the bits")
    end
  end
end

function TestMatmul:test_cpu_blas_threaded_mode_agrees()
  -- NETCL_BLAS_THREADED=1 hands large products to OpenBLAS's own threads:
  -- the same products within rounding, though not bit for bit
  lu.skipIf(not H.is_cpu, "checks the cpu backend's BLAS modes: cpu only")
  local _, tiled = cpu_products_in_child("NETCL_NUM_THREADS=2")
  local _, threaded = cpu_products_in_child("NETCL_NUM_THREADS=2 NETCL_BLAS_THREADED=1")
  for name, t in pairs(tiled) do
    local d = (t - threaded[name]):abs():max():item()
    lu.assertTrue(d < 1e-3 * (1 + t:abs():max():item()), name .. " differs by " .. d)
  end
end

function TestElementwise:test_contiguous_tails_and_offsets()
  -- the contiguous kernels take 4 elements per work item plus a tail
  H.against_cpu(function(d)
    netcl.manual_seed(44)
    local base = netcl.randn(103, { device = d })
    local out = {}
    for n = 1, 9 do
      local a = base:narrow(1, n, n * 3)                     -- odd offsets, odd lengths
      local b = base:narrow(1, 100 - n * 3 + 1, n * 3)
      out[#out + 1] = (a:exp() + b) * 2 - a:half():float()
      out[#out + 1] = 1 - a:relu():lt(b):float()
    end
    return unpack(out)
  end)
end

function TestReduce:test_vector_path_spans()
  -- long contiguous rows reduce with 16-byte loads; odd offsets and lengths take the scalar ends
  H.against_cpu(function(d)
    netcl.manual_seed(45)
    local base = netcl.rand(300007, { device = d })
    local out = {}
    for k = 0, 5 do
      local v = base:narrow(1, 1 + k, 200000 + 3 * k)
      out[#out + 1] = v:sum()
      out[#out + 1] = v:mean()
      out[#out + 1] = v:view(-1, 1):sum(1)
    end
    out[#out + 1] = base:narrow(1, 2, 40003):view(1, -1):prod(2)
    return unpack(out)
  end, 1e-4, 1e-3)
end
