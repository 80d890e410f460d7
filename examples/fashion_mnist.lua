-- examples/fashion_mnist.lua — trains a CNN on the real Fashion-MNIST
-- (Debian's dataset-fashion-mnist, IDX .gz files read by netcl) on the
-- default device: conv32-bn-relu-pool, conv64-bn-relu-pool, fc128-relu-dropout,
-- fc10; Adam with a one-cycle learning rate, batch 128, shuffled seeded
-- batches through netcl.data, trained by netcl.Trainer. Prints a progress
-- line, per-epoch loss, train/test accuracy and images/s, and saves a
-- checkpoint (model, optimizer, scheduler, epoch, test accuracy).
--   netcl examples/fashion_mnist.lua [--quick] [--epochs N] [--device NAME] [--data DIR]
--       [--save PATH] [--batch N] [--lr F] [--limit N] [--test-limit N] [--augment] [--seed N] [--compile] [--amp]
--       [--checkpoint-dir DIR]
-- Defaults: 6 epochs (>= 91% test accuracy); --quick: 1 epoch (>= 88%, what
-- `make demo` runs). --limit trains on the first N images (tests use it).
-- --compile replays the training step (netcl.compile) from the second batch on.
-- --amp trains with mixed precision (netcl.amp: autocast to float16 and a
-- GradScaler), also on devices where 16-bit floats gain nothing.
local netcl = require("netcl")
local nn, optim, data, amp = netcl.nn, netcl.optim, netcl.data, netcl.amp
io.stdout:setvbuf("line")   -- progress shows up at once even when the output goes to a file

local opts = {
  epochs = nil, quick = false, device = nil, data = "/usr/share/datasets/fashion-mnist", save = "fashion_mnist_cnn.safetensors",
  batch = 128, lr = 3e-3, limit = nil, ["test-limit"] = nil, augment = false, seed = 1, workers = 0,
}
local FLAGS = { quick = true, augment = true, compile = true, amp = true }
local i = 1
while arg and arg[i] do
  local key = arg[i]:match("^%-%-(.+)$")
  if not key then error("unknown argument " .. arg[i] .. " (try --quick, --epochs N, --device NAME, --data DIR, --save PATH)") end
  if FLAGS[key] then opts[key] = true; i = i + 1
  else
    local v = arg[i + 1]
    if v == nil then error("--" .. key .. " needs a value") end
    if not (key == "epochs" or key == "device" or key == "data" or key == "save" or key == "batch" or key == "lr" or
            key == "limit" or key == "test-limit" or key == "seed" or key == "workers" or key == "checkpoint-dir") then
      error("unknown argument --" .. key)
    end
    opts[key] = tonumber(v) or v
    i = i + 2
  end
end
opts.epochs = opts.epochs or (opts.quick and 1 or 6)
local dev = netcl.device(opts.device).name

local ffi = require("ffi")
pcall(ffi.cdef, "struct netcl_timespec { long tv_sec; long tv_nsec; }; int clock_gettime(int, struct netcl_timespec *);")
local ts = ffi.new("struct netcl_timespec")
local function now() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end
local wall0 = now()

-- ---- data -------------------------------------------------------------------------------
netcl.manual_seed(opts.seed)
local train = data.FashionMNIST(opts.data, { train = true })     -- uint8 [60000, 1, 28, 28], labels 1..10
local test = data.FashionMNIST(opts.data, { train = false })
local function first(ds, n)
  if not n or n >= #ds then return ds end
  local idx = {}
  for k = 1, n do idx[k] = k end
  return data.Subset(ds, idx)
end
train, test = first(train, opts.limit), first(test, opts["test-limit"])

local MEAN, STD = 0.2860, 0.3530                                   -- Fashion-MNIST's pixel statistics
local F = data.filters
local train_filters = { F.to_float(255), F.normalize(MEAN, STD) }
if opts.augment then
  train_filters = { F.random_crop(2, 28, "constant", 0), F.horizontal_flip(0.5), F.to_float(255), F.normalize(MEAN, STD) }
end
local train_loader = data.DataLoader(train, { batch_size = opts.batch, shuffle = true, seed = opts.seed, drop_last = true,
                                              num_workers = opts.workers, transforms = train_filters, device = dev })
local test_loader = data.DataLoader(test, { batch_size = 250, shuffle = false, num_workers = 0,
                                            transforms = { F.to_float(255), F.normalize(MEAN, STD) }, device = dev })
print(("Fashion-MNIST: %d train, %d test images; device %s; %d epochs, batch %d, Adam + one-cycle (max lr %g)%s"):format(
  #train, #test, dev, opts.epochs, opts.batch, opts.lr, opts.augment and ", augmented" or ""))

-- ---- model -------------------------------------------------------------------------------
local model = nn.Sequential(
  nn.Conv2d(1, 32, 3, { padding = 1 }), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),     -- [N, 32, 14, 14]
  nn.Conv2d(32, 64, 3, { padding = 1 }), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),    -- [N, 64, 7, 7]
  nn.Flatten(),
  nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25),
  nn.Linear(128, 10)):to(dev)
print(model)

local opt = optim.Adam(model, { lr = opts.lr })
local sched = optim.lr_scheduler.OneCycleLR(opt, { max_lr = opts.lr, epochs = opts.epochs, steps_per_epoch = #train_loader })

-- ---- training: netcl.Trainer (docs/trainer.md) -------------------------------------------
-- a progress line on a terminal, one summary line per epoch, test accuracy
-- after each epoch; with --checkpoint-dir a log, a PNG of the curves and a
-- checkpoint per epoch that a restarted run resumes from
local trainer = netcl.Trainer({
  model = model, optimizer = opt, loss = nn.CrossEntropyLoss(), scheduler = sched, scheduler_interval = "batch",
  metrics = { "loss", "accuracy" }, amp = opts.amp == true, compile = opts.compile == true,
  checkpoint_dir = opts["checkpoint-dir"],
})
local t0 = now()
local history = trainer:fit(train_loader, { epochs = opts.epochs, val = test_loader })
local train_time = now() - t0
local test_acc = history[#history].val_accuracy

if opts.save ~= "" and opts.save ~= "none" then
  netcl.save({ model = model, optimizer = opt, scheduler = sched, epoch = #history, test_accuracy = test_acc }, opts.save)
  print("checkpoint: " .. opts.save)
end
train_loader:close()
print(("final test accuracy %.2f%% after %d epochs; training %.1f s, total %.1f s"):format(100 * test_acc, #history,
  train_time, now() - wall0))
