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

local devname = arg[1] == "--device" and arg[2] or nil
devname = netcl.device(devname).name

local here = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local bench_time = require("bench_time")

-- {name, B, M, K, N, A broadcast over the batch}; gemm_shapes_peer.py has the same list
local ROWS = {
  { "conv3x3s2 data", 128, 576, 128, 256, true },
  { "conv3x3s2 weight", 128, 128, 256, 576, false },
}
for _, k in ipairs({ 128, 256, 512, 1024, 4096 }) do ROWS[#ROWS + 1] = { "k" .. k, 8192 / k, 1024, k, 1024, false } end

local function tflops(r)
  local B, M, K, N = r[2], r[3], r[4], r[5]
  local a = netcl.randn(r[6] and 1 or B, M, K, { device = devname })
  local b = netcl.randn(B, K, N, { device = devname })
  return 2 * B * M * K * N / bench_time.median(function() return a:matmul(b) end, devname) / 1e12
end

local info
for _, d in ipairs(netcl.devices()) do if d.name == devname then info = d end end
local peer, peer_dev = bench_time.peer(("python3 %s/gemm_shapes_peer.py %s"):format(here,
  info.type == "opencl_gpu" and "cuda" or "cpu"))

print(("netcl on %s (%s)%s"):format(devname, info.hw_name or "", peer_dev and (", peer PyTorch on " .. peer_dev) or ""))
print(("%-18s %5s %5s %5s %5s %9s %9s %7s"):format("TFLOP/s", "B", "M", "K", "N", "netcl", "torch", "ratio"))
for _, r in ipairs(ROWS) do
  local v, pv = tflops(r), peer[r[1]:gsub(" ", "_")]
  print(("%-18s %5d %5d %5d %5d %9.2f %9s %7s"):format(r[1], r[2], r[3], r[4], r[5], v, pv and ("%.2f"):format(pv) or "-",
    pv and ("%.2fx"):format(v / pv) or "-"))
end
