-- netcl/nn/init_fns.lua — nn.init: in-place initialisers with PyTorch's
-- names, formulas and defaults (uniform_, normal_, constant_, xavier/glorot,
-- kaiming/he, orthogonal_, calculate_gain). Each writes under no_grad into
-- the tensor and returns it. Random values come from netcl's global Philox
-- stream, drawn on the tensor's device: the same seed gives the same
-- weights on every device. orthogonal_ factors on the cpu in float64 (a
-- Householder QR in Lua) and copies the result in.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local core = require("netcl.core")
local throw, is_tensor = lib.throw, tensor.is_tensor

local M = {}

local FLOAT = { float32 = true, float16 = true, bfloat16 = true, float64 = true }

local function check(fname, t)
  if not is_tensor(t) then throw(("nn.init.%s: expected a tensor, got %s"):format(fname, type(t))) end
  if not FLOAT[t.dtype] then throw(("nn.init.%s: expected a float tensor, got %s"):format(fname, t.dtype)) end
  return t
end

-- draws in the tensor's own dtype where the rng has it, else float32
local function draw(kind, t)
  local dt = (t.dtype == "float64") and "float64" or "float32"
  local f = kind == "normal" and core.randn or core.rand
  return f(t:size(), { device = t.device, dtype = dt })
end

local function write(t, v)
  core.no_grad(function() t:copy_(v) end)
  return t
end

-- t = draw * scale + shift, the draw scaled in place and freed at once (a
-- model's initialisation leaves no garbage the size of its parameters)
local function fill_random(t, kind, scale, shift)
  local v = draw(kind, t)
  core.no_grad(function() v:mul_(scale):add_(shift) end)
  write(t, v)
  v:free()
  return t
end

function M.uniform_(t, a, b)
  check("uniform_", t)
  a, b = a or 0, b or 1
  return fill_random(t, "uniform", b - a, a)
end

function M.normal_(t, mean, std)
  check("normal_", t)
  mean, std = mean or 0, std or 1
  return fill_random(t, "normal", std, mean)
end

function M.constant_(t, value)
  check("constant_", t)
  if type(value) ~= "number" then throw("nn.init.constant_: value must be a number, got " .. type(value)) end
  core.no_grad(function() t:fill_(value) end)
  return t
end
function M.zeros_(t) return M.constant_(t, 0) end
function M.ones_(t) return M.constant_(t, 1) end

-- the identity in a 2-D tensor (ones on the diagonal)
function M.eye_(t)
  check("eye_", t)
  if t:dim() ~= 2 then throw("nn.init.eye_: expected a 2-D tensor, got " .. t:dim() .. " dims") end
  return write(t, core.eye(t:size(1), t:size(2), { device = t.device, dtype = t.dtype }))
end

-- fan_in, fan_out of a weight: [out, in, k...] (Linear, Conv)
function M.calculate_fan_in_and_fan_out(t)
  local d = t:dim()
  if d < 2 then throw("nn.init: fan in and fan out need a tensor with at least 2 dims, got " .. d) end
  local receptive = 1
  for i = 3, d do receptive = receptive * t:size(i) end
  return t:size(2) * receptive, t:size(1) * receptive
end

local GAINS = { linear = 1, identity = 1, sigmoid = 1, conv1d = 1, conv2d = 1, conv3d = 1,
                conv_transpose1d = 1, conv_transpose2d = 1, conv_transpose3d = 1,
                tanh = 5 / 3, relu = math.sqrt(2), selu = 3 / 4 }

-- PyTorch's recommended gain for a nonlinearity (param: leaky_relu's slope, default 0.01)
function M.calculate_gain(nonlinearity, param)
  local g = GAINS[nonlinearity]
  if g then return g end
  if nonlinearity == "leaky_relu" then
    local slope = param == nil and 0.01 or param
    if type(slope) ~= "number" then throw("nn.init.calculate_gain: negative slope must be a number") end
    return math.sqrt(2 / (1 + slope * slope))
  end
  throw("nn.init.calculate_gain: unsupported nonlinearity '" .. tostring(nonlinearity) .. "'")
end

function M.xavier_uniform_(t, gain)
  check("xavier_uniform_", t)
  local fan_in, fan_out = M.calculate_fan_in_and_fan_out(t)
  local a = (gain or 1) * math.sqrt(6 / (fan_in + fan_out))
  return M.uniform_(t, -a, a)
end

function M.xavier_normal_(t, gain)
  check("xavier_normal_", t)
  local fan_in, fan_out = M.calculate_fan_in_and_fan_out(t)
  return M.normal_(t, 0, (gain or 1) * math.sqrt(2 / (fan_in + fan_out)))
end

