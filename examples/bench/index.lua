-- examples/bench/index.lua — timings of the index family on one device:
-- sort of 1M floats (one row, and 1024 rows of 1024), gather / index_select
-- / scatter_add bandwidth, cumsum. Median of 5 synchronised runs.
--   build/netcl examples/bench/index.lua [device]
local netcl = require("netcl")
local ffi = require("ffi")
local dev = (arg and arg[1]) or netcl.default_device()

ffi.cdef [[ int clock_gettime(int clk, struct timespec *ts); struct timespec { long tv_sec; long tv_nsec; }; ]]
local ts = ffi.new("struct timespec")
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local function time_it(fn, reps)
  fn(); netcl.synchronize(dev)
  local t = {}
  for r = 1, reps or 5 do
    local t0 = now()
    fn()
    netcl.synchronize(dev)
    t[r] = now() - t0
  end
  table.sort(t)
  return t[math.ceil(#t / 2)]
end

local function report(name, seconds, extra) print(("%-40s %9.2f ms  %s"):format(name, seconds * 1e3, extra or "")) end
local o = { device = dev }
netcl.manual_seed(1)
print("device " .. dev)

local n = 1024 * 1024
local x = netcl.randn(n, o)
report("sort 1M float32 (one row)", time_it(function() x:sort() end))
local xr = x:view(1024, 1024)
report("sort 1M float32 (1024 rows of 1024)", time_it(function() xr:sort(2) end))
local t = time_it(function() x:topk(10) end)
report("topk(10) of 1M float32 (sorts the row)", t)

local m = 16 * 1024 * 1024
local src = netcl.randn(m, o)
local idx = netcl.randint(1, m + 1, { m }, o)
t = time_it(function() src:gather(1, idx) end)
report("gather 16M float32, random int64 index", t, ("%.2f GB/s (read idx + value, write)"):format(16 * m / t / 1e9))
local rows = netcl.randn(65536, 256, o)
local ridx = netcl.randint(1, 65537, { 65536 }, o)
t = time_it(function() rows:index_select(1, ridx) end)
report("index_select 65536 rows of 256 float32", t, ("%.2f GB/s (rows read + written)"):format(2 * 4 * 65536 * 256 / t / 1e9))
local acc = netcl.zeros(4096, 256, o)
local grads = netcl.randn(65536, 256, o)
local bidx = netcl.randint(1, 4097, { 65536 }, o)
t = time_it(function() acc:index_add(1, bidx, grads) end)
report("index_add 65536 x 256 into 4096 rows", t, ("%.2f GB/s (source read)"):format(4 * 65536 * 256 / t / 1e9))
local c = netcl.randn(4096, 4096, o)
t = time_it(function() c:cumsum(2) end)
report("cumsum 4096 x 4096 float32 along rows", t, ("%.2f GB/s"):format(8 * 4096 * 4096 / t / 1e9))
local c1 = netcl.randn(16 * 1024 * 1024, o)
t = time_it(function() c1:cumsum(1) end)
report("cumsum 16M float32 (one row)", t, ("%.2f GB/s"):format(8 * 16 * 1024 * 1024 / t / 1e9))
