-- spec/data_loader_spec.lua — the DataLoader's process logic: every sample
-- once per epoch, determinism across worker counts and memory paths,
-- multi-field samples, worker errors and kills surfacing in the parent,
-- no leftover processes or /dev/shm segments, and the ring's protocol.
-- Process logic is device-independent: it runs in the cpu pass only, except
-- device= uploads, which run on every device.
local lu = require("luaunit")
local H = require("helper")
local ffi = require("ffi")
local netcl = H.netcl
local data = netcl.data
local libc = require("netcl.data.util").libc

local function shm_entries()
  local p = io.popen("ls -A /dev/shm 2>/dev/null")
  local out = p:read("*a")
  p:close()
  return out
end

local function alive(pid) return libc.kill(pid, 0) == 0 end

local function pids(loader)
  local out = {}
  if loader.pool then for i, w in ipairs(loader.pool.workers) do out[i] = w.pid end end
  return out
end

-- a dataset of n samples (x [2] float = {i, -i}, y = i) whose get may run hooks
local function numbers(n, hook)
  return setmetatable({}, {
    __len = function() return n end,
    __index = { get = function(_, i)
      if hook then hook(i) end
      return netcl.tensor({ i, -i }, { device = "cpu" }), i
    end },
  })
end

local function epoch_labels(loader)
  local seen, sizes = {}, {}
  for _, y in loader do
    sizes[#sizes + 1] = y:size(1)
    for _, v in ipairs(y:totable()) do seen[#seen + 1] = v end
  end
  return seen, sizes
end

TestLoader = {}

function TestLoader:setUp() lu.skipIf(not H.is_cpu, "loader process logic is device-independent (cpu pass)") end

function TestLoader:test_every_sample_once_per_epoch()
  local n = 23
  for _, nw in ipairs({ 0, 2 }) do
    for _, bs in ipairs({ 1, 5, 23, 30 }) do
      for _, shuffle in ipairs({ false, true }) do
        for _, drop in ipairs({ false, true }) do
          local loader = data.DataLoader(numbers(n), { batch_size = bs, shuffle = shuffle, drop_last = drop,
                                                       num_workers = nw, seed = 7 })
          local want_batches = drop and math.floor(n / bs) or math.ceil(n / bs)
          lu.assertEquals(#loader, want_batches)
          for _ = 1, 2 do
            local seen, sizes = epoch_labels(loader)
            lu.assertEquals(#sizes, want_batches)
            local count = {}
            for _, v in ipairs(seen) do count[v] = (count[v] or 0) + 1 end
            local expect = drop and want_batches * bs or n
            lu.assertEquals(#seen, expect)
            for v, c in pairs(count) do lu.assertEquals(c, 1, "sample " .. v) end
            if not shuffle then for k = 1, #seen do lu.assertEquals(seen[k], k) end end
            for k = 1, #sizes - 1 do lu.assertEquals(sizes[k], bs) end
          end
          loader:close()
        end
      end
    end
  end
end

-- x through a random dataset draw and random filters: all must match
local function random_run(nw, shm)
  local ds = setmetatable({}, {
    __len = function() return 20 end,
    __index = { get = function(_, i)
      local img = (netcl.rand(1, 6, 6, { device = "cpu" }) * 255):byte()   -- per-sample randomness
      return img, i
    end },
  })
  local f = data.filters
  local loader = data.DataLoader(ds, { batch_size = 6, num_workers = nw, use_shared_mem = shm, seed = 11,
    transforms = { f.random_crop(2, 6, "reflect"), f.horizontal_flip(0.5), f.to_float(255), f.normalize(0.5, 0.25) } })
  local out = {}
  for _ = 1, 2 do
    for x, y in loader do out[#out + 1] = { x:totable(), y:totable() } end
  end
  loader:close()
  return out
end

function TestLoader:test_deterministic_across_workers_and_memory_paths()
  netcl.manual_seed(99)
  local ref = random_run(0, false)
  local before = netcl.C.netcl_rng_get_offset()
  lu.assertEquals(before, netcl.C.netcl_rng_get_offset())
  for _, cfg in ipairs({ { 1, false }, { 4, false }, { 1, true }, { 4, true }, { 0, true } }) do
    lu.assertEquals(random_run(cfg[1], cfg[2]), ref, ("num_workers %d, shm %s"):format(cfg[1], tostring(cfg[2])))
  end
  lu.assertNotEquals(ref[1][1], ref[5][1], "epochs differ")
end

function TestLoader:test_no_seed_follows_manual_seed()
  local function first(nw)
    netcl.manual_seed(5)
    local l = data.DataLoader(numbers(10), { batch_size = 10, num_workers = nw })
    local _, y = l:iter()()
    l:close()
    return y:totable()
  end
  lu.assertEquals(first(0), first(2))
end

function TestLoader:test_multi_field_and_table_samples()
  local ds = setmetatable({}, {
    __len = function() return 5 end,
    __index = function(_, i)
      return { img = netcl.full({ 3, 4, 4 }, i, { device = "cpu" }), mask = netcl.zeros(4, 4, { dtype = "bool", device = "cpu" }),
               label = i, weight = i / 2 }
    end,
  })
  for _, nw in ipairs({ 0, 2 }) do
    local loader = data.DataLoader(ds, { batch_size = 2, shuffle = false, num_workers = nw, use_shared_mem = nw > 0 })
    local b = loader:iter()()
    lu.assertEquals(b.img:size(), { 2, 3, 4, 4 })
    lu.assertEquals(b.mask:size(), { 2, 4, 4 })
    lu.assertEquals(b.mask.dtype, "bool")
    lu.assertEquals(b.label.dtype, "int64")
    lu.assertEquals(b.label:totable(), { 1, 2 })
    lu.assertEquals(b.weight.dtype, "float32")
    lu.assertEquals(b.weight:totable(), { 0.5, 1 })
    loader:close()
  end
  -- tuples of three fields
  local three = setmetatable({}, { __len = function() return 4 end, __index = { get = function(_, i)
    return netcl.ones(2, 2, { device = "cpu" }) * i, netcl.zeros(3, { dtype = "uint8", device = "cpu" }), i
  end } })
  local loader = data.DataLoader(three, { batch_size = 4, shuffle = false, num_workers = 2 })
  local a, b, c = loader:iter()()
  lu.assertEquals(a:size(), { 4, 2, 2 })
  lu.assertEquals(b:size(), { 4, 3 })
  lu.assertEquals(c:totable(), { 1, 2, 3, 4 })
  loader:close()
end

function TestLoader:test_worker_error_is_raised_with_traceback()
  local shm0 = shm_entries()
  for _, shm in ipairs({ false, true }) do
    local loader = data.DataLoader(numbers(12, function(i) if i == 9 then error("boom at sample " .. i) end end),
                                   { batch_size = 2, shuffle = false, num_workers = 2, use_shared_mem = shm })
    local ps
    local err = H.assert_error(function()
      for _ in loader do ps = ps or pids(loader) end
    end, "worker", "failed on batch 5", "boom at sample 9", "traceback")
    lu.assertStrContains(err, "pid")
    for _, pid in ipairs(ps) do lu.assertFalse(alive(pid), "worker " .. pid .. " was reaped") end
    -- the loader recovers on the next epoch with a new pool (and fails the same way)
    H.assert_error(function() for _ in loader do end end, "boom at sample 9")
    loader:close()
  end
  lu.assertEquals(shm_entries(), shm0)
end

function TestLoader:test_error_without_workers_points_at_dataset()
  local loader = data.DataLoader(numbers(4, function() error("bad sample") end), { num_workers = 0 })
  H.assert_error(function() for _ in loader do end end, "bad sample")
end

function TestLoader:test_killed_worker_is_an_error_within_seconds()
  local shm0 = shm_entries()
  for _, shm in ipairs({ false, true }) do
    local loader = data.DataLoader(numbers(400, function() libc.usleep(5000) end),
                                   { batch_size = 2, shuffle = false, num_workers = 2, use_shared_mem = shm })
    local t0
    local err = H.assert_error(function()
      local k = 0
      for _ in loader do
        k = k + 1
        if k == 3 then
          libc.kill(loader.pool.workers[2].pid, 9)
          t0 = os.time()
        end
      end
    -- worker 2 dies while the loader waits for worker 1's batch 4 (or,
    -- should that come first, for its own batch 5): either way the error
    -- names the batch the dead worker was making
    end, "worker 2", "killed by signal 9", "while making batch 5 of epoch 1")
    lu.assertTrue(os.time() - t0 <= 3, "error took too long: " .. err)
    loader:close()
  end
  lu.assertEquals(shm_entries(), shm0)
end

function TestLoader:test_opencl_in_a_worker_is_refused_clearly()
  local cl
  for _, d in ipairs(netcl.devices()) do if d.name ~= "cpu" then cl = d.name end end
  lu.skipIf(not cl, "no OpenCL device on this machine to use in a worker")
  netcl.ones(1, { device = cl })   -- OpenCL initialised in the parent
  local ds = numbers(4, function() return netcl.ones(2, { device = cl }):sum():item() end)
  local loader = data.DataLoader(ds, { batch_size = 2, num_workers = 1 })
  H.assert_error(function() for _ in loader do end end, "worker 1", "forked child", "OpenCL")
  loader:close()
end

function TestLoader:test_pool_persists_and_close_reaps()
  local loader = data.DataLoader(numbers(8), { batch_size = 2, num_workers = 2 })
  epoch_labels(loader)
  local first = pids(loader)
  lu.assertEquals(#first, 2)
  epoch_labels(loader)
  lu.assertEquals(pids(loader), first, "same workers in epoch 2")
  -- leaving an epoch early, then a full epoch: nothing stale comes back
  for _ in loader do break end
  local seen = epoch_labels(loader)
  lu.assertEquals(#seen, 8)
  loader:close()
  loader:close()   -- idempotent
  for _, pid in ipairs(first) do lu.assertFalse(alive(pid)) end
  -- a dropped loader closes on collection
  local l2 = data.DataLoader(numbers(8), { batch_size = 2, num_workers = 2 })
  epoch_labels(l2)
  local p2 = pids(l2)
  l2 = nil
  collectgarbage(); collectgarbage()
  for _, pid in ipairs(p2) do lu.assertFalse(alive(pid), "collected loader's worker " .. pid) end
end

function TestLoader:test_bad_options_and_datasets()
  H.assert_error(function() data.DataLoader(numbers(3), { batch_size = 0 }) end, "batch_size", ">= 1")
  H.assert_error(function() data.DataLoader(numbers(3), { num_workers = -1 }) end, "num_workers")
  H.assert_error(function() data.DataLoader(numbers(3), { bogus = 1 }) end, "unknown option 'bogus'")
  H.assert_error(function() data.DataLoader(42) end, "DataLoader", "dataset")
  local strings = setmetatable({}, { __len = function() return 2 end, __index = { get = function() return "x" end } })
  H.assert_error(function() for _ in data.DataLoader(strings, { num_workers = 0 }) do end end, "string")
  local ragged = setmetatable({}, { __len = function() return 2 end,
    __index = { get = function(_, i) return netcl.zeros(i, { device = "cpu" }) end } })
  H.assert_error(function() for _ in data.DataLoader(ragged, { num_workers = 0, shuffle = false }) do end end,
                 "stack", "item 2")
end

function TestLoader:test_ring_protocol()
  local shm0 = shm_entries()
  local ring = data.SharedBatchRingBuffer(2, 1024)
  lu.assertEquals(#ring, 2)
  lu.assertEquals(ring:state(1), "free")
  local x = netcl.arange(0, 12, { device = "cpu" }):view(3, 4)
  H.assert_error(function() ring:put(1, 5, { x }) end, "slot 0 is FREE, expected ASSIGNED")
  ring:assign(1, 5)
  lu.assertEquals(ring:state(1), "assigned")
  H.assert_error(function() ring:assign(1, 6) end, "expected FREE")
  H.assert_error(function() ring:put(1, 4, { x }) end, "assigned batch 5, not 4")
  lu.assertTrue(ring:put(1, 5, { x:t(), netcl.tensor({ 1, 2 }, { dtype = "int64", device = "cpu" }) }))
  lu.assertEquals(ring:state(1), "ready")
  lu.assertFalse(ring:put(2, 6, { netcl.zeros(4096, { device = "cpu" }) }), "too big for a slot")
  local got = ring:take(1, 5)
  lu.assertEquals(got.n, 2)
  lu.assertEquals(got[1]:totable(), x:t():totable())
  lu.assertEquals(got[2]:totable(), { 1, 2 })
  lu.assertEquals(ring:state(1), "free")
  H.assert_error(function() ring:take(1, 5) end, "is FREE, expected READY")
  ring:assign(2, 7)
  ring:release(2)
  lu.assertEquals(ring:state(2), "free")
  ring:close()
  H.assert_error(function() ring:state(1) end, "closed")
  lu.assertEquals(shm_entries(), shm0)
end

-- device=: batches arrive on the device with the cpu loader's values
TestLoaderDevice = {}

function TestLoaderDevice:test_device_upload_matches_cpu()
  local x = netcl.arange(0, 7 * 2 * 3 * 3, { device = "cpu" }):view(7, 2, 3, 3)
  local ds = data.TensorDataset(x, netcl.arange(1, 8, { dtype = "int64", device = "cpu" }))
  local ref = data.DataLoader(ds, { batch_size = 3, num_workers = 0, seed = 1 })
  local dev = data.DataLoader(ds, { batch_size = 3, num_workers = 2, seed = 1, device = H.device, use_shared_mem = true })
  local want = {}
  for xb, yb in ref do want[#want + 1] = { xb:totable(), yb:totable() } end
  local k = 0
  for xb, yb in dev do
    k = k + 1
    lu.assertEquals(xb.device, H.device)
    lu.assertEquals(yb.device, H.device)
    lu.assertEquals({ (xb * 1):totable(), yb:totable() }, want[k])
  end
  lu.assertEquals(k, 3)
  dev:close()
end
