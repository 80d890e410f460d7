-- examples/bench/gemm_shapes.lua — float32 GEMM (TF32 off) at the shapes
-- convolutions hand it rather than square ones: short K, batched, one
-- operand broadcast over the batch. The conv rows are ResNet-18's 3x3
-- stride-2 layer at batch 128 (backward-data: [576,128] x [128,256] per
-- sample; backward-weight: [128,256] x [256,576] per sample), then batched
-- 1024x1024 products of equal work with K from 128 to 4096 (where a
-- configuration's per-block start-up and stores show). PyTorch runs the
-- same products in the same command (gemm_shapes_peer.py).
--   build/netcl examples/bench/gemm_shapes.lua [--device NAME]
local netcl = require("netcl")
local ffi = require("ffi")

local devname = arg[1] == "--device" and arg[2] or nil
devname = netcl.device(devname).name

pcall(ffi.cdef, [[ struct timespec { long tv_sec; long tv_nsec; }; int clock_gettime(int clk, struct timespec *ts); ]])
local ts = ffi.new("struct timespec")
local function now() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end

-- {name, B, M, K, N, A broadcast over the batch}; gemm_shapes_peer.py has the same list
local ROWS = {
  { "conv3x3s2 data", 128, 576, 128, 256, true },
  { "conv3x3s2 weight", 128, 128, 256, 576, false },
}
for _, k in ipairs({ 128, 256, 512, 1024, 4096 }) do ROWS[#ROWS + 1] = { "k" .. k, 8192 / k, 1024, k, 1024, false } end

-- median of 5 rounds of 10 products, after 20 that warm the clocks
local function tflops(r)
  local B, M, K, N = r[2], r[3], r[4], r[5]
  local a = netcl.randn(r[6] and 1 or B, M, K, { device = devname })
  local b = netcl.randn(B, K, N, { device = devname })
  for _ = 1, 20 do a:matmul(b):free() end
  netcl.synchronize(devname)
  local t = {}
  for i = 1, 5 do
    local t0 = now()
    for _ = 1, 10 do a:matmul(b):free() end
    netcl.synchronize(devname)
    t[i] = (now() - t0) / 10
  end
  table.sort(t)
  return 2 * B * M * K * N / t[3] / 1e12
end

local peer = {}
local here = arg[0]:match("^(.*)/[^/]*$") or "."
local info
for _, d in ipairs(netcl.devices()) do if d.name == devname then info = d end end
local p = io.popen(("python3 %s/gemm_shapes_peer.py %s 2>/dev/null"):format(here, info.type == "opencl_gpu" and "cuda" or "cpu"))
local peer_dev
for line in p:lines() do
  peer_dev = peer_dev or line:match("^device (.*)$")
  local name, v = line:match("^(%S+) ([%d%.e%-+]+)$")
  if name then peer[name] = tonumber(v) end
end
p:close()

print(("netcl on %s (%s)%s"):format(devname, info.hw_name or "", peer_dev and (", peer PyTorch on " .. peer_dev) or ""))
print(("%-18s %5s %5s %5s %5s %9s %9s %7s"):format("TFLOP/s", "B", "M", "K", "N", "netcl", "torch", "ratio"))
for _, r in ipairs(ROWS) do
  local v, pv = tflops(r), peer[r[1]:gsub(" ", "_")]
  print(("%-18s %5d %5d %5d %5d %9.2f %9s %7s"):format(r[1], r[2], r[3], r[4], r[5], v, pv and ("%.2f"):format(pv) or "-",
    pv and ("%.2fx"):format(v / pv) or "-"))
end
