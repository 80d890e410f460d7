-- spec/index_spec.lua — the indexing, shape, sort, scan and random family:
-- values against hand-computed references, the rules netcl defines (stable
-- sort, NaN order, duplicate scatter indices, cumprod through zeros, the
-- random streams), in-place forms with autograd, and bad input (shapes,
-- dims, out-of-range indices, dtypes, mixed devices) giving a clear error.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local dev = H.device

local function T(v, dtype) return netcl.tensor(v, { device = dev, dtype = dtype }) end
local function I(v) return T(v, "int64") end

TestIndex = {}

-- ---- joining, splitting, reshaping ------------------------------------------------

function TestIndex:test_cat_stack_split_chunk()
  local a, b = T({ { 1, 2 } }), T({ { 3, 4 }, { 5, 6 } })
  lu.assertEquals(netcl.cat({ a, b }):totable(), { { 1, 2 }, { 3, 4 }, { 5, 6 } })
  lu.assertEquals(netcl.cat(a, a, 2):totable(), { { 1, 2, 1, 2 } })
  lu.assertEquals(a:cat(a, -1):size(), { 1, 4 })
  lu.assertEquals(netcl.cat({ netcl.zeros(0, { device = dev }), a }):totable(), { { 1, 2 } })   -- 1-D empties skipped
  lu.assertEquals(netcl.cat({ a, T({ { 7, 8 } }, "int32") }).dtype, "float32")                 -- promotes
  lu.assertEquals(netcl.stack({ a, a }, 1):size(), { 2, 1, 2 })
  lu.assertEquals(netcl.stack({ T({ 1, 2 }), T({ 3, 4 }) }, 2):totable(), { { 1, 3 }, { 2, 4 } })
  local p = T({ 1, 2, 3, 4, 5 }):split(2)
  lu.assertEquals(#p, 3)
  lu.assertEquals(p[3]:totable(), { 5 })
  local q = b:split({ 1, 1 }, 1)
  lu.assertEquals(q[2]:totable(), { { 5, 6 } })
  lu.assertEquals(#T({ 1, 2, 3, 4, 5 }):chunk(3), 3)
  lu.assertEquals(#T({ 1, 2 }):chunk(5), 2)
  lu.assertEquals(T({ 1, 2, 3, 4, 5, 6 }):chunk(4)[4], nil)   -- ceil(6/4) = 2 per piece: 3 pieces
end

function TestIndex:test_cat_stack_errors()
  local a, b = T({ { 1, 2 } }), T({ { 1, 2, 3 } })
  H.assert_error(function() return netcl.cat({ a, b }, 1) end, "cat", "[1,3]", "[1,2]", "except along the dim")
  H.assert_error(function() return netcl.cat({ a, b }, 3) end, "cat", "dim 3 out of range")
  H.assert_error(function() return netcl.cat({}) end, "cat", "non-empty list")
  H.assert_error(function() return netcl.cat({ a, 3 }) end, "cat", "entry 2")
  H.assert_error(function() return netcl.stack({ a, b }) end, "stack", "one shape")
  H.assert_error(function() return netcl.stack({ a }, 4) end, "stack", "dim 4 out of range")
  H.assert_error(function() return T({ 1, 2, 3 }):split({ 1, 1 }) end, "split", "add up to 2", "has 3")
  H.assert_error(function() return T({ 1, 2, 3 }):chunk(0) end, "chunk", "positive")
end

function TestIndex:test_repeat_flip_pad()
  local a = T({ { 1, 2 }, { 3, 4 } })
  lu.assertEquals(a:repeat_tensor(1, 2):totable(), { { 1, 2, 1, 2 }, { 3, 4, 3, 4 } })
  lu.assertEquals(a["repeat"](a, 2, 1, 1):size(), { 2, 2, 2 })
  lu.assertEquals(T({ 1, 2 }):repeat_tensor(0):numel(), 0)
  lu.assertEquals(a:flip(1):totable(), { { 3, 4 }, { 1, 2 } })
  lu.assertEquals(a:flip(1, 2):totable(), { { 4, 3 }, { 2, 1 } })
  local row = T({ { 1, 2, 3 } })
  lu.assertEquals(row:pad({ 2, 2 }, { mode = "reflect" }):totable(), { { 3, 2, 1, 2, 3, 2, 1 } })
  lu.assertEquals(row:pad({ 2, 1 }, { mode = "replicate" }):totable(), { { 1, 1, 1, 2, 3, 3 } })
  lu.assertEquals(row:pad({ 1, 3 }, { mode = "circular" }):totable(), { { 3, 1, 2, 3, 1, 2, 3 } })
  lu.assertEquals(row:pad({ 1, 0 }, 9):totable(), { { 9, 1, 2, 3 } })
  lu.assertEquals(row:pad({ 0, 0, 1, 0 }, { value = 5 }):totable(), { { 5, 5, 5 }, { 1, 2, 3 } })
  H.assert_error(function() return a:repeat_tensor(2) end, "repeat", "repeat counts", "[2,2]")
  H.assert_error(function() return a:flip() end, "flip", "at least one dim")
  H.assert_error(function() return a:flip(1, 1) end, "flip", "repeated")
  H.assert_error(function() return a:flip(3) end, "flip", "dim 3 out of range")
  H.assert_error(function() return row:pad({ 3, 0 }, { mode = "reflect" }) end, "pad", "reflect", "smaller than the size")
  H.assert_error(function() return row:pad({ 1, 1 }, { mode = "mirror" }) end, "pad", "mode must be")
  H.assert_error(function() return row:pad({ -1, 0 }, { mode = "replicate" }) end, "pad", "non-negative")
end

-- ---- gather / scatter / index -------------------------------------------------------------

function TestIndex:test_gather_scatter_values()
  local a = T({ { 1, 2, 3 }, { 4, 5, 6 } })
  lu.assertEquals(a:gather(2, I({ { 3, 1 }, { 2, 2 } })):totable(), { { 3, 1 }, { 5, 5 } })
  lu.assertEquals(a:gather(1, I({ { 2, 1, 2 } })):totable(), { { 4, 2, 6 } })
  lu.assertEquals(a:gather(2, T({ { 2 }, { 3 } }, "int32")):totable(), { { 2 }, { 6 } })
  local z = netcl.zeros(2, 4, { device = dev })
  lu.assertEquals(z:scatter(2, I({ { 4, 1 }, { 2, 3 } }), a):totable(), { { 2, 0, 0, 1 }, { 0, 4, 5, 0 } })
  lu.assertEquals(z:scatter(2, I({ { 2 }, { 4 } }), 7):totable(), { { 0, 7, 0, 0 }, { 0, 0, 0, 7 } })
  lu.assertEquals(z:scatter_add(2, I({ { 1, 1, 1 }, { 4, 2, 4 } }), a):totable(), { { 6, 0, 0, 0 }, { 0, 5, 0, 10 } })
  lu.assertEquals(z:sum():item(), 0)   -- out of place: z is untouched
  local f16 = netcl.zeros(3, { device = dev, dtype = "float16" }):scatter_add(1, I({ 1, 1, 3 }), T({ 0.5, 0.25, 2 }, "float16"))
  lu.assertEquals(f16:totable(), { 0.75, 0, 2 })
  local ints = netcl.zeros(3, { device = dev, dtype = "uint8" }):scatter_add(1, I({ 2, 2 }), T({ 200, 100 }, "uint8"))
  lu.assertEquals(ints:totable(), { 0, 44, 0 })   -- wraps like uint8 arithmetic
end

function TestIndex:test_scatter_duplicates_last_wins_on_cpu()
  lu.skipIf(not H.is_cpu, "duplicate indices without accumulate: unspecified on OpenCL")
  local r = netcl.zeros(3, { device = dev }):scatter(1, I({ 2, 2, 2 }), T({ 1, 2, 3 }))
  lu.assertEquals(r:totable(), { 0, 3, 0 })
end

function TestIndex:test_index_ops_values()
  local a = T({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
  lu.assertEquals(a:index_select(1, { 3, 1, 3 }):totable(), { { 5, 6 }, { 1, 2 }, { 5, 6 } })
  lu.assertEquals(a:index_select(2, I({ 2 })):totable(), { { 2 }, { 4 }, { 6 } })
  lu.assertEquals(a:index_add(1, { 1, 1 }, T({ { 10, 10 }, { 1, 1 } })):totable(), { { 12, 13 }, { 3, 4 }, { 5, 6 } })
  lu.assertEquals(a:masked_fill(a:gt(4), 0):totable(), { { 1, 2 }, { 3, 4 }, { 0, 0 } })
  lu.assertEquals(a:masked_fill(T({ true, false }), -math.huge):totable()[1][1], -math.huge)   -- inf, not NaN
  lu.assertEquals(T({ 1, 2 }, "int32"):masked_fill(T({ true, false }), 2.7):totable(), { 2, 2 })   -- keeps int32
  lu.assertEquals(a:masked_select(a:gt(2)):totable(), { 3, 4, 5, 6 })
  lu.assertEquals(a:masked_select(T({ false, true })):totable(), { 2, 4, 6 })
  lu.assertEquals(a:gt(3):nonzero():totable(), { { 2, 2 }, { 3, 1 }, { 3, 2 } })
  lu.assertEquals(a:gt(9):nonzero():size(), { 0, 2 })
  lu.assertEquals(T({ 0, 0 / 0, -0.0 }):nonzero():totable(), { { 2 } })   -- NaN counts, -0 does not
  lu.assertEquals(netcl.one_hot(I({ 2, 1 }), 3):totable(), { { 0, 1, 0 }, { 1, 0, 0 } })
  lu.assertEquals(netcl.one_hot(I({ 2, 4 })):size(), { 2, 4 })                     -- classes from the max label
  lu.assertEquals(netcl.one_hot(I({ 1 }), 2, "bool").dtype, "bool")
  local w = T({ { 1, 1 }, { 2, 2 }, { 3, 3 } })
  lu.assertEquals(netcl.embedding(I({ { 3, 1 } }), w):totable(), { { { 3, 3 }, { 1, 1 } } })
end

function TestIndex:test_in_place_forms()
  local a = netcl.zeros(2, 3, { device = dev })
  lu.assertEquals(a:scatter_(2, I({ { 3 }, { 1 } }), 5), a)
  lu.assertEquals(a:totable(), { { 0, 0, 5 }, { 5, 0, 0 } })
  a:scatter_add_(2, I({ { 3 }, { 1 } }), T({ { 1 }, { 2 } }))
  lu.assertEquals(a:totable(), { { 0, 0, 6 }, { 7, 0, 0 } })
  a:index_add_(1, { 2 }, T({ { 1, 1, 1 } }))
  lu.assertEquals(a:totable(), { { 0, 0, 6 }, { 8, 1, 1 } })
  a:masked_fill_(a:eq(0), -1)
  lu.assertEquals(a:totable(), { { -1, -1, 6 }, { 8, 1, 1 } })
  H.assert_error(function() netcl.zeros(1, { device = dev }):expand(3):scatter_(1, I({ 1 }), 1) end, "scatter_", "share memory")
end

function TestIndex:test_in_place_forms_record_history()
  local x = T({ 1, 2, 3, 4 }):requires_grad_()
  local y = x * 2
  y:masked_fill_(T({ false, true, false, false }), 0)
  y:index_add_(1, { 4 }, x:narrow(1, 1, 1))
  y:scatter_(1, I({ 3 }), x:narrow(1, 4, 1))
  y:sum():backward()
  lu.assertEquals(x.grad:totable(), { 3, 0, 0, 3 })
  H.assert_error(function() x:masked_fill_(T({ true, false, false, false }), 0) end, "masked_fill", "leaf that requires grad")
end

function TestIndex:test_index_errors()
  local a = T({ { 1, 2, 3 }, { 4, 5, 6 } })
  H.assert_error(function() return a:gather(2, T({ { 1.0 } })) end, "gather", "int64 or int32", "float32[1,1]")
  H.assert_error(function() return a:gather(2, I({ 1, 2 })) end, "gather", "number of dims", "[2,3]", "[2]")
  H.assert_error(function() return a:gather(3, I({ { 1 } })) end, "gather", "dim 3 out of range")
  H.assert_error(function() return a:gather(2, I({ { 1 }, { 1 }, { 1 } })) end, "gather", "larger than input", "[3,1]")
  H.assert_error(function() return a:scatter(2, I({ { 1, 2 } }), T({ { 1 } })) end, "scatter", "larger than source")
  H.assert_error(function() return a:scatter(2, I({ { 1 } }), "x") end, "scatter", "tensor or a number")
  H.assert_error(function() return a:index_select(1, I({ { 1 } })) end, "index_select", "1-D", "int64[1,1]")
  H.assert_error(function() return a:index_select(1, "x") end, "index_select", "tensor or a table")
  H.assert_error(function() return a:index_add(1, { 1 }, T({ { 1, 2 } })) end, "index_add", "[1,2]", "[2,3]", "index's length")
  H.assert_error(function() return a:masked_fill(T({ 1, 0, 1 }), 0) end, "masked_fill", "bool", "float32[3]")
  H.assert_error(function() return a:masked_fill(T({ true, false }), 0) end, "masked_fill", "broadcast")
  H.assert_error(function() return a:masked_fill(a:gt(1), "x") end, "masked_fill", "number")
  H.assert_error(function() return a:masked_select(T({ 1, 0, 1 }, "int32")) end, "masked_select", "bool", "int32")
  H.assert_error(function() return netcl.one_hot(T({ 1.5 }), 3) end, "one_hot", "int64 or int32")
  H.assert_error(function() return netcl.one_hot(I({ 1 }), 0) end, "one_hot", "num_classes must be positive")
  H.assert_error(function() return netcl.embedding(I({ 1 }), T({ 1, 2 })) end, "embedding", "2-D", "float32[2]")
  H.assert_error(function() return netcl.embedding(T({ 1 }), a) end, "embedding", "int64 or int32")
end

-- out of range: an error that names the op, index, size and device; never a crash
function TestIndex:test_index_out_of_range()
  local a = T({ { 1, 2, 3 }, { 4, 5, 6 } })
  local function read(f) return function() return f():totable() end end
  H.assert_error(read(function() return a:gather(2, I({ { 4 }, { 1 } })) end), "gather", "index 4", "dim 2", "size 3", dev)
  H.assert_error(read(function() return a:gather(1, I({ { 0, 1, 1 } })) end), "gather", "index 0", "size 2")
  H.assert_error(read(function() return a:index_select(2, { 1, -1 }) end), "index -1")
  H.assert_error(read(function() return a:scatter(2, I({ { 1 }, { 9 } }), 0) end), "scatter", "index 9", "size 3")
  H.assert_error(read(function() return a:scatter_add(1, I({ { 3 } }), T({ { 1 } })) end), "scatter_add", "index 3")
  H.assert_error(read(function() return netcl.one_hot(I({ 1, 5 }), 3) end), "index 5", "size 3")
  H.assert_error(read(function() return netcl.embedding(I({ 4 }), a:t()) end), "index 4", "size 3")
  -- the device is usable afterwards and the error is reported once
  lu.assertEquals(a:gather(2, I({ { 2 }, { 3 } })):totable(), { { 2 }, { 6 } })
  lu.assertEquals(a:sum():item(), 21)
end

function TestIndex:test_out_of_range_reported_by_synchronize()
  lu.skipIf(H.is_cpu, "OpenCL reports a bad index at the next synchronize; the cpu reports it at once (test_index_out_of_range)")
  local a = T({ 1, 2, 3 })
  local g = a:gather(1, I({ 7 }))   -- queued; the kernel skips the bad index
  H.assert_error(function() netcl.synchronize(dev) end, "gather", "index 7", "size 3", "reported by the device")
  lu.assertEquals(g:totable(), { 0 })   -- already reported: the read succeeds
end

function TestIndex:test_mixed_devices()
  local other
  for _, d in ipairs(netcl.devices()) do if d.name ~= dev then other = d.name end end
  lu.skipIf(not other, "no device other than " .. dev .. " to mix with")
  local a, i = T({ 1, 2, 3 }), netcl.tensor({ 1 }, { device = other, dtype = "int64" })
  H.assert_error(function() return a:gather(1, i) end, "gather", "different devices", dev, other)
  H.assert_error(function() return a:index_select(1, i) end, "index_select", "different devices")
  H.assert_error(function() return a:scatter_add(1, I({ 1 }), netcl.ones(1, { device = other })) end, "different devices")
  H.assert_error(function() return netcl.cat({ a, netcl.ones(1, { device = other }) }) end, "cat", "different devices")
  H.assert_error(function() return a:masked_fill(netcl.tensor({ true }, { device = other }), 0) end, "different devices")
  H.assert_error(function() return netcl.embedding(i, netcl.ones(2, 2, { device = dev })) end, "embedding", "different devices")
end

-- ---- sort / topk / scans -----------------------------------------------------------------------

function TestIndex:test_sort_stable_nan_and_topk()
  local v, i = T({ 2, 1, 2, 0 / 0, 1, -math.huge }):sort()
  lu.assertEquals(i:totable(), { 6, 2, 5, 1, 3, 4 })   -- ties keep their order, NaN last
  v, i = T({ 2, 1, 2, 0 / 0, 1 }):sort(1, true)
  lu.assertEquals(i:totable(), { 4, 1, 3, 2, 5 })      -- descending: NaN first, ties still in order
  lu.assertEquals(v:totable()[2], 2)
  v, i = T({ { 3, 1, 2 }, { 0, 5, 4 } }):sort(1)
  lu.assertEquals(i:totable(), { { 2, 1, 1 }, { 1, 2, 2 } })
  v, i = T({ 5, 1, 4, 1, 3 }, "int32"):sort(true)
  lu.assertEquals(v.dtype, "int32")
  lu.assertEquals(i.dtype, "int64")
  lu.assertEquals(v:totable(), { 5, 4, 3, 1, 1 })
  v, i = T({ 1, 9, 3, 7 }):topk(2)
  lu.assertEquals(v:totable(), { 9, 7 })
  lu.assertEquals(i:totable(), { 2, 4 })
  v, i = T({ 1, 9, 3, 7 }):topk(3, 1, false)
  lu.assertEquals(i:totable(), { 1, 3, 4 })
  H.assert_error(function() return T({ 1, 2 }):topk(3) end, "topk", "k = 3 out of range", "size 2")
  H.assert_error(function() return T({ 1, 2 }):sort(2) end, "sort", "dim 2 out of range")
end

function TestIndex:test_long_sort_matches_a_reference()
  netcl.manual_seed(21)
  local x = netcl.randint(0, 50, { 20000 }, { device = dev }):float()
  local v, i = x:sort()
  local xs, vs, is = x:totable(), v:totable(), i:totable()
  for k = 2, #vs do
    assert(vs[k - 1] < vs[k] or (vs[k - 1] == vs[k] and is[k - 1] < is[k]), "order at " .. k)
    assert(xs[is[k]] == vs[k], "value at " .. k)
  end
end

function TestIndex:test_cumsum_cumprod()
  local a = T({ { 1, 2, 3 }, { 4, 5, 6 } })
  lu.assertEquals(a:cumsum(2):totable(), { { 1, 3, 6 }, { 4, 9, 15 } })
  lu.assertEquals(a:cumsum(1):totable(), { { 1, 2, 3 }, { 5, 7, 9 } })
  lu.assertEquals(a:cumprod(2):totable(), { { 1, 2, 6 }, { 4, 20, 120 } })
  local c = T({ 1, 2, 3 }, "int32"):cumsum()
  lu.assertEquals(c.dtype, "int64")
  lu.assertEquals(T({ true, true, false }):cumsum():totable(), { 1, 2, 2 })
  -- cumprod's gradient through zeros (no 0/0): d/dx of sum(cumprod(x)) for x = (2, 0, 3, 0, 5)
  local x = T({ 2, 0, 3, 0, 5 }):requires_grad_()
  x:cumprod():sum():backward()
  lu.assertEquals(x.grad:totable(), { 1, 2 + 6, 0, 0, 0 })
  H.assert_error(function() return a:cumsum(3) end, "cumsum", "dim 3 out of range")
end

-- ---- random --------------------------------------------------------------------------------------

function TestIndex:test_random_ops()
  netcl.manual_seed(5)
  local p = netcl.randperm(100, { device = dev })
  lu.assertEquals(p.dtype, "int64")
  local seen = {}
  for _, v in ipairs(p:totable()) do seen[v] = true end
  for k = 1, 100 do lu.assertTrue(seen[k], "randperm misses " .. k) end
  netcl.manual_seed(5)
  lu.assertEquals(netcl.randperm(100, { device = dev }):totable(), p:totable())   -- seeded
  lu.assertEquals(netcl.randperm(0, { device = dev }):numel(), 0)
  local b = netcl.bernoulli(0.25, { 10000 }, { device = dev })
  lu.assertTrue(math.abs(b:mean():item() - 0.25) < 0.03)
  lu.assertEquals(netcl.bernoulli(T({ 0, 1, 1 })):totable(), { 0, 1, 1 })
  local m = netcl.multinomial(T({ 0, 3, 1 }), 4000, true)
  local n2 = m:eq(2):sum():item()
  lu.assertEquals(m:eq(1):sum():item(), 0)
  lu.assertTrue(math.abs(n2 / 4000 - 0.75) < 0.04)
  local w = netcl.multinomial(T({ { 1, 1, 1, 1 }, { 0, 5, 0, 1 } }), 2)
  local r2 = w:totable()[2]
  table.sort(r2)
  lu.assertEquals(r2, { 2, 4 })   -- without replacement: the only two non-zero categories
  H.assert_error(function() return netcl.multinomial(T({ 1, 0 }), 2) end, "multinomial", "only 1 non-zero")
  H.assert_error(function() return netcl.multinomial(T({ 1, -1 }), 1) end, "multinomial", "negative")
  H.assert_error(function() return netcl.multinomial(T({ 1, 2 }, "int32"), 1) end, "multinomial", "floating", "int32")
  H.assert_error(function() return netcl.bernoulli(T({ 1 }, "int64")) end, "bernoulli", "floating", "int64")
  -- probabilities outside [0, 1] or NaN are refused, naming the range found
  H.assert_error(function() return netcl.bernoulli(T({ 0.5, 1.5 })) end, "bernoulli", "[0, 1]", "from 0.5 to 1.5")
  H.assert_error(function() return netcl.bernoulli(T({ 0.5, -1 })) end, "bernoulli", "[0, 1]", "from -1 to 0.5")
  H.assert_error(function() return netcl.bernoulli(T({ 0 / 0 })) end, "bernoulli", "[0, 1]", "nan")
  H.assert_error(function() return netcl.bernoulli(1.25, { 3 }) end, "bernoulli", "[0, 1]", "1.25")
  H.assert_error(function() return netcl.randperm(300, { device = dev, dtype = "uint8" }) end, "randperm", "too large", "uint8")
end
