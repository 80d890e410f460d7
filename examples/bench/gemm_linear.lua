-- examples/bench/gemm_linear.lua — float32 products at nn.Linear-like
-- shapes (M rows of a batch, N outputs, K inputs) in the layouts a model
-- hands the GEMM: x @ w^T ("nt", the forward), and "nn" / "tn" (the
-- backward's products), where few output blocks and a long K make split-K
-- (docs/gemm.md, "Split-K") or the block rounds decide the speed, and
-- at a small batch's shapes, which fill few blocks at all. PyTorch
-- runs the same products in the same command (gemm_linear_peer.py, given
-- the same list). --tf32 runs both sides with TF32 tensor cores.
--   build/netcl examples/bench/gemm_linear.lua [--device NAME] [--tf32]
local netcl = require("netcl")

local devname, tf32
local i = 1
while arg and arg[i] do
  if arg[i] == "--device" then devname = arg[i + 1]; i = i + 1
  elseif arg[i] == "--tf32" then tf32 = true
  else error("unknown argument " .. arg[i] .. " (try --device NAME, --tf32)") end
  i = i + 1
end
devname = netcl.device(devname).name
netcl.backends.fp32_precision = tf32 and "tf32" or "ieee"

local here = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local bench_time = require("bench_time")

-- layout:MxNxK, the layout's letters saying whether a / w is stored transposed
local ROWS = { "nt:512x4096x4096", "nt:256x4096x4096", "nt:1024x1024x4096", "nt:2048x1024x4096", "nt:512x2048x8192",
  "nt:8192x1024x1024", "nt:1024x4096x4096", "nt:2048x2048x2048", "tn:512x4096x4096", "tn:1024x1024x4096",
  "nn:512x4096x4096", "nn:4096x512x4096", "nn:1024x1024x4096",
  -- a small batch: fewer output blocks than multiprocessors
  "nt:512x1024x1024", "nt:256x1024x1024", "nt:128x1024x1024", "nn:512x512x1024", "nt:512x512x256" }

local function parse(r)
  local lay, m, n, k = r:match("^(%a%a):(%d+)x(%d+)x(%d+)$")
  return lay:sub(1, 1) == "t", lay:sub(2, 2) == "t", tonumber(m), tonumber(n), tonumber(k)
end

local function tflops(r)
  local ta, tw, m, n, k = parse(r)
  local o = { device = devname }
  local a = ta and netcl.randn(k, m, o):t() or netcl.randn(m, k, o)
  local b = tw and netcl.randn(n, k, o):t() or netcl.randn(k, n, o)
  return 2 * m * n * k / bench_time.median(function() return a:matmul(b) end, devname) / 1e12,
    netcl.gemm_config(m, n, k, { device = devname, trans_a = ta, trans_b = tw })
end

local info
for _, d in ipairs(netcl.devices()) do if d.name == devname then info = d end end
local peer, peer_dev = bench_time.peer(("python3 %s/gemm_linear_peer.py %s%s %s"):format(here,
  info.type == "opencl_gpu" and "cuda" or "cpu", tf32 and " --tf32" or "", table.concat(ROWS, " ")))

print(("netcl on %s (%s), %s%s"):format(devname, info.hw_name or "", tf32 and "tf32" or "float32 (TF32 off)",
  peer_dev and (", peer PyTorch on " .. peer_dev) or ""))
print(("%-20s %8s %8s %7s  %s"):format("TFLOP/s", "netcl", "torch", "ratio", "netcl configuration"))
for _, r in ipairs(ROWS) do
  local v, cfg = tflops(r)
  local pv = peer[r]
  print(("%-20s %8.2f %8s %7s  %s"):format(r, v, pv and ("%.2f"):format(pv) or "-", pv and ("%.2fx"):format(v / pv) or "-", cfg))
end
