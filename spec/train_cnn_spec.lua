-- spec/train_cnn_spec.lua — end to end on the real Fashion-MNIST: a small
-- CNN (conv8-bn-relu-pool, conv16-bn-relu-pool, fc10) built from the nn
-- layers trains with Adam on a 6,000-image subset through the DataLoader
-- and must pass a stated test accuracy on the first 2,000 test images:
-- > 80% after 300 steps of batch 32 on the cpu, > 70% after 100 steps on
-- an OpenCL device. A broken gradient anywhere in conv, batch-norm,
-- pooling, linear, cross-entropy or Adam cannot pass. Also runs
-- examples/fashion_mnist.lua on a small subset (cpu): it must print its
-- epoch line and write a checkpoint with the model, optimizer and epoch.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local nn, optim, data = netcl.nn, netcl.optim, netcl.data
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

local DIR = "/usr/share/datasets/fashion-mnist"
local function have_data()
  local f = io.open(DIR .. "/train-images-idx3-ubyte.gz")
  if f then f:close() end
  return f ~= nil
end

local function first(ds, n)
  local idx = {}
  for i = 1, n do idx[i] = i end
  return data.Subset(ds, idx)
end

TestTrainCNN = {}

function TestTrainCNN:test_small_cnn_learns()
  lu.skipIf(not have_data(), "dataset-fashion-mnist is not installed")
  local dev = H.device
  local steps, threshold = 300, 0.80
  if not H.is_cpu then steps, threshold = 100, 0.70 end
  netcl.manual_seed(1)
  local tf = { data.filters.to_float(255), data.filters.normalize(0.2860, 0.3530) }
  local train = first(data.FashionMNIST(DIR), 6000)
  local test = first(data.FashionMNIST(DIR, { train = false }), 2000)
  local loader = data.DataLoader(train, { batch_size = 32, shuffle = true, seed = 1, drop_last = true, num_workers = 0,
                                          transforms = tf, device = dev })
  local model = nn.Sequential(
    nn.Conv2d(1, 8, 3, { padding = 1 }), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, { padding = 1 }), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(16 * 7 * 7, 10)):to(dev)
  local opt = optim.Adam(model, { lr = 3e-3 })
  local loss_fn = nn.CrossEntropyLoss()
  local step, first_loss, last_loss = 0, nil, nil
  while step < steps do
    for x, y in loader do
      opt:zero_grad()
      local loss = loss_fn(model(x), y)
      loss:backward()
      opt:step()
      step = step + 1
      if step == 1 then first_loss = loss:item() end
      if step == steps then last_loss = loss:item(); break end
    end
  end
  loader:close()
  model:eval()
  local correct = 0
  netcl.no_grad(function()
    for x, y in data.DataLoader(test, { batch_size = 500, shuffle = false, num_workers = 0, transforms = tf, device = dev }) do
      correct = correct + model(x):argmax(2):eq(y):sum():item()
    end
  end)
  local acc = correct / 2000
  if os.getenv("NETCL_SPEC_VERBOSE") then print(("train_cnn: %.2f%% after %d steps on %s"):format(100 * acc, steps, dev)) end
  lu.assertTrue(last_loss < first_loss, ("loss went from %.3f to %.3f"):format(first_loss, last_loss))
  lu.assertTrue(acc > threshold, ("test accuracy %.2f%% after %d steps on %s, needs > %d%%"):format(100 * acc, steps, dev,
    100 * threshold))
end

function TestTrainCNN:test_example_runs_and_saves()
  lu.skipIf(not have_data(), "dataset-fashion-mnist is not installed")
  lu.skipIf(not H.is_cpu, "the example's smoke run is device independent (cpu only)")
  local path = os.tmpname()
  local out, code = H.run(("%s/build/netcl %s/examples/fashion_mnist.lua --epochs 1 --limit 512 --test-limit 500 --device cpu --save %s")
    :format(root, root, path))
  lu.assertEquals(code, 0, out)
  lu.assertNotNil(out:match("epoch 1/1:  train loss [%d%.]+  train accuracy [%d%.]+%%  val loss [%d%.]+  val accuracy [%d%.]+%%  %d+ img/s"), out)
  local ck = netcl.load(path)
  os.remove(path)
  lu.assertEquals(ck.epoch, 1)
  lu.assertTrue(ck.test_accuracy > 0.3, out)
  lu.assertNotNil(ck.model["2.running_mean"])
  lu.assertNotNil(ck.optimizer)
end

-- --compile replays the step: the same arithmetic, so the same loss and accuracy
function TestTrainCNN:test_example_compiled_trains_as_eager()
  lu.skipIf(not have_data(), "dataset-fashion-mnist is not installed")
  lu.skipIf(not H.is_cpu, "the example's smoke run is device independent (cpu only)")
  local cmd = ("%s/build/netcl %s/examples/fashion_mnist.lua --epochs 1 --limit 512 --test-limit 500 --device cpu --save none")
    :format(root, root)
  local eager, c1 = H.run(cmd)
  local compiled, c2 = H.run(cmd .. " --compile")
  lu.assertEquals(c1, 0, eager)
  lu.assertEquals(c2, 0, compiled)
  lu.assertNotNil(compiled:match("compiled the training step: %d+ kernels a step"), compiled)
  local pat = "epoch 1/1:  train loss ([%d%.]+)  train accuracy ([%d%.]+)%%  val loss [%d%.]+  val accuracy ([%d%.]+)%%"
  lu.assertEquals({ compiled:match(pat) }, { eager:match(pat) })
end
