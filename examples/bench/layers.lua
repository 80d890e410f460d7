-- examples/bench/layers.lua — one layer at a time, forward and forward +
-- backward, at the shapes of the model benchmarks (LeNet-5 at batch 256,
-- ResNet-18 CIFAR at batch 128, the README demo's CNN at batch 128,
-- ResNet-50 at 224x224 and batch 64) and of MobileNetV2's depthwise layers
-- (batch 128): every convolution strategy that applies,
-- then pooling, batch norm and ReLU, each next to PyTorch's figure for the
-- same layer (examples/bench/layers_peer.py, same command). Finds which
-- layer a slow model step loses its time in.
-- --tf32: both sides may use TF32 tensor cores (netcl.backends.allow_tf32;
-- cuDNN's allow_tf32, PyTorch's default for convolutions). --tf32x3: netcl
-- multiplies float32 through 3xTF32 (netcl.backends.fp32_precision, float32
-- accuracy), PyTorch in float32 (TF32 off). --algos
-- auto,tiled,... times only those strategies (the cpu's ResNet layers are
-- slow enough that all of them take minutes).
--   netcl examples/bench/layers.lua [--device NAME] [--only SUBSTRING] [--reps N] [--tf32 | --tf32x3] [--algos LIST]
local netcl = require("netcl")
local F = netcl.nn.functional
local ffi = require("ffi")

local opts = { device = nil, only = nil, reps = 10, tf32 = false, tf32x3 = false, algos = nil }
local i = 1
while i <= #arg do
  local key = arg[i]:match("^%-%-(.+)$")
  if key == "tf32" or key == "tf32x3" then opts[key] = true; i = i + 1; goto continue end
  if not key or opts[key] == nil and key ~= "device" and key ~= "only" and key ~= "algos" then
    error("unknown argument " .. arg[i] .. " (try --device NAME, --only SUBSTRING, --reps N)")
  end
  opts[key] = key == "reps" and tonumber(arg[i + 1]) or arg[i + 1]
  i = i + 2
  ::continue::
end
netcl.backends.fp32_precision = opts.tf32 and "tf32" or opts.tf32x3 and "tf32x3" or "ieee"
local dev = opts.device or netcl.default_device()

pcall(ffi.cdef, [[ struct timespec { long tv_sec; long tv_nsec; }; int clock_gettime(int clk, struct timespec *ts); ]])
local ts = ffi.new("struct timespec")
local function now() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end

-- median ms of fn over rounds of `reps` calls, synchronised per round
local function time_ms(fn)
  fn(); fn()
  netcl.synchronize(dev)
  local t = {}
  for r = 1, 5 do
    local t0 = now()
    for _ = 1, opts.reps do fn() end
    netcl.synchronize(dev)
    t[r] = (now() - t0) / opts.reps * 1e3
  end
  table.sort(t)
  return t[3]
end

