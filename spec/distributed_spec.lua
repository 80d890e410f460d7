-- spec/distributed_spec.lua — netcl.distributed: every collective, dtype
-- and op on world sizes 2 and 4 through both launchers (netcl --nproc for
-- shm, mpirun for MPI), asynchronous handles, dead and stuck peers,
-- data-parallel training equal to one process, nothing left in /dev/shm,
-- device tensors staged through host memory (the OpenCL pass), and the
-- samplers. The ranks run spec/dist/*.lua and check their own results.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."
local launcher = root .. "/build/netcl"

local function have(cmd) return (H.run("command -v " .. cmd)):match("%S") ~= nil end
local function mpi_missing()
  if not have("mpirun") then return "mpirun is not installed (make deps installs openmpi-bin)" end
  local f = io.open(root .. "/build/libnetcl_mpi.so", "rb")
  if not f then return "build/libnetcl_mpi.so was not built (mpicc missing when make ran)" end
  f:close()
end

-- runs `spec/dist/<script> args` on n ranks; returns output, exit code
local function job(how, n, script, args, env)
  local cmd
  if how == "shm" then
    cmd = ("%s %s --nproc %d %s/spec/dist/%s %s"):format(env or "", launcher, n, root, script, args or "")
  else
    cmd = ("%s mpirun --allow-run-as-root --oversubscribe -np %d %s %s/spec/dist/%s %s"):format(env or "", n, launcher, root,
      script, args or "")
  end
  return H.run("NETCL_DEVICE=${DIST_DEVICE:-cpu} " .. cmd)
end

local function count_ok(out)
  local n = 0
  for _ in out:gmatch("ok %d+ ") do n = n + 1 end
  return n
end

local function assert_job(out, code, n)
  lu.assertEquals(code, 0, out)
  lu.assertEquals(count_ok(out), n, out)
end

-- why the DDP jobs (spec/dist/ddp.lua trains on Fashion-MNIST) cannot run here, or nil
local function dataset_missing()
  local f = io.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", "rb")
  if not f then return "Fashion-MNIST is not installed (make deps installs dataset-fashion-mnist)" end
  f:close()
end

local function shm_entries()
  local out = H.run("ls /dev/shm 2>/dev/null | grep -c '^netcl-' || true")
  return tonumber(out:match("%d+")) or 0
end

TestDistributed = {}

function TestDistributed:setUp()
  if not H.is_cpu then lu.skip("distributed jobs: device independent, run in the cpu pass (device staging: TestDistributedDevice)") end
end

function TestDistributed:test_shm_collectives_world_2_and_4()
  local before = shm_entries()
  for _, n in ipairs({ 2, 4 }) do
    -- small slots: the odd sizes cross several chunks
    local out, code = job("shm", n, "collectives.lua", "all", "NETCL_SHM_SLOT_MB=0.25")
    assert_job(out, code, n)
  end
  lu.assertEquals(shm_entries(), before, "a shared segment was left in /dev/shm")
end

-- the slot path alone (the single-copy path off), for machines where the
-- kernel refuses cross-memory attach
function TestDistributed:test_shm_slot_path_alone()
  local out, code = job("shm", 2, "collectives.lua", "all", "NETCL_SHM_SLOT_MB=0.25 NETCL_SHM_CMA=0")
  assert_job(out, code, 2)
end

-- the exchange ring (on by itself where an OpenCL GPU is present): whole
-- float tensors staged in shared memory, reduced by every rank in rank
-- order; an 8 MB ring cuts the 64 MB all_reduce into 16 pieces
function TestDistributed:test_shm_exchange_ring()
  for _, n in ipairs({ 2, 4 }) do
    local out, code = job("shm", n, "collectives.lua", "all", "NETCL_SHM_SLOT_MB=0.25 NETCL_SHM_EXCHANGE=1 NETCL_SHM_EXCHANGE_MB=8")
    assert_job(out, code, n)
  end
  local out, code = job("shm", 3, "collectives.lua", "ring cpu", "NETCL_SHM_EXCHANGE=1 NETCL_SHM_EXCHANGE_MB=1")
  assert_job(out, code, 3)
  -- the host's copies and reductions split over threads, odd sizes too
  out, code = job("shm", 2, "collectives.lua", "all", "NETCL_SHM_SLOT_MB=0.25 NETCL_SHM_EXCHANGE=1 NETCL_SHM_THREADS=3")
  assert_job(out, code, 2)
  if dataset_missing() then lu.skip("DDP through the ring: " .. dataset_missing()) end
  out, code = job("shm", 2, "ddp.lua", "ddp", "NETCL_SHM_EXCHANGE=1")
  assert_job(out, code, 2)
end

function TestDistributed:test_mpi_collectives_world_2_and_4()
  local why = mpi_missing()
  if why then lu.skip("mpi: " .. why) end
  for _, n in ipairs({ 2, 4 }) do
    local out, code = job("mpi", n, "collectives.lua", "all")
    assert_job(out, code, n)
  end
end

function TestDistributed:test_async_handles()
  local out, code = job("shm", 3, "collectives.lua", "async")
  assert_job(out, code, 3)
end

function TestDistributed:test_dead_peer_fails_the_others_clearly()
  local before = shm_entries()
  local t0 = os.time()
  local out, code = job("shm", 3, "collectives.lua", "die", "NETCL_LAUNCH_GRACE=20")
  lu.assertEquals(code, 3, out)   -- the first failing rank's status
  lu.assertStrContains(out, "rank 2 exited with status 3")
  for _, r in ipairs({ 0, 1 }) do
    lu.assertStrContains(out, ("rank 2 (pid"):format(), false)
    lu.assertStrContains(out, ("has exited; rank %d cannot continue"):format(r))
  end
  lu.assertTrue(os.time() - t0 < 15, "the others took too long to notice")
  lu.assertEquals(shm_entries(), before)
end

function TestDistributed:test_stuck_peer_times_out()
  local out, code = job("shm", 2, "collectives.lua", "stuck", "DIST_TEST_TIMEOUT=1 NETCL_LAUNCH_GRACE=20")
  lu.assertNotEquals(code, 0, out)
  lu.assertStrContains(out, "rank 0 waited 1 s for rank 1")
  -- rank 1 comes back to find rank 0 gone: failed, or already exited
  lu.assertTrue(out:find("rank 0 failed, so the job cannot continue", 1, true) ~= nil or
                out:find("rank 0 %(pid %d+%) has exited; rank 1 cannot continue") ~= nil, out)
end

function TestDistributed:test_data_parallel_equals_one_process()
  if dataset_missing() then lu.skip("DDP: " .. dataset_missing()) end
  for _, mode in ipairs({ "ddp", "sync", "accum" }) do
    local out, code = job("shm", 2, "ddp.lua", mode)
    assert_job(out, code, 2)
  end
  local why = mpi_missing()
  if why then return end
  local out, code = job("mpi", 2, "ddp.lua", "ddp")
  assert_job(out, code, 2)
end

function TestDistributed:test_launcher_arguments()
  local out, code = H.run(launcher .. " --nproc 0 x.lua")
  lu.assertEquals(code, 1)
  lu.assertStrContains(out, "--nproc needs a process count >= 1")
  out, code = H.run(launcher .. " --nproc 2")
  lu.assertEquals(code, 1)
  lu.assertStrContains(out, "--nproc needs a script")
  out, code = H.run(launcher .. " --nproc 2 -e 'print(netcl.distributed.init().rank())'")
  lu.assertEquals(code, 0, out)
  lu.assertStrContains(out, "0")
  lu.assertStrContains(out, "1")
end

-- ---- in this process: a world of one, errors, samplers ----------------------------

function TestDistributed:test_world_of_one_and_errors()
  local dist = netcl.distributed
  H.assert_error(function() dist.all_reduce(netcl.ones(3)) end, "call distributed.init first")
  H.assert_error(function() dist.init({ backend = "tcp" }) end, "backend must be 'shm' or 'mpi'")
  H.assert_error(function() dist.init({ nosuch = 1 }) end, "unknown option 'nosuch'")
  dist.init({ name = "netcl-spec-" .. os.time() })
  lu.assertEquals({ dist.rank(), dist.world_size(), dist.local_rank() }, { 0, 1, 0 })
  local t = netcl.tensor({ 1, 2, 3 })
  dist.all_reduce(t, "avg")
  lu.assertEquals(t:totable(), { 1, 2, 3 })
  H.assert_error(function() dist.all_reduce(t, "mean") end, "op must be one of sum, avg, max, min, product")
  H.assert_error(function() dist.all_reduce(3) end, "the tensor must be a tensor")
  H.assert_error(function() dist.init() end, "already initialised")
  dist.finalize()
  dist.finalize()
  lu.assertFalse(dist.is_initialized())
end

function TestDistributed:test_distributed_sampler_shards()
  local data = netcl.data
  local seen = {}
  for r = 0, 2 do
    local s = data.DistributedSampler(10, { rank = r, world_size = 3, seed = 5 })
    lu.assertEquals(s:len(), 4)   -- ceil(10 / 3), padded
    local idx = s:indices(1)
    lu.assertEquals(#idx, 4)
    for _, i in ipairs(idx) do seen[i] = (seen[i] or 0) + 1 end
    lu.assertEquals(s:indices(1), idx, "the same epoch gives the same shard")
    lu.assertNotEquals(s:indices(2), idx, "another epoch, another order")
  end
  for i = 1, 10 do lu.assertTrue((seen[i] or 0) >= 1, "index " .. i .. " is missing") end
  local d = data.DistributedSampler(10, { rank = 2, world_size = 3, drop_last = true, shuffle = false })
  lu.assertEquals(d:indices(1), { 3, 6, 9 })
  H.assert_error(function() data.DistributedSampler(10, { rank = 3, world_size = 3 }) end, "rank")
  -- the loader takes its batches from the sampler
  local ds = data.TensorDataset(netcl.arange(1, 11))
  local loader = data.DataLoader(ds, { batch_size = 2, num_workers = 0, sampler = d })
  lu.assertEquals(#loader, 2)
  local got = {}
  for x in loader:iter() do for _, v in ipairs(x:totable()) do got[#got + 1] = v end end
  lu.assertEquals(got, { 3, 6, 9 })
  H.assert_error(function() data.DataLoader(ds, { sampler = d, shuffle = true }) end, "shuffle and sampler exclude each other")
end

function TestDistributed:test_weighted_and_class_balanced_samplers()
  local data = netcl.data
  local s = data.WeightedRandomSampler({ 1, 0, 3 }, 4000, { seed = 1 })
  local counts = { 0, 0, 0 }
  for _, i in ipairs(s:indices(1)) do counts[i] = counts[i] + 1 end
  lu.assertEquals(counts[2], 0)
  lu.assertTrue(math.abs(counts[3] / 4000 - 0.75) < 0.03, "weight 3 of 4: " .. counts[3])
  lu.assertEquals(s:indices(1), s:indices(1))
  local nr = data.WeightedRandomSampler({ 1, 1, 1, 1, 0 }, 4, { replacement = false })
  local idx = nr:indices(1)
  table.sort(idx)
  lu.assertEquals(idx, { 1, 2, 3, 4 })
  H.assert_error(function() data.WeightedRandomSampler({ 1, 0 }, 2, { replacement = false }) end, "only 1 weights are > 0")
  H.assert_error(function() data.WeightedRandomSampler({ 1, -1 }, 2) end, "weight 2 is -1")
  -- 90 samples of class 1, 10 of class 2: drawn about equally
  local labels = {}
  for i = 1, 100 do labels[i] = i <= 90 and 1 or 2 end
  local cb = data.ClassBalancedSampler(labels, { num_samples = 4000, seed = 3 })
  local c2 = 0
  for _, i in ipairs(cb:indices(1)) do if labels[i] == 2 then c2 = c2 + 1 end end
  lu.assertTrue(math.abs(c2 / 4000 - 0.5) < 0.04, "class 2 drawn " .. c2 .. " of 4000")
end

-- ---- device tensors (the OpenCL pass) ---------------------------------------------

TestDistributedDevice = {}

function TestDistributedDevice:test_device_tensors_staged()
  if H.is_cpu then lu.skip("device staging: run in the OpenCL passes (cpu tensors are used in place)") end
  local out, code = job("shm", 2, "collectives.lua", "device " .. H.device, "NETCL_SHM_EXCHANGE=0")
  assert_job(out, code, 2)
end

-- device tensors through the exchange ring: read into shared memory on
-- the transfer queue, the peers' blocks uploaded and reduced on the
-- device; more in flight than the ring holds; DDP training on the device
function TestDistributedDevice:test_device_exchange_ring()
  if H.is_cpu then lu.skip("device exchange: run in the OpenCL passes (the cpu pass covers the ring on the host)") end
  local env = "NETCL_SHM_EXCHANGE=1 NETCL_DEVICE=" .. H.device
  local out, code = job("shm", 2, "collectives.lua", "device " .. H.device, env)
  assert_job(out, code, 2)
  out, code = job("shm", 2, "collectives.lua", "device " .. H.device, env .. " NETCL_SHM_EXCHANGE_MB=0.5")   -- in pieces
  assert_job(out, code, 2)
  out, code = job("shm", 2, "collectives.lua", "ring " .. H.device, env .. " NETCL_SHM_EXCHANGE_MB=1")
  assert_job(out, code, 2)
  if dataset_missing() then lu.skip("DDP on the device: " .. dataset_missing()) end
  out, code = job("shm", 2, "ddp.lua", "ddp", env)
  assert_job(out, code, 2)
end

-- several devices in one process: replicas on the cpu and the device under
-- test, each on half the batch, averaged by sync_grads(replicas), train as
-- one model on the whole batch
function TestDistributedDevice:test_replicas_in_one_process()
  local nn, optim, dist = netcl.nn, netcl.optim, netcl.distributed
  local devs = { "cpu", H.device }
  local function build() netcl.manual_seed(3); return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)) end
  local reps = dist.replicate(build, devs)
  lu.assertEquals(reps[2]:parameters()[1].device, H.device)
  local opts = { optim.SGD(reps[1], { lr = 0.1 }), optim.SGD(reps[2], { lr = 0.1 }) }
  local ref = build():to("cpu")
  local ropt = optim.SGD(ref, { lr = 0.1 })
  netcl.manual_seed(9)
  local x, y = netcl.randn(16, 4, { device = "cpu" }), netcl.randn(16, 2, { device = "cpu" })
  local crit = nn.MSELoss()
  for _ = 1, 3 do
    for i, m in ipairs(reps) do
      opts[i]:zero_grad()
      crit(m(x:narrow(1, (i - 1) * 8 + 1, 8):to(devs[i])), y:narrow(1, (i - 1) * 8 + 1, 8):to(devs[i])):backward()
    end
    dist.sync_grads(reps)
    opts[1]:step()
    opts[2]:step()
    ropt:zero_grad()
    crit(ref(x), y):backward()
    ropt:step()
  end
  for i, p in ipairs(ref:parameters()) do
    H.assert_close(reps[1]:parameters()[i]:detach(), p:detach(), 1e-5, 1e-6, "replica 1 against one model")
    H.assert_close(reps[2]:parameters()[i]:detach():to("cpu"), p:detach(), 1e-5, 1e-6, "replica 2 against one model")
  end
  H.assert_error(function() dist.replicate(42, devs) end, "build must be a function")
end
