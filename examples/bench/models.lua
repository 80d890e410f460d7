-- examples/bench/models.lua — model training steps, netcl vs PyTorch in the
-- same command: the LeNet-5 Adam training step (28x28, batch 64 and 256,
-- data already on the device; microseconds per step) and ResNet-18 CIFAR
-- training throughput (3x3 stem, batch 128, 32x32, float32, SGD momentum;
-- images per second after warm-up steps). models_peer.py runs the same
-- workloads in PyTorch (CUDA when present, else CPU; TF32 off) when
-- `python3 -c 'import torch'` works, and the table prints the ratio
-- (> 1: netcl faster). --tf32 lets both sides use TF32 tensor cores for
-- float32 products and convolutions (netcl.backends.allow_tf32; PyTorch's
-- own default for cuDNN convolutions). --tf32x3: netcl multiplies float32
-- through 3xTF32 (netcl.backends.fp32_precision, float32 accuracy),
-- PyTorch in float32 (TF32 off).
-- --amp float16|bfloat16: both sides train with mixed precision (netcl.amp
-- autocast, a GradScaler for float16; PyTorch's torch.autocast and
-- GradScaler with channels_last, its fastest configuration), and the
-- ResNet row also reports each side's peak device memory.
--   netcl examples/bench/models.lua [--device NAME] [--only lenet|resnet] [--quick] [--tf32 | --tf32x3]
--       [--amp float16|bfloat16] [--lenet-steps N] [--resnet-steps N] [--resnet-warmup N] [--resnet-batch N]
local netcl = require("netcl")
local nn, optim = netcl.nn, netcl.optim

local here = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local bench_time = require("bench_time")
local now = bench_time.now
local opts = bench_time.options({ quick = false, tf32 = false, tf32x3 = false, ["lenet-steps"] = 50, ["resnet-steps"] = 20,
                                  ["resnet-warmup"] = 3, ["resnet-batch"] = 128, amp = false },
                                { quick = true, tf32 = true, tf32x3 = true })
netcl.backends.fp32_precision = opts.tf32 and "tf32" or opts.tf32x3 and "tf32x3" or "ieee"
if opts.quick then opts["lenet-steps"], opts["resnet-steps"], opts["resnet-warmup"] = 10, 2, 1 end

local dev = netcl.device(opts.device).name
local info
for _, d in ipairs(netcl.devices()) do if d.name == dev then info = d end end
local is_gpu = info and info.type == "opencl_gpu"

if opts.amp and opts.amp ~= "float16" and opts.amp ~= "bfloat16" then error("--amp takes float16 or bfloat16") end

-- one training step: zero_grad, forward, cross-entropy, backward, optimizer
-- step (with --amp: the forward under autocast, float16 through a scaler)
local function trainer(model, opt, x, y)
  local loss_fn = nn.CrossEntropyLoss()
  if opts.amp then
    local amp = netcl.amp
    local scaler = amp.GradScaler({ enabled = opts.amp == "float16" })
    return function()
      opt:zero_grad()
      local loss = amp.autocast(function() return loss_fn(model(x), y) end, { enabled = true, dtype = opts.amp })
      scaler:scale_loss(loss):backward()
      scaler:step(opt)
      scaler:update()
    end
  end
  return bench_time.train_step(model, opt, loss_fn, x, y)
end

local function per_step(step, n, rounds) return bench_time.per_call(step, n, rounds, dev) end

local workloads = {}
for _, batch in ipairs({ 64, 256 }) do
  workloads[#workloads + 1] = {
    key = "lenet", size = batch, name = ("LeNet-5 Adam step, batch %d"):format(batch), unit = "us/step", higher = false,
    run = function()
      netcl.manual_seed(1)
      local model = nn.models.lenet5({ device = dev })
      local opt = optim.Adam(model, { lr = 1e-3 })
      local x = netcl.randn(batch, 1, 28, 28, { device = dev })
      local y = netcl.randint(1, 11, { batch }, { device = dev })
      return per_step(trainer(model, opt, x, y), opts["lenet-steps"], 5) * 1e6
    end,
  }
