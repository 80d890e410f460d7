-- netcl/tensor.lua — the Tensor type: a cdata box around a C handle with a
-- metatype (operators, methods, 1-based indexing and slicing), the GC
-- pressure rule that keeps device memory bounded, and the argument helpers
-- the module uses. Dims and indices are 1-based here, 0-based in C.
local ffi = require("ffi")
local lib = require("netcl.lib")
local C, fail = lib.C, lib.fail

local M = {}
local methods = {}
M.methods = methods

local Box = ffi.typeof("struct netcl_lua_tensor")
local outp = ffi.new("netcl_tensor *[1]")
local outp2 = ffi.new("netcl_tensor *[1]")
local sizes_buf = ffi.new("int64_t[8]")
local index_buf = ffi.new("int64_t[8]")
local dims_buf = ffi.new("int[8]")
local value_buf = ffi.new("double[1]")

local DTYPES = { [0] = "float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool" }
M.DTYPES = DTYPES
local OP = {
  neg = 0, abs = 1, exp = 2, log = 3, sqrt = 4, relu = 5, sigmoid = 6, tanh = 7, sign = 8, reciprocal = 9,
  square = 10, rsqrt = 11, expm1 = 12, log1p = 13, log2 = 14, sin = 15, cos = 16, tan = 17, floor = 18, ceil = 19,
  round = 20, trunc = 21, silu = 22, gelu = 23, gelu_tanh = 24, softplus = 25, relu6 = 26, leaky_relu = 27,
  elu = 28, clamp = 29, erf = 30,
  add = 64, sub = 65, mul = 66, div = 67, pow = 68, maximum = 69, minimum = 70,
  eq = 71, ne = 72, lt = 73, le = 74, gt = 75, ge = 76,
  sum = 96, mean = 97, max = 98, min = 99, argmax = 100, argmin = 101, prod = 102,
}
M.OP = OP

-- ---- lifetime and GC pressure ----------------------------------------------

local function finalize(b)
  if b.h ~= nil then
    C.netcl_tensor_release(b.h)
    b.h = nil
  end
end

-- Device memory is invisible to Lua's GC: collect when the engine's bytes
-- in use pass a threshold that follows the live set.
local MIN_THRESHOLD = 256 * 1024 * 1024
local threshold = MIN_THRESHOLD

local function wrap(h)
  local t = ffi.gc(Box(h), finalize)
  if C.netcl_memory_total_in_use() > threshold then
    collectgarbage("collect")
    threshold = math.max(MIN_THRESHOLD, 2 * tonumber(C.netcl_memory_total_in_use()))
  end
  return t
end
M.wrap = wrap

local function is_tensor(x) return ffi.istype(Box, x) end
M.is_tensor = is_tensor

local function H(t, level)
  if not ffi.istype(Box, t) then
    error("expected a netcl tensor, got " .. type(t), (level or 2) + 1)
  end
  local h = t.h
  if h == nil then error("tensor was freed (t:free() was called); it cannot be used", (level or 2) + 1) end
  return h
end
M.handle = H

-- ---- argument helpers ------------------------------------------------------------

local function ndim(t) return C.netcl_tensor_ndim(H(t, 3)) end

-- Lua dim (1-based, negative from the end) -> C dim (0-based).
local function cdim(t, d, nd, level, op)
  nd = nd or ndim(t)
  local prefix = op and (op .. ": ") or ""
  if type(d) ~= "number" or d ~= math.floor(d) then
    error(prefix .. "dim must be an integer, got " .. tostring(d), (level or 2) + 1)
  end
  local c = d < 0 and nd + d or d - 1
  if c < 0 or c >= nd then
    error(("%sdim %d out of range for a %d-dim tensor (valid %d..%d or -%d..-1)"):format(prefix, d, nd, nd > 0 and 1 or 0, nd, nd),
          (level or 2) + 1)
  end
  return c
end
M.cdim = cdim

-- Shape from varargs: (2, 3), ({2, 3}) or a tensor's size table; fills sizes_buf.
local function parse_sizes(level, ...)
  local first = ...
  local list = type(first) == "table" and first or { ... }
  local n = #list
  if n > 8 then error("at most 8 dims, got " .. n, level + 1) end
  for i = 1, n do
    local v = list[i]
    if type(v) ~= "number" or v ~= math.floor(v) then
      error(("size %d must be an integer, got %s"):format(i, tostring(v)), level + 1)
    end
    sizes_buf[i - 1] = v
  end
  return n, sizes_buf
