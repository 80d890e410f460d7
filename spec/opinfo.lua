-- spec/opinfo.lua — test cases per op of the op table (in the manner of
-- PyTorch's OpInfo). opgrad_spec runs each case's gradient check (float64,
-- cpu); opdevice_spec runs each case on every OpenCL device against the
-- cpu, forward and backward. A case:
--   op     = name(s) in the C op table it covers
--   inputs = makers, one per differentiable input (R, P, T, U below)
--   fn     = function(x1, ..., env) -> one tensor; env.tensor(v, dtype)
--            builds constant tensors (indices, masks) on the case's device
--   grad   = false for cases without a gradient; gtol = gradcheck opts;
--   rtol/atol = device tolerance (default float32's 1e-4 / 1e-5)
-- Inputs are seeded, so the cpu and the device see the same values.
local netcl = require("netcl")

local M = {}
M.netcl = netcl

local function maker(kind, shape, lo, hi)
  return function(env, seed)
    netcl.manual_seed(seed)
    local o = { device = env.device, dtype = env.dtype }
    local s = shape
    if kind == "T" then -- non-contiguous: built with the last two dims swapped, then transposed
      s = { unpack(shape) }
      s[#s - 1], s[#s] = s[#s], s[#s - 1]
    end
    local x
    if kind == "P" then x = netcl.rand(s, o) + 0.5
    elseif kind == "U" then x = netcl.rand(s, o) * (hi - lo) + lo
    else x = netcl.randn(s, o) end
    if kind == "T" then x = x:transpose(#s - 1, #s) end
    return x
  end
end
-- standard normal; positive in [0.5, 1.5); non-contiguous normal; uniform [lo, hi)
local function R(...) return maker("R", { ... }) end
local function P(...) return maker("P", { ... }) end
local function T(...) return maker("T", { ... }) end
local function U(lo, hi, ...) return maker("U", { ... }, lo, hi) end
M.R, M.P, M.T, M.U = R, P, T, U

local cases = {}
M.cases = cases
local function case(c) cases[#cases + 1] = c end
M.case = case

-- ---- elementwise unary ---------------------------------------------------
local function unary_case(name, mk, call, gtol)
  for i, m in ipairs(mk) do
    case({ op = name, inputs = { m }, fn = call or function(x) return x[name](x) end, gtol = gtol,
           label = name .. "#" .. i })
  end
end
for _, n in ipairs({ "neg", "abs", "sign", "square", "exp", "expm1", "sin", "cos", "tanh", "sigmoid", "relu",
                     "silu", "gelu", "softplus", "erf", "floor", "ceil", "round", "trunc" }) do
  unary_case(n, { R(3, 5), T(4, 3), R(1), R(2, 1, 3) })
end
for _, n in ipairs({ "reciprocal", "sqrt", "rsqrt", "log", "log1p", "log2" }) do
  unary_case(n, { P(3, 5), T(2, 3) })
end
unary_case("tan", { U(-1, 1, 3, 4) })
unary_case("relu6", { U(-8, 8, 4, 5) })
unary_case("leaky_relu", { R(3, 5) }, function(x) return x:leaky_relu(0.2) end)
unary_case("elu", { R(3, 5), T(3, 4) }, function(x) return x:elu(0.7) end)
unary_case("hardtanh", { U(-2, 2, 4, 6) }, function(x) return x:hardtanh(-0.8, 1.1) end)
unary_case("clamp", { R(5, 3), T(3, 3) }, function(x) return x:clamp(-0.5, 0.7) end)
case({ op = "gelu", inputs = { R(4, 3) }, fn = function(x) return x:gelu("tanh") end, label = "gelu_tanh" })

-- ---- elementwise binary ------------------------------------------------------
for _, n in ipairs({ "add", "sub", "mul", "maximum", "minimum" }) do
  case({ op = n, inputs = { R(2, 3, 4), R(3, 1) }, fn = function(a, b) return a[n](a, b) end })
  case({ op = n, inputs = { T(4, 3), R(1, 3) }, fn = function(a, b) return a[n](a, b) end })
  case({ op = n, inputs = { R(5) }, fn = function(a) return a[n](a, 0.3) end })
end
case({ op = "div", inputs = { R(3, 4), P(4) }, fn = function(a, b) return a / b end })
case({ op = "div", inputs = { P(3, 4) }, fn = function(a) return 2 / a end })
case({ op = "pow", inputs = { P(3, 4), U(-2, 2, 3, 1) }, fn = function(a, b) return a ^ b end })
case({ op = "pow", inputs = { P(5) }, fn = function(a) return a ^ 3 end })
case({ op = "pow", inputs = { R(5) }, fn = function(a) return 2 ^ a end })
for _, n in ipairs({ "eq", "ne", "lt", "le", "gt", "ge" }) do
  case({ op = n, grad = false, inputs = { U(-2, 2, 3, 4), U(-2, 2, 4) },
         fn = function(a, b) return a:round()[n](a:round(), b:round()) end })
end

-- ---- reductions ------------------------------------------------------------------
for _, n in ipairs({ "sum", "mean" }) do
  case({ op = n, inputs = { R(3, 5) }, fn = function(x) return x[n](x) end })
  case({ op = n, inputs = { T(4, 3) }, fn = function(x) return x[n](x, 1) end })
  case({ op = n, inputs = { R(2, 3, 4) }, fn = function(x) return x[n](x, 2, true) end })
end
case({ op = "prod", inputs = { P(3, 4) }, fn = function(x) return x:prod(2) end })
case({ op = "prod", inputs = { P(2, 3) }, fn = function(x) return x:prod() end })
for _, n in ipairs({ "max", "min" }) do
  case({ op = n, inputs = { R(3, 5) }, fn = function(x) return x[n](x) end })
  case({ op = n, inputs = { T(4, 3) }, fn = function(x) return (x[n](x, 2)) end })
  case({ op = n, inputs = { R(2, 3, 4) }, fn = function(x) return (x[n](x, 1, true)) end })
end
for _, n in ipairs({ "argmax", "argmin" }) do
  case({ op = n, grad = false, inputs = { R(4, 7) }, fn = function(x) return x[n](x, 2) end })
end

-- ---- linear algebra ------------------------------------------------------------------
case({ op = "matmul", inputs = { R(4, 3), R(3, 5) }, fn = function(a, b) return a:matmul(b) end })
case({ op = "matmul", inputs = { R(2, 4, 3), T(3, 2) }, fn = function(a, b) return a:matmul(b) end })
case({ op = "matmul", inputs = { R(3), R(3, 2) }, fn = function(a, b) return a:matmul(b) end })
case({ op = "matmul", inputs = { R(4), R(4) }, fn = function(a, b) return a:matmul(b) end })

-- ---- views and copies --------------------------------------------------------------------
case({ op = { "view", "contiguous" }, inputs = { T(3, 4) }, fn = function(x) return x:contiguous():view(2, 6) end })
case({ op = "reshape", inputs = { T(3, 4) }, fn = function(x) return x:reshape(4, 3) * 1 end })
case({ op = "transpose", inputs = { R(2, 3, 4) }, fn = function(x) return x:transpose(1, 3) * 1 end })
case({ op = "permute", inputs = { R(2, 3, 4) }, fn = function(x) return x:permute(3, 1, 2) * 1 end })
case({ op = "expand", inputs = { R(3, 1) }, fn = function(x) return x:expand(3, 4) * 1 end })
case({ op = "narrow", inputs = { R(4, 5) }, fn = function(x) return x:narrow(2, 2, 3) * 1 end })
case({ op = "select", inputs = { R(4, 5) }, fn = function(x) return x:select(1, 3) * 1 end })
case({ op = "slice", inputs = { R(4, 5) }, fn = function(x) return x[{ { 2, 3 }, { 1, 4 } }] * 1 end })
case({ op = { "squeeze", "unsqueeze" }, inputs = { R(3, 1, 4) },
       fn = function(x) return x:squeeze(2):unsqueeze(1) * 1 end })
case({ op = "cast", inputs = { R(3, 4) }, fn = function(x) return x:float():double() * 1 end,
       gtol = { eps = 1e-2, atol = 1e-3, rtol = 1e-2 } })
case({ op = "to", inputs = { R(3, 4) }, fn = function(x, env) return x:to("cpu"):to(env.device) * 1 end })
case({ op = "pad", inputs = { R(2, 3, 4) }, fn = function(x) return x:pad({ 1, 2, 0, 1 }, 0.5) end })
case({ op = "pad", inputs = { R(3, 5) }, fn = function(x) return x:pad({ -1, 1 }) end })

-- More cases live in spec/opinfo_<family>.lua files: each returns
-- function(M) and adds its cases with M.case (so families never edit this file).
local dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local p = io.popen('ls "' .. dir .. '"/opinfo_*.lua 2>/dev/null')
local files = {}
for f in p:lines() do files[#files + 1] = f end
p:close()
table.sort(files)
for _, f in ipairs(files) do assert(loadfile(f))()(M) end

return M
