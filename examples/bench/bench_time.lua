-- examples/bench/bench_time.lua — what benchmarks share: a product's
-- median seconds over 5 rounds of 10 calls, after 20 that warm the clocks
-- (gemm_shapes.lua, gemm_linear.lua); a step's median seconds over rounds
-- of n calls (models.lua, jit.lua); the clock; and a peer's figures.
local netcl = require("netcl")
local ffi = require("ffi")

pcall(ffi.cdef, [[ struct timespec { long tv_sec; long tv_nsec; }; int clock_gettime(int clk, struct timespec *ts); ]])
local ts = ffi.new("struct timespec")
local function now() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end

local M = {}
M.now = now

-- median seconds per call of fn over `rounds` rounds of n calls, after 3
-- warm-up calls; the device is synchronised around every round
function M.per_call(fn, n, rounds, devname)
  for _ = 1, 3 do fn() end
  netcl.synchronize(devname)
  local t = {}
  for r = 1, rounds do
    local t0 = now()
    for _ = 1, n do fn() end
    netcl.synchronize(devname)
    t[r] = (now() - t0) / n
  end
  table.sort(t)
  return t[math.ceil(#t / 2)]
end

-- fn() returns a tensor, freed at once so the pool reuses its memory
function M.median(fn, devname)
  for _ = 1, 20 do fn():free() end
  netcl.synchronize(devname)
  local t = {}
  for i = 1, 5 do
    local t0 = now()
    for _ = 1, 10 do fn():free() end
    netcl.synchronize(devname)
    t[i] = (now() - t0) / 10
  end
  table.sort(t)
  return t[3]
end

-- Runs a peer script's command line; returns its "name value" lines as a
-- table and the device it names on its "device ..." line (nil where
-- PyTorch is missing: the script prints nothing)
function M.peer(cmd)
  local peer, dev = {}, nil
  local p = io.popen(cmd .. " 2>/dev/null")
  for line in p:lines() do
    dev = dev or line:match("^device (.*)$")
    local name, v = line:match("^(%S+) ([%d%.e%-+]+)$")
    if name then peer[name] = tonumber(v) end
  end
  p:close()
  return peer, dev
end

return M
