-- examples/bench/allreduce.lua — all_reduce bus bandwidth on 2 and 4
-- processes of this host, shm and MPI, 1 KB to 256 MB of float32, against
-- memcpy bandwidth on the same machine (the issue's goal: shm >= 0.8x
-- memcpy at 64 MB and above). Bus bandwidth is NCCL's: 2(W-1)/W x bytes /
-- time. Run with no arguments it is the driver (starts the jobs); inside a
-- job it is a rank. Options: --max-mb M (default 256), --procs "2 4".
--   build/netcl examples/bench/allreduce.lua
local ffi = require("ffi")
local here_dir = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here_dir .. "/?.lua;" .. package.path
local bt = require("bench_time")
local args = {}
for i = 1, #arg do args[#args + 1] = arg[i] end
local function opt(name, default)
  for i = 1, #args - 1 do if args[i] == name then return args[i + 1] end end
  return default
end
local max_mb = tonumber(opt("--max-mb", "256"))

local function sizes()
  local out, b = {}, 1024
  while b <= max_mb * 2 ^ 20 do out[#out + 1] = b; b = b * 4 end
  return out
end

if os.getenv("NETCL_RANK") or os.getenv("OMPI_COMM_WORLD_RANK") then
  local netcl = require("netcl")
  local dist = netcl.distributed.init()
  local W = dist.world_size()
  for _, bytes in ipairs(sizes()) do
    local t = netcl.ones({ bytes / 4 })
    local reps = math.max(3, math.min(200, math.floor(2 ^ 28 / bytes)))
    dist.all_reduce(t)
    dist.barrier()
    local t0 = bt.now()
    for _ = 1, reps do dist.all_reduce(t) end
    dist.barrier()
    local s = (bt.now() - t0) / reps
    if dist.rank() == 0 then
      io.write(("RESULT %d %.9f %.3f\n"):format(bytes, s, 2 * (W - 1) / W * bytes / s / 1e9))
      io.flush()
    end
  end
  dist.finalize()
  return
end

-- ---- the driver ---------------------------------------------------------------

local function memcpy_gbps(bytes)
  local a, b = ffi.new("char[?]", bytes), ffi.new("char[?]", bytes)
  ffi.fill(a, bytes, 1)
  ffi.copy(b, a, bytes)
  local best = math.huge
  for _ = 1, 5 do
    local t0 = bt.now()
    ffi.copy(b, a, bytes)
    best = math.min(best, bt.now() - t0)
  end
  return bytes / best / 1e9
end

local here = arg[0]
local launcher = os.getenv("NETCL_LAUNCHER") or (here:match("^(.*)/examples/") or ".") .. "/build/netcl"
local function run(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local res = {}
  for line in p:lines() do
    local b, s, bw = line:match("^RESULT (%d+) (%S+) (%S+)")
    if b then res[tonumber(b)] = { s = tonumber(s), bw = tonumber(bw) } elseif line:match("%S") then io.stderr:write(line, "\n") end
  end
  p:close()
  return res
end

local has_mpi = io.popen("command -v mpirun"):read("*l") ~= nil
local procs = {}
for n in opt("--procs", "2 4"):gmatch("%d+") do procs[#procs + 1] = tonumber(n) end
local mc64 = memcpy_gbps(64 * 2 ^ 20)
print(("memcpy bandwidth, 64 MB: %.2f GB/s (one core)"):format(mc64))
print(("%-6s %10s %12s %12s %12s %14s"):format("procs", "size", "shm GB/s", "mpi GB/s", "shm/mpi", "shm/memcpy"))
for _, n in ipairs(procs) do
  local shm = run(("%s --nproc %d %s --max-mb %s"):format(launcher, n, here, max_mb))
  local mpi = has_mpi and run(("mpirun --allow-run-as-root --oversubscribe -np %d %s %s --max-mb %s"):format(n, launcher, here, max_mb)) or {}
  for _, bytes in ipairs(sizes()) do
    local a, b = shm[bytes], mpi[bytes]
    local size = bytes >= 2 ^ 20 and ("%d MB"):format(bytes / 2 ^ 20) or ("%d KB"):format(bytes / 1024)
    print(("%-6d %10s %12s %12s %12s %14s"):format(n, size, a and ("%.2f"):format(a.bw) or "-", b and ("%.2f"):format(b.bw) or "-",
      (a and b) and ("%.2f"):format(a.bw / b.bw) or "-", a and ("%.2f"):format(a.bw / mc64) or "-"))
  end
end
