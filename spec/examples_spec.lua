-- spec/examples_spec.lua — the examples a newcomer runs first, in short
-- modes: quickstart (every device), resnet_cifar on its generated stand-in
-- and on real-format CIFAR-10 binaries written here. (fashion_mnist,
-- custom_kernel and the embedding programs have specs of their own:
-- train_cnn, custom_op, capi.)
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."
local netcl = root .. "/build/netcl"

TestExamples = {}

function TestExamples:setUp()
  if not H.is_cpu then lu.skip("the examples run once, in the cpu pass (they use every device themselves)") end
end

function TestExamples:test_quickstart()
  local out, code = H.run(netcl .. " " .. root .. "/examples/quickstart.lua")
  lu.assertEquals(code, 0, out)
end

function TestExamples:test_resnet_cifar_standin()
  local out, code = H.run(("%s %s/examples/resnet_cifar.lua --limit 64 --batch 32 --epochs 1 --device cpu"):format(netcl, root))
  lu.assertEquals(code, 0, out)
  lu.assertStrContains(out, "generated stand-in")
  lu.assertNotNil(out:match("epoch 1/1:  train loss [%d.]+"), out)
  lu.assertNotNil(out:match("final test accuracy [%d.]+%%"), out)
end

-- CIFAR-10's binary format: records of 1 label byte + 3072 pixel bytes
function TestExamples:test_resnet_cifar_reads_real_binaries()
  local dir = (H.run("mktemp -d")):match("%S+")
  local function write(name, n)
    local f = assert(io.open(dir .. "/" .. name, "wb"))
    for r = 1, n do
      f:write(string.char(r % 10))
      f:write(string.rep(string.char((r * 37) % 256), 3072))
    end
    f:close()
  end
  for b = 1, 5 do write("data_batch_" .. b .. ".bin", 20) end
  write("test_batch.bin", 20)
  local out, code = H.run(("%s %s/examples/resnet_cifar.lua --data %s --limit 32 --batch 16 --epochs 1 --device cpu")
    :format(netcl, root, dir))
  os.execute("rm -rf " .. dir)
  lu.assertEquals(code, 0, out)
  lu.assertNil(out:find("stand-in", 1, true), out)
  lu.assertStrContains(out, "32 train / 20 test images")
  lu.assertNotNil(out:match("final test accuracy [%d.]+%%"), out)
end
