-- spec/train_spec.lua — end to end: the Fashion-MNIST MLP example trains on
-- a 12,000-image subset of the real data for one epoch on the device under
-- test and must pass 75% test accuracy (a broken gradient cannot).
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

TestTrain = {}

function TestTrain:test_fashion_mnist_mlp_learns()
  local data = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
  local f = io.open(data)
  lu.skipIf(not f, "dataset-fashion-mnist is not installed")
  f:close()
  local out, code = H.run(("%s/build/netcl %s/examples/fashion_mnist_mlp.lua --epochs 1 --limit 12000 --device %s")
    :format(root, root, H.device))
  lu.assertEquals(code, 0, out)
  local acc = tonumber(out:match("test acc ([%d%.]+)%%"))
  lu.assertNotNil(acc, out)
  lu.assertTrue(acc > 75, "test accuracy " .. tostring(acc) .. "%\n" .. out)
end
