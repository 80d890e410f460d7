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
