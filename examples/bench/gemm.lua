-- examples/bench/gemm.lua — GEMM throughput, netcl against PyTorch in the
-- same command: SGEMM (float32, TF32 off) 1024/4096/8192, the same as
-- x @ w^T (w stored [n, n]: nn.Linear's layout, "sgemm_nt") 4096/8192, float32 through
-- 3xTF32 (netcl.backends.fp32_precision = "tf32x3", against cuBLAS's
-- SGEMM: both float32-accurate) 1024/4096/8192, TF32 and float16/bfloat16 (tensor cores where the device's probe enabled them)
-- 4096/8192, and the 16-bit ones as x @ w^T ("fp16_nt", "bf16_nt") and as a^T @ b ("fp16_tn", "bf16_tn": the
-- layout of nn.Linear's weight gradient), Hopper's wgmma where it serves; on a CPU OpenCL device (PoCL) SGEMM 256/1024/2048. With
-- --tune the GEMM tuner measures its candidates for every row's problem
-- first and caches the winners on disk (netcl.tune_cache_path()), and the
-- table then runs with them. One command for a GPU machine:
--   build/netcl examples/bench/gemm.lua --tune --out $OUT/gemm.txt
-- CLBlast's SGEMM on the same OpenCL device joins the table where
-- libclblast-dev is installed (clblast_peer.c, compiled on the fly).
-- options: --device NAME  --tune  --max N (candidates per case)  --quick
--          --budget S (stop starting new tuning cases after S seconds, default 390,
--          so the whole command stays within a 10-minute device slot)
--          --only sgemm|sgemm_nt|tf32x3|tf32|fp16|bf16|fp16_nt|bf16_nt|fp16_tn|bf16_tn  --out FILE (a copy of everything printed)
local netcl = require("netcl")
local ffi = require("ffi")

local opts = { tune = false, quick = false, max = 0, budget = 390 }
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--device" then opts.device = arg[i + 1]; i = i + 1
  elseif a == "--tune" then opts.tune = true
  elseif a == "--quick" then opts.quick = true
  elseif a == "--max" then opts.max = tonumber(arg[i + 1]); i = i + 1
  elseif a == "--budget" then opts.budget = tonumber(arg[i + 1]); i = i + 1
  elseif a == "--only" then opts.only = arg[i + 1]; i = i + 1
  elseif a == "--out" then opts.out = arg[i + 1]; i = i + 1
  else error("unknown argument " .. a) end
  i = i + 1
end

local out = opts.out and assert(io.open(opts.out, "w"))
local function say(s)
  io.write(s, "\n")
  io.flush()
  if out then out:write(s, "\n"); out:flush() end
end

local devname = netcl.device(opts.device).name
local info
for _, d in ipairs(netcl.devices()) do if d.name == devname then info = d end end
local gpu = info.type == "opencl_gpu"

ffi.cdef [[ int clock_gettime(int clk, struct timespec *ts); struct timespec { long tv_sec; long tv_nsec; }; ]]
local ts = ffi.new("struct timespec")
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
local t_start = now()

local function precision(kind)
  netcl.backends.fp32_precision = (kind == "tf32" or kind == "tf32x3") and kind or "ieee"
end

-- rows: kind, dtype, size
local rows = {}
local function row(kind, dtype, n) if not opts.only or opts.only == kind then rows[#rows + 1] = { kind = kind, dtype = dtype, n = n } end end
if gpu then
  for _, n in ipairs(opts.quick and { 1024 } or { 1024, 4096, 8192 }) do row("sgemm", "float32", n) end
  for _, n in ipairs(opts.quick and { 4096 } or { 4096, 8192 }) do row("sgemm_nt", "float32", n) end
  for _, n in ipairs(opts.quick and { 1024 } or { 1024, 4096, 8192 }) do row("tf32x3", "float32", n) end
  for _, n in ipairs(opts.quick and { 4096 } or { 4096, 8192 }) do
    row("tf32", "float32", n)
    row("fp16", "float16", n)
    row("bf16", "bfloat16", n)
  end
  -- x @ w^T in 16 bits (both operands k-contiguous) and a^T @ b (neither
  -- is): Hopper's wgmma where it serves
  for _, n in ipairs(opts.quick and { 4096 } or { 4096, 8192 }) do
    row("fp16_nt", "float16", n)
    row("bf16_nt", "bfloat16", n)
  end
  for _, n in ipairs(opts.quick and { 4096 } or { 4096, 8192 }) do
    row("fp16_tn", "float16", n)
    row("bf16_tn", "bfloat16", n)
  end
else
  for _, n in ipairs(opts.quick and { 256 } or { 256, 1024, 2048 }) do row("sgemm", "float32", n) end
end

say(("netcl %s GEMM on %s (%s, driver %s); tensor cores: %s"):format(netcl.version, devname, info.hw_name, info.driver,
  info.tensor_cores))

-- ---- tuning ---------------------------------------------------------------------
if opts.tune then
  for _, r in ipairs(rows) do
    if now() - t_start > opts.budget then
      say(("  %s %d: not tuned (time budget of %d s spent)"):format(r.kind, r.n, opts.budget))
      goto continue
    end
    precision(r.kind)
    local t0 = now()
    local res = netcl.tune({ device = devname, shapes = { { r.n, r.n, r.n } }, dtypes = { r.dtype },
      max_candidates = opts.max, quiet = true })
    for line in res[1].report:gmatch("[^\n]+") do say(line) end
    say(("  (%s %d tuned in %.1f s)"):format(r.kind, r.n, now() - t0))
    ::continue::
  end
  precision("ieee")
end

-- ---- timing ------------------------------------------------------------------------
-- samples of a timed row from one product's time t: (count, products each)
local function sampling(t)
  local inner = math.max(1, math.floor(2e-3 / t))
  local reps = math.min(50, math.max(10, math.floor(0.3 / (inner * t))))
  return reps, inner
end

-- a row's operands in its layout
local function operands(r)
  netcl.manual_seed(1)
  local a = netcl.randn(r.n, r.n, { device = devname, dtype = r.dtype })
  local b = netcl.randn(r.n, r.n, { device = devname, dtype = r.dtype })
  local nt, tn = r.kind:find("_nt$") ~= nil, r.kind:find("_tn$") ~= nil
  if nt then b = b:t() end
  if tn then a = a:t() end
  return a, b, nt, tn
end

local function time_gemm(r)
  precision(r.kind)
  local a, b, nt, tn = operands(r)
  local c = a:matmul(b)
  netcl.synchronize(devname)
  -- 0.2 s of warm-up, as gemm_peer.py: without it the first repetitions
  -- of a short product can meet the GPU's clocks still low
  local t_warm, done = now(), 0
  local warm_until = t_warm + 0.2
  repeat
    for _ = 1, 4 do c = a:matmul(b) end
    netcl.synchronize(devname)
    done = done + 4
  until now() > warm_until
  local times = {}
  -- a sample is as many products as fill about 2 ms (so a host round trip,
  -- ~10 us, stays under 1% of it), and there are as many samples as fill
  -- about 0.3 s (10 to 50): a median of few short samples moved by 10-20%
  -- between runs. gemm_peer.py follows the same rule from its own warm-up.
  local reps, inner = sampling((now() - t_warm) / done)
  for k = 1, reps do
    local t0 = now()
    for _ = 1, inner do c = a:matmul(b) end
    netcl.synchronize(devname)
    times[k] = (now() - t0) / inner
  end
  table.sort(times)
  r.config = netcl.gemm_config(r.n, r.n, r.n, { device = devname, dtype = r.dtype, trans_a = tn, trans_b = nt })
  precision("ieee")
  return 2 * r.n ^ 3 / times[math.ceil(#times / 2)] / 1e12
end

-- every row's programs built before any row is timed: on a fresh machine
-- the builds left the GPU idle between rows, and the first run's 8192
-- rows read 5-10% low (twenty-third session)
for _, r in ipairs(rows) do
  precision(r.kind)
  local a, b = operands(r)
  a:matmul(b)
  precision("ieee")
  collectgarbage()
end
netcl.synchronize(devname)
for _, r in ipairs(rows) do
  r.tflops = time_gemm(r)
  collectgarbage()
end

-- ---- the PyTorch peer ----------------------------------------------------------------
local function torch_results()
  local ok = os.execute("python3 -c 'import torch' >/dev/null 2>&1")
  if ok ~= 0 and ok ~= true then return nil, "PyTorch not installed" end
  local here = arg[0]:match("^(.*)/[^/]*$") or "."
  local specs = {}
  for _, r in ipairs(rows) do specs[#specs + 1] = r.kind .. ":" .. r.n end
  local p = io.popen(("python3 %s/gemm_peer.py %s %s 2>&1"):format(here, gpu and "cuda" or "cpu", table.concat(specs, ",")))
  local res, dev = {}, nil
  for line in p:lines() do
    local k, s, v = line:match("^(%S+) (%d+) ([%d%.e%-+]+)$")
    if k then res[k .. ":" .. s] = tonumber(v) end
    dev = dev or line:match("^device (.*)$")
  end
  p:close()
  return res, dev
end
local peer, peer_dev = torch_results()

-- CLBlast on the same OpenCL device (SGEMM rows), where libclblast-dev is installed
local function clblast_results()
  local here = arg[0]:match("^(.*)/[^/]*$") or "."
  local bin = os.tmpname()
  local ok = os.execute(("cc -O2 -o %s %s/clblast_peer.c -lclblast -lOpenCL >/dev/null 2>&1"):format(bin, here))
  if ok ~= 0 and ok ~= true then os.remove(bin); return nil end
  local sizes = {}
  for _, r in ipairs(rows) do if r.kind == "sgemm" then sizes[#sizes + 1] = r.n end end
  local p = io.popen(("%s %s %s 2>&1"):format(bin, devname:match("opencl:(%d+)") or "0", table.concat(sizes, " ")))
  local res = {}
  for line in p:lines() do
    local s, v = line:match("^clblast (%d+) ([%d%.e%-+]+)$")
    if s then res["sgemm:" .. s] = tonumber(v) / 1000 end
  end
  p:close()
  os.remove(bin)
  return res
end
local clblast = devname:match("^opencl:") and clblast_results()

say(("peer: %s"):format(peer and ("PyTorch on " .. tostring(peer_dev)) or "none (" .. tostring(peer_dev) .. ")"))
local unit = gpu and "TFLOP/s" or "GFLOP/s"
local scale = gpu and 1 or 1000
say(("%-16s %10s %10s %7s %10s  %s"):format("gemm (" .. unit .. ")", "netcl", "pytorch", "ratio", "clblast",
  "netcl configuration"))
for _, r in ipairs(rows) do
  local p = peer and peer[r.kind .. ":" .. r.n]
  local cb = clblast and clblast[r.kind .. ":" .. r.n]
  local v = r.tflops * scale
  p = p and p * scale
  say(("%-16s %10.2f %10s %7s %10s  %s"):format(("%s %d"):format(r.kind, r.n), v, p and ("%.2f"):format(p) or "-",
    p and ("%.2fx"):format(v / p) or "-", cb and ("%.2f"):format(cb * scale) or "-", r.config))
end
say("ratio > 1: netcl faster. TF32 rows: netcl.backends.allow_tf32 and torch.backends.cuda.matmul.allow_tf32 on;")
say("tf32x3 rows: netcl's float32-accurate 3xTF32 against PyTorch's SGEMM (TF32 off).")
if opts.tune then
  local path = netcl.tune_cache_path(devname)
  say("tuning cache (winners per shape class): " .. path)
  if opts.out and path ~= "" then -- a copy next to the output, for committing the winners as defaults
    local src, dst = io.open(path, "r"), io.open(opts.out .. ".tune", "w")
    if src and dst then dst:write(src:read("*a")); say("copied to " .. opts.out .. ".tune") end
    if src then src:close() end
    if dst then dst:close() end
  end
end
say(("total %.1f s"):format(now() - t_start))
if out then out:close() end
