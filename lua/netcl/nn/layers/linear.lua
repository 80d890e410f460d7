-- netcl/nn/layers/linear.lua — Linear, Bilinear, Identity, Flatten and
-- Unflatten, composed from autograd ops (no hand-written backward). Default
-- initialisation is PyTorch's. Options: {bias = true, device =, dtype =}.
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local init = require("netcl.nn.init_fns")
local F = require("netcl.nn.functional")
local core = require("netcl.core")
local Module, Parameter, throw = module.Module, module.Parameter, lib.throw

local M = {}

local function positive_int(who, what, v)
  lib.integer(who, what, v)
  if v < 1 then lib.throw(("%s: %s must be a positive integer, got %s"):format(who, what, tostring(v))) end
  return v
end

local function factory(opts) return { device = opts.device, dtype = opts.dtype or "float32" } end

-- x [..., features] must end in `n` features
local function check_last(who, x, n)
  if x:dim() == 0 or x:size(-1) ~= n then
    throw(("%s: expected input with %d features in its last dim, got shape [%s]"):format(who, n, table.concat(x:size(), ", ")))
  end
end

-- ---- Linear ------------------------------------------------------------------------

local Linear = Module:extend("Linear")
M.Linear = Linear

-- y = x W^T + b; W [out, in] kaiming_uniform(a = sqrt(5)), b uniform(+-1/sqrt(in))
function Linear:__init(in_features, out_features, opts)
  opts = opts or {}
  self.in_features = positive_int("Linear", "in_features", in_features)
  self.out_features = positive_int("Linear", "out_features", out_features)
  local f = factory(opts)
  self.weight = Parameter(core.empty(out_features, in_features, f))
  if opts.bias ~= false then self.bias = Parameter(core.empty(out_features, f)) end
  self:reset_parameters()
end

function Linear:reset_parameters()
  init.kaiming_uniform_(self.weight, math.sqrt(5))
  if self.bias then
    local bound = 1 / math.sqrt(self.in_features)
    init.uniform_(self.bias, -bound, bound)
  end
end

function Linear:forward(x)
  check_last("Linear", x, self.in_features)
  return F.linear(x, self.weight, self.bias)
end

function Linear:extra_repr()
  return ("in_features=%d, out_features=%d, bias=%s"):format(self.in_features, self.out_features, tostring(self.bias ~= nil))
end

-- ---- Bilinear ----------------------------------------------------------------------

local Bilinear = Module:extend("Bilinear")
M.Bilinear = Bilinear

-- y[n, o] = sum_ij x1[n, i] W[o, i, j] x2[n, j] + b[o]; W and b uniform(+-1/sqrt(in1))
function Bilinear:__init(in1_features, in2_features, out_features, opts)
  opts = opts or {}
  self.in1_features = positive_int("Bilinear", "in1_features", in1_features)
  self.in2_features = positive_int("Bilinear", "in2_features", in2_features)
  self.out_features = positive_int("Bilinear", "out_features", out_features)
  local f = factory(opts)
  self.weight = Parameter(core.empty(out_features, in1_features, in2_features, f))
  if opts.bias ~= false then self.bias = Parameter(core.empty(out_features, f)) end
  self:reset_parameters()
end

function Bilinear:reset_parameters()
  local bound = 1 / math.sqrt(self.in1_features)
  init.uniform_(self.weight, -bound, bound)
  if self.bias then init.uniform_(self.bias, -bound, bound) end
end

-- x1 [..., in1], x2 [..., in2] (same leading dims) -> [..., out]
function Bilinear:forward(x1, x2)
  check_last("Bilinear (input 1)", x1, self.in1_features)
  check_last("Bilinear (input 2)", x2, self.in2_features)
  local lead = x1:size()
  table.remove(lead)
  local n = x1:numel() / self.in1_features
  if x2:numel() / self.in2_features ~= n then
    throw(("Bilinear: inputs [%s] and [%s] differ in their leading dims"):format(
      table.concat(x1:size(), ", "), table.concat(x2:size(), ", ")))
  end
  local o, i1, i2 = self.out_features, self.in1_features, self.in2_features
  -- (x1 @ W viewed [in1, out*in2]) [n, out, in2] * x2 [n, 1, in2], summed over in2
  local w = self.weight:permute(2, 1, 3):reshape(i1, o * i2)
  local t = x1:reshape(n, i1):matmul(w):view(n, o, i2)
  local y = (t * x2:reshape(n, 1, i2)):sum(3)
  if self.bias then y = y + self.bias end
  lead[#lead + 1] = o
  return y:view(lead)
end

function Bilinear:extra_repr()
  return ("in1_features=%d, in2_features=%d, out_features=%d, bias=%s"):format(
    self.in1_features, self.in2_features, self.out_features, tostring(self.bias ~= nil))
end

-- ---- Identity, Flatten, Unflatten -------------------------------------------------------

local Identity = Module:extend("Identity")
M.Identity = Identity
function Identity:__init() end   -- takes and ignores any arguments, as PyTorch's
function Identity:forward(x) return x end

-- Lua dim (1-based, negative from the end) of an n-dim tensor -> 1..n
local function norm_dim(who, d, n)
  if type(d) ~= "number" or d ~= math.floor(d) then throw(who .. ": dim must be an integer, got " .. tostring(d)) end
  local j = d < 0 and n + d + 1 or d
  if j < 1 or j > n then throw(("%s: dim %d out of range for a %d-dim input"):format(who, d, n)) end
  return j
end

local Flatten = Module:extend("Flatten")
M.Flatten = Flatten

-- merges dims start_dim..end_dim (defaults 2 and -1: keeps the batch dim)
function Flatten:__init(start_dim, end_dim)
  self.start_dim, self.end_dim = start_dim or 2, end_dim or -1
end

function Flatten:forward(x)
  local n = x:dim()
  if n == 0 then return x:reshape(1) end
  local s, e = norm_dim("Flatten", self.start_dim, n), norm_dim("Flatten", self.end_dim, n)
  if s > e then throw(("Flatten: start_dim %d comes after end_dim %d"):format(self.start_dim, self.end_dim)) end
  local sizes, out, merged = x:size(), {}, 1
  for i = 1, n do
    if i < s or i > e then out[#out + 1] = sizes[i]
    else
      merged = merged * sizes[i]
      if i == e then out[#out + 1] = merged end
    end
  end
  return x:reshape(out)
end

function Flatten:extra_repr() return ("start_dim=%d, end_dim=%d"):format(self.start_dim, self.end_dim) end

local Unflatten = Module:extend("Unflatten")
M.Unflatten = Unflatten

-- splits dim into sizes (one may be -1)
function Unflatten:__init(dim, sizes)
  if type(sizes) ~= "table" or #sizes == 0 then throw("Unflatten: sizes must be a non-empty table of sizes") end
  self.dim, self.unflattened_size = dim, sizes
end

function Unflatten:forward(x)
  local n = x:dim()
  local d = norm_dim("Unflatten", self.dim, n)
  local sizes, out = x:size(), {}
  for i = 1, n do
    if i == d then for _, v in ipairs(self.unflattened_size) do out[#out + 1] = v end
    else out[#out + 1] = sizes[i] end
  end
  return x:reshape(out)
end

function Unflatten:extra_repr()
  return ("dim=%d, unflattened_size={%s}"):format(self.dim, table.concat(self.unflattened_size, ", "))
end

return M
