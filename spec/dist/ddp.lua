-- spec/dist/ddp.lua — run by spec/distributed_spec.lua on every rank:
-- data-parallel training of a small Fashion-MNIST CNN (no batch norm or
-- dropout, whose per-rank statistics would differ by design) equals one
-- process training on the combined batch. arg[1]: "ddp"
-- (DistributedDataParallel), "sync" (data_parallel_step / sync_grads) or
-- "accum" (no_sync gradient accumulation). Rank 0 trains the single-process
-- reference itself and compares; every rank checks it holds rank 0's
-- parameters bitwise. Prints "ok <rank> <max difference>".
local netcl = require("netcl")
local nn, optim, dist = netcl.nn, netcl.optim, netcl.distributed
local mode = arg[1] or "ddp"
dist.init()
local R, W = dist.rank(), dist.world_size()
local PER, STEPS = 8, 4

local ds = netcl.data.FashionMNIST(nil, { train = false })
local images, labels = ds.tensors[1], ds.tensors[2]

local function model()
  netcl.manual_seed(7)
  return nn.Sequential(nn.Conv2d(1, 8, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
end

-- rows first..first+count-1 (1-based) of the test images, as float inputs
-- (on the default device: NETCL_DEVICE)
local dev = netcl.device().name
local function batch(first, count)
  return (images:narrow(1, first, count):float() / 255):to(dev), labels:narrow(1, first, count):to(dev)
end

local crit = nn.CrossEntropyLoss()
local micro = mode == "accum" and 2 or 1

-- this rank's share of step s, micro-batch k: PER rows of a global W*PER
local function rows(s, k, rank) return ((s - 1) * micro + (k - 1)) * W * PER + rank * PER + 1 end

local net = model()
local opt
if mode == "ddp" or mode == "accum" then
  local ddp = dist.DistributedDataParallel(net, { bucket_mb = 0.002 })   -- several buckets
  opt = optim.SGD(ddp, { lr = 0.1, momentum = 0.9 })
  for s = 1, STEPS do
    opt:zero_grad()
    for k = 1, micro do
      local x, y = batch(rows(s, k, R), PER)
      if k < micro then ddp:no_sync(function() crit(ddp(x), y):backward() end)
      else crit(ddp(x), y):backward() end
    end
    opt:step()
  end
else
  opt = optim.SGD(net, { lr = 0.1, momentum = 0.9 })
  for s = 1, STEPS do
    local x, y = batch(rows(s, 1, R), PER)
    dist.data_parallel_step(net, crit, opt, x, y)
  end
end

-- every rank holds rank 0's parameters, bit for bit
for _, p in ipairs(net:parameters()) do
  local mine, root = p:detach():clone(), p:detach():clone()
  dist.broadcast(root, 0)
  if (mine - root):abs():max():item() ~= 0 then error(("rank %d: parameters differ from rank 0's"):format(R)) end
end

local worst = 0
if R == 0 then
  local ref = model()
  local ropt = optim.SGD(ref, { lr = 0.1, momentum = 0.9 })
  for s = 1, STEPS do
    ropt:zero_grad()
    for k = 1, micro do
      local x, y = batch(rows(s, k, 0), W * PER)
      crit(ref(x), y):backward()
    end
    ropt:step()
  end
  local a, b = net:parameters(), ref:parameters()
  for i = 1, #a do
    local d = (a[i]:detach() - b[i]:detach()):abs():max():item() / math.max(b[i]:detach():abs():max():item(), 1e-3)
    worst = math.max(worst, d)
  end
  if worst > 1e-4 then error(("rank 0: data-parallel parameters differ from one process's by %g (relative)"):format(worst)) end
end
print(("ok %d %g"):format(R, worst))
dist.finalize()
