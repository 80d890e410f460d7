-- netcl/tensor.lua — the Tensor type: a cdata box around a C handle with a
-- metatype (operators, methods, 1-based indexing and slicing), the GC
-- pressure rule that keeps device memory bounded, and the argument helpers
-- the module uses. Dims and indices are 1-based here, 0-based in C.
local ffi = require("ffi")
local lib = require("netcl.lib")
local lifetime = require("netcl.lifetime")
local C, fail, throw, check = lib.C, lib.fail, lib.throw, lib.check
local type, tonumber, floor = type, tonumber, math.floor

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

-- dtype codes by name and names by code; op codes by name (netcl_dtype and
-- netcl_op in the cdef)
local DTYPE, DTYPES = lib.enum("netcl_dtype", "NETCL_DTYPE_", { "count" })
M.DTYPE, M.DTYPES = DTYPE, DTYPES
local FLOAT32, BOOL = DTYPE.float32, DTYPE.bool
local NO_DTYPE = C.NETCL_DTYPE_COUNT   -- netcl_dtype_from_name's answer to an unknown name
local OP = lib.enum("netcl_op", "NETCL_OP_", { "unary_end", "binary_end", "reduce_end" })
M.OP = OP
local UNARY_END, BINARY_END = C.NETCL_OP_UNARY_END, C.NETCL_OP_BINARY_END

-- ---- lifetime and GC pressure ----------------------------------------------

-- The box is unreachable when this runs, so h needs no clearing; free()
-- sets h to NULL, which netcl_tensor_release accepts.
-- (It runs in the interpreter, inside the GC: keep it to one FFI call.)
local release = C.netcl_tensor_release
local function finalize(b) release(b.h) end

