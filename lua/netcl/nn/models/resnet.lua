-- netcl/nn/models/resnet.lua — residual networks: BasicBlock and
-- Bottleneck (reusable), ResNet-18/34/50/101/152 in torchvision's ImageNet
-- layout (7x7 stride-2 stem, 3x3 max-pool, stride on the Bottleneck's 3x3
-- conv: "v1.5"), the CIFAR variant of ResNet-18 (3x3 stride-1 stem, no
-- max-pool) and the CIFAR ResNets of He et al. 2015 (ResNet-20/32/44/56/110:
-- 16-32-64 channels, 6n + 2 layers) with option-A (parameter-free: strided
-- identity padded with zero channels) or option-B (1x1 conv + BN
-- projection) shortcuts. Initialisation is torchvision's: convolutions
-- kaiming_normal(fan_out, relu), batch-norm weight 1 and bias 0, the linear
-- head PyTorch's default. Children are named as in torchvision except that
-- list containers count from 1 (layer1.1.conv1 is torchvision's layer1.0.conv1).
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local containers = require("netcl.nn.containers")
local conv = require("netcl.nn.layers.conv")
local norm = require("netcl.nn.layers.norm")
local pool = require("netcl.nn.layers.pool")
local linear = require("netcl.nn.layers.linear")
local activation = require("netcl.nn.layers.activation")
local init = require("netcl.nn.init_fns")
local F = require("netcl.nn.functional")
local release_passed = require("netcl.lifetime").release_passed
local Module, throw = module.Module, lib.throw
local Sequential, Conv2d, BatchNorm2d = containers.Sequential, conv.Conv2d, norm.BatchNorm2d

local M = {}

local function conv3x3(cin, cout, stride, f)
  return Conv2d(cin, cout, 3, { stride = stride or 1, padding = 1, bias = false, device = f.device, dtype = f.dtype })
end
local function conv1x1(cin, cout, stride, f)
  return Conv2d(cin, cout, 1, { stride = stride or 1, bias = false, device = f.device, dtype = f.dtype })
end
local function bn(c, f) return BatchNorm2d(c, { device = f.device, dtype = f.dtype }) end

-- ---- blocks -------------------------------------------------------------------------------

-- relu(bn(x)) with the relu inside the batch norm's passes (no tensor or
-- pass of its own), unless bn has hooks, which then see its output before
-- the relu as they would with separate modules, or does not run
-- BatchNorm's own forward (module.fuses_relu)
local function bn_relu(b, x)
  if not module.fuses_relu(b) then return b(x):relu() end
  return b(x, "relu")
end

local function same_kind(a, b)
  if a.dtype ~= b.dtype or a:dim() ~= b:dim() then return false end
  for d = 1, a:dim() do if a:size(d) ~= b:size(d) then return false end end
  return true
end

-- relu(bn(x) + identity), the shortcut added in the batch norm's pass too
-- where identity matches x's shape and dtype (and bn_relu's conditions)
local function bn_add_relu(b, x, identity)
  if not module.fuses_relu(b) or not same_kind(identity, x) then
    return (b(x) + identity):relu()
  end
  return b(x, "relu", identity)
end

-- BasicBlock(inplanes, planes, {stride = 1, downsample = module | nil, device, dtype}):
-- relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), 3x3 convs; expansion 1
local BasicBlock = Module:extend("BasicBlock")
M.BasicBlock = BasicBlock
BasicBlock.expansion = 1

function BasicBlock:__init(inplanes, planes, opts)
  opts = opts or {}
  self.conv1 = conv3x3(inplanes, planes, opts.stride, opts)
  self.bn1 = bn(planes, opts)
  self.conv2 = conv3x3(planes, planes, 1, opts)
  self.bn2 = bn(planes, opts)
  if opts.downsample then self.downsample = opts.downsample end
end

function BasicBlock:forward(x)
  local out = bn_relu(self.bn1, self.conv1(x))
  local identity = self.downsample and self.downsample(x) or x
  return bn_add_relu(self.bn2, self.conv2(out), identity)
end

-- Bottleneck(inplanes, planes, {stride = 1, downsample, groups = 1, base_width = 64, device, dtype}):
-- 1x1 (width) -> 3x3 (width, stride) -> 1x1 (planes * 4), each with BN, plus the shortcut
local Bottleneck = Module:extend("Bottleneck")
M.Bottleneck = Bottleneck
Bottleneck.expansion = 4

