-- examples/resnet_cifar.lua — ResNet-18 (CIFAR stem) trained on CIFAR-10
-- with netcl.Trainer: SGD with momentum and weight decay, a cosine
-- schedule, random crops and flips, test accuracy per epoch. With
-- --data DIR it reads the real CIFAR-10 binaries (data_batch_1..5.bin,
-- test_batch.bin, from the "CIFAR-10 binary version"); without it, a
-- generated stand-in of the same shapes (each class a colour and stripe
-- pattern plus noise), so the example runs anywhere and learns something.
--   netcl examples/resnet_cifar.lua [--data DIR] [--epochs N] [--batch N] [--limit N]
--       [--device NAME] [--amp] [--checkpoint-dir DIR]
local netcl = require("netcl")
local nn, optim, data = netcl.nn, netcl.optim, netcl.data
local F = data.filters

local opts = { epochs = 2, batch = 128, lr = 0.1 }
local i = 1
while arg[i] do
  local key = arg[i]:match("^%-%-(.+)$")
  if key == "amp" then opts.amp = true; i = i + 1
  elseif key and arg[i + 1] then opts[key] = tonumber(arg[i + 1]) or arg[i + 1]; i = i + 2
  else error("unknown argument " .. arg[i] .. " (--data DIR, --epochs N, --batch N, --limit N, --device NAME, --amp)") end
end
local dev = netcl.device(opts.device).name
netcl.manual_seed(1)

-- ---- data ------------------------------------------------------------------------------
local train, test
if opts.data then
  train = data.CIFAR10(opts.data, { train = true })
  test = data.CIFAR10(opts.data, { train = false })
else
  -- the stand-in: class c is a colour and a stripe period, then noise
  local function standin(n, seed)
    netcl.manual_seed(seed)
    local labels = netcl.randint(1, 11, { n }, { device = "cpu" }):long()
    local lab = labels:float():view(n, 1, 1, 1)
    local rows = netcl.arange(0, 32, 1, { device = "cpu" }):view(1, 1, 32, 1)
    local chan = netcl.arange(1, 4, 1, { device = "cpu" }):view(1, 3, 1, 1)
    local img = ((rows * lab / 3):sin() * 60 + lab * chan * 7 + 60):expand(n, 3, 32, 32)
    img = img + netcl.randn(n, 3, 32, 32, { device = "cpu" }) * 25
    return data.TensorDataset(img:clamp(0, 255):byte(), labels)
  end
  train, test = standin(5000, 2), standin(1000, 3)
  print("no --data DIR: a generated stand-in of CIFAR-10's shapes (5,000 train, 1,000 test images)")
end
local function first(ds, n)
  if not n or n >= #ds then return ds end
  local idx = {}
  for k = 1, n do idx[k] = k end
  return data.Subset(ds, idx)
end
train, test = first(train, opts.limit), first(test, opts.limit and math.max(100, math.floor(opts.limit / 5)))

local MEAN, STD = { 0.4914, 0.4822, 0.4465 }, { 0.2470, 0.2435, 0.2616 }
local train_loader = data.DataLoader(train, { batch_size = opts.batch, shuffle = true, seed = 1, drop_last = true, num_workers = 0,
  transforms = { F.random_crop(4, 32, "reflect"), F.horizontal_flip(0.5), F.to_float(255), F.normalize(MEAN, STD) }, device = dev })
local test_loader = data.DataLoader(test, { batch_size = 250, shuffle = false, num_workers = 0,
  transforms = { F.to_float(255), F.normalize(MEAN, STD) }, device = dev })

-- ---- model and training ---------------------------------------------------------------------
local model = nn.models.resnet18_cifar():to(dev)
print(("ResNet-18 (CIFAR stem), %d parameters; %d train / %d test images; device %s; %d epochs, batch %d"):format(
  model:count_parameters(), #train, #test, dev, opts.epochs, opts.batch))
local opt = optim.SGD(model, { lr = opts.lr, momentum = 0.9, weight_decay = 5e-4, nesterov = true })
local sched = optim.lr_scheduler.CosineAnnealingLR(opt, { T_max = opts.epochs * #train_loader })
local trainer = netcl.Trainer({ model = model, optimizer = opt, loss = nn.CrossEntropyLoss(), scheduler = sched,
  scheduler_interval = "batch", metrics = { "loss", "accuracy" }, amp = opts.amp, checkpoint_dir = opts["checkpoint-dir"] })
local history = trainer:fit(train_loader, { epochs = opts.epochs, val = test_loader })
print(("final test accuracy %.2f%%"):format(100 * history[#history].val_accuracy))
