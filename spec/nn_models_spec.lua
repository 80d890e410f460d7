-- spec/nn_models_spec.lua — the model zoo: parameter counts equal to
-- torchvision's / the papers' (ResNet-18 11,689,512; ResNet-50 25,557,032; ResNet-18 CIFAR 11,173,962; ResNet-20 272,474 with
-- option-B shortcuts and 269,722 with option A; LeNet-5 61,706), output
-- shapes, forward + backward on tiny inputs reaching every parameter,
-- Jacobian checks through BasicBlock and Bottleneck (float64, cpu), the
-- MLP builder, device vs cpu and a save/load round trip.
local lu = require("luaunit")
local H = require("helper")
local N = require("nn_helper")
local netcl = H.netcl
local nn = netcl.nn
local models = nn.models
local dev = H.device

-- forward + backward: every parameter gets a gradient of its own shape
local function trains(m, x, classes)
  local y = m(x)
  lu.assertEquals(y:size(), { x:size(1), classes })
  nn.CrossEntropyLoss()(y, netcl.randint(1, classes + 1, { x:size(1) }, { device = x.device })):backward()
  for name, p in m:named_parameters() do
    lu.assertNotNil(p.grad, name .. " has no gradient")
    lu.assertEquals(p.grad:size(), p:size(), name)
  end
  return y
end

TestModels = {}

function TestModels:test_parameter_counts()
  lu.skipIf(not H.is_cpu, "counts are device independent (checked on the cpu)")
  lu.assertEquals(models.resnet18_cifar():count_parameters(), 11173962)
  lu.assertEquals(models.resnet20():count_parameters(), 272474)                     -- option B (default)
  lu.assertEquals(models.resnet20({ shortcut = "A" }):count_parameters(), 269722)  -- option A, the paper's "0.27M"
  lu.assertEquals(models.resnet56({ shortcut = "A" }):count_parameters(), 853018)
  lu.assertEquals(models.lenet5():count_parameters(), 61706)
  lu.assertEquals(models.mlp({ 784, 256, 10 }):count_parameters(), 203530)
end

function TestModels:test_imagenet_resnets()
  lu.skipIf(not H.is_cpu, "the large models run on the cpu; the device check uses small ones")
  netcl.manual_seed(1)
  local r18 = models.resnet18()
  lu.assertEquals(r18:count_parameters(), 11689512)
  trains(r18, netcl.randn(2, 3, 32, 32), 1000)
  local r50 = models.resnet50({ zero_init_residual = true })
  lu.assertEquals(r50:count_parameters(), 25557032)
  trains(r50, netcl.randn(2, 3, 32, 32), 1000)
  lu.assertEquals(r50.layer3[1].bn3.weight:abs():sum():item(), 0)
  lu.assertEquals(r50.layer3[1].conv2.stride, { 2, 2 })   -- the stride sits on the 3x3 conv ("v1.5")
  local c = models.resnet18_cifar()
  lu.assertNil(c.maxpool)
  lu.assertEquals(c.conv1.weight:size(), { 64, 3, 3, 3 })
  trains(c, netcl.randn(2, 3, 16, 16), 10)
  -- torchvision's names, 1-based inside the Sequential stages
  local sd = c:state_dict()
  lu.assertNotNil(sd["layer1.1.conv1.weight"])
  lu.assertNotNil(sd["layer2.1.downsample.1.weight"])
  lu.assertNotNil(sd["layer4.2.bn2.running_var"])
  lu.assertNotNil(sd["fc.bias"])
end