function Bottleneck:__init(inplanes, planes, opts)
  opts = opts or {}
  local width = math.floor(planes * ((opts.base_width or 64) / 64)) * (opts.groups or 1)
  self.conv1 = conv1x1(inplanes, width, 1, opts)
  self.bn1 = bn(width, opts)
  self.conv2 = Conv2d(width, width, 3, { stride = opts.stride or 1, padding = 1, groups = opts.groups or 1, bias = false,
                                         device = opts.device, dtype = opts.dtype })
  self.bn2 = bn(width, opts)
  self.conv3 = conv1x1(width, planes * 4, 1, opts)
  self.bn3 = bn(planes * 4, opts)
  if opts.downsample then self.downsample = opts.downsample end
end

function Bottleneck:forward(x)
  local out = bn_relu(self.bn1, self.conv1(x))
  out = bn_relu(self.bn2, self.conv2(out))
  local identity = self.downsample and self.downsample(x) or x
  return bn_add_relu(self.bn3, self.conv3(out), identity)
end

-- option-A shortcut: x[:, :, ::s, ::s] with `pad` zero channels on each side
local ShortcutA = Module:extend("ShortcutA")
M.ShortcutA = ShortcutA
function ShortcutA:__init(stride, pad) self.stride, self.pad = stride, pad end
function ShortcutA:forward(x)
  if self.stride ~= 1 then x = F.avg_pool2d(x, 1, { stride = self.stride }) end
  if self.pad > 0 then x = x:pad({ 0, 0, 0, 0, self.pad, self.pad }) end
  return x
end
function ShortcutA:extra_repr() return ("stride=%d, pad=%d"):format(self.stride, self.pad) end

-- ---- initialisation ---------------------------------------------------------------------------

-- torchvision's: kaiming_normal(fan_out, relu) for convs, BN (1, 0); with
-- zero_init_residual the last BN of each block starts at 0
local function init_weights(model, zero_init_residual)
  for _, m in ipairs(model:modules()) do
    if m.__name == "Conv2d" then
      init.kaiming_normal_(m.weight, { mode = "fan_out", nonlinearity = "relu" })
    elseif m.__name == "BatchNorm2d" then
      init.ones_(m.weight); init.zeros_(m.bias)
    end
  end
  if zero_init_residual then
    for _, m in ipairs(model:modules()) do
      if m.__name == "Bottleneck" then init.zeros_(m.bn3.weight)
      elseif m.__name == "BasicBlock" then init.zeros_(m.bn2.weight) end
    end
  end
end

-- ---- ResNet (ImageNet layout and the CIFAR ResNet-18) -------------------------------------------

local ResNet = Module:extend("ResNet")
M.ResNet = ResNet

local OPTS = { num_classes = true, cifar_stem = true, in_channels = true, zero_init_residual = true, groups = true,
               width_per_group = true, device = true, dtype = true }

-- ResNet(block, {n1, n2, n3, n4}, {num_classes = 1000, in_channels = 3,
-- cifar_stem = false, zero_init_residual = false, groups = 1, width_per_group = 64, device, dtype})
function ResNet:__init(block, layers, opts)
  opts = opts or {}
  for k in pairs(opts) do if not OPTS[k] then throw(("ResNet: unknown option '%s'"):format(tostring(k))) end end
  if block ~= BasicBlock and block ~= Bottleneck then throw("ResNet: block must be nn.BasicBlock or nn.Bottleneck") end
  if type(layers) ~= "table" or #layers ~= 4 then throw("ResNet: layers must be a table of 4 block counts") end
  local f = { device = opts.device, dtype = opts.dtype }
  self.groups, self.base_width = opts.groups or 1, opts.width_per_group or 64
  self.inplanes = 64
  local cin = opts.in_channels or 3
  if opts.cifar_stem then
    self.conv1 = conv3x3(cin, 64, 1, f)
  else
    self.conv1 = Conv2d(cin, 64, 7, { stride = 2, padding = 3, bias = false, device = f.device, dtype = f.dtype })
  end
  self.bn1 = bn(64, f)
  self.relu = activation.ReLU()
  if not opts.cifar_stem then self.maxpool = pool.MaxPool2d(3, { stride = 2, padding = 1 }) end
  self.layer1 = self:_make_layer(block, 64, layers[1], 1, f)
  self.layer2 = self:_make_layer(block, 128, layers[2], 2, f)
  self.layer3 = self:_make_layer(block, 256, layers[3], 2, f)
  self.layer4 = self:_make_layer(block, 512, layers[4], 2, f)
  self.avgpool = pool.AdaptiveAvgPool2d(1)
  self.fc = linear.Linear(512 * block.expansion, opts.num_classes or 1000, f)
  init_weights(self, opts.zero_init_residual)
end

