-- examples/bench/gemm_accuracy.lua — how close float32 products come to
-- the float64 product in each netcl.backends.fp32_precision mode ("ieee",
-- "tf32x3", "tf32"), and, where PyTorch is installed, cuBLAS's float32 and
-- TF32 products of the same operands (gemm_accuracy_peer.py, same
-- command). 1024 x 1024 x K, K = 256, 4096, 16384; randn operands and
-- uniform [0, 1) ones (whose long positive sums show biased rounding).
-- Prints the largest and the mean error relative to the largest entry of
-- the result.
--   netcl examples/bench/gemm_accuracy.lua [--device NAME]
local netcl = require("netcl")
local dev = netcl.device(arg[1] == "--device" and arg[2] or nil).name

print(("netcl %s on %s; tensor cores: %s"):format(netcl.version, dev, (function()
  for _, d in ipairs(netcl.devices()) do if d.name == dev then return d.tensor_cores end end
end)()))
local function run(K, dist)
  netcl.manual_seed(3)
  local o = { device = dev, dtype = "float64" }
  local a64 = dist == "randn" and netcl.randn({ 1024, K }, o) or netcl.rand({ 1024, K }, o)
  local b64 = dist == "randn" and netcl.randn({ K, 1024 }, o) or netcl.rand({ K, 1024 }, o)
  local ref = a64:matmul(b64)
  local scale = ref:abs():max():item()
  local line = ("%-7s K=%-6d"):format(dist, K)
  for _, mode in ipairs({ "ieee", "tf32x3", "tf32" }) do
    netcl.backends.fp32_precision = mode
    local d = (a64:float():matmul(b64:float()):double() - ref):abs()
    line = line .. ("  %s %.2e / %.2e"):format(mode, d:max():item() / scale, d:mean():item() / scale)
  end
  netcl.backends.fp32_precision = "ieee"
  print(line)
end
for _, K in ipairs({ 256, 4096, 16384 }) do
  for _, dist in ipairs({ "randn", "uniform" }) do run(K, dist) end
end
print("(max / mean error relative to the largest entry of the float64 product)")
local ok = os.execute("python3 -c 'import torch' >/dev/null 2>&1")
if ok == 0 or ok == true then
  local here = arg[0]:match("^(.*)/[^/]*$") or "."
  print("peer:")
  io.stdout:flush()
  os.execute(("python3 %s/gemm_accuracy_peer.py"):format(here))
end
