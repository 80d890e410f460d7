-- examples/fashion_mnist.lua — trains a CNN on the real Fashion-MNIST
-- (Debian's dataset-fashion-mnist, IDX .gz files read by netcl) on the
-- default device: conv32-bn-relu-pool, conv64-bn-relu-pool, fc128-relu-dropout,
-- fc10; Adam with a one-cycle learning rate, batch 128, shuffled seeded
-- batches through netcl.data. Prints per-epoch loss, train/test accuracy,
-- images/s and elapsed time, and saves a checkpoint (model, optimizer,
-- scheduler, epoch, test accuracy) with netcl.save.
--   netcl examples/fashion_mnist.lua [--quick] [--epochs N] [--device NAME] [--data DIR]
--       [--save PATH] [--batch N] [--lr F] [--limit N] [--test-limit N] [--augment] [--seed N] [--compile] [--amp]
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
            key == "limit" or key == "test-limit" or key == "seed" or key == "workers") then
      error("unknown argument --" .. key)
    end
    opts[key] = tonumber(v) or v
    i = i + 2
  end
end
opts.epochs = opts.epochs or (opts.quick and 1 or 6)
if opts.amp and opts.compile then
  error("--amp with --compile: the GradScaler reads its overflow flag on the host, which a compiled step cannot do")
end
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
local criterion = nn.CrossEntropyLoss()

-- accuracy (0..1) of the model in eval mode over a loader
local function evaluate(loader)
  model:eval()
  local correct, n = nil, 0
  netcl.no_grad(function()
    for x, y in loader do
      local c = amp.autocast(function() return model(x) end, { enabled = opts.amp == true }):argmax(2):eq(y):sum()
      correct = correct and correct + c or c
      n = n + y:size(1)
    end
  end)
  model:train()
  return correct:item() / n
end

-- ---- training -----------------------------------------------------------------------------
-- one step: its loss and the batch's correct predictions (device scalars)
local scaler = amp.GradScaler({ enabled = opts.amp == true })
local function train_step(x, y)
  opt:zero_grad()
  local logits, loss = amp.autocast(function()
    local l = model(x)
    return l, criterion(l, y)
  end, { enabled = opts.amp == true })
  scaler:scale_loss(loss):backward()
  scaler:step(opt)
  scaler:update()
  sched:step()
  return loss:detach(), netcl.no_grad(function() return logits:argmax(2):eq(y):sum() end)
end

-- With --compile the first batch runs eagerly (the optimizer makes its
-- state) and the second is the captured step; later batches replay it.
local run_step, eager_steps = train_step, 0
if opts.compile then
  run_step = function(x, y)
    if eager_steps < 1 then eager_steps = eager_steps + 1; return train_step(x, y) end
    local compiled = netcl.compile(train_step, x, y, { compile_options = true, warmup = 0 })
    print(("compiled the training step: %d kernels a step, %d before fusion"):format(compiled.kernels, compiled.captured_kernels))
    run_step = compiled
    return compiled.results[1], compiled.results[2]
  end
end

local test_acc
local train_time = 0
for epoch = 1, opts.epochs do
  local t0 = now()
  local loss_sum, correct, seen, steps = nil, nil, 0, 0
  for x, y in train_loader do
    local loss, hits = run_step(x, y)
    -- running sums stay on the device: no synchronisation per step
    netcl.no_grad(function()
      loss_sum = loss_sum and loss_sum + loss or loss:clone()
      correct = correct and correct + hits or hits:clone()
    end)
    seen, steps = seen + y:size(1), steps + 1
  end
  local mean_loss, train_acc = loss_sum:item() / steps, correct:item() / seen   -- item() waits for the device
  local secs = now() - t0
  train_time = train_time + secs
  test_acc = evaluate(test_loader)
  print(("epoch %d/%d: loss %.4f  train acc %.2f%%  test acc %.2f%%  %.0f img/s  (epoch %.1f s, elapsed %.1f s)"):format(
    epoch, opts.epochs, mean_loss, 100 * train_acc, 100 * test_acc, seen / secs, secs, now() - wall0))
end

if opts.save ~= "" and opts.save ~= "none" then
  netcl.save({ model = model, optimizer = opt, scheduler = sched, epoch = opts.epochs, test_accuracy = test_acc }, opts.save)
  print("checkpoint: " .. opts.save)
end
train_loader:close()
print(("final test accuracy %.2f%% after %d epochs; training %.1f s, total %.1f s"):format(100 * test_acc, opts.epochs,
  train_time, now() - wall0))