end
workloads[#workloads + 1] = {
  key = "resnet18", size = opts["resnet-batch"], name = ("ResNet-18 CIFAR train, batch %d"):format(opts["resnet-batch"]),
  unit = "img/s", higher = true,
  run = function()
    local batch = opts["resnet-batch"]
    netcl.manual_seed(1)
    local model = nn.models.resnet18_cifar({ device = dev })
    local opt = optim.SGD(model, { lr = 0.01, momentum = 0.9, weight_decay = 5e-4 })
    local x = netcl.randn(batch, 3, 32, 32, { device = dev })
    local y = netcl.randint(1, 11, { batch }, { device = dev })
    local step = trainer(model, opt, x, y)
    for _ = 1, opts["resnet-warmup"] do step() end
    netcl.synchronize(dev)
    netcl.reset_peak_memory(dev)
    local t0 = now()
    for _ = 1, opts["resnet-steps"] do step() end
    netcl.synchronize(dev)
    local rate = opts["resnet-steps"] * batch / (now() - t0)
    print(("  ResNet-18 peak device memory: %.0f MiB"):format(netcl.memory_stats(dev).peak_bytes / 2 ^ 20))
    return rate
  end,
}

-- the PyTorch peer prints "key size value" per workload
local function torch_results(list)
  local specs = {}
  for _, w in ipairs(list) do specs[#specs + 1] = w.key .. ":" .. w.size end
  -- on the cpu, PyTorch's OpenMP threads spin while they wait (OMP_WAIT_POLICY
  -- active); on a small shared VM that costs it 10-30x on these steps, so the
  -- peer waits passively unless the caller chose a policy
  local env = (not is_gpu and not os.getenv("OMP_WAIT_POLICY")) and "OMP_WAIT_POLICY=PASSIVE " or ""
  local cmd = ("%spython3 %s/models_peer.py %s %s %d %d %d %s"):format(env, here, is_gpu and "cuda" or "cpu", table.concat(specs, ","),
    opts["lenet-steps"], opts["resnet-steps"], opts["resnet-warmup"], opts.amp and ("amp_" .. opts.amp) or opts.tf32 and "tf32" or "fp32")
  local res = {}
  local pdev, why = bench_time.torch_peer(cmd, function(line)
    local k, s, v = line:match("^(%S+) (%d+) ([%d%.e%-+]+)$")
    if k then res[k .. ":" .. s] = tonumber(v); return true end
    if line:match("peak device memory") then print(line); return true end
  end)
  if not pdev then return nil, why end
  return res, pdev
end

local list = {}
for _, w in ipairs(workloads) do
  if not opts.only or w.key:find(opts.only, 1, true) then list[#list + 1] = w end
end
print(("netcl %s on %s (%s)"):format(netcl.version, dev, info and info.hw_name or "?"))
local rows = {}
for _, w in ipairs(list) do
  rows[#rows + 1] = { w = w, v = w.run() }
  print(("  %-34s %12.1f %s"):format(w.name, rows[#rows].v, w.unit))
  collectgarbage()
end
local peer, pdev = torch_results(list)
print(("peer: %s"):format(peer and ("PyTorch on " .. pdev) or ("none (" .. tostring(pdev) .. ")")))
print(("%-34s %12s %12s %8s  %s"):format("workload", "netcl", "pytorch", "ratio", "unit"))
for _, r in ipairs(rows) do
  local p = peer and peer[r.w.key .. ":" .. r.w.size]
  local ratio = p and (r.w.higher and r.v / p or p / r.v)
  print(("%-34s %12.1f %12s %8s  %s"):format(r.w.name, r.v, p and ("%.1f"):format(p) or "-", ratio and ("%.2fx"):format(ratio) or "-",
    r.w.unit))
end
print("ratio > 1: netcl faster")