-- (t, a, mode, nonlinearity) or (t, {a =, mode =, nonlinearity =})
local function kaiming_args(fname, t, a, mode, nonlinearity)
  check(fname, t)
  if type(a) == "table" then a, mode, nonlinearity = a.a, a.mode, a.nonlinearity end
  a, mode, nonlinearity = a or 0, mode or "fan_in", nonlinearity or "leaky_relu"
  if mode ~= "fan_in" and mode ~= "fan_out" then throw(("nn.init.%s: mode must be 'fan_in' or 'fan_out', got %s"):format(fname, tostring(mode))) end
  local fan_in, fan_out = M.calculate_fan_in_and_fan_out(t)
  local fan = mode == "fan_in" and fan_in or fan_out
  if fan == 0 then throw(("nn.init.%s: cannot initialise a tensor with zero elements"):format(fname)) end
  return M.calculate_gain(nonlinearity, a) / math.sqrt(fan)
end

function M.kaiming_uniform_(t, a, mode, nonlinearity)
  local std = kaiming_args("kaiming_uniform_", t, a, mode, nonlinearity)
  local bound = math.sqrt(3) * std
  return M.uniform_(t, -bound, bound)
end

function M.kaiming_normal_(t, a, mode, nonlinearity)
  local std = kaiming_args("kaiming_normal_", t, a, mode, nonlinearity)
  return M.normal_(t, 0, std)
end

M.glorot_uniform_, M.glorot_normal_ = M.xavier_uniform_, M.xavier_normal_
M.he_uniform_, M.he_normal_ = M.kaiming_uniform_, M.kaiming_normal_

-- Householder QR of the m x n (m >= n) row-major matrix a (float64, in
-- place); returns Q's first n columns (m x n) with the signs that make R's
-- diagonal positive (PyTorch's orthogonal_ convention).
local function householder_q(a, m, n)
  local vs, rdiag = {}, {}
  for k = 0, n - 1 do
    local norm = 0
    for i = k, m - 1 do norm = norm + a[i * n + k] ^ 2 end
    norm = math.sqrt(norm)
    local alpha = a[k * n + k] > 0 and -norm or norm
    local v = ffi.new("double[?]", m)
    for i = k, m - 1 do v[i] = a[i * n + k] end
    v[k] = v[k] - alpha
    local vn = 0
    for i = k, m - 1 do vn = vn + v[i] * v[i] end
    if vn > 0 then
      for j = k, n - 1 do          -- A[k:, k:] -= 2 v (v^T A) / (v^T v)
        local dot = 0
        for i = k, m - 1 do dot = dot + v[i] * a[i * n + j] end
        local f = 2 * dot / vn
        for i = k, m - 1 do a[i * n + j] = a[i * n + j] - f * v[i] end
      end
    end
    vs[k], rdiag[k] = { v = v, vn = vn }, a[k * n + k]
  end
  local q = ffi.new("double[?]", m * n)
  for j = 0, n - 1 do q[j * n + j] = 1 end
  for k = n - 1, 0, -1 do          -- Q = H_0 ... H_{n-1} applied to I[:, :n]
    local v, vn = vs[k].v, vs[k].vn
    if vn > 0 then
      for j = 0, n - 1 do
        local dot = 0
        for i = k, m - 1 do dot = dot + v[i] * q[i * n + j] end
        local f = 2 * dot / vn
        for i = k, m - 1 do q[i * n + j] = q[i * n + j] - f * v[i] end
      end
    end
  end
  for j = 0, n - 1 do
    if rdiag[j] < 0 then for i = 0, m - 1 do q[i * n + j] = -q[i * n + j] end end
  end
  return q
end

-- a (semi-)orthogonal matrix, scaled by gain, viewed as t's shape
-- ([rows, numel / rows]); rows or columns orthonormal, whichever fit
function M.orthogonal_(t, gain)
  check("orthogonal_", t)
  if t:dim() < 2 then throw("nn.init.orthogonal_: expected a tensor with at least 2 dims, got " .. t:dim()) end
  local rows = t:size(1)
  local cols = t:numel() / rows
  if rows * cols == 0 then return t end
  local flat = core.randn(rows, cols, { device = "cpu", dtype = "float64" })
  local m, n = rows, cols
  if rows < cols then flat, m, n = flat:t():contiguous(), cols, rows end
  local a = ffi.new("double[?]", m * n)
  lib.check(lib.C.netcl_tensor_to_doubles(tensor.handle(flat), a, m * n))
  local q = householder_q(a, m, n)
  local qt = core.from_pointer(q, "float64", { m, n }, { device = "cpu" })
  if rows < cols then qt = qt:t() end
  return write(t, (qt * (gain or 1)):reshape(t:size()):to(t.device))
end

return M
