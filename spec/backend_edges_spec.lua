-- spec/backend_edges_spec.lua — conversion corner cases every backend must
-- agree on with the cpu reference: saturating fills, integer ranges with a
-- fractional step, NaN casts, and rng draws bit-identical to the C stream.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local dev = H.device

TestBackendEdges = {}

function TestBackendEdges:test_fill_saturates_like_cpu()
  local function fills(d)
    local o = { device = d }
    return netcl.full({ 3 }, 300.2, { device = d, dtype = "uint8" }), netcl.full({ 2 }, -7, { device = d, dtype = "uint8" }),
           netcl.full({ 2 }, 0 / 0, { device = d, dtype = "bool" }), netcl.full({ 2 }, 3e10, { device = d, dtype = "int32" }),
           netcl.full({ 2 }, -2.7, o):int()
  end
  local u8, neg, b, i32 = H.on_device(fills, 0, 0)
  lu.assertEquals(u8:totable(), { 255, 255, 255 })
  lu.assertEquals(neg:totable(), { 0, 0 })
  lu.assertEquals(b:totable(), { true, true })
  lu.assertEquals(i32:totable(), { 2147483647, 2147483647 })
end

function TestBackendEdges:test_integer_arange_with_fractional_step()
  local r = H.on_device(function(d) return netcl.arange(0, 3, 0.5, { device = d, dtype = "int64" }) end, 0, 0)
  lu.assertEquals(r:totable(), { 0, 0, 1, 1, 2, 2 })
end

function TestBackendEdges:test_nan_casts_to_zero()
  local function casts(d)
    local x = netcl.tensor({ 0 / 0, 1.5, -1e30, 1e30 }, { device = d })
    return x:int(), x:long(), x:byte()
  end
  local i, l, b = H.on_device(casts, 0, 0)
  lu.assertEquals(i:totable()[1], 0)
  lu.assertEquals(l:totable()[1], 0)
  lu.assertEquals(b:totable()[1], 0)
end

function TestBackendEdges:test_rng_bit_identical()
  H.skip_without_fp64()
  H.against_cpu(function(d)
    netcl.manual_seed(77)
    return netcl.rand(4099, { device = d }), netcl.randint(-1000000, 1000000, { 513 }, { device = d, dtype = "int64" }),
           netcl.rand(33, { device = d, dtype = "float64" })
  end, 0, 0)
end
