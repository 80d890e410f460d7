-- examples/bench/imagenet.lua — ImageNet-shape training, netcl vs PyTorch in
-- the same command: torchvision-layout ResNet-50 (batch 64) and ResNet-18
-- (batch 128) at 224x224, SGD momentum, float32 (TF32 off) or --tf32;
-- images per second after warm-up steps and the peak device memory of a
-- step (netcl: the pool's peak plus the backend's arenas; PyTorch:
-- max_memory_allocated). imagenet_peer.py runs the same workloads when
-- `python3 -c 'import torch'` works. --summary prints netcl's memory report
-- (netcl.memory_summary: who holds the bytes at the peak). --max-batch
-- finds the largest ResNet-50 batch each side trains (doubling from 128,
-- then halving the gap down to 32).
--   netcl examples/bench/imagenet.lua [--device NAME] [--only resnet50|resnet18] [--tf32] [--steps N]
--       [--warmup N] [--summary] [--max-batch] [--batch50 N] [--batch18 N]
local netcl = require("netcl")
local nn, optim = netcl.nn, netcl.optim

local here = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local bench = require("bench_time")
local now = bench.now
local opts = bench.options({ tf32 = false, summary = false, ["max-batch"] = false, steps = 10, warmup = 3, batch50 = 64,
                             batch18 = 128 }, { tf32 = true, summary = true, ["max-batch"] = true })
netcl.backends.fp32_precision = opts.tf32 and "tf32" or "ieee"
local dev = netcl.device(opts.device).name
local info
for _, d in ipairs(netcl.devices()) do if d.name == dev then info = d end end
local MiB = 2 ^ 20

-- a model, its optimizer and one batch; step() trains on it once
local function setup(arch, batch)
  netcl.manual_seed(1)
  local model = nn.models[arch]({ device = dev })
  local opt = optim.SGD(model, { lr = 0.1, momentum = 0.9, weight_decay = 1e-4 })
  local x = netcl.randn(batch, 3, 224, 224, { device = dev })
  local y = netcl.randint(1, 1001, { batch }, { device = dev })
  return bench.train_step(model, opt, nn.CrossEntropyLoss(), x, y)
end

local function peak_mib()
  local s = netcl.memory_stats(dev)
  return (s.peak_bytes + s.backend_bytes) / MiB
end

local function measure(arch, batch)
  local step = setup(arch, batch)
  for _ = 1, opts.warmup do step() end
  netcl.synchronize(dev)
  netcl.reset_peak_memory(dev)
  local t0 = now()
  for _ = 1, opts.steps do step() end
  netcl.synchronize(dev)
  local rate = opts.steps * batch / (now() - t0)
  local peak = peak_mib()
  if opts.summary then print(netcl.memory_summary(dev)) end
  step = nil
  -- compiled traces can hold the model's tables as constants: drop them so
  -- the next workload starts from an empty device
  jit.flush()
  collectgarbage()
  collectgarbage()
  netcl.empty_cache(dev)
  return rate, peak
end

-- whether two steps of ResNet-50 at this batch run (an out-of-memory error: no)
local function fits(batch)
  local ok, err = pcall(function()
    local step = setup("resnet50", batch)
    step(); step()
    netcl.synchronize(dev)
  end)
  jit.flush()
  collectgarbage()
  collectgarbage()
  netcl.empty_cache(dev)
  if not ok and not tostring(err):find("out of memory") then error(err, 0) end
  return ok
end

local function largest_batch()
  local lo, hi = 0, 128
  while fits(hi) do lo, hi = hi, hi * 2 end
  while hi - lo > 32 do
    local mid = math.floor((lo + hi) / 64) * 32
    if fits(mid) then lo = mid else hi = mid end
  end
  return lo
end

local workloads = {
  { key = "resnet50", batch = opts.batch50, name = ("ResNet-50 224px, batch %d"):format(opts.batch50) },
  { key = "resnet18", batch = opts.batch18, name = ("ResNet-18 224px, batch %d"):format(opts.batch18) },
}
local list = {}
for _, w in ipairs(workloads) do if not opts.only or w.key == opts.only then list[#list + 1] = w end end

print(("netcl %s on %s (%s), %s"):format(netcl.version, dev, info and info.hw_name or "?", opts.tf32 and "TF32" or "float32"))
for _, w in ipairs(list) do
  w.rate, w.peak = measure(w.key, w.batch)
  print(("  %-28s %9.1f img/s  peak %8.0f MiB"):format(w.name, w.rate, w.peak))
end
local netcl_max = opts["max-batch"] and largest_batch()
if netcl_max then print(("  largest ResNet-50 batch that trains: %d"):format(netcl_max)) end

-- the peer prints "key batch img/s peak_mib" per workload and "max_batch N"
local function torch_results()
  local specs = {}
  for _, w in ipairs(list) do specs[#specs + 1] = w.key .. ":" .. w.batch end
  local cmd = ("python3 %s/imagenet_peer.py %s %d %d %s %s"):format(here, table.concat(specs, ","), opts.steps,
    opts.warmup, opts.tf32 and "tf32" or "fp32", opts["max-batch"] and "max" or "-")
  local res = {}
  local pdev, why = bench.torch_peer(cmd, function(line)
    local k, b, r, m = line:match("^(%S+) (%d+) ([%d%.e%-+]+) ([%d%.e%-+]+)$")
    if k then res[k .. ":" .. b] = { rate = tonumber(r), peak = tonumber(m) }; return true end
    local mb = line:match("^max_batch (%d+)$")
    if mb then res.max_batch = tonumber(mb); return true end
  end)
  if not pdev then return nil, why end
  return res, pdev
end

local peer, pdev = torch_results()
print(("peer: %s"):format(peer and ("PyTorch on " .. pdev) or ("none (" .. tostring(pdev) .. ")")))
print(("%-28s %10s %10s %7s %11s %11s %7s"):format("workload", "netcl", "pytorch", "ratio", "netcl MiB", "pytorch MiB", "ratio"))
for _, w in ipairs(list) do
  local p = peer and peer[w.key .. ":" .. w.batch]
  print(("%-28s %10.1f %10s %7s %11.0f %11s %7s"):format(w.name, w.rate, p and ("%.1f"):format(p.rate) or "-",
    p and ("%.2fx"):format(w.rate / p.rate) or "-", w.peak, p and ("%.0f"):format(p.peak) or "-",
    p and ("%.2fx"):format(w.peak / p.peak) or "-"))
end
if netcl_max then
  print(("%-28s %10d %10s %7s"):format("largest ResNet-50 batch", netcl_max, peer and peer.max_batch or "-",
    peer and peer.max_batch and ("%.2fx"):format(netcl_max / peer.max_batch) or "-"))
end
print("img/s ratio > 1: netcl faster; memory ratio < 1: netcl needs less")
