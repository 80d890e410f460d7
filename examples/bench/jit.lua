-- examples/bench/jit.lua — fusion and capture/replay against PyTorch in the
-- same command: elementwise chains on 64M float32 (GB/s of useful traffic:
-- read x, write y) eager and traced (netcl.jit), beside the device's copy
-- bandwidth; the LeNet-5 Adam step (batch 64 and 256, us/step) and the
-- ResNet-18 CIFAR step (batch 128, img/s) eager and compiled
-- (netcl.compile), with kernels per step. jit_peer.py runs the same
-- workloads in PyTorch eager, torch.compile and (training steps) a CUDA
-- graph of the whole step, when PyTorch is installed; ratios compare
-- netcl's traced/compiled figure with PyTorch's best.
--   netcl examples/bench/jit.lua [--device NAME] [--only chains|lenet|resnet] [--quick] [--list]
-- (--list prints the kernels of each compiled step)
local netcl = require("netcl")
local nn, optim = netcl.nn, netcl.optim

local opts = { device = nil, only = nil, quick = false, list = false }
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--device" then opts.device = arg[i + 1]; i = i + 1
  elseif a == "--only" then opts.only = arg[i + 1]; i = i + 1
  elseif a == "--quick" then opts.quick = true
  elseif a == "--list" then opts.list = true
  else error("unknown argument " .. a) end
  i = i + 1
end

local dev = netcl.device(opts.device).name
local info
for _, d in ipairs(netcl.devices()) do if d.name == dev then info = d end end
local is_gpu = info and info.type == "opencl_gpu"

local here = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local bench_time = require("bench_time")
local function per_call(fn, n, rounds) return bench_time.per_call(fn, n, rounds, dev) end

local rows = {}
local function row(key, name, unit, higher, eager, fast, kernels)
  rows[#rows + 1] = { key = key, name = name, unit = unit, higher = higher, eager = eager, fast = fast, kernels = kernels }
  print(("  %-30s eager %10.1f   jit %10.1f %s   %s"):format(name, eager or 0, fast or 0, unit, kernels or ""))
end

local function wanted(k) return not opts.only or k:find(opts.only, 1, true) end

-- ---- chains ------------------------------------------------------------------------
local n = is_gpu and 64 * 1024 * 1024 or (opts.quick and 1024 * 1024 or 16 * 1024 * 1024)
local CHAINS = {
  { "relu", "relu(x*a+b)", function(x) return (x * 1.5 + 0.25):relu() end },
  { "six", "6-op chain", function(x) return ((((x + 1) * 2):tanh() - 0.5):abs():sqrt() * 3) end },
}
if wanted("chains") then
  local x = netcl.rand(n, { device = dev })
  local y = netcl.empty(n, { device = dev })
  local gbs = function(t) return 8 * n / t / 1e9 end
  local reps = opts.quick and 3 or 10
  row("copy", "copy y <- x", "GB/s", true, gbs(per_call(function() y:copy_(x) end, reps, 5)), nil)
  for _, c in ipairs(CHAINS) do
    local f = c[3]
    local jf = netcl.jit(f)
    local e = gbs(per_call(function() f(x):free() end, reps, 5))
    local j = gbs(per_call(function() jf(x):free() end, reps, 5))
    row(c[1], c[2], "GB/s", true, e, j)
  end
end

-- ---- training steps -----------------------------------------------------------------
local function trainer(model, opt)
  local loss_fn = nn.CrossEntropyLoss()
  return function(x, y)
    opt:zero_grad()
    local loss = loss_fn(model(x), y)
    loss:backward()
    opt:step()
    return loss
  end
end

local function steps(key, make, batch, shape, nsteps, unit)
  netcl.manual_seed(1)
  local model, opt = make()
  local x = netcl.randn(batch, shape[1], shape[2], shape[3], { device = dev })
  local y = netcl.randint(1, 11, { batch }, { device = dev })
  local step = trainer(model, opt)
  local e = per_call(function() step(x, y) end, nsteps, 5)
  local c = netcl.compile(step, x, y)
  local r = per_call(function() c(x, y) end, nsteps, 5)
  local kernels = ("kernels/step %d eager, %d replayed"):format(c.captured_kernels, c.kernels)
  if opts.list then print(c:describe()) end
  if unit == "img/s" then row(key, key .. " batch " .. batch, unit, true, batch / e, batch / r, kernels)
  else row(key, key .. " batch " .. batch, unit, false, e * 1e6, r * 1e6, kernels) end
  rows[#rows].size = batch
end

if wanted("lenet") then
  for _, b in ipairs({ 64, 256 }) do
    steps("lenet", function()
      local m = nn.models.lenet5({ device = dev })
      return m, optim.Adam(m, { lr = 1e-3 })
    end, b, { 1, 28, 28 }, opts.quick and 5 or 50, "us/step")
  end
end
if wanted("resnet") and is_gpu then
  steps("resnet", function()
    local m = nn.models.resnet18_cifar({ device = dev })
    return m, optim.SGD(m, { lr = 0.01, momentum = 0.9, weight_decay = 5e-4 })
  end, 128, { 3, 32, 32 }, opts.quick and 2 or 10, "img/s")
end

-- ---- the PyTorch peer ------------------------------------------------------------------
local function torch_results()
  local keys = {}
  for _, r in ipairs(rows) do keys[#keys + 1] = r.key .. ":" .. (r.size or n) end
  local cmd = ("python3 %s/jit_peer.py %s %s %s"):format(here, is_gpu and "cuda" or "cpu", table.concat(keys, ","),
    opts.quick and "quick" or "full")
  local res = {}
  local pdev, why = bench_time.torch_peer(cmd, function(line)
    local k, mode, v = line:match("^(%S+) (%S+) ([%d%.e%-+]+)$")
    if k then res[k .. "/" .. mode] = tonumber(v); return true end
  end)
  if not pdev then return nil, why end
  return res, pdev
end

local peer, pdev = torch_results()
print(("netcl %s on %s (%s); peer: %s"):format(netcl.version, dev, info and info.hw_name or "?",
  peer and ("PyTorch on " .. pdev) or ("none (" .. tostring(pdev) .. ")")))
print(("%-22s %10s %10s %10s %10s %10s %8s  %s"):format("workload", "netcl", "netcl jit", "torch", "compile", "graph",
  "ratio", "unit"))
local function f(v) return v and ("%.1f"):format(v) or "-" end
for _, r in ipairs(rows) do
  local k = r.key .. ":" .. (r.size or n)
  local pe, pc, pg = peer and peer[k .. "/eager"], peer and peer[k .. "/compile"], peer and peer[k .. "/graph"]
  local best
  for _, v in ipairs({ pe or false, pc or false, pg or false }) do
    if v and (not best or (r.higher and v > best) or (not r.higher and v < best)) then best = v end
  end
  local mine = r.fast or r.eager
  local ratio = best and (r.higher and mine / best or best / mine)
  print(("%-22s %10s %10s %10s %10s %10s %8s  %s"):format(r.name, f(r.eager), f(r.fast), f(pe), f(pc), f(pg),
    ratio and ("%.2fx"):format(ratio) or "-", r.unit))
end
print("ratio: netcl's jit figure (eager where none) against PyTorch's best; > 1: netcl faster")