end
M.parse_sizes = parse_sizes

-- Splits a trailing options table (dtype/device/requires_grad) off varargs.
local function split_opts(...)
  local n = select("#", ...)
  local last = select(n, ...)
  if n > 0 and type(last) == "table" and last[1] == nil and (n > 1 or next(last) ~= nil) then
    return last, n - 1
  end
  return nil, n
end
M.split_opts = split_opts

local function dtype_code(name, level)
  if name == nil then return 0 end
  local code = C.netcl_dtype_from_name(name)
  if code == 8 then
    error(("unknown dtype '%s' (float32, float16, bfloat16, float64, int32, int64, uint8, bool)"):format(tostring(name)),
          (level or 2) + 1)
  end
  return code
end
M.dtype_code = dtype_code

-- ---- metadata --------------------------------------------------------------------------

function methods.dim(t) return ndim(t) end
methods.ndimension = methods.dim

function methods.size(t, d)
  local h = H(t)
  local nd = C.netcl_tensor_ndim(h)
  if d then return tonumber(C.netcl_tensor_size(h, cdim(t, d, nd))) end
  local s = {}
  for i = 0, nd - 1 do s[i + 1] = tonumber(C.netcl_tensor_size(h, i)) end
  return s
end

function methods.stride(t, d)
  local h = H(t)
  local nd = C.netcl_tensor_ndim(h)
  if d then return tonumber(C.netcl_tensor_stride(h, cdim(t, d, nd))) end
  local s = {}
  for i = 0, nd - 1 do s[i + 1] = tonumber(C.netcl_tensor_stride(h, i)) end
  return s
end

function methods.numel(t) return tonumber(C.netcl_tensor_numel(H(t))) end
methods.nElement = methods.numel
function methods.type(t) return DTYPES[tonumber(C.netcl_tensor_dtype(H(t)))] end
function methods.is_contiguous(t) return C.netcl_tensor_is_contiguous(H(t)) ~= 0 end
local function device_name(t) return ffi.string(C.netcl_device_name(C.netcl_tensor_device(H(t, 3)))) end

function methods.free(t)
  if t.h ~= nil then
    C.netcl_tensor_release(t.h)
    t.h = nil
  end
end

local properties = {
  dtype = methods.type,
  device = device_name,
  shape = function(t) return methods.size(t) end,
  requires_grad = function(t) return C.netcl_tensor_requires_grad(H(t)) ~= 0 end,
  is_leaf = function(t) return C.netcl_tensor_is_leaf(H(t)) ~= 0 end,
  grad = function(t)
    local g = C.netcl_tensor_grad(H(t))
    if g == nil then return nil end
    return wrap(g)
  end,
  grad_fn = function(t)
    local n = C.netcl_tensor_grad_fn(H(t))
    return n ~= nil and ffi.string(n) or nil
  end,
}

-- ---- calling helpers -----------------------------------------------------------------

-- Runs a C function that writes one new handle to outp; returns the tensor.
local function call1(level, f, ...)
  local st = f(outp, ...)
  if st ~= 0 then
    local args = { ... }
    fail(st, level + 1, function() return f(outp, unpack(args)) end)
  end
  return wrap(outp[0])
end
M.call1 = call1

local function check(st, level)
  if st ~= 0 then lib.raise(level + 1) end
end
M.check = check

-- ---- elementwise operators ------------------------------------------------------------

local function binary(a, b, op, level)
  level = level or 3
  if type(b) == "number" then
    return call1(level, C.netcl_binary_scalar, op, H(a, level), b, 0)
  elseif type(a) == "number" then
    return call1(level, C.netcl_binary_scalar, op, H(b, level), a, 1)
  end
  return call1(level, C.netcl_binary, op, H(a, level), H(b, level))
end
M.binary = binary

local function unary(a, op, p1, p2)
  return call1(3, C.netcl_unary, op, H(a, 3), p1 or 0, p2 or 0)
end

for name, op in pairs(OP) do
  if op < 64 then
    methods[name] = function(t) return unary(t, op) end
  elseif op < 96 then
    methods[name] = function(a, b) return binary(a, b, op) end
  end
end

