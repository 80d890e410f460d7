-- examples/bench/cpu_blas.lua — the cpu backend's matmul on the shapes that
-- tell its BLAS paths apart (square, the MLP's, a batch of small items, a
-- conv weight gradient) and the MLP step: best of N runs each, GFLOP/s and
-- µs, one line. No peer: run it under different settings and compare, e.g.
--   NETCL_NUM_THREADS=1 build/netcl examples/bench/cpu_blas.lua
--   NETCL_BLAS_THREADED=1 build/netcl examples/bench/cpu_blas.lua
-- CLK=2 times process CPU time instead of wall time (one thread, busy machine).
local netcl = require("netcl")
local F = require("netcl.nn.functional")
local ffi = require("ffi")
ffi.cdef [[ int clock_gettime(int clk, struct timespec *ts); struct timespec { long tv_sec; long tv_nsec; }; ]]
local ts = ffi.new("struct timespec")
local function now() ffi.C.clock_gettime(tonumber(os.getenv("CLK") or 1), ts) return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end
local o = { device = "cpu" }
local function best(fn, reps)
  fn()
  local b = 1e9
  for _ = 1, reps do local t0 = now(); fn(); local t = now() - t0; if t < b then b = t end end
  return b
end
local out = {}
for _, s in ipairs({ {1, 256, 256, 256}, {1, 1024, 1024, 1024}, {1, 2048, 2048, 2048}, {1, 128, 784, 256}, {1, 256, 128, 784}, {64, 33, 600, 47}, {1, 64, 9216, 576} }) do
  local B, M, K, N = s[1], s[2], s[3], s[4]
  local a = B > 1 and netcl.randn(B, M, K, o) or netcl.randn(M, K, o)
  local w = B > 1 and netcl.randn(B, K, N, o) or netcl.randn(K, N, o)
  local reps = M * N * K * B > 1e9 and 5 or 30
  local t = best(function() local c = a:matmul(w) end, reps)
  out[#out + 1] = ("%dx%dx%dx%d:%.0f"):format(B, M, K, N, 2 * B * M * N * K / t / 1e9)
end
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
  netcl.no_grad(function() for _, p in ipairs(params) do p:sub_(p.grad * 0.01); p.grad:zero_() end end)
end
out[#out + 1] = ("mlp_us:%.0f"):format(best(step, 50) * 1e6)
print(table.concat(out, " "))