function ResNet:_make_layer(block, planes, blocks, stride, f)
  local downsample
  if stride ~= 1 or self.inplanes ~= planes * block.expansion then
    downsample = Sequential(conv1x1(self.inplanes, planes * block.expansion, stride, f), bn(planes * block.expansion, f))
  end
  local list = { block(self.inplanes, planes, { stride = stride, downsample = downsample, groups = self.groups,
                                                 base_width = self.base_width, device = f.device, dtype = f.dtype }) }
  self.inplanes = planes * block.expansion
  for _ = 2, blocks do
    list[#list + 1] = block(self.inplanes, planes, { groups = self.groups, base_width = self.base_width,
                                                     device = f.device, dtype = f.dtype })
  end
  return Sequential(list)
end

-- x [N, C, H, W] -> logits [N, num_classes]
-- x through each module in turn, each result released once the next module
-- consumed it (netcl.lifetime; the stem's outputs at 224px are hundreds of MB)
local function through(self, x, ...)
  for i = 1, select("#", ...) do
    local m = select(i, ...)
    if m then
      local y = m(x)
      if y ~= x then release_passed(x, self) end
      x = y
    end
  end
  return x
end

function ResNet:forward(x)
  x = through(self, x, self.conv1, self.bn1, self.relu, self.maxpool or false, self.layer1, self.layer2, self.layer3,
    self.layer4, self.avgpool)
  return self.fc(x:view(x:size(1), -1))
end

function M.resnet18(opts) return ResNet(BasicBlock, { 2, 2, 2, 2 }, opts) end
function M.resnet34(opts) return ResNet(BasicBlock, { 3, 4, 6, 3 }, opts) end
function M.resnet50(opts) return ResNet(Bottleneck, { 3, 4, 6, 3 }, opts) end
function M.resnet101(opts) return ResNet(Bottleneck, { 3, 4, 23, 3 }, opts) end
function M.resnet152(opts) return ResNet(Bottleneck, { 3, 8, 36, 3 }, opts) end

-- ResNet-18 for 32x32 images: 3x3 stride-1 stem, no max-pool, 10 classes by default
function M.resnet18_cifar(opts)
  local o = { cifar_stem = true, num_classes = 10 }
  for k, v in pairs(opts or {}) do o[k] = v end
  return ResNet(BasicBlock, { 2, 2, 2, 2 }, o)
end

-- ---- the CIFAR ResNets of He et al. (6n + 2 layers) -------------------------------------------

local CifarResNet = Module:extend("CifarResNet")
M.CifarResNet = CifarResNet

-- CifarResNet(depth, {num_classes = 10, shortcut = "B" | "A", in_channels = 3, device, dtype})
function CifarResNet:__init(depth, opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "num_classes" and k ~= "shortcut" and k ~= "in_channels" and k ~= "device" and k ~= "dtype" and k ~= "zero_init_residual" then
      throw(("CifarResNet: unknown option '%s'"):format(tostring(k)))
    end
  end
  if type(depth) ~= "number" or depth < 8 or (depth - 2) % 6 ~= 0 then
    throw("CifarResNet: depth must be 6n + 2 (20, 32, 44, 56, 110, ...), got " .. tostring(depth))
  end
  local shortcut = opts.shortcut or "B"
  if shortcut ~= "A" and shortcut ~= "B" then throw("CifarResNet: shortcut must be 'A' or 'B', got " .. tostring(shortcut)) end
  self.depth, self.shortcut = depth, shortcut
  local n = (depth - 2) / 6
  local f = { device = opts.device, dtype = opts.dtype }
  self.conv1 = conv3x3(opts.in_channels or 3, 16, 1, f)
  self.bn1 = bn(16, f)
  local inplanes = 16
  for stage, planes in ipairs({ 16, 32, 64 }) do
    local list = {}
    for b = 1, n do
      local stride = (stage > 1 and b == 1) and 2 or 1
      local down
      if stride ~= 1 or inplanes ~= planes then
        if shortcut == "A" then down = ShortcutA(stride, (planes - inplanes) / 2)
        else down = Sequential(conv1x1(inplanes, planes, stride, f), bn(planes, f)) end
      end
      list[b] = BasicBlock(inplanes, planes, { stride = stride, downsample = down, device = f.device, dtype = f.dtype })
      inplanes = planes
    end
    self["layer" .. stage] = Sequential(list)
  end
  self.fc = linear.Linear(64, opts.num_classes or 10, f)
  init_weights(self, opts.zero_init_residual)
end

function CifarResNet:forward(x)
  x = bn_relu(self.bn1, self.conv1(x))
  x = self.layer3(self.layer2(self.layer1(x)))
  x = F.adaptive_avg_pool2d(x, 1)
  return self.fc(x:view(x:size(1), -1))
end

function CifarResNet:extra_repr() return ("depth=%d, shortcut=%s"):format(self.depth, self.shortcut) end

for _, d in ipairs({ 20, 32, 44, 56, 110 }) do
  M["resnet" .. d] = function(opts) return CifarResNet(d, opts) end
end

return M