-- unary ops with parameters (PyTorch's defaults)
function methods.leaky_relu(t, slope) return unary(t, OP.leaky_relu, slope or 0.01) end
function methods.elu(t, alpha) return unary(t, OP.elu, alpha or 1) end
function methods.clamp(t, lo, hi) return unary(t, OP.clamp, lo or -math.huge, hi or math.huge) end
function methods.hardtanh(t, lo, hi) return unary(t, OP.clamp, lo or -1, hi or 1) end
-- gelu(approximate): "none" (erf form, default) or "tanh"
function methods.gelu(t, approximate)
  if approximate == "tanh" then return unary(t, OP.gelu_tanh) end
  if approximate ~= nil and approximate ~= "none" then error("gelu: approximate must be 'none' or 'tanh'", 2) end
  return unary(t, OP.gelu)
end

-- ---- reductions (1-based dims and indices) ----------------------------------------

local OPNAME = {}
for k, v in pairs(OP) do OPNAME[v] = k end

local function reduce(t, op, d, keepdim)
  local h = H(t, 3)
  local c = d == nil and -1 or cdim(t, d, nil, 3, OPNAME[op])
  return call1(3, C.netcl_reduce, op, h, c, keepdim and 1 or 0)
end

function methods.sum(t, d, keepdim) return reduce(t, OP.sum, d, keepdim) end
function methods.mean(t, d, keepdim) return reduce(t, OP.mean, d, keepdim) end
function methods.prod(t, d, keepdim) return reduce(t, OP.prod, d, keepdim) end

local function extremum(t, op, d, keepdim)
  if d == nil then return reduce(t, op, nil, false) end
  local h = H(t, 3)
  local st = C.netcl_reduce_with_index(outp, outp2, op, h, cdim(t, d, nil, 3, OPNAME[op]), keepdim and 1 or 0)
  if st ~= 0 then
    fail(st, 3, function() return C.netcl_reduce_with_index(outp, outp2, op, h, cdim(t, d), keepdim and 1 or 0) end)
  end
  local values, idx0 = wrap(outp[0]), wrap(outp2[0])
  return values, binary(idx0, 1, OP.add, 3)
end

function methods.max(t, d, keepdim)
  if is_tensor(d) then return binary(t, d, OP.maximum) end
  return extremum(t, OP.max, d, keepdim)
end
function methods.min(t, d, keepdim)
  if is_tensor(d) then return binary(t, d, OP.minimum) end
  return extremum(t, OP.min, d, keepdim)
end
function methods.argmax(t, d, keepdim) return binary(reduce(t, OP.argmax, d, keepdim), 1, OP.add) end
function methods.argmin(t, d, keepdim) return binary(reduce(t, OP.argmin, d, keepdim), 1, OP.add) end

function methods.matmul(a, b) return call1(2, C.netcl_matmul, H(a), H(b)) end

-- ---- views ---------------------------------------------------------------------------

function methods.view(t, ...)
  local n, s = parse_sizes(2, ...)
  return call1(2, C.netcl_tensor_view, H(t), n, s)
end

function methods.reshape(t, ...)
  local n, s = parse_sizes(2, ...)
  return call1(2, C.netcl_tensor_reshape, H(t), n, s)
end

function methods.flatten(t)
  sizes_buf[0] = -1
  return call1(2, C.netcl_tensor_reshape, H(t), 1, sizes_buf)
end

function methods.transpose(t, d0, d1)
  return call1(2, C.netcl_tensor_transpose, H(t), cdim(t, d0, nil, 2, "transpose"), cdim(t, d1, nil, 2, "transpose"))
end

function methods.t(t)
  if ndim(t) ~= 2 then error("t() needs a 2-dim tensor, got " .. ndim(t) .. " dims", 2) end
  return call1(2, C.netcl_tensor_transpose, H(t), 0, 1)
end

function methods.permute(t, ...)
  local list = type((...)) == "table" and (...) or { ... }
  local nd = ndim(t)
  for i = 1, #list do dims_buf[i - 1] = cdim(t, list[i], nd) end
  return call1(2, C.netcl_tensor_permute, H(t), #list, dims_buf)
end

function methods.narrow(t, d, start, length)
  return call1(2, C.netcl_tensor_narrow, H(t), cdim(t, d, nil, 2, "narrow"), start - 1, length)
end

function methods.select(t, d, i)
  local c = cdim(t, d, nil, 2, "select")
  if i < 0 then i = tonumber(C.netcl_tensor_size(H(t), c)) + i + 1 end
  return call1(2, C.netcl_tensor_select, H(t), c, i - 1)
end

function methods.expand(t, ...)
  local n, s = parse_sizes(2, ...)
  return call1(2, C.netcl_tensor_expand, H(t), n, s)
end

function methods.expand_as(t, other) return methods.expand(t, methods.size(other)) end

function methods.squeeze(t, d)
  return call1(2, C.netcl_tensor_squeeze, H(t), d == nil and -1 or cdim(t, d))
end

function methods.unsqueeze(t, d)
  local nd = ndim(t)
  local c = d < 0 and nd + 1 + d or d - 1
  if c < 0 or c > nd then error(("unsqueeze: dim %d out of range for a %d-dim tensor"):format(d, nd), 2) end
  return call1(2, C.netcl_tensor_unsqueeze, H(t), c)
end

function methods.contiguous(t) return call1(2, C.netcl_tensor_contiguous, H(t)) end

-- Torch7-style slice: one entry per dim, a number selects, {a, b} is the
-- inclusive range a..b (negatives count from the end), {} keeps the dim.
local function slice_view(t, spec, level)
  local cur = t
  local d = 0   -- current C dim in `cur`
  for i = 1, #spec do
    local s = spec[i]
    if C.netcl_tensor_ndim(H(cur, level)) <= d then
      error(("slice: %d entries for a %d-dim tensor"):format(#spec, ndim(t)), level + 1)
    end
    local size = tonumber(C.netcl_tensor_size(cur.h, d))
    if type(s) == "number" then
      local idx = s < 0 and size + s + 1 or s
      cur = call1(level, C.netcl_tensor_select, cur.h, d, idx - 1)
    elseif type(s) == "table" then
      local a = s[1] or 1
      local b = s[2] or (s[1] and a or size)
      if a < 0 then a = size + a + 1 end
      if b < 0 then b = size + b + 1 end
      if #s == 0 then a, b = 1, size end
      cur = call1(level, C.netcl_tensor_slice, cur.h, d, a - 1, b, 1)
      d = d + 1
    else
      error("slice: entries must be numbers or {start, stop} tables, got " .. type(s), level + 1)
    end
  end
  return cur
end

-- Torch7's t:sub(...) slicing is spelled t[{...}] here: `sub` is subtraction.
function methods.slice(t, ...) return slice_view(t, { ... }, 2) end

local function assign(view, v, level)
  if type(v) == "number" then
    check(C.netcl_tensor_fill_(view.h, v), level + 1)
  else
    check(C.netcl_tensor_copy_(view.h, H(v, level + 1)), level + 1)
  end
end

-- ---- conversion -------------------------------------------------------------------------

local function to_doubles(t, level)
  local h = H(t, level + 1)
  local n = tonumber(C.netcl_tensor_numel(h))
  local buf = ffi.new("double[?]", n > 0 and n or 1)
  check(C.netcl_tensor_to_doubles(h, buf, n), level + 1)
  return buf, n
end
M.to_doubles = to_doubles

function methods.totable(t)
  local buf = to_doubles(t, 2)
  local sizes = methods.size(t)
  local is_bool = methods.type(t) == "bool"
  local pos = 0
  local function build(d)
    local out = {}
    for i = 1, sizes[d] do
      if d == #sizes then
        local v = buf[pos]
        pos = pos + 1
        if is_bool then out[i] = v ~= 0 else out[i] = v end
      else
        out[i] = build(d + 1)
      end
    end
    return out
  end
  if #sizes == 0 then
    local v = buf[0]
    if is_bool then return v ~= 0 end
    return v
  end
  return build(1)
end

function methods.item(t)
  local h = H(t)
  local n = tonumber(C.netcl_tensor_numel(h))
  if n ~= 1 then error(("item: tensor has %d elements, not 1"):format(n), 2) end
  check(C.netcl_tensor_to_doubles(h, value_buf, 1), 2)
  if methods.type(t) == "bool" then return value_buf[0] ~= 0 end
  return value_buf[0]
end

function methods.cast(t, dtype)
  return call1(2, C.netcl_tensor_cast, H(t), dtype_code(dtype))
end

for _, pair in ipairs({ { "float", "float32" }, { "half", "float16" }, { "bfloat16", "bfloat16" }, { "double", "float64" },
                        { "int", "int32" }, { "long", "int64" }, { "byte", "uint8" }, { "bool", "bool" } }) do
  local name, dt = pair[1], pair[2]
  methods[name] = function(t)
    if methods.type(t) == dt then return t end
    return call1(2, C.netcl_tensor_cast, H(t), dtype_code(dt))
  end
end

function methods.clone(t) return call1(2, C.netcl_tensor_cast, H(t), C.netcl_tensor_dtype(H(t))) end

function methods.copy_(t, src)
  assign(t, src, 2)
  return t
end

function methods.fill_(t, v)
  check(C.netcl_tensor_fill_(H(t), v), 2)
  return t
end

function methods.zero_(t) return methods.fill_(t, 0) end

-- ---- autograd ------------------------------------------------------------------------------

function methods.requires_grad_(t, flag)
  check(C.netcl_tensor_set_requires_grad(H(t), flag == false and 0 or 1), 2)
  return t
end

function methods.backward(t, grad, retain_graph)
  if type(grad) == "boolean" then grad, retain_graph = nil, grad end
  local st = C.netcl_backward(H(t), grad and H(grad) or nil, retain_graph and 1 or 0)
  check(st, 2)
end

function methods.detach(t) return call1(2, C.netcl_tensor_detach, H(t)) end

function methods.retain_grad(t)
  check(C.netcl_tensor_retain_grad(H(t)), 2)
  return t
end

function methods.zero_grad(t) check(C.netcl_tensor_set_grad(H(t), nil), 2) end

-- ---- metatable ------------------------------------------------------------------------------

local mt = {}

function mt.__index(t, k)
  local m = methods[k]
  if m then return m end
  local p = properties[k]
  if p then return p(t) end
  if type(k) == "number" then
    local h = H(t)
    local nd = C.netcl_tensor_ndim(h)
    if nd == 0 then error("cannot index a 0-dim tensor; use item()", 2) end
    local size = tonumber(C.netcl_tensor_size(h, 0))
    local i = k < 0 and size + k + 1 or k
    if i < 1 or i > size or i ~= math.floor(i) then
      error(("index %s out of range for dim 1 of size %d (indices are 1-based)"):format(tostring(k), size), 2)
    end
    if nd == 1 then
      index_buf[0] = i - 1
      check(C.netcl_tensor_get_item(h, index_buf, value_buf), 2)
      if C.netcl_tensor_dtype(h) == 7 then return value_buf[0] ~= 0 end
      return value_buf[0]
    end
    return call1(2, C.netcl_tensor_select, h, 0, i - 1)
  elseif type(k) == "table" then
    return slice_view(t, k, 2)
  end
  return nil
end

function mt.__newindex(t, k, v)
  if type(k) == "number" then
    local h = H(t)
    local size = tonumber(C.netcl_tensor_size(h, 0))
    local i = k < 0 and size + k + 1 or k
    if C.netcl_tensor_ndim(h) == 0 or i < 1 or i > size then
      error(("index %s out of range for dim 1 (indices are 1-based)"):format(tostring(k)), 2)
    end
    assign(call1(2, C.netcl_tensor_select, h, 0, i - 1), v, 2)
  elseif type(k) == "table" then
    assign(slice_view(t, k, 2), v, 2)
  elseif k == "requires_grad" then
    check(C.netcl_tensor_set_requires_grad(H(t), v and 1 or 0), 2)
  elseif k == "grad" then
    check(C.netcl_tensor_set_grad(H(t), v ~= nil and H(v) or nil), 2)
  else
    error("cannot set field '" .. tostring(k) .. "' of a tensor", 2)
  end
end

mt.__add = function(a, b) return binary(a, b, OP.add) end
mt.__sub = function(a, b) return binary(a, b, OP.sub) end
mt.__mul = function(a, b) return binary(a, b, OP.mul) end
mt.__div = function(a, b) return binary(a, b, OP.div) end
mt.__pow = function(a, b) return binary(a, b, OP.pow) end
mt.__unm = function(a) return unary(a, OP.neg) end
mt.__len = function(t)
  local h = H(t)
  if C.netcl_tensor_ndim(h) == 0 then return 0 end
  return tonumber(C.netcl_tensor_size(h, 0))
end
mt.__tostring = function(t) return require("netcl.printing").format(t) end

ffi.metatype(Box, mt)
M.Box = Box

return M
