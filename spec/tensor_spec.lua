-- spec/tensor_spec.lua — creation, metadata, views, indexing, slicing,
-- casting and printing on the device under test.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local dev = H.device

local function T(v, dtype) return netcl.tensor(v, { device = dev, dtype = dtype }) end

TestTensor = {}

function TestTensor:test_from_table_and_back()
  local t = T({ { 1, 2, 3 }, { 4, 5, 6 } })
  lu.assertEquals(t:size(), { 2, 3 })
  lu.assertEquals(t.dtype, "float32")
  lu.assertEquals(t.device, dev)
  lu.assertEquals(t:totable(), { { 1, 2, 3 }, { 4, 5, 6 } })
  lu.assertEquals(t:dim(), 2)
  lu.assertEquals(#t, 2)
  lu.assertEquals(t:numel(), 6)
  lu.assertEquals(t:stride(), { 3, 1 })
  lu.assertTrue(t:is_contiguous())
end

function TestTensor:test_ragged_table_is_an_error()
  H.assert_error(function() T({ { 1, 2 }, { 3 } }) end)
end

function TestTensor:test_creation_functions()
  local o = { device = dev }
  lu.assertEquals(netcl.zeros(2, 2, o):totable(), { { 0, 0 }, { 0, 0 } })
  lu.assertEquals(netcl.zeros({ 2, 2 }, o):totable(), { { 0, 0 }, { 0, 0 } })
  lu.assertEquals(netcl.ones(3, o):totable(), { 1, 1, 1 })
  lu.assertEquals(netcl.full({ 2 }, 7, o):totable(), { 7, 7 })
  lu.assertEquals(netcl.arange(4, o):totable(), { 0, 1, 2, 3 })
  lu.assertEquals(netcl.arange(1, 2, 0.25, o):totable(), { 1, 1.25, 1.5, 1.75 })
  lu.assertEquals(netcl.linspace(0, 1, 5, o):totable(), { 0, 0.25, 0.5, 0.75, 1 })
  lu.assertEquals(netcl.eye(2, 3, o):totable(), { { 1, 0, 0 }, { 0, 1, 0 } })
  lu.assertEquals(netcl.empty(4, 5, o):size(), { 4, 5 })
  local z = netcl.zeros_like(netcl.ones(2, 3, o))
  lu.assertEquals(z:totable(), { { 0, 0, 0 }, { 0, 0, 0 } })
  lu.assertEquals(z.device, dev)
end

function TestTensor:test_from_pointer()
  local ffi = require("ffi")
  local buf = ffi.new("int32_t[4]", { 5, 6, 7, 8 })
  local t = netcl.from_pointer(buf, "int32", { 2, 2 }, { device = dev })
  lu.assertEquals(t.dtype, "int32")
  lu.assertEquals(t:totable(), { { 5, 6 }, { 7, 8 } })
end

function TestTensor:test_views_share_storage()
  local t = netcl.arange(6, { device = dev }):view(2, 3)
  local tt = t:transpose(1, 2)
  lu.assertEquals(tt:size(), { 3, 2 })
  lu.assertFalse(tt:is_contiguous())
  lu.assertEquals(tt:totable(), { { 0, 3 }, { 1, 4 }, { 2, 5 } })
  t[1][2] = 100          -- writes through the view into the storage
  lu.assertEquals(tt[2][1], 100)
  lu.assertEquals(t:t():contiguous():totable(), { { 0, 3 }, { 100, 4 }, { 2, 5 } })
  lu.assertEquals(t:permute(2, 1):size(), { 3, 2 })
  lu.assertEquals(t:reshape(3, 2):totable(), { { 0, 100 }, { 2, 3 }, { 4, 5 } })
  lu.assertEquals(t:view(-1):size(), { 6 })
  lu.assertEquals(t:flatten():size(), { 6 })
end

-- contiguous() of transposed matrices and batches of them (OpenCL: the
-- copy kernel's local-memory tiles, edges of partial tiles, a view offset),
-- with and without a dtype conversion, against the cpu's copy
function TestTensor:test_transposed_copies()
  for _, sh in ipairs({ { 40, 70 }, { 16, 16 }, { 33, 100 }, { 130, 65 }, { 3, 37, 50 } }) do
    for _, dt in ipairs({ "float32", "float64", "int64", "float16" }) do
      netcl.manual_seed(5)
      local x = netcl.randn(sh, { device = "cpu" }):mul(10):to(dt)
      local nd = #sh
      local want = x:transpose(nd - 1, nd):contiguous()
      local xd = x:to(dev)
      lu.assertEquals(xd:transpose(nd - 1, nd):contiguous():to("cpu"):totable(), want:totable(), dt)
      H.assert_close(xd:transpose(nd - 1, nd):to("float32"):to("cpu"), want:to("float32"), 1e-3, 1e-2, dt .. " to float32")
    end
  end
  local x = netcl.randn(5, 64, 48, { device = dev })
  lu.assertEquals(x:narrow(2, 3, 40):permute(1, 3, 2):contiguous():to("cpu"):totable(),
    x:to("cpu"):narrow(2, 3, 40):permute(1, 3, 2):contiguous():totable())
end

-- contiguous() of row blocks (narrowed columns: both sides' rows
-- contiguous, OpenCL's copy_rows) and copies into them, with a dtype
-- conversion too, against the cpu
function TestTensor:test_row_copies()
  for _, dt in ipairs({ "float32", "float16", "int64" }) do
    netcl.manual_seed(6)
    local x = netcl.randn(2, 37, 150, { device = "cpu" }):mul(10):to(dt)
    local want = x:narrow(3, 5, 130):contiguous()
    lu.assertEquals(x:to(dev):narrow(3, 5, 130):contiguous():to("cpu"):totable(), want:totable(), dt)
    local y = netcl.zeros(37, 200, { device = dev, dtype = "float32" })
    y:narrow(2, 11, 150):copy_(x:to(dev):select(1, 2))
    lu.assertEquals(y:to("cpu"):narrow(2, 11, 150):totable(), x:select(1, 2):to("float32"):totable(), dt .. " into a block")
    lu.assertEquals(y:to("cpu"):narrow(2, 1, 10):abs():sum():item(), 0)
    -- short rows (16 to 63 elements): the permutes of a batch's [O, N, H*W]
    -- blocks (ResNet-50's 7x7 stage, 49), narrowed rows of 17
    for _, L in ipairs({ 16, 17, 49, 63 }) do
      local z = netcl.randn(6, 5, L, { device = "cpu" }):mul(10):to(dt)
      lu.assertEquals(z:to(dev):permute(2, 1, 3):contiguous():to("cpu"):totable(), z:permute(2, 1, 3):contiguous():totable(),
        ("%s permuted rows of %d"):format(dt, L))
      lu.assertEquals(z:to(dev):narrow(3, 2, L - 1):contiguous():to("cpu"):totable(), z:narrow(3, 2, L - 1):contiguous():totable(),
        ("%s narrowed rows of %d"):format(dt, L - 1))
    end
  end
end

function TestTensor:test_narrow_select_expand_squeeze()
  local t = netcl.arange(12, { device = dev }):view(3, 4)
  lu.assertEquals(t:narrow(2, 2, 2):totable(), { { 1, 2 }, { 5, 6 }, { 9, 10 } })
  lu.assertEquals(t:select(1, 2):totable(), { 4, 5, 6, 7 })
  lu.assertEquals(t:select(2, 4):totable(), { 3, 7, 11 })
  local col = netcl.tensor({ { 1 }, { 2 } }, { device = dev })
  lu.assertEquals(col:expand(2, 3):totable(), { { 1, 1, 1 }, { 2, 2, 2 } })
  lu.assertEquals(col:squeeze():size(), { 2 })
  lu.assertEquals(col:squeeze(2):size(), { 2 })
  lu.assertEquals(col:unsqueeze(1):size(), { 1, 2, 1 })
end

function TestTensor:test_indexing_is_one_based()
  local t = T({ 10, 20, 30 })
  lu.assertEquals(t[1], 10)
  lu.assertEquals(t[3], 30)
  t[2] = 25
  lu.assertEquals(t:totable(), { 10, 25, 30 })
  local m = T({ { 1, 2 }, { 3, 4 } })
  lu.assertEquals(m[2]:totable(), { 3, 4 })
  lu.assertEquals(m[2][1], 3)
  H.assert_error(function() return t[4] end, "out of range")
  H.assert_error(function() return t[0] end)
end

function TestTensor:test_torch7_slicing()
  local t = netcl.arange(12, { device = dev }):view(3, 4)
  lu.assertEquals(t[{ { 1, 2 }, {} }]:totable(), { { 0, 1, 2, 3 }, { 4, 5, 6, 7 } })
  lu.assertEquals(t[{ {}, { 2, 3 } }]:totable(), { { 1, 2 }, { 5, 6 }, { 9, 10 } })
  lu.assertEquals(t[{ 2, { -2, -1 } }]:totable(), { 6, 7 })
  t[{ {}, 1 }] = 0
  lu.assertEquals(t:select(2, 1):totable(), { 0, 0, 0 })
  t[{ { 1, 2 }, { 3, 4 } }] = netcl.ones(2, 2, { device = dev })
  lu.assertEquals(t:totable(), { { 0, 1, 1, 1 }, { 0, 5, 1, 1 }, { 0, 9, 10, 11 } })
end

function TestTensor:test_item_and_dtypes()
  lu.assertEquals(T({ 3.5 }):item(), 3.5)
  lu.assertEquals(T({ 1, 0 }, "bool"):totable(), { true, false })
  for _, dt in ipairs({ "float32", "float16", "bfloat16", "int32", "int64", "uint8" }) do
    local t = T({ 1, 2, 3 }, dt)
    lu.assertEquals(t.dtype, dt)
    lu.assertEquals(t:float():totable(), { 1, 2, 3 }, dt)
  end
  lu.assertEquals(T({ 1.7, -1.7 }):int():totable(), { 1, -1 })
  lu.assertEquals(T({ 0.1 }):half():float():item(), 0.0999755859375)     -- nearest float16
  lu.assertEquals(T({ 1.00390625 }):bfloat16():float():item(), 1)        -- ties to even
  lu.assertEquals(T({ 300, -5 }):byte():totable(), { 255, 0 })           -- float->int saturates
end

function TestTensor:test_float64_when_supported()
  H.skip_without_fp64()
  local t = T({ 1 / 3 }, "float64")
  lu.assertEquals(t:item(), 1 / 3)
end

function TestTensor:test_device_transfer_round_trip()
  local t = netcl.randn(5, 7, { device = dev })
  for _, d in ipairs(netcl.devices()) do
    local moved = t:to(d.name)
    lu.assertEquals(moved.device, d.name)
    lu.assertEquals(moved:to(dev):totable(), t:totable())
  end
  local nc = t:t()      -- non-contiguous source
  lu.assertEquals(nc:cpu():totable(), nc:totable())
end

function TestTensor:test_copy_and_fill()
  local t = netcl.zeros(2, 3, { device = dev })
  t:fill_(2)
  lu.assertEquals(t:totable(), { { 2, 2, 2 }, { 2, 2, 2 } })
  t:copy_(netcl.tensor({ 1, 2, 3 }, { device = "cpu" }))   -- broadcast, cross-device
  lu.assertEquals(t:totable(), { { 1, 2, 3 }, { 1, 2, 3 } })
  local c = t:clone()
  c:fill_(0)
  lu.assertEquals(t[1][1], 1)
end

function TestTensor:test_tostring_shows_values_dtype_shape_device()
  local s = tostring(T({ { 1, 2 }, { 3, 4 } }))
  lu.assertStrContains(s, "float32")
  lu.assertStrContains(s, "2x2")
  lu.assertStrContains(s, dev)
  lu.assertStrContains(s, "4")
  local big = tostring(netcl.zeros(100, 100, { device = dev }))
  lu.assertStrContains(big, "...")
  lu.assertTrue(#big < 4000)
end

function TestTensor:test_freed_tensor_is_an_error()
  local t = netcl.ones(3, { device = dev })
  t:free()
  t:free()   -- idempotent
  H.assert_error(function() return t + 1 end, "freed")
  H.assert_error(function() return t:sum() end, "freed")
end

function TestTensor:test_pinned_memory_uploads()
  netcl.manual_seed(8)
  local src = netcl.randn(1000, 33, { device = "cpu" })
  local p = src:pin_memory(dev)
  lu.assertEquals(p.device, "cpu")
  lu.assertEquals(p.is_pinned, not H.is_cpu)
  H.assert_close(p, src, 0, 0)
  -- queue work, then an upload on the transfer queue, then work that reads it
  local busy = netcl.randn(512, 512, { device = dev })
  for _ = 1, 3 do busy = busy:matmul(busy):tanh() end
  local d = p:to(dev)
  H.assert_close((d * 2):cpu(), src * 2, 0, 0)
  -- overwriting the staging buffer after the upload was queued: the upload saw the old values
  -- (on the cpu, to() returns the tensor itself)
  if not H.is_cpu then
    local d2 = p:to(dev)
    p:fill_(0)
    H.assert_close(d2:cpu(), src, 0, 0)
  end
  -- a pinned tensor freed while its upload may still run
  local q = netcl.randn(4096, { device = "cpu" }):pin_memory(dev)
  local d3 = q:to(dev)
  if not H.is_cpu then q:free() end
  lu.assertEquals(d3:numel(), 4096)
  netcl.synchronize(dev)
end

-- An upload's destination may be a pooled buffer whose last tensor was
-- freed while a queued kernel still reads it: the upload must not overwrite
-- it before that kernel ran (the DataLoader's device= path does this every
-- batch).
function TestTensor:test_upload_into_reused_buffer_waits_for_readers()
  lu.skipIf(H.is_cpu, "OpenCL uploads into pooled device buffers: on the cpu, to() returns the tensor itself")
  local slow = netcl.randn(256, 256, { device = dev })
  local p = netcl.empty_pinned({ 64, 256 }, { device = dev })
  local results = {}
  for i = 1, 8 do
    p:fill_(i)
    local d = p:to(dev)
    -- a few dependent products delay the read of d on the main queue
    local r = d
    for _ = 1, 3 do r = r:matmul(slow):mul(0):add(d) end
    results[i] = r:sum()
    d:free()
    r = nil
  end
  for i = 1, 8 do lu.assertEquals(results[i]:item(), i * 64 * 256) end
end
