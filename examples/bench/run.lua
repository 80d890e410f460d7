-- examples/bench/run.lua — netcl vs PyTorch on the same machine, same run.
-- Each workload is timed in netcl on the chosen device; when
-- `python3 -c 'import torch'` works, torch_peer.py runs the same workloads
-- (CUDA when present, else CPU) and the table prints the ratio
-- (>1 means netcl is faster).
--   netcl examples/bench/run.lua [--device NAME] [--only WORKLOAD] [--quick]
local netcl = require("netcl")

local opts = { device = nil, only = nil, quick = false }
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--device" then opts.device = arg[i + 1]; i = i + 1
  elseif a == "--only" then opts.only = arg[i + 1]; i = i + 1
  elseif a == "--quick" then opts.quick = true
  else error("unknown argument " .. a) end
  i = i + 1
end

local dev = netcl.device(opts.device)
local devname = dev.name or tostring(opts.device or netcl.default_device())
local info
for _, d in ipairs(netcl.devices()) do if d.name == devname then info = d end end
local is_gpu = info and info.type == "opencl_gpu"

local ffi = require("ffi")
ffi.cdef [[ int clock_gettime(int clk, struct timespec *ts); struct timespec { long tv_sec; long tv_nsec; }; ]]
local ts = ffi.new("struct timespec")
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- Median time of `reps` runs of fn (after a warm-up run), synchronised.
local function time_it(fn, reps)
  fn(); netcl.synchronize(devname)
  local ts = {}
  for r = 1, reps do
    local t0 = now()
    fn()
    netcl.synchronize(devname)
    ts[r] = now() - t0
  end
  table.sort(ts)
  return ts[math.ceil(#ts / 2)]
end

local workloads = {}

-- relu(x*a+b), unfused: useful bandwidth = 8 bytes per element (read x, write y)
local ew_n = is_gpu and 64 * 1024 * 1024 or (opts.quick and 1024 * 1024 or 16 * 1024 * 1024)
workloads[#workloads + 1] = {
  name = "relu(x*a+b)", key = "elementwise", unit = "GB/s", higher = true, size = ew_n,
  run = function()
    local x = netcl.rand(ew_n, { device = devname })
    local t = time_it(function() local y = (x * 1.5 + 0.25):relu() end, 10)
    return 8 * ew_n / t / 1e9
  end,
}

-- a + b and sum(x) on the same 64M floats: bytes moved per second
workloads[#workloads + 1] = {
  name = "add a+b", key = "add", unit = "GB/s", higher = true, size = ew_n,
  run = function()
    local a, b = netcl.rand(ew_n, { device = devname }), netcl.rand(ew_n, { device = devname })
    return 12 * ew_n / time_it(function() local c = a + b end, 10) / 1e9
  end,
}
workloads[#workloads + 1] = {
  name = "sum(x)", key = "sum", unit = "GB/s", higher = true, size = ew_n,
  run = function()
    local x = netcl.rand(ew_n, { device = devname })
    return 4 * ew_n / time_it(function() local s = x:sum() end, 10) / 1e9
  end,
}

-- softmax and cross_entropy forward + backward on (4096, 1000)
local sm_rows = opts.quick and 256 or 4096
local F = netcl.nn.functional
workloads[#workloads + 1] = {
  name = "softmax fwd+bwd", key = "softmax", unit = "ms", higher = false, size = sm_rows,
  run = function()
    local x = netcl.randn(sm_rows, 1000, { device = devname, requires_grad = true })
    local g = netcl.randn(sm_rows, 1000, { device = devname })
    return time_it(function() x.grad = nil; x:softmax(2):backward(g) end, 10) * 1e3
  end,
}
workloads[#workloads + 1] = {
  name = "cross_entropy fwd+bwd", key = "cross_entropy", unit = "ms", higher = false, size = sm_rows,
  run = function()
    local x = netcl.randn(sm_rows, 1000, { device = devname, requires_grad = true })
    local t = netcl.randint(1, 1001, { sm_rows }, { device = devname })
    return time_it(function() x.grad = nil; F.cross_entropy(x, t):backward() end, 10) * 1e3
  end,
}

-- a small MLP training step (784-256-10, batch 128, plain SGD in place)
workloads[#workloads + 1] = {
  name = "MLP step 784-256-10", key = "mlp", unit = "us", higher = false, size = 128,
  run = function()
    local o = { device = devname }
    local w1 = (netcl.randn(256, 784, o) * 0.05):requires_grad_()
    local b1 = netcl.zeros(256, o):requires_grad_()
    local w2 = (netcl.randn(10, 256, o) * 0.05):requires_grad_()
    local b2 = netcl.zeros(10, o):requires_grad_()
    local x = netcl.randn(128, 784, o)
    local y = netcl.randint(1, 11, { 128 }, o)
    local params = { w1, b1, w2, b2 }
    local function step()
      local loss = F.cross_entropy(F.linear(F.linear(x, w1, b1):relu(), w2, b2), y)
      loss:backward()
      netcl.no_grad(function()
        for _, p in ipairs(params) do p:sub_(p.grad * 0.01); p.grad:zero_() end
      end)
    end
    return time_it(step, 20) * 1e6
  end,
}

local mm_sizes = is_gpu and { 1024, 4096 } or (opts.quick and { 256 } or { 256, 1024 })
for _, n in ipairs(mm_sizes) do
  workloads[#workloads + 1] = {
    name = ("matmul %d^3 fp32"):format(n), key = "matmul", unit = "GFLOP/s", higher = true, size = n,
    run = function()
      local a = netcl.randn(n, n, { device = devname })
      local b = netcl.randn(n, n, { device = devname })
      local reps = n >= 4096 and 3 or 5
      local t = time_it(function() local c = a:matmul(b) end, reps)
      return 2 * n * n * n / t / 1e9
    end,
  }
end

-- the same product ten times per synchronisation: what a call costs when
-- the host does not wait for each result (the row above waits every call)
workloads[#workloads + 1] = {
  name = "matmul 1024^3, 10/sync", key = "matmul_stream", unit = "GFLOP/s", higher = true, size = 1024,
  run = function()
    local n = 1024
    local a, b = netcl.randn(n, n, { device = devname }), netcl.randn(n, n, { device = devname })
    local t = time_it(function() for _ = 1, 10 do local c = a:matmul(b) end end, 5)
    return 10 * 2 * n * n * n / t / 1e9
  end,
}
-- the wait itself: a synchronisation with nothing queued
workloads[#workloads + 1] = {
  name = "sync, idle device", key = "sync_wait", unit = "us", higher = false, size = 1000,
  run = function()
    netcl.synchronize(devname)
    local t0 = now()
    for _ = 1, 1000 do netcl.synchronize(devname) end
    return (now() - t0) / 1000 * 1e6
  end,
}

-- per-op overhead: many small adds, one sync at the end
local small_reps = opts.quick and 2000 or 20000
workloads[#workloads + 1] = {
  name = "small add (64 elems)", key = "small_add", unit = "us/op", higher = false, size = small_reps,
  run = function()
    local a = netcl.rand(64, { device = devname })
    local b = netcl.rand(64, { device = devname })
    local t = time_it(function() for _ = 1, small_reps do local c = a + b end end, 3)
    return t / small_reps * 1e6
  end,
}
-- host time from the Lua call until the op is enqueued: 1000 small adds
-- timed without waiting for the device (a sync before and after, untimed)
workloads[#workloads + 1] = {
  name = "launch cost (add, host)", key = "launch", unit = "us/op", higher = false, size = 1000,
  run = function()
    local a = netcl.rand(64, { device = devname })
    local b = netcl.rand(64, { device = devname })
    local best, driver = math.huge, 0
    for _ = 1, 5 do
      netcl.synchronize(devname)
      local e0, t0 = netcl.runtime_stats().enqueue_ns, now()
      for _ = 1, 1000 do local c = a + b end
      local t = now() - t0
      if t < best then best, driver = t, (netcl.runtime_stats().enqueue_ns - e0) * 1e-9 end
      netcl.synchronize(devname)
    end
    if driver > 0 then print(("launch cost: %.2f us/op, of which %.2f in the driver's enqueue"):format(best * 1e3, driver * 1e3)) end
    return best / 1000 * 1e6
  end,
}
workloads[#workloads + 1] = {
  name = "create zeros(64)", key = "create", unit = "us/op", higher = false, size = small_reps,
  run = function()
    local t = time_it(function() for _ = 1, small_reps do local c = netcl.zeros(64, { device = devname }) end end, 3)
    return t / small_reps * 1e6
  end,
}

-- the PyTorch peer, one JSON-ish line per workload: "key size value"
local function torch_results()
  local ok = os.execute("python3 -c 'import torch' >/dev/null 2>&1")
  if ok ~= 0 and ok ~= true then return nil, "PyTorch not installed" end
  local here = arg[0]:match("^(.*)/[^/]*$") or "."
  local specs = {}
  for _, w in ipairs(workloads) do
    if not opts.only or w.key == opts.only then specs[#specs + 1] = w.key .. ":" .. w.size end
  end
  local p = io.popen(("python3 %s/torch_peer.py %s %s 2>&1"):format(here, is_gpu and "cuda" or "cpu", table.concat(specs, ",")))
  local res, dev = {}, nil
  for line in p:lines() do
    local k, s, v = line:match("^(%S+) (%d+) ([%d%.e%-+]+)$")
    if k then res[k .. ":" .. s] = tonumber(v) end
    dev = dev or line:match("^device (.*)$")
  end
  p:close()
  return res, dev
end

print(("netcl %s on %s (%s)"):format(netcl.version, devname, info and info.hw_name or "?"))
local rows = {}
for _, w in ipairs(workloads) do
  if not opts.only or w.key == opts.only then
    rows[#rows + 1] = { w = w, v = w.run() }
    collectgarbage()
  end
end
local peer, peer_dev = torch_results()
print(("peer: %s"):format(peer and ("PyTorch on " .. tostring(peer_dev)) or "none (" .. tostring(peer_dev) .. ")"))
print(("%-24s %14s %14s %8s  %s"):format("workload", "netcl", "pytorch", "ratio", "unit"))
for _, r in ipairs(rows) do
  local p = peer and peer[r.w.key .. ":" .. r.w.size]
  local ratio = p and (r.w.higher and r.v / p or p / r.v)
  print(("%-24s %14.2f %14s %8s  %s"):format(r.w.name, r.v, p and ("%.2f"):format(p) or "-",
        ratio and ("%.2fx"):format(ratio) or "-", r.w.unit))
end
print("ratio > 1: netcl faster")
