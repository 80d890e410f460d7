-- spec/memory_spec.lua — pool statistics, bounded memory in long loops with
-- no collectgarbage() in user code, and out-of-memory as a clear, recoverable
-- error.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local dev = H.device

TestMemory = {}

function TestMemory:test_stats_fields()
  local s = netcl.memory_stats(dev)
  for _, k in ipairs({ "allocations", "pool_hits", "pool_misses", "bytes_in_use", "bytes_cached", "peak_bytes" }) do
    lu.assertIsNumber(s[k], k)
  end
end

function TestMemory:test_pool_reuses_buffers()
  local before = netcl.memory_stats(dev)
  for _ = 1, 50 do
    local t = netcl.zeros(1000, { device = dev })
    t:free()
  end
  local after = netcl.memory_stats(dev)
  lu.assertTrue(after.pool_hits - before.pool_hits >= 49)
  lu.assertTrue(after.allocations - before.allocations <= 1)
end

function TestMemory:test_loop_stays_bounded_without_collectgarbage()
  -- 10,000 iterations, 1 MiB per iteration dropped: 10 GB without collection
  local x = netcl.ones(256 * 1024, { device = dev })
  local peak0 = netcl.memory_stats(dev).peak_bytes
  for _ = 1, 10000 do
    local y = x + 1
  end
  -- garbage collects once the floor is in use (at most 1 GiB: 10 GB of
  -- results means several collections)
  local s, floor = netcl.memory_stats(dev), netcl.gc_floor()
  lu.assertTrue(floor >= 256 * 1024 * 1024 and floor <= 1024 * 1024 * 1024, "floor " .. floor)
  lu.assertTrue(s.bytes_in_use < floor + 512 * 1024 * 1024, "in use " .. s.bytes_in_use)
  lu.assertTrue(s.peak_bytes < peak0 + floor + 512 * 1024 * 1024, "peak " .. s.peak_bytes)
end

function TestMemory:test_gc_floor_follows_the_largest_device()
  local largest = 0
  for _, d in ipairs(netcl.devices()) do largest = math.max(largest, d.global_mem) end
  local want = math.max(256 * 1024 * 1024, math.min(1024 * 1024 * 1024, math.floor(largest / 32)))
  if os.getenv("NETCL_GC_MIN_MB") then want = tonumber(os.getenv("NETCL_GC_MIN_MB")) * 1024 * 1024 end
  lu.assertEquals(netcl.gc_floor(), want)
end

function TestMemory:test_out_of_memory_is_clear_and_recoverable()
  local info = H.device_info()
  local n = math.floor(info.global_mem / 4) + 1024 * 1024     -- more floats than fit
  local err = H.assert_error(function() netcl.empty(n, { device = dev }) end, "out of memory", dev)
  lu.assertStrContains(err, "bytes")
  -- the process stays usable
  lu.assertEquals(netcl.ones(3, { device = dev }):sum():item(), 3)
end

function TestMemory:test_empty_cache()
  local t = netcl.zeros(4096, { device = dev })
  t:free()
  netcl.empty_cache(dev)
  lu.assertEquals(netcl.memory_stats(dev).bytes_cached, 0)
end

-- the owners' bytes add up to the bytes in use, now and at the peak
local function assert_owners_add_up(s)
  local now, peak = 0, 0
  for _, v in pairs(s.by_owner) do now = now + v end
  for _, v in pairs(s.peak_by_owner) do peak = peak + v end
  lu.assertEquals(now, s.bytes_in_use)
  lu.assertEquals(peak, s.peak_bytes)
end

function TestMemory:test_bytes_in_use_are_attributed_to_their_owners()
  collectgarbage("collect")
  collectgarbage("stop")
  local ok, err = pcall(function()
    netcl.manual_seed(2)
    local base = netcl.memory_stats(dev).by_owner
    local model = netcl.nn.Sequential(netcl.nn.Conv2d(3, 8, 3, { device = dev }), netcl.nn.ReLU(), netcl.nn.Flatten(),
      netcl.nn.Linear(8 * 14 * 14, 10, { device = dev }))
    -- initialisation leaves no garbage behind
    lu.assertEquals(netcl.memory_stats(dev).by_owner.other, base.other)
    local opt = netcl.optim.SGD(model, { lr = 0.1, momentum = 0.9 })
    local x = netcl.randn(4, 3, 16, 16, { device = dev })
    local y = netcl.randint(1, 11, { 4 }, { device = dev })
    local nparams = 8 * 3 * 9 + 8 + 8 * 14 * 14 * 10 + 10
    netcl.reset_peak_memory(dev)
    opt:zero_grad()
    local loss = netcl.nn.CrossEntropyLoss()(model(x), y)
    local mid = netcl.memory_stats(dev)
    lu.assertTrue(mid.by_owner.saved >= 4 * 8 * 14 * 14 * 4, "the graph saves the conv's output at least")
    assert_owners_add_up(mid)
    loss:backward()
    opt:step()
    local s = netcl.memory_stats(dev)
    assert_owners_add_up(s)
    lu.assertEquals(s.by_owner.saved, base.saved)     -- backward let the graph's tensors go
    lu.assertEquals(s.by_owner.backward, base.backward)
    for _, owner in ipairs({ "parameters", "gradients", "optimizer" }) do
      lu.assertTrue(s.by_owner[owner] - base[owner] >= nparams * 4, owner .. ": " .. s.by_owner[owner])
    end
    lu.assertTrue(s.peak_by_owner.saved > 0)
    local text = netcl.memory_summary(dev)
    for _, row in ipairs({ "parameters", "saved for backward", "optimizer state", "op workspaces", "cached free blocks" }) do
      lu.assertStrContains(text, row)
    end
  end)
  collectgarbage("restart")
  lu.assertTrue(ok, err)
end

function TestMemory:test_a_convolutions_scratch_counts_as_workspace()
  netcl.set_conv_algo("im2col")
  local ok, err = pcall(function()
    local x = netcl.randn(2, 4, 12, 12, { device = dev })
    local w = netcl.randn(6, 4, 3, 3, { device = dev })
    netcl.synchronize(dev)
    netcl.reset_peak_memory(dev)
    local y = netcl.nn.functional.conv2d(x, w)
    local s = netcl.memory_stats(dev)
    assert_owners_add_up(s)
    lu.assertTrue(s.peak_by_owner.workspace >= 2 * 36 * 100 * 4, "im2col's unfolded input is workspace")
    lu.assertEquals(y:size(2), 6)
  end)
  netcl.set_conv_algo(nil)   -- the planner again
  lu.assertTrue(ok, err)
end