function TestModels:test_cifar_resnets()
  netcl.manual_seed(2)
  for _, s in ipairs({ "A", "B" }) do
    local m = models.resnet20({ shortcut = s, device = dev })
    local x = netcl.randn(2, 3, 16, 16, { device = dev })
    trains(m, x, 10)
    lu.assertStrContains(tostring(m), "CifarResNet(depth=20, shortcut=" .. s)
  end
  lu.assertEquals(#models.resnet32().layer2:children(), 5)
  H.assert_error(function() models.CifarResNet(21) end, "depth must be 6n + 2")
  H.assert_error(function() models.resnet20({ shortcut = "C" }) end, "shortcut must be 'A' or 'B'")
end

function TestModels:test_blocks_jacobian()
  lu.skipIf(not H.is_cpu, "gradchecks run on the cpu backend in float64")
  netcl.manual_seed(3)
  local down = nn.Sequential(nn.Conv2d(2, 4, 1, { stride = 2, bias = false }), nn.BatchNorm2d(4))
  N.gradcheck(nn.BasicBlock(2, 4, { stride = 2, downsample = down }):double(), { N.f64(2, 2, 4, 4) })
  N.gradcheck(nn.Bottleneck(4, 1):double(), { N.f64(2, 4, 3, 3) })
  N.gradcheck(models.ShortcutA(2, 1), { N.f64(1, 2, 3, 4) })
  local b = nn.BasicBlock(3, 3)
  lu.assertEquals(b:count_parameters(), 2 * 81 + 2 * 6)
  lu.assertEquals(nn.Bottleneck(256, 64):count_parameters(), 16384 + 128 + 36864 + 128 + 16384 + 512)
end

function TestModels:test_lenet_and_mlp()
  netcl.manual_seed(4)
  local le = models.lenet5({ device = dev })
  trains(le, netcl.randn(3, 1, 28, 28, { device = dev }), 10)
  local tl = models.lenet5({ activation = "tanh", pool = "avg", num_classes = 4, device = dev })
  lu.assertEquals(tl[2].__name, "Tanh")
  lu.assertEquals(tl[3].__name, "AvgPool2d")
  trains(tl, netcl.randn(2, 1, 28, 28, { device = dev }), 4)
  local m = models.mlp({ 784, 128, 64, 10 }, { dropout = 0.2, batch_norm = true, flatten = true, device = dev })
  local names = {}
  for _, c in ipairs(m:children()) do names[#names + 1] = c.__name end
  lu.assertEquals(names, { "Flatten", "Linear", "BatchNorm1d", "ReLU", "Dropout", "Linear", "BatchNorm1d", "ReLU", "Dropout", "Linear" })
  trains(m, netcl.randn(4, 1, 28, 28, { device = dev }), 10)
  lu.assertEquals(models.mlp({ 4, 3 }):len(), 1)
  lu.assertEquals(models.mlp({ 4, 8, 2 }, { activation = "gelu" })[2].__name, "GELU")
  lu.assertEquals(models.mlp({ 4, 8, 2 }, { activation = nn.Tanh })[2].__name, "Tanh")
  lu.assertEquals(models.mlp({ 4, 8, 2 }, { activation = function() return nn.LeakyReLU(0.2) end })[2].negative_slope, 0.2)
  H.assert_error(function() models.mlp({ 4 }) end, "at least 2 sizes")
  H.assert_error(function() models.mlp({ 4, 2 }, { activation = "swish" }) end, "unknown activation 'swish'")
  H.assert_error(function() models.lenet5({ classes = 3 }) end, "unknown option 'classes'")
end

function TestModels:test_device_matches_cpu()
  H.against_cpu(function(d)
    netcl.manual_seed(5)
    local m = models.resnet20({ shortcut = "A", device = d })
    local le = models.lenet5({ device = d })
    netcl.manual_seed(6)
    local x = netcl.randn(2, 3, 8, 8, { device = d })
    local y = m(x)
    local z = le(netcl.randn(2, 1, 28, 28, { device = d }))
    ;(y:sum() + z:sum()):backward()
    m:eval()
    return y, z, m(x), m.conv1.weight.grad, m.layer3[1].conv1.weight.grad, le[1].weight.grad, m.layer2[1].bn1.running_var
  end, 1e-3, 1e-4)
end

function TestModels:test_save_load_round_trip()
  local x = netcl.randn(2, 3, 8, 8, { device = dev })
  local train = function(m) m(netcl.randn(4, 3, 8, 8, { device = dev })) end   -- moves the batch-norm statistics
  N.roundtrip(function() return models.resnet20({ device = dev }) end, x, nil, train)
  N.roundtrip(function() return models.lenet5({ device = dev }) end, netcl.randn(2, 1, 28, 28, { device = dev }))
end