-- Device memory is invisible to Lua's GC: collect when the engine's bytes
-- in use pass a threshold that follows the live set. Its floor grows with
-- the largest device (a 32nd of its memory, at most 1 GiB), sized the first
-- time 256 MiB are in use (devices are up by then): a full collection costs
-- 0.25-0.3 ms, which at a 256 MiB floor a loop of 32 MiB results paid every
-- few ops (an H100's relu 65 µs an op against 27 µs for the kernel alone).
-- Not higher: until the first collection every result is a fresh driver
-- allocation (about 60 µs each on that H100), and the pool then holds the
-- floor's worth of buffers.
local MIB = 1024 * 1024
local ENV_FLOOR = tonumber(os.getenv("NETCL_GC_MIN_MB"))
local MIN_THRESHOLD = (ENV_FLOOR or 256) * MIB
local threshold = MIN_THRESHOLD
local floor_sized = ENV_FLOOR ~= nil

local function size_floor()
  floor_sized = true
  local largest = 0
  for i = 0, C.netcl_device_count() - 1 do
    largest = math.max(largest, tonumber(C.netcl_device_global_mem(C.netcl_device_at(i))))
  end
  MIN_THRESHOLD = math.max(MIN_THRESHOLD, math.min(1024 * MIB, math.floor(largest / 32)))
  threshold = math.max(threshold, MIN_THRESHOLD)
end

-- the floor in bytes (sized to the devices when first asked)
function M.gc_floor()
  if not floor_sized then size_floor() end
  return MIN_THRESHOLD
end

-- Small tensors never reach the byte threshold, yet each one left to the GC
-- holds a device buffer the pool cannot reuse (a fresh driver allocation
-- per op): an incremental GC step every GC_EVERY new tensors returns them.
local GC_EVERY = tonumber(os.getenv("NETCL_GC_EVERY")) or 1024
local GC_STEP = tonumber(os.getenv("NETCL_GC_STEP")) or 64
local wrapped = 0

local track, scope_open = lifetime.track, lifetime.active
local function wrap(h)
  local t = ffi.gc(Box(h), finalize)
  if scope_open() then track(t) end
  if C.netcl_memory_total_in_use() > threshold then
    if not floor_sized then size_floor() end
    if C.netcl_memory_total_in_use() > threshold then
      collectgarbage("collect")
      threshold = math.max(MIN_THRESHOLD, 2 * tonumber(C.netcl_memory_total_in_use()))
    end
  end
  wrapped = wrapped + 1
  if wrapped >= GC_EVERY then
    wrapped = 0
    if GC_STEP > 0 then collectgarbage("step", GC_STEP) end
  end
  return t
end
M.wrap = wrap

local function is_tensor(x) return ffi.istype(Box, x) end
M.is_tensor = is_tensor
lifetime.set_box_test(is_tensor)

local istype = ffi.istype
-- the name the calling function was called by ("matmul", "mse_loss"), for
-- messages raised on its behalf
local function caller_name(level)
  local info = debug.getinfo(level + 1, "n")
  return info and info.name or nil
end

-- public functions by identity -> their names, so a message raised inside
-- one can name it whatever way it was reached (M.name_functions fills it)
local fn_names = setmetatable({}, { __mode = "k" })
function M.name_functions(tbl, prefix)
  for k, v in pairs(tbl) do
    if type(k) == "string" and type(v) == "function" and not fn_names[v] then fn_names[v] = (prefix or "") .. k end
  end
end
function M.function_name(f) return fn_names[f] end

local function H(t)
  if not istype(Box, t) then
    local info = debug.getinfo(2, "f")
    local who = info and fn_names[info.func] or caller_name(2)
    throw(("%sexpected a netcl tensor, got %s"):format(who and who .. ": " or "", type(t)))
  end
  local h = t.h
  if h == nil then
    local by = lifetime.released_by(t)
    if by then
      throw(("tensor was released when %s's forward returned: it was an intermediate that the call neither returned " ..
             "nor stored in the module; keep it with t:keep() inside the forward, or set " ..
             "netcl.nn.release_intermediates(false)"):format(by))
    end
    throw("tensor was freed (t:free() was called); it cannot be used")
  end
  return h
end
M.handle = H

-- ---- argument helpers ------------------------------------------------------------

-- "float32[2,3] on cpu", as the engine's own messages name tensors
local describe_buf = ffi.new("char[256]")
local function describe(h)
  C.netcl_tensor_describe(h, describe_buf, 256)
  return ffi.string(describe_buf)
end

local function ndim(t) return C.netcl_tensor_ndim(H(t)) end

-- Lua dim (1-based, negative from the end) -> C dim (0-based).
local function cdim(t, d, nd, op)
  nd = nd or ndim(t)
  local prefix = op and (op .. ": ") or ""
  if type(d) ~= "number" or d ~= floor(d) then throw(prefix .. "dim must be an integer, got " .. tostring(d)) end
  local c = d < 0 and nd + d or d - 1
  if c < 0 or c >= nd then
    throw(("%sdim %d out of range for a %d-dim tensor (valid %d..%d or -%d..-1)"):format(
      prefix, d, nd, nd > 0 and 1 or 0, nd, nd))
  end
  return c
end
M.cdim = cdim

-- Shape from varargs: (2, 3), ({2, 3}) or a tensor's size table; fills sizes_buf.
-- parse_sizes_for(who, ...) -> ndim, a buffer of sizes; messages name `who`
local function parse_sizes_for(who, ...)
  local first = ...
  local list = type(first) == "table" and first or { ... }
  local n = #list
  local p = who and who .. ": " or ""
  if n > 8 then throw(("%sat most 8 dims, got %d"):format(p, n)) end
  for i = 1, n do
    local v = list[i]
    if type(v) ~= "number" or v ~= floor(v) then throw(("%ssize %d must be an integer, got %s"):format(p, i, tostring(v))) end
    if v >= 2 ^ 62 then throw(("%ssize %d is %s: sizes must be below 2^62"):format(p, i, tostring(v))) end
    sizes_buf[i - 1] = v
  end
  return n, sizes_buf
end
local function parse_sizes(...) return parse_sizes_for(nil, ...) end
M.parse_sizes = parse_sizes
M.parse_sizes_for = parse_sizes_for

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

-- dtype name (aliases float, half, double, int, long, byte accepted) -> code
local function dtype_code(name)
  if name == nil then return FLOAT32 end
  local code = type(name) == "string" and C.netcl_dtype_from_name(name) or NO_DTYPE
  if code == NO_DTYPE then
    throw(("unknown dtype '%s' (float32, float16, bfloat16, float64, int32, int64, uint8, bool; " ..
           "aliases float, half, double, int, long, byte)"):format(tostring(name)))
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
-- type() -> dtype name; type(dtype) -> cast (Torch7), t itself when equal
function methods.type(t, dtype)
  local cur = C.netcl_tensor_dtype(H(t))
  if dtype == nil then return DTYPES[tonumber(cur)] end
  local code = M.dtype_code(dtype)
  if code == cur then return t end
  return M.call1(C.netcl_tensor_cast, H(t), code)
end
-- true when both tensors view one storage (Torch7's isSetTo, loosely)
function methods.shares_storage(t, other) return C.netcl_tensor_same_storage(H(t), H(other)) ~= 0 end
function methods.is_contiguous(t) return C.netcl_tensor_is_contiguous(H(t)) ~= 0 end
local function device_name(t) return ffi.string(C.netcl_device_name(C.netcl_tensor_device(H(t)))) end
-- t.device is the name string (PyTorch's attribute), so the method form is spelled device_name
methods.device_name = device_name

-- Keeps t alive past the module call that made it (netcl.lifetime): for
-- an intermediate stashed where the call cannot see it. Returns t.
function methods.keep(t)
  if not istype(Box, t) then throw("keep: expected a netcl tensor, got " .. type(t)) end
  lifetime.keep(t)
  return t
end

-- Releases the handle now (idempotent); later use raises "tensor was freed".
function methods.free(t)
  if not istype(Box, t) then throw("free: expected a netcl tensor, got " .. type(t)) end
  if t.h ~= nil then
    local h = t.h
    t.h = nil
    ffi.gc(t, nil)
    C.netcl_tensor_release(h)
  end
end

local properties = {
  dtype = methods.type,
  device = device_name,
  shape = function(t) return methods.size(t) end,
  requires_grad = function(t) return C.netcl_tensor_requires_grad(H(t)) ~= 0 end,
  is_leaf = function(t) return C.netcl_tensor_is_leaf(H(t)) ~= 0 end,
  is_pinned = function(t) return C.netcl_tensor_is_pinned(H(t)) ~= 0 end,
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
local function call1(f, ...)
  local st = f(outp, ...)
  if st ~= 0 then fail(st, f, outp, ...) end
  return wrap(outp[0])
end
M.call1 = call1
M.check = check

-- ---- elementwise operators ------------------------------------------------------------

local function binary(a, b, op)
  if not istype(Box, a) and type(a) ~= "number" or not istype(Box, b) and type(b) ~= "number" then
    local bad = (not istype(Box, a) and type(a) ~= "number") and a or b
    throw(("%s: expected a tensor or a number, got %s"):format(ffi.string(C.netcl_op_name(op)), type(bad)), 3)
  end
  if type(b) == "number" then
    return call1(C.netcl_binary_scalar, op, H(a), b, 0)
  elseif type(a) == "number" then
    return call1(C.netcl_binary_scalar, op, H(b), a, 1)
  end
  return call1(C.netcl_binary, op, H(a), H(b))
end
M.binary = binary

local function unary(a, op, p1, p2)
  if (p1 ~= nil and type(p1) ~= "number") or (p2 ~= nil and type(p2) ~= "number") then
    local bad = (p1 ~= nil and type(p1) ~= "number") and p1 or p2
    throw(("%s: its parameters must be numbers, got %s"):format(ffi.string(C.netcl_op_name(op)), type(bad)), 3)
  end
  return call1(C.netcl_unary, op, H(a), p1 or 0, p2 or 0)
end

for name, op in pairs(OP) do
  if op < UNARY_END then
    methods[name] = function(t) return unary(t, op) end
  elseif op < BINARY_END then
    methods[name] = function(a, b) return binary(a, b, op) end
  end
end

-- in-place forms: t:add_(x), t:relu_(), ... return t (see netcl_binary_ for
-- the autograd rules: a leaf that requires grad is refused under grad mode)
local function binary_(a, b, op)
  if type(b) == "number" then check(C.netcl_binary_scalar_(op, H(a), b))
  else check(C.netcl_binary_(op, H(a), H(b))) end
  return a
end
local function unary_(a, op, p1, p2)
  check(C.netcl_unary_(op, H(a), p1 or 0, p2 or 0))
  return a
end
for name, op in pairs(OP) do
  if op < UNARY_END then
    methods[name .. "_"] = function(t) return unary_(t, op) end
  elseif op < BINARY_END then
    methods[name .. "_"] = function(a, b) return binary_(a, b, op) end
  end
end
function methods.leaky_relu_(t, slope) return unary_(t, OP.leaky_relu, slope or 0.01) end
function methods.elu_(t, alpha) return unary_(t, OP.elu, alpha or 1) end
function methods.clamp_(t, lo, hi) return unary_(t, OP.clamp, lo or -math.huge, hi or math.huge) end
function methods.hardtanh_(t, lo, hi) return unary_(t, OP.clamp, lo or -1, hi or 1) end

-- unary ops with parameters (PyTorch's defaults)
function methods.leaky_relu(t, slope) return unary(t, OP.leaky_relu, slope or 0.01) end
function methods.elu(t, alpha) return unary(t, OP.elu, alpha or 1) end
function methods.clamp(t, lo, hi) return unary(t, OP.clamp, lo or -math.huge, hi or math.huge) end
function methods.hardtanh(t, lo, hi) return unary(t, OP.clamp, lo or -1, hi or 1) end
-- gelu(approximate): "none" (erf form, default) or "tanh"
function methods.gelu(t, approximate)
  if approximate == "tanh" then return unary(t, OP.gelu_tanh) end
  if approximate ~= nil and approximate ~= "none" then throw("gelu: approximate must be 'none' or 'tanh'") end
  return unary(t, OP.gelu)
end

-- ---- reductions (1-based dims and indices) ----------------------------------------

local OPNAME = {}
for k, v in pairs(OP) do OPNAME[v] = k end

local function reduce(t, op, d, keepdim)
  local h = H(t)
  local c = d == nil and -1 or cdim(t, d, nil, OPNAME[op])
  return call1(C.netcl_reduce, op, h, c, keepdim and 1 or 0)
end

function methods.sum(t, d, keepdim) return reduce(t, OP.sum, d, keepdim) end
function methods.mean(t, d, keepdim) return reduce(t, OP.mean, d, keepdim) end
function methods.prod(t, d, keepdim) return reduce(t, OP.prod, d, keepdim) end

local function extremum(t, op, d, keepdim)
  if d == nil then return reduce(t, op, nil, false) end
  local h = H(t)
  local c, k = cdim(t, d, nil, OPNAME[op]), keepdim and 1 or 0
  local f = C.netcl_reduce_with_index
  local st = f(outp, outp2, op, h, c, k)
  if st ~= 0 then fail(st, f, outp, outp2, op, h, c, k) end
  local values, idx0 = wrap(outp[0]), wrap(outp2[0])
  return values, binary(idx0, 1, OP.add)
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

function methods.matmul(a, b) return call1(C.netcl_matmul, H(a), H(b)) end

-- ---- views ---------------------------------------------------------------------------

function methods.view(t, ...)
  local n, s = parse_sizes_for("view", ...)
  return call1(C.netcl_tensor_view, H(t), n, s)
end

function methods.reshape(t, ...)
  local n, s = parse_sizes_for("reshape", ...)
  return call1(C.netcl_tensor_reshape, H(t), n, s)
end

function methods.flatten(t)
  sizes_buf[0] = -1
  return call1(C.netcl_tensor_reshape, H(t), 1, sizes_buf)
end

function methods.transpose(t, d0, d1)
  return call1(C.netcl_tensor_transpose, H(t), cdim(t, d0, nil, "transpose"), cdim(t, d1, nil, "transpose"))
end

function methods.t(t)
  if ndim(t) ~= 2 then throw("t() needs a 2-dim tensor, got " .. ndim(t) .. " dims") end
  return call1(C.netcl_tensor_transpose, H(t), 0, 1)
end

function methods.permute(t, ...)
  local list = type((...)) == "table" and (...) or { ... }
  local nd = ndim(t)
  for i = 1, #list do dims_buf[i - 1] = cdim(t, list[i], nd) end
  return call1(C.netcl_tensor_permute, H(t), #list, dims_buf)
end

local function integer(v, what)
  if type(v) ~= "number" or v ~= floor(v) then throw(what .. " must be an integer, got " .. tostring(v)) end
  return v
end

-- narrow(dim, start, length): start is 1-based (negative counts from the end)
function methods.narrow(t, d, start, length)
  local c = cdim(t, d, nil, "narrow")
  integer(start, "narrow: start"); integer(length, "narrow: length")
  local size = tonumber(C.netcl_tensor_size(H(t), c))
  if start < 0 then start = size + start + 1 end
  if start < 1 or length < 0 or start + length - 1 > size then
    throw(("narrow: start %d length %d out of range for dim %d of %s (start is 1-based)"):format(
      start, length, d, describe(H(t))))
  end
  return call1(C.netcl_tensor_narrow, H(t), c, start - 1, length)
end

function methods.select(t, d, i)
  local c = cdim(t, d, nil, "select")
  integer(i, "select: index")
  local size = tonumber(C.netcl_tensor_size(H(t), c))
  local j = i < 0 and size + i + 1 or i
  if j < 1 or j > size then
    throw(("select: index %d out of range for dim %d of %s (indices are 1-based)"):format(i, d, describe(H(t))))
  end
  i = j
  return call1(C.netcl_tensor_select, H(t), c, i - 1)
end

function methods.expand(t, ...)
  local n, s = parse_sizes_for("expand", ...)
  return call1(C.netcl_tensor_expand, H(t), n, s)
end

function methods.expand_as(t, other) return methods.expand(t, methods.size(other)) end

function methods.squeeze(t, d)
  return call1(C.netcl_tensor_squeeze, H(t), d == nil and -1 or cdim(t, d))
end

function methods.unsqueeze(t, d)
  local nd = ndim(t)
  integer(d, "unsqueeze: dim")
  local c = d < 0 and nd + 1 + d or d - 1
  if c < 0 or c > nd then throw(("unsqueeze: dim %d out of range for a %d-dim tensor"):format(d, nd)) end
  return call1(C.netcl_tensor_unsqueeze, H(t), c)
end

function methods.contiguous(t) return call1(C.netcl_tensor_contiguous, H(t)) end

-- Torch7-style slice: one entry per dim, a number selects, {a, b} is the
-- inclusive range a..b (negatives count from the end), {} keeps the dim.
local function slice_view(t, spec)
  local cur = t
  local d = 0   -- current C dim in `cur`
  for i = 1, #spec do
    local s = spec[i]
    if C.netcl_tensor_ndim(H(cur)) <= d then
      throw(("slice: %d entries for a %d-dim tensor"):format(#spec, ndim(t)))
    end
    local size = tonumber(C.netcl_tensor_size(cur.h, d))
    if type(s) == "number" then
      local idx = s < 0 and size + s + 1 or s
      if idx < 1 or idx > size or idx ~= floor(idx) then
        throw(("slice: index %s out of range for dim %d (size %d) of %s (indices are 1-based)"):format(
          tostring(s), i, size, describe(H(t))))
      end
      cur = call1(C.netcl_tensor_select, cur.h, d, idx - 1)
    elseif type(s) == "table" then
      local a = s[1] or 1
      local b = s[2] or (s[1] and a or size)
      if type(a) ~= "number" or type(b) ~= "number" then throw("slice: ranges are {start, stop} with integers") end
      if a < 0 then a = size + a + 1 end
      if b < 0 then b = size + b + 1 end
      if #s == 0 then a, b = 1, size end
      if a < 1 or b > size or a > b + 1 or a ~= floor(a) or b ~= floor(b) then
        throw(("slice: range {%s, %s} out of range for dim %d (size %d) of %s (1-based, inclusive)"):format(
          tostring(s[1]), tostring(s[2] or s[1]), i, size, describe(H(t))))
      end
      cur = call1(C.netcl_tensor_slice, cur.h, d, a - 1, b, 1)
      d = d + 1
    else
      throw("slice: entries must be numbers or {start, stop} tables, got " .. type(s))
    end
  end
  return cur
end

-- t:slice({1, 3}, {}, 2) == t[{ {1, 3}, {}, 2 }]. t:sub(...) is the same when
-- its first argument is a Lua table (Torch7's spelling); else subtraction.
function methods.slice(t, ...) return slice_view(t, { ... }) end
function methods.sub(t, x, ...)
  if type(x) == "table" then return slice_view(t, { x, ... }) end
  return binary(t, x, OP.sub)
end

local function assign(view, v)
  if type(v) == "number" or type(v) == "boolean" then
    check(C.netcl_tensor_fill_(H(view), (v == true and 1) or (v == false and 0) or v))
  elseif not istype(Box, v) then
    throw("can only assign a number, a boolean or a tensor into a tensor, got " .. type(v))
  else
    check(C.netcl_tensor_copy_(H(view), H(v)))
  end
end

-- ---- conversion -------------------------------------------------------------------------

local function to_doubles(t)
  local h = H(t)
  local n = tonumber(C.netcl_tensor_numel(h))
  local buf = ffi.new("double[?]", n > 0 and n or 1)
  check(C.netcl_tensor_to_doubles(h, buf, n))
  return buf, n
end
M.to_doubles = to_doubles

function methods.totable(t)
  local buf = to_doubles(t)
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
  if n ~= 1 then throw(("item: tensor has %d elements, not 1"):format(n)) end
  check(C.netcl_tensor_to_doubles(h, value_buf, 1))
  if methods.type(t) == "bool" then return value_buf[0] ~= 0 end
  return value_buf[0]
end

function methods.cast(t, dtype)
  return call1(C.netcl_tensor_cast, H(t), dtype_code(dtype))
end

for _, pair in ipairs({ { "float", "float32" }, { "half", "float16" }, { "bfloat16", "bfloat16" }, { "double", "float64" },
                        { "int", "int32" }, { "long", "int64" }, { "byte", "uint8" }, { "bool", "bool" } }) do
  local name, dt = pair[1], pair[2]
  methods[name] = function(t)
    if methods.type(t) == dt then return t end
    return call1(C.netcl_tensor_cast, H(t), dtype_code(dt))
  end
end

function methods.clone(t) return call1(C.netcl_tensor_cast, H(t), C.netcl_tensor_dtype(H(t))) end

function methods.copy_(t, src)
  if not istype(Box, src) and type(src) ~= "number" and type(src) ~= "boolean" then
    throw("copy_: the source must be a tensor, a number or a boolean, got " .. type(src))
  end
  assign(t, src)
  return t
end

function methods.fill_(t, v)
  if type(v) ~= "number" and type(v) ~= "boolean" then throw("fill_: value must be a number or boolean, got " .. type(v)) end
  assign(t, v)
  return t
end

function methods.zero_(t) return methods.fill_(t, 0) end

-- t:set_(src): t becomes a view of src's storage (Torch7's set); every
-- holder of t sees it. t must be a leaf.
function methods.set_(t, src)
  check(C.netcl_tensor_set_(H(t), H(src)))
  return t
end

-- ---- autograd ------------------------------------------------------------------------------

-- Runs fn(...) with grad mode set to `enabled`, restoring it afterwards,
-- also when fn raises (netcl.no_grad, netcl.autograd.with_grad_mode).
function M.with_grad_mode(enabled, fn, ...)
  local prev = C.netcl_grad_enabled()
  C.netcl_set_grad_enabled(enabled and 1 or 0)
  local res = { pcall(fn, ...) }
  C.netcl_set_grad_enabled(prev)
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

function methods.requires_grad_(t, flag)
  if flag ~= nil and type(flag) ~= "boolean" then throw("requires_grad_: the flag must be a boolean, got " .. type(flag)) end
  check(C.netcl_tensor_set_requires_grad(H(t), flag == false and 0 or 1))
  return t
end

-- ---- gradient hooks: one FFI callback dispatches to the Lua functions ----------
local hook_fns, hook_key, hook_error = {}, 0, nil
local hook_dispatch = ffi.cast("netcl_grad_hook_fn", function(ctx, g, replace)
  local fn = hook_fns[tonumber(ffi.cast("intptr_t", ctx))]
  if not fn then return 0 end
  C.netcl_tensor_retain(g)
  local ok, r = pcall(fn, wrap(g))
  if not ok then hook_error = tostring(r); return 1 end
  if r ~= nil then
    if not istype(Box, r) then hook_error = "a gradient hook must return nil or a tensor, got " .. type(r); return 1 end
    C.netcl_tensor_retain(r.h)
    replace[0] = r.h
  end
  return 0
end)
local hook_id = ffi.new("int[1]")
-- a callback that failed inside backward (autograd.Function) leaves its
-- reason here; backward adds it to the engine's message
function M.note_backward_error(msg) hook_error = msg end

-- Registers fn through the C call `register` under a new key; returns
-- the handle with :remove().
local function add_hook(t, what, register, fn, run)
  if type(fn) ~= "function" then throw(what .. ": expected a function, got " .. type(fn)) end
  hook_key = hook_key + 1
  local key = hook_key
  check(register(H(t), hook_dispatch, ffi.cast("void *", key), hook_id))
  hook_fns[key] = run
  local id, h = hook_id[0], t
  return { remove = function()
    if hook_fns[key] then
      hook_fns[key] = nil
      check(C.netcl_tensor_remove_hook(H(h), id))
    end
  end }
end

-- t:register_hook(fn): fn(grad) runs during backward with the gradient
-- flowing into t (for a leaf, before .grad accumulates it) and may return
-- a replacement. Returns a handle with :remove().
function methods.register_hook(t, fn)
  return add_hook(t, "register_hook", C.netcl_tensor_register_hook, fn, fn)
end

-- t:register_post_accumulate_grad_hook(fn): fn(t) runs during backward
-- once the leaf t's .grad has taken a gradient (PyTorch's hook of that
-- name). Returns a handle with :remove().
function methods.register_post_accumulate_grad_hook(t, fn)
  return add_hook(t, "register_post_accumulate_grad_hook", C.netcl_tensor_register_post_accumulate_hook, fn,
    function() fn(t) end)
end

-- Interpreted (jit.off below): hooks call back into Lua from inside it.
function methods.backward(t, grad, retain_graph)
  if type(grad) == "boolean" then grad, retain_graph = nil, grad end
  hook_error = nil
  local st = C.netcl_backward(H(t), grad and H(grad) or nil, retain_graph and 1 or 0)
  if st ~= 0 then
    local msg = ffi.string(C.netcl_last_error())
    if hook_error then msg = msg .. ": " .. hook_error end
    throw(msg)
  end
end
jit.off(methods.backward)

function methods.detach(t) return call1(C.netcl_tensor_detach, H(t)) end

function methods.retain_grad(t)
  check(C.netcl_tensor_retain_grad(H(t)))
  return t
end

function methods.zero_grad(t) check(C.netcl_tensor_set_grad(H(t), nil)) end

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
    if nd == 0 then throw("cannot index a 0-dim tensor; use item()") end
    local size = tonumber(C.netcl_tensor_size(h, 0))
    local i = k < 0 and size + k + 1 or k
    if i < 1 or i > size or i ~= floor(i) then
      throw(("index %s out of range for dim 1 of size %d (indices are 1-based)"):format(tostring(k), size))
    end
    if nd == 1 then
      index_buf[0] = i - 1
      check(C.netcl_tensor_get_item(h, index_buf, value_buf))
      if C.netcl_tensor_dtype(h) == BOOL then return value_buf[0] ~= 0 end
      return value_buf[0]
    end
    return call1(C.netcl_tensor_select, h, 0, i - 1)
  elseif type(k) == "table" then
    return slice_view(t, k)
  end
  return nil
end

function mt.__newindex(t, k, v)
  if type(k) == "number" then
    local h = H(t)
    local nd = C.netcl_tensor_ndim(h)
    if nd == 0 then throw("cannot index a 0-dim tensor; use fill_()") end
    local size = tonumber(C.netcl_tensor_size(h, 0))
    local i = k < 0 and size + k + 1 or k
    if i < 1 or i > size or i ~= floor(i) then
      throw(("index %s out of range for dim 1 of size %d (indices are 1-based)"):format(tostring(k), size))
    end
    if nd == 1 and type(v) == "number" then
      index_buf[0] = i - 1
      check(C.netcl_tensor_set_item(h, index_buf, v))
      return
    end
    assign(call1(C.netcl_tensor_select, h, 0, i - 1), v)
  elseif type(k) == "table" then
    assign(slice_view(t, k), v)
  elseif k == "requires_grad" then
    check(C.netcl_tensor_set_requires_grad(H(t), v and 1 or 0))
  elseif k == "grad" then
    check(C.netcl_tensor_set_grad(H(t), v ~= nil and H(v) or nil))
  else
    throw("cannot set field '" .. tostring(k) .. "' of a tensor")
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
