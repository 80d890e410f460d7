-- examples/fashion_mnist_mlp.lua — trains a 784-256-10 MLP on the real
-- Fashion-MNIST (Debian's dataset-fashion-mnist) with autograd and SGD with
-- momentum, on the default device (or --device NAME), printing per-epoch
-- loss, train/test accuracy, images/s and time.
--   netcl examples/fashion_mnist_mlp.lua [--epochs N] [--device NAME] [--data DIR] [--limit N]
-- The CNN the nn/optim issue asks for lives in examples/fashion_mnist.lua once
-- conv/pool/batch-norm ops exist; this one uses only the engine's first ops.
local netcl = require("netcl")
local F = netcl.nn.functional

local opts = { epochs = 2, device = nil, data = "/usr/share/datasets/fashion-mnist", limit = nil, batch = 128, lr = 0.05 }
local i = 1
while arg and arg[i] do
  local key = arg[i]:match("^%-%-(.+)$")
  if not key or opts[key] == nil and key ~= "device" and key ~= "limit" then error("unknown argument " .. arg[i]) end
  opts[key] = tonumber(arg[i + 1]) or arg[i + 1]
  i = i + 2
end
local dev = netcl.device(opts.device).name

local ffi = require("ffi")
pcall(ffi.cdef, "struct netcl_timespec { long tv_sec; long tv_nsec; }; int clock_gettime(int, struct netcl_timespec *);")
local ts = ffi.new("struct netcl_timespec")
local function now() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end
local wall0 = now()

-- images as float [N, 784], normalised with Fashion-MNIST's mean/std; labels 1-based int64
local function load(kind, limit)
  local images = netcl.read_idx(("%s/%s-images-idx3-ubyte.gz"):format(opts.data, kind))
  local labels = netcl.read_idx(("%s/%s-labels-idx1-ubyte.gz"):format(opts.data, kind))
  local n = limit and math.min(limit, images:size(1)) or images:size(1)
  local x = ((images:narrow(1, 1, n):float() / 255 - 0.2860) / 0.3530):view(n, 784)
  local y = labels:narrow(1, 1, n):long() + 1
  return x, y, n
end

local xtrain, ytrain, ntrain = load("train", opts.limit)
local xtest, ytest, ntest = load("t10k")
print(("Fashion-MNIST: %d train, %d test images; device %s"):format(ntrain, ntest, dev))

netcl.manual_seed(1)
local function param(rows, cols, fan_in)
  return (netcl.randn(rows, cols, { device = dev }) * math.sqrt(2 / fan_in)):detach():requires_grad_()
end
local params = {
  w1 = param(256, 784, 784), b1 = netcl.zeros(256, { device = dev, requires_grad = true }),
  w2 = param(10, 256, 256), b2 = netcl.zeros(10, { device = dev, requires_grad = true }),
}
local velocity = {}
for k, p in pairs(params) do velocity[k] = netcl.zeros_like(p) end

local function forward(x)
  return F.linear(F.linear(x, params.w1, params.b1):relu(), params.w2, params.b2)
end

local function accuracy(x, y, n)
  return netcl.no_grad(function()
    local correct = 0
    for s = 1, n, 1000 do
      local m = math.min(1000, n - s + 1)
      local logits = forward(x:narrow(1, s, m):to(dev))
      correct = correct + logits:argmax(2):eq(y:narrow(1, s, m):to(dev)):sum():item()
    end
    return correct / n
  end)
end

for epoch = 1, opts.epochs do
  local t0, total, steps, sampled = now(), 0, 0, 0
  for s = 1, ntrain - opts.batch + 1, opts.batch do
    local x = xtrain:narrow(1, s, opts.batch):to(dev)
    local y = ytrain:narrow(1, s, opts.batch):to(dev)
    local loss = F.cross_entropy(forward(x), y)
    loss:backward()
    netcl.no_grad(function()
      for k, p in pairs(params) do
        local v = velocity[k]
        v:copy_(v * 0.9 + p.grad)
        p:copy_(p - v * opts.lr)
        p.grad = nil
      end
    end)
    steps = steps + 1
    if steps % 10 == 1 then total, sampled = total + loss:item(), sampled + 1 end   -- item() waits for the device
  end
  netcl.synchronize(dev)
  local secs = now() - t0
  print(("epoch %d: loss %.4f  train acc %.2f%%  test acc %.2f%%  %.0f img/s  (%.1f s)"):format(
    epoch, total / math.max(1, sampled), 100 * accuracy(xtrain, ytrain, math.min(ntrain, 10000)),
    100 * accuracy(xtest, ytest, ntest), steps * opts.batch / secs, secs))
end
print(("done in %.1f s"):format(now() - wall0))
