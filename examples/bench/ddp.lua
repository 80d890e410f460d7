-- examples/bench/ddp.lua — data-parallel ResNet-18 CIFAR training on the
-- GPUs of this host (the issue's goal: 2 GPUs >= 1.8x one GPU's images/s
-- and >= 1.0x PyTorch DDP over NCCL on the same GPUs). Batch 128 per GPU,
-- 32x32, SGD momentum, float32 (--tf32: TF32 products on both sides),
-- random data already on the device. Run with no arguments it is the
-- driver: one GPU in this process, then `netcl --nproc N` of itself with
-- DistributedDataParallel (shm backend, one GPU per rank), then
-- ddp_peer.py (one GPU, then torch.distributed.run with NCCL) where
-- PyTorch is installed. Inside a job it is a rank; rank 0 prints the
-- job's images/s.
--   build/netcl examples/bench/ddp.lua [--gpus 2] [--steps 30] [--warmup 5] [--batch 128] [--bucket-mb 25] [--tf32]
local here_dir = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here_dir .. "/?.lua;" .. package.path
local bt = require("bench_time")
local netcl = require("netcl")
local nn, optim, dist = netcl.nn, netcl.optim, netcl.distributed
local opts = bt.options({ gpus = 2, steps = 30, warmup = 5, batch = 128, ["bucket-mb"] = 25, tf32 = false }, { tf32 = true })
netcl.backends.fp32_precision = opts.tf32 and "tf32" or "ieee"

-- images/s of `steps` training steps after `warmup`, over the whole job
local function train(wrap)
  netcl.manual_seed(1)
  local model = nn.models.resnet18_cifar()
  if wrap then model = dist.DistributedDataParallel(model, { bucket_mb = opts["bucket-mb"] }) end
  local dev = netcl.device().name
  local opt = optim.SGD(model, { lr = 0.01, momentum = 0.9, weight_decay = 5e-4 })
  local x = netcl.randn(opts.batch, 3, 32, 32)
  local y = netcl.randint(1, 11, { opts.batch })
  local step = bt.train_step(model, opt, nn.CrossEntropyLoss(), x, y)
  local function settle()
    netcl.synchronize(dev)
    if wrap then dist.barrier() end
  end
  for _ = 1, opts.warmup do step() end
  settle()
  local t0 = bt.now()
  for _ = 1, opts.steps do step() end
  settle()
  return opts.steps * opts.batch * (wrap and dist.world_size() or 1) / (bt.now() - t0), dev
end

if os.getenv("NETCL_RANK") or os.getenv("OMPI_COMM_WORLD_RANK") then
  dist.init()
  local rate, dev = train(true)
  if dist.rank() == 0 then print(("RESULT %.1f"):format(rate)) end
  io.stderr:write(("  rank %d on %s\n"):format(dist.rank(), dev))
  dist.finalize()
  return
end

-- ---- the driver ---------------------------------------------------------------

local gpus = {}
for _, d in ipairs(netcl.devices()) do if d.type == "opencl_gpu" then gpus[#gpus + 1] = d end end
if #gpus < opts.gpus then
  print(("ddp.lua: %d OpenCL GPU(s) here, the benchmark needs %d (--gpus)"):format(#gpus, opts.gpus))
  return
end
netcl.set_default_device(gpus[1].name)
print(("netcl %s, %d x %s, ResNet-18 CIFAR batch %d per GPU, %s"):format(netcl.version, opts.gpus, gpus[1].hw_name,
  opts.batch, opts.tf32 and "TF32" or "float32"))
local one = train(false)
collectgarbage()
print(("  netcl 1 GPU:  %10.1f img/s"):format(one))

local argv = {}
for i = 1, #arg do argv[#argv + 1] = arg[i] end
local launcher = os.getenv("NETCL_LAUNCHER") or (arg[0]:match("^(.*)/examples/") or ".") .. "/build/netcl"
local p = io.popen(("%s --nproc %d %s %s 2>&1"):format(launcher, opts.gpus, arg[0], table.concat(argv, " ")))
local many
for line in p:lines() do
  local v = line:match("^RESULT (%S+)")
  if v then many = tonumber(v) else io.stderr:write(line, "\n") end
end
p:close()
print(("  netcl %d GPUs: %10s img/s  (%s one GPU)"):format(opts.gpus, many and ("%.1f"):format(many) or "failed",
  many and ("%.2fx"):format(many / one) or "-"))

local peer = {}
local pdev, why = bt.torch_peer(("python3 %s/ddp_peer.py %d %d %d %d %s"):format(here_dir, opts.gpus, opts.steps, opts.warmup,
  opts.batch, opts.tf32 and "tf32" or "fp32"), function(line)
  local k, v = line:match("^(%S+) ([%d%.e%-+]+)$")
  if k then peer[k] = tonumber(v); return true end
end)
print(("peer: %s"):format(pdev and ("PyTorch on " .. pdev) or ("none (" .. tostring(why) .. ")")))
print(("%-28s %12s %12s %8s"):format("workload, img/s", "netcl", "pytorch", "ratio"))
local function row(name, a, b)
  print(("%-28s %12s %12s %8s"):format(name, a and ("%.1f"):format(a) or "-", b and ("%.1f"):format(b) or "-",
    (a and b) and ("%.2fx"):format(a / b) or "-"))
end
row("1 GPU", one, peer.one)
row(("%d GPUs, DDP"):format(opts.gpus), many, peer.ddp)
if peer.ddp and peer.one then print(("PyTorch scaling: %.2fx one GPU"):format(peer.ddp / peer.one)) end
print("ratio > 1: netcl faster")
