-- examples/custom_kernel.lua — your own OpenCL kernel as a netcl op with a
-- gradient: Swish, y = x * sigmoid(beta * x), written as two kernels
-- (forward and backward) in OpenCL C, compiled by netcl.kernel (cached
-- like netcl's own programs), made differentiable with autograd.Function,
-- checked against the same formula written with netcl's ops, and used to
-- train a small model.
--   netcl examples/custom_kernel.lua [--device opencl:N] [--steps N]
local netcl = require("netcl")
local nn, optim, ag = netcl.nn, netcl.optim, netcl.autograd

local device, steps = nil, 60
for i = 1, #arg do
  if arg[i] == "--device" then device = arg[i + 1] end
  if arg[i] == "--steps" then steps = tonumber(arg[i + 1]) end
end
if not device then   -- the first OpenCL device: the cpu backend runs no OpenCL C
  for _, d in ipairs(netcl.devices()) do if d.type ~= "cpu" then device = d.name; break end end
end
if not device or netcl.device(device).type == "cpu" then
  print("custom_kernel: needs an OpenCL device (PoCL runs OpenCL on CPUs: make deps installs it)")
  os.exit(0)
end

-- every tensor arrives as (buffer, offset in elements)
local SOURCE = [[
__kernel void swish_forward(__global float *y, long yo, __global const float *x, long xo, float beta, long n) {
  long i = get_global_id(0);
  if (i < n) {
    float v = x[xo + i];
    y[yo + i] = v / (1.0f + exp(-beta * v));
  }
}
__kernel void swish_backward(__global float *dx, long dxo, __global const float *x, long xo,
                             __global const float *g, long go, float beta, long n) {
  long i = get_global_id(0);
  if (i < n) {
    float v = x[xo + i];
    float s = 1.0f / (1.0f + exp(-beta * v));
    dx[dxo + i] = g[go + i] * (s + beta * v * s * (1.0f - s));
  }
}
]]
local fwd = netcl.kernel(SOURCE, "swish_forward", { device = device })
local bwd = netcl.kernel(SOURCE, "swish_backward", { device = device })

local BETA = 1.5
local Swish = ag.Function({
  name = "swish",
  forward = function(ctx, x)
    x = x:contiguous()
    ctx.x = x
    local y = netcl.empty(x:size(), { device = x.device })
    fwd(x:numel(), y, x, { float = BETA }, { long = x:numel() })
    return y
  end,
  backward = function(ctx, g)
    g = g:contiguous()
    local dx = netcl.empty(g:size(), { device = g.device })
    bwd(g:numel(), dx, ctx.x, g, { float = BETA }, { long = g:numel() })
    return dx
  end,
})

-- the same op from netcl's own ops, as the reference
local function swish_ref(x) return x * (x * BETA):sigmoid() end

netcl.manual_seed(5)
local x1 = netcl.randn(64, 33, { device = device, requires_grad = true })
local x2 = x1:detach():clone():requires_grad_(true)
local y1, y2 = Swish(x1), swish_ref(x2)
local w = netcl.randn(64, 33, { device = device })
local l1, l2 = (y1 * w):sum(), (y2 * w):sum()
l1:backward()
l2:backward()
local ferr = (y1 - y2):abs():max():item()
local berr = (x1.grad - x2.grad):abs():max():item()
print(("custom kernel on %s: forward max error %.2e, backward max error %.2e"):format(device, ferr, berr))
assert(ferr < 1e-5 and berr < 1e-5, "the custom op disagrees with the reference")

-- a small model with the custom activation
local Act = nn.Module:extend("Swish")
function Act:forward(x) return Swish(x) end
local model = nn.Sequential(nn.Linear(8, 32), Act(), nn.Linear(32, 1)):to(device)
local opt = optim.Adam(model, { lr = 1e-2 })
local xs = netcl.randn(256, 8, { device = device })
local ys = (xs:narrow(2, 1, 1) * xs:narrow(2, 2, 1)):sin()
local first, last
for s = 1, steps do
  opt:zero_grad()
  local loss = nn.MSELoss()(model(xs), ys)
  loss:backward()
  opt:step()
  if s == 1 then first = loss:item() end
  last = loss:item()
end
print(("training with the custom activation: loss %.4f -> %.4f in %d steps"):format(first, last, steps))
assert(last < first, "the loss did not go down")