-- {name, x sizes, w sizes, stride, padding[, groups]}
local CONVS = {
  { "demo conv1 b128", { 128, 1, 28, 28 }, { 32, 1, 3, 3 }, 1, 1 },
  { "demo conv2 b128", { 128, 32, 14, 14 }, { 64, 32, 3, 3 }, 1, 1 },
  { "lenet conv1 b256", { 256, 1, 28, 28 }, { 6, 1, 5, 5 }, 1, 2 },
  { "lenet conv2 b256", { 256, 6, 14, 14 }, { 16, 6, 5, 5 }, 1, 0 },
  { "resnet 64x32x32 3x3", { 128, 64, 32, 32 }, { 64, 64, 3, 3 }, 1, 1 },
  { "resnet 64->128 s2 3x3", { 128, 64, 32, 32 }, { 128, 64, 3, 3 }, 2, 1 },
  { "resnet 64->128 s2 1x1", { 128, 64, 32, 32 }, { 128, 64, 1, 1 }, 2, 0 },
  { "resnet 128x16x16 3x3", { 128, 128, 16, 16 }, { 128, 128, 3, 3 }, 1, 1 },
  { "resnet 256x8x8 3x3", { 128, 256, 8, 8 }, { 256, 256, 3, 3 }, 1, 1 },
  { "resnet 512x4x4 3x3", { 128, 512, 4, 4 }, { 512, 512, 3, 3 }, 1, 1 },
  -- the stem and the later downsampling blocks' strided layers
  { "resnet stem 3->64 3x3", { 128, 3, 32, 32 }, { 64, 3, 3, 3 }, 1, 1 },
  { "resnet 128->256 s2 3x3", { 128, 128, 16, 16 }, { 256, 128, 3, 3 }, 2, 1 },
  { "resnet 128->256 s2 1x1", { 128, 128, 16, 16 }, { 256, 128, 1, 1 }, 2, 0 },
  { "resnet 256->512 s2 3x3", { 128, 256, 8, 8 }, { 512, 256, 3, 3 }, 2, 1 },
  { "resnet 256->512 s2 1x1", { 128, 256, 8, 8 }, { 512, 256, 1, 1 }, 2, 0 },
  -- ResNet-50's layers at 224x224 (batch 64): the 7x7 stride-2 stem, the
  -- bottlenecks' 1x1 layers, their 3x3 layers at 56/28/14/7, a strided 3x3
  -- and a downsampling 1x1 (--only imagenet)
  { "imagenet stem 3->64 7x7 s2 b64", { 64, 3, 224, 224 }, { 64, 3, 7, 7 }, 2, 3 },
  { "imagenet 1x1 64->64 56x56 b64", { 64, 64, 56, 56 }, { 64, 64, 1, 1 }, 1, 0 },
  { "imagenet 1x1 256->64 56x56 b64", { 64, 256, 56, 56 }, { 64, 256, 1, 1 }, 1, 0 },
  { "imagenet 1x1 64->256 56x56 b64", { 64, 64, 56, 56 }, { 256, 64, 1, 1 }, 1, 0 },
  { "imagenet 3x3 64 56x56 b64", { 64, 64, 56, 56 }, { 64, 64, 3, 3 }, 1, 1 },
  { "imagenet 3x3 128 s2 56->28 b64", { 64, 128, 56, 56 }, { 128, 128, 3, 3 }, 2, 1 },
  { "imagenet 3x3 128 28x28 b64", { 64, 128, 28, 28 }, { 128, 128, 3, 3 }, 1, 1 },
  { "imagenet 3x3 256 14x14 b64", { 64, 256, 14, 14 }, { 256, 256, 3, 3 }, 1, 1 },
  { "imagenet 3x3 512 7x7 b64", { 64, 512, 7, 7 }, { 512, 512, 3, 3 }, 1, 1 },
  { "imagenet 1x1 256->512 s2 b64", { 64, 256, 56, 56 }, { 512, 256, 1, 1 }, 2, 0 },
  { "imagenet 1x1 512->2048 7x7 b64", { 64, 512, 7, 7 }, { 2048, 512, 1, 1 }, 1, 0 },
  { "imagenet 1x1 2048->512 7x7 b64", { 64, 2048, 7, 7 }, { 512, 2048, 1, 1 }, 1, 0 },
  -- MobileNetV2's depthwise 3x3 layers (CIFAR sizes, batch 128)
  { "mobilenet dw 144x16x16 3x3", { 128, 144, 16, 16 }, { 144, 1, 3, 3 }, 1, 1, 144 },
  { "mobilenet dw 144x32x32 s2 3x3", { 128, 144, 32, 32 }, { 144, 1, 3, 3 }, 2, 1, 144 },
  { "mobilenet dw 384x4x4 3x3", { 128, 384, 4, 4 }, { 384, 1, 3, 3 }, 1, 1, 384 },
}
local ALGOS = { "auto", "direct", "depthwise", "im2col", "gemm1x1", "winograd2", "winograd4", "implicit_gemm", "tiled" }
if opts.algos then
  ALGOS = {}
  for a in opts.algos:gmatch("[^,]+") do ALGOS[#ALGOS + 1] = a end
end

local rows = {}
local function wanted(name) return not opts.only or name:find(opts.only, 1, true) end

for _, c in ipairs(CONVS) do
  if wanted(c[1]) then
    netcl.manual_seed(1)
    local x = netcl.randn(c[2], { device = dev }):requires_grad_()
    local w = (netcl.randn(c[3], { device = dev }) * 0.1):requires_grad_()
    local groups = c[6] or 1
    local o = { stride = c[4], padding = c[5], groups = groups }
    for _, algo in ipairs(ALGOS) do
      netcl.set_conv_algo(algo)
      -- a strategy that does not apply falls back to the planner's: skip it
      local applies = algo == "auto" or algo == "direct" or algo == "im2col" or algo == "implicit_gemm" or algo == "tiled"
        or (algo == "gemm1x1" and c[3][3] == 1 and c[4] == 1 and groups == 1)
        or (algo:find("winograd") and c[3][3] == 3 and c[4] == 1 and groups == 1)
        or (algo == "depthwise" and groups > 1 and groups == c[2][2])
      if applies then
        local y = F.conv2d(x, w, nil, o)
        local g = netcl.randn(y:size(), { device = dev })
        local fwd = time_ms(function() return netcl.no_grad(function() return F.conv2d(x, w, nil, o) end) end)
        local both = time_ms(function()
          x.grad, w.grad = nil, nil
          F.conv2d(x, w, nil, o):backward(g)
        end)
        rows[#rows + 1] = { key = c[1], name = ("%s [%s]"):format(c[1], algo), fwd = fwd, both = both, algo = algo }
      end
    end
    netcl.set_conv_algo(nil)
  end
end

-- {name, x sizes, op}
local OTHERS = {
  { "lenet maxpool b256", { 256, 6, 28, 28 }, function(x) return F.max_pool2d(x, 2) end },
  { "resnet maxpool 64x32x32", { 128, 64, 32, 32 }, function(x) return F.max_pool2d(x, 2) end },
  { "resnet batchnorm 64x32x32", { 128, 64, 32, 32 }, "bn" },
  { "resnet relu 64x32x32", { 128, 64, 32, 32 }, function(x) return x:relu() end },
  { "imagenet batchnorm 64x112x112 b64", { 64, 64, 112, 112 }, "bn" },
  { "imagenet batchnorm 256x56x56 b64", { 64, 256, 56, 56 }, "bn" },
  { "imagenet batchnorm 2048x7x7 b64", { 64, 2048, 7, 7 }, "bn" },
  { "imagenet relu 256x56x56 b64", { 64, 256, 56, 56 }, function(x) return x:relu() end },
  { "imagenet bn+relu 256x56x56 b64", { 64, 256, 56, 56 }, "bn+relu" },
}
for _, c in ipairs(OTHERS) do
  if wanted(c[1]) then
    netcl.manual_seed(2)
    local x = netcl.randn(c[2], { device = dev }):requires_grad_()
    local fn = c[3]
    if fn == "bn" or fn == "bn+relu" then
      local C, relu = c[2][2], fn == "bn+relu"
      local wt = netcl.ones(C, { device = dev }):requires_grad_()
      local bs = netcl.zeros(C, { device = dev }):requires_grad_()
      local rm, rv = netcl.zeros(C, { device = dev }), netcl.ones(C, { device = dev })
      fn = function(t)
        local y = F.batch_norm(t, rm, rv, wt, bs, true, 0.1, 1e-5)
        return relu and y:relu() or y
      end
    end
    local y = fn(x)
    local g = netcl.randn(y:size(), { device = dev })
    local fwd = time_ms(function() return netcl.no_grad(function() return fn(x) end) end)
    local both = time_ms(function() x.grad = nil; fn(x):backward(g) end)
    rows[#rows + 1] = { key = c[1], name = c[1], fwd = fwd, both = both }
  end
end

-- the peer: one line "name fwd_ms both_ms" per layer
local peer = {}
local here = arg[0]:match("^(.*)/[^/]*$") or "."
local pdev = "cpu"
for _, d in ipairs(netcl.devices()) do
  if d.name == netcl.device(dev).name and d.type == "opencl_gpu" then pdev = "cuda" end
end
local p = io.popen(("python3 %s/layers_peer.py %s %d '%s' %s 2>/dev/null"):format(here, pdev, opts.reps, opts.only or "",
  opts.tf32 and "tf32" or "fp32"))
local peer_name
if p then
  for line in p:lines() do
    local dname = line:match("^device (.*)$")
    if dname then peer_name = dname end
    local key, f, b = line:match("^(.-)\t([%d%.e%-]+)\t([%d%.e%-]+)$")
    if key then peer[key] = { fwd = tonumber(f), both = tonumber(b) } end
  end
  p:close()
end

print(("netcl %s on %s (%s)"):format(netcl.version or "", dev, netcl.device(dev).name))
if peer_name then print("peer: PyTorch on " .. peer_name) end
print(("%-44s %9s %9s %9s %9s %7s"):format("layer (ms)", "fwd", "fwd+bwd", "torch fwd", "torch f+b", "ratio"))
for _, r in ipairs(rows) do
  local pr = peer[r.key]
  local pf, pb = pr and ("%9.3f"):format(pr.fwd) or "        -", pr and ("%9.3f"):format(pr.both) or "        -"
  local ratio = pr and ("%6.2fx"):format(pr.both / r.both) or "      -"
  print(("%-44s %9.3f %9.3f %s %s %s"):format(r.name, r.fwd, r.both, pf, pb, ratio))
end
print("ratio: PyTorch fwd+bwd time / netcl fwd+bwd time (> 1: netcl faster)")
