-- examples/bench/loader.lua — DataLoader throughput on the real Fashion-MNIST
-- (60,000 training images) with default-style filters (reflect-pad 2 and
-- random 28x28 crop, horizontal flip, to float, normalize), batch 128, for
-- num_workers 0 and 2 (8 and 16 where the machine has the cores), with and
-- without the shared-memory ring; when `python3 -c 'import torch'` works,
-- loader_peer.py times PyTorch's DataLoader with the same transforms in
-- the same command and the ratio is printed (>1: netcl faster).
--   netcl examples/bench/loader.lua [--epochs N] [--limit BATCHES] [--workers 0,2,8]
--   netcl examples/bench/loader.lua --step [--device NAME]   loader batch time vs training step time
local netcl = require("netcl")
local data = netcl.data
local F = data.filters

local opts = { epochs = 2, limit = nil, workers = nil, batch = 128, step = false, device = nil,
               data = "/usr/share/datasets/fashion-mnist" }
local i = 1
while arg and arg[i] do
  local key = arg[i]:match("^%-%-(.+)$")
  if key == "step" then opts.step = true; i = i + 1
  elseif key and (opts[key] ~= nil or key == "limit" or key == "workers" or key == "device") then
    opts[key] = tonumber(arg[i + 1]) or arg[i + 1]; i = i + 2
  else error("unknown argument " .. tostring(arg[i])) end
end

local now = require("netcl.data.util").monotonic
local function nproc()
  local p = io.popen("nproc")
  local n = tonumber(p:read("*l"))
  p:close()
  return n or 2
end
local cores = nproc()
local worker_list = {}
if opts.workers then
  for w in tostring(opts.workers):gmatch("%d+") do worker_list[#worker_list + 1] = tonumber(w) end
else
  worker_list = { 0, 2 }
  if cores >= 8 then worker_list[#worker_list + 1] = 8 end
  if cores >= 16 then worker_list[#worker_list + 1] = 16 end
end

local train = data.FashionMNIST(opts.data)
local MEAN, STD = 0.2860, 0.3530
local function transforms()
  return { F.random_crop(2, 28, "reflect"), F.horizontal_flip(0.5), F.to_float(255), F.normalize(MEAN, STD) }
end

-- samples/s of the last of `epochs` epochs (the first pays for forking the pool)
local function throughput(nw, shm)
  local loader = data.DataLoader(train, { batch_size = opts.batch, num_workers = nw, use_shared_mem = shm, seed = 1,
                                          transforms = transforms() })
  local rate
  for _ = 1, opts.epochs do
    local t0, n, k = now(), 0, 0
    for x in loader do
      n = n + x:size(1)
      k = k + 1
      if opts.limit and k >= opts.limit then break end
    end
    rate = n / (now() - t0)
  end
  loader:close()
  return rate
end

local function peer(list)
  local ok = os.execute("python3 -c 'import torch' >/dev/null 2>&1")
  if ok ~= 0 and ok ~= true then return nil, "PyTorch not installed" end
  local here = arg[0]:match("^(.*)/[^/]*$") or "."
  local cmd = ("python3 %s/loader_peer.py --workers %s --batch %d --epochs %d%s --data %s 2>&1"):format(
    here, table.concat(list, ","), opts.batch, opts.epochs, opts.limit and (" --limit " .. opts.limit) or "", opts.data)
  local p = io.popen(cmd)
  local res, info = {}, nil
  for line in p:lines() do
    local mode, w, v = line:match("^(%S+) (%d+) ([%d%.e%+%-]+)$")
    if mode then res[mode .. ":" .. w] = tonumber(v) else info = info or line:match("^torch (.*)$") end
  end
  p:close()
  return res, info
end

if not opts.step then
  print(("netcl %s DataLoader, Fashion-MNIST train (%d images), batch %d, %d cores, epoch %d of %d timed%s"):format(
    netcl.version, #train, opts.batch, cores, opts.epochs, opts.epochs, opts.limit and (", " .. opts.limit .. " batches") or ""))
  local rows = {}
  for _, nw in ipairs(worker_list) do
    rows[#rows + 1] = { nw = nw, shm = false, v = throughput(nw, false) }
    if nw > 0 then rows[#rows + 1] = { nw = nw, shm = true, v = throughput(nw, true) } end
  end
  local p, info = peer(worker_list)
  print(("peer: %s"):format(p and ("PyTorch " .. tostring(info)) or ("none (" .. tostring(info) .. ")")))
  print(("%-9s %-6s %12s %14s %14s %8s"):format("workers", "shm", "netcl img/s", "torch/sample", "torch/batch", "ratio"))
  for _, r in ipairs(rows) do
    local ps, pb = p and p["sample:" .. r.nw], p and p["batch:" .. r.nw]
    local best = ps and pb and math.max(ps, pb) or ps or pb
    print(("%-9d %-6s %12.0f %14s %14s %8s"):format(r.nw, tostring(r.shm), r.v, ps and ("%.0f"):format(ps) or "-",
      pb and ("%.0f"):format(pb) or "-", best and ("%.2fx"):format(r.v / best) or "-"))
  end
  print("torch/sample: transforms per sample in the workers (torchvision style); torch/batch: the same on the")
  print("collated batch in collate_fn; ratio: netcl against the faster of the two")
  return
end

-- --step: the loader's batch time next to the training step time of the
-- Fashion-MNIST MLP (784-256-10, SGD momentum), batches uploaded by device=.
local dev = netcl.device(opts.device).name
local nw = worker_list[#worker_list]
local loader = data.DataLoader(train, { batch_size = opts.batch, num_workers = nw, use_shared_mem = nw > 0, seed = 1,
                                        transforms = transforms(), device = dev })
netcl.manual_seed(1)
local Fn = netcl.nn.functional
local function param(r, c) return (netcl.randn(r, c, { device = dev }) * math.sqrt(2 / c)):detach():requires_grad_() end
local P = { w1 = param(256, 784), b1 = netcl.zeros(256, { device = dev, requires_grad = true }),
            w2 = param(10, 256), b2 = netcl.zeros(10, { device = dev, requires_grad = true }) }
local V = {}
for k, p in pairs(P) do V[k] = netcl.zeros_like(p) end
local function step(x, y)
  local h = Fn.linear(x:view(x:size(1), 784), P.w1, P.b1):relu()
  local loss = Fn.cross_entropy(Fn.linear(h, P.w2, P.b2), y)
  loss:backward()
  netcl.no_grad(function()
    for k, p in pairs(P) do
      V[k]:copy_(V[k] * 0.9 + p.grad)
      p:copy_(p - V[k] * 0.05)
      p.grad = nil
    end
  end)
end
print(("loader batch time vs step time on %s: batch %d, %d workers, shm, device= upload"):format(dev, opts.batch, nw))
for epoch = 1, opts.epochs do
  local wait, compute, k, t_epoch = 0, 0, 0, now()
  local it = loader:iter()
  while true do
    local t0 = now()
    local x, y = it()
    if not x then break end
    local t1 = now()
    step(x, y)
    netcl.synchronize(dev)
    local t2 = now()
    wait, compute, k = wait + (t1 - t0), compute + (t2 - t1), k + 1
    if opts.limit and k >= opts.limit then break end
  end
  print(("epoch %d: %d steps, loader %.3f ms/batch (waiting for data), step %.3f ms/batch (compute, synchronised), %.1f s"):format(
    epoch, k, 1e3 * wait / k, 1e3 * compute / k, now() - t_epoch))
end
loader:close()
