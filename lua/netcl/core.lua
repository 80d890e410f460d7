-- netcl/core.lua — the netcl API that the Lua layers above build on:
-- devices, creation functions, module forms of the tensor ops (with the op
-- families of lua/netcl/ops/ and tuning installed here), memory and runtime
-- statistics, RNG, autograd switches and no_grad. nn, optim, data, io and
-- autograd require this module, never "netcl" itself; init.lua makes the
-- public netcl table of this one's functions and adds those packages.
-- Tensors themselves live in netcl/tensor.lua.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local C, throw = lib.C, lib.throw
local H, call1, check, split_opts = tensor.handle, tensor.call1, tensor.check, tensor.split_opts
local parse_sizes_for = tensor.parse_sizes_for
local dtype_code, parse_sizes = tensor.dtype_code, tensor.parse_sizes
local function dtype_name(name) return tensor.DTYPES[tonumber(dtype_code(name))] end

local netcl = {}   -- this module: what init.lua copies into the public netcl table
netcl.C = C
netcl.ABI_VERSION = lib.ABI_VERSION
netcl.version = ffi.string(C.netcl_version())
netcl.Tensor = tensor.methods
netcl.is_tensor = tensor.is_tensor

-- ---- devices -----------------------------------------------------------------

local _, TYPES = lib.enum("netcl_device_type", "NETCL_DEVICE_")   -- names by netcl_device_type
local CPU = C.NETCL_DEVICE_CPU
local device_cache = {}
local default_name

local Device = {}
Device.__index = Device
Device.__tostring = function(d) return "netcl.device(" .. d.name .. ")" end

local function device_object(h)
  local name = ffi.string(C.netcl_device_name(h))
  local d = device_cache[name]
  if not d then
    d = setmetatable({ name = name, handle = h }, Device)
    device_cache[name] = d
  end
  return d
end

-- name string, device object or nil (default) -> device object
local function resolve(dev, who)
  if type(dev) == "table" and dev.handle then return dev end
  if dev == nil then dev = netcl.default_device() end
  local p = who and who .. ": " or ""
  if type(dev) ~= "string" then throw(p .. "device must be a name like \"cpu\" or \"opencl:0\" or a device object, got " .. type(dev)) end
  local cached = device_cache[dev]
  if cached then return cached end
  local out = ffi.new("netcl_device *[1]")
  if C.netcl_device_get(out, dev) ~= 0 then throw(p .. ffi.string(C.netcl_last_error())) end
  return device_object(out[0])
end

function netcl.device(name) return resolve(name) end

function netcl.devices()
  local list = {}
  for i = 0, C.netcl_device_count() - 1 do
    local h = C.netcl_device_at(i)
    list[#list + 1] = {
      name = ffi.string(C.netcl_device_name(h)),
      type = TYPES[tonumber(C.netcl_device_type_of(h))],
      hw_name = ffi.string(C.netcl_device_hw_name(h)),
      vendor = ffi.string(C.netcl_device_vendor(h)),
      driver = ffi.string(C.netcl_device_driver(h)),
      platform = ffi.string(C.netcl_device_platform(h)),
      compute_units = C.netcl_device_compute_units(h),
      global_mem = tonumber(C.netcl_device_global_mem(h)),
      local_mem = tonumber(C.netcl_device_local_mem(h)),
      max_work_group = tonumber(C.netcl_device_max_work_group(h)),
      fp16 = C.netcl_device_has_fp16(h) ~= 0,
      fp64 = C.netcl_device_has_fp64(h) ~= 0,
      compute_capability = C.netcl_device_compute_capability(h),
      blas = C.netcl_device_type_of(h) == CPU and ffi.string(C.netcl_cpu_blas()) or nil,
      tensor_cores = ffi.string(C.netcl_device_tensor_cores(h)),
    }
  end
  return list
end

function netcl.default_device()
  if not default_name then
    local out = ffi.new("netcl_device *[1]")
    check(C.netcl_device_default(out))
    default_name = ffi.string(C.netcl_device_name(out[0]))
  end
  return default_name
end

function netcl.set_default_device(dev) default_name = resolve(dev, "set_default_device").name end

function netcl.synchronize(dev) check(C.netcl_device_synchronize(resolve(dev).handle)) end

-- the owners bytes in use are attributed to (netcl_mem_owner), by name
local OWNERS = lib.enum("netcl_mem_owner", "NETCL_MEM_", { "owner_count" })

function netcl.memory_stats(dev)
  local h = resolve(dev).handle
  local by_owner, at_peak = {}, {}
  for name, code in pairs(OWNERS) do
    by_owner[name] = tonumber(C.netcl_memory_owner_bytes(h, code, 0))
    at_peak[name] = tonumber(C.netcl_memory_owner_bytes(h, code, 1))
  end
  return {
    allocations = tonumber(C.netcl_memory_allocations(h)),
    pool_hits = tonumber(C.netcl_memory_pool_hits(h)),
    pool_misses = tonumber(C.netcl_memory_pool_misses(h)),
    bytes_in_use = tonumber(C.netcl_memory_bytes_in_use(h)),
    bytes_cached = tonumber(C.netcl_memory_bytes_cached(h)),
    peak_bytes = tonumber(C.netcl_memory_peak_bytes(h)),
    by_owner = by_owner,            -- bytes in use now, by owner
    peak_by_owner = at_peak,        -- the same when peak_bytes was reached
    backend_bytes = tonumber(C.netcl_memory_backend_bytes(h)),   -- the backend's own arenas, outside the pool
  }
end

-- what the memory report prints, in order, and its words for each owner
local OWNER_ROWS = {
  { "parameters", "parameters (leaves that require grad)" },
  { "gradients", "gradients (.grad)" },
  { "optimizer", "optimizer state" },
  { "saved", "saved for backward" },
  { "backward", "gradients in flight (backward)" },
  { "workspace", "op workspaces (unfolded inputs, copies)" },
  { "other", "other tensors held by Lua (inputs, results)" },
}

-- A table of where the device's bytes go, at the peak and now (MiB).
function netcl.memory_summary(dev)
  local d = resolve(dev)
  local s = netcl.memory_stats(d.name)
  local MiB = 1024 * 1024
  local lines = { ("memory of %s (MiB)        at peak      now"):format(d.name) }
  local function row(label, a, b)
    lines[#lines + 1] = ("  %-44s %9s %9.1f"):format(label, a and ("%9.1f"):format(a / MiB) or "", b / MiB)
  end
  for _, r in ipairs(OWNER_ROWS) do row(r[2], s.peak_by_owner[r[1]], s.by_owner[r[1]]) end
  row("in use (the pool's peak)", s.peak_bytes, s.bytes_in_use)
  row("backend arenas (outside the pool)", nil, s.backend_bytes)
  row("cached free blocks (the pool's)", nil, s.bytes_cached)
  return table.concat(lines, "\n")
end

-- bytes in use past which the binding runs a full garbage collection when
-- little else is live (docs/tensor-api.md, "Errors and memory")
netcl.gc_floor = tensor.gc_floor

function netcl.empty_cache(dev) C.netcl_memory_empty_cache(resolve(dev).handle) end
function netcl.reset_peak_memory(dev) C.netcl_memory_reset_peak(resolve(dev).handle) end

function netcl.runtime_stats()
  return {
    programs_compiled = tonumber(C.netcl_runtime_programs_compiled()),
    programs_loaded = tonumber(C.netcl_runtime_programs_loaded()),
    kernels_launched = tonumber(C.netcl_runtime_kernels_launched()),
    enqueue_ns = tonumber(C.netcl_runtime_enqueue_ns()),
  }
end

-- the device time of each OpenCL kernel launched so far (NETCL_PROFILE=1 set
-- before the first device call), as a printable table; opts.reset clears it
function netcl.profile_report(opts)
  local reset = opts and opts.reset and 1 or 0
  local size = 65536
  while true do
    local buf = ffi.new("char[?]", size)
    local n = C.netcl_profile_report(buf, size, reset)   -- resets only when the table fitted
    if n < size then return ffi.string(buf, n) end
    size = n + 1
  end
end

-- manual_seed(seed): an integer in [-2^63, 2^64); a negative seed wraps to
-- 2^64 + seed, as PyTorch's, so every integer names its own stream
function netcl.manual_seed(seed)
  lib.integer("manual_seed", "the seed", seed)
  if seed < -2 ^ 63 or seed >= 2 ^ 64 then throw("manual_seed: the seed must be in [-2^63, 2^64), got " .. tostring(seed)) end
  C.netcl_rng_seed(seed < 0 and ffi.cast("uint64_t", ffi.cast("int64_t", seed)) or ffi.cast("uint64_t", seed))
end
function netcl.shutdown() C.netcl_shutdown() end

-- ---- creation ------------------------------------------------------------------

local UNIFORM, NORMAL, RANDINT = C.NETCL_RNG_UNIFORM, C.NETCL_RNG_NORMAL, C.NETCL_RNG_RANDINT

-- (opts) -> device handle, dtype code, requires_grad
local TARGET_OPTS = { dtype = true, device = true, requires_grad = true }
local function target(opts, default_dtype, who)
  local p = who and who .. ": " or ""
  if opts ~= nil and type(opts) ~= "table" then throw(p .. "options must be a table {dtype=, device=}, got " .. type(opts)) end
  opts = opts or {}
  for k in pairs(opts) do
    if not TARGET_OPTS[k] then throw(("%sunknown option '%s' (dtype, device, requires_grad)"):format(p, tostring(k))) end
  end
  local dev = resolve(opts.device, who).handle
  return dev, dtype_code(opts.dtype or default_dtype), opts.requires_grad
end

local function finish(t, requires_grad)
  if requires_grad then t:requires_grad_(true) end
  return t
end

local function sized(who, extra)
  return function(...)
    local opts, n = split_opts(...)
    local args = { ... }
    local nd, sizes = parse_sizes_for(who, unpack(args, 1, n))
    for i = 0, nd - 1 do
      if sizes[i] < 0 then throw(("%s: negative size %d in dim %d"):format(who, tonumber(sizes[i]), i + 1)) end
    end
    local dev, dt, rg = target(opts, nil, who)
    return finish(extra(dev, dt, nd, sizes), rg)
  end
end

netcl.empty = sized("empty", function(dev, dt, nd, s) return call1(C.netcl_tensor_empty, dev, dt, nd, s) end)
-- empty_pinned(sizes..., {device = d}): a cpu tensor in page-locked memory of
-- d's driver, whose copies to d run on a transfer queue (docs/tensor-api.md)
netcl.empty_pinned = sized("empty_pinned", function(dev, dt, nd, s) return call1(C.netcl_tensor_empty_pinned, dev, dt, nd, s) end)
netcl.zeros = sized("zeros", function(dev, dt, nd, s) return call1(C.netcl_tensor_full, dev, dt, nd, s, 0) end)
netcl.ones = sized("ones", function(dev, dt, nd, s) return call1(C.netcl_tensor_full, dev, dt, nd, s, 1) end)
netcl.rand = sized("rand", function(dev, dt, nd, s) return call1(C.netcl_tensor_rand, dev, dt, nd, s, UNIFORM, 0, 1) end)
netcl.randn = sized("randn", function(dev, dt, nd, s) return call1(C.netcl_tensor_rand, dev, dt, nd, s, NORMAL, 0, 1) end)

-- full(size, value, opts): size is a number or a table of sizes
function netcl.full(size, value, opts)
  if type(value) == "boolean" then value = value and 1 or 0 end
  if type(value) ~= "number" then throw("full: value must be a number or boolean, got " .. type(value)) end
  local nd, s = parse_sizes_for("full", size)
  local dev, dt, rg = target(opts, nil, "full")
  return finish(call1(C.netcl_tensor_full, dev, dt, nd, s, value), rg)
end

-- randint(low, high, size, opts) or randint(high, size, opts): integers in
-- [low, high), int64 by default
function netcl.randint(low, high, size, opts)
  if type(high) == "table" then low, high, size, opts = 0, low, high, size end
  if type(low) ~= "number" or type(high) ~= "number" then throw("randint: low and high must be numbers") end
  lib.finite("randint", "low", low)
  lib.finite("randint", "high", high)
  if size == nil then throw("randint: size is missing (randint(low, high, size, opts))") end
  local nd, s = parse_sizes_for("randint", size)
  local dev, dt = target(opts, "int64", "randint")
  return call1(C.netcl_tensor_rand, dev, dt, nd, s, RANDINT, low, high)
end

-- arange(stop) / arange(start, stop, step?): end exclusive (PyTorch)
function netcl.arange(a, b, c, opts)
  if type(b) == "table" then opts, b = b, nil end
  if type(c) == "table" then opts, c = c, nil end
  local start, stop, step = 0, a, 1
  if b ~= nil then start, stop, step = a, b, c or 1 end
  if type(start) ~= "number" or type(stop) ~= "number" or type(step) ~= "number" then
    throw("arange: start, stop and step must be numbers")
  end
  local dev, dt, rg = target(opts, nil)
  return finish(call1(C.netcl_tensor_arange, dev, dt, start, stop, step), rg)
end

function netcl.linspace(a, b, n, opts)
  lib.finite("linspace", "start", a)
  lib.finite("linspace", "end", b)
  lib.integer("linspace", "steps", n, 0)
  local dev, dt, rg = target(opts, nil)
  return finish(call1(C.netcl_tensor_linspace, dev, dt, a, b, n), rg)
end

function netcl.eye(n, m, opts)
  if type(m) == "table" then opts, m = m, nil end
  lib.integer("eye", "n", n, 0)
  if m ~= nil then lib.integer("eye", "m", m, 0) end
  local dev, dt, rg = target(opts, nil)
  return finish(call1(C.netcl_tensor_eye, dev, dt, n, m or n), rg)
end

-- nested Lua table (or a number, or a tensor: copied) -> tensor; booleans
-- give a bool tensor
function netcl.tensor(value, opts)
  if tensor.is_tensor(value) then
    local o = opts or {}
    local t = value:to(o.device or value.device)
    t = t:cast(o.dtype or value.dtype)   -- cast always copies: never aliases `value`
    return finish(t, o.requires_grad)
  end
  local sizes, flat = {}, {}
  local function shape_of(v, d)
    if type(v) == "table" then
      sizes[d] = #v
      if type(v[1]) == "table" then shape_of(v[1], d + 1) end
    end
  end
  shape_of(value, 1)
  local first_leaf
  local function walk(v, d)
    if type(v) == "table" then
      if sizes[d] == nil then throw(("tensor: ragged table: a table where a number was expected at depth %d"):format(d)) end
      if #v ~= sizes[d] then throw(("tensor: ragged table: %d entries where %d expected at depth %d"):format(#v, sizes[d], d)) end
      for i = 1, #v do walk(v[i], d + 1) end
    else
      if d <= #sizes then throw("tensor: ragged table: a number where a table was expected") end
      if type(v) == "cdata" then v = tonumber(v) end   -- 1LL, 2ULL (through a double)
      if type(v) == "boolean" then v = v and 1 or 0; first_leaf = first_leaf or "bool"
      elseif type(v) ~= "number" then throw("tensor: entries must be numbers or booleans, got " .. type(v))
      else first_leaf = first_leaf or "number" end
      flat[#flat + 1] = v
    end
  end
  walk(value, 1)
  local buf = ffi.new("double[?]", math.max(#flat, 1), flat)
  local nd, s = parse_sizes(sizes)
  local dev, dt, rg = target(opts, first_leaf == "bool" and "bool" or nil)
  return finish(call1(C.netcl_tensor_from_doubles, dev, dt, nd, s, buf), rg)
end

-- copies `numel(sizes)` elements of dtype from a raw pointer
function netcl.from_pointer(ptr, dtype, sizes, opts)
  local nd, s = parse_sizes(sizes)
  local dev = resolve(opts and opts.device).handle
  return call1(C.netcl_tensor_from_host, dev, dtype_code(dtype), nd, s, ffi.cast("const void *", ptr))
end

local function like(f, name)
  return function(t, a, b)
    if not tensor.is_tensor(t) then throw(("%s: expected a tensor, got %s"):format(name, type(t))) end
    local opts = type(a) == "table" and a or b or {}
    local o = { dtype = opts.dtype or t:type(), device = opts.device or t.device, requires_grad = opts.requires_grad }
    if type(a) == "number" then return f(t:size(), a, o) end
    return f(t:size(), o)
  end
end
netcl.zeros_like = like(function(s, o) return netcl.zeros(s, o) end, "zeros_like")
netcl.ones_like = like(function(s, o) return netcl.ones(s, o) end, "ones_like")
netcl.rand_like = like(function(s, o) return netcl.rand(s, o) end, "rand_like")
netcl.randn_like = like(function(s, o) return netcl.randn(s, o) end, "randn_like")
netcl.empty_like = like(function(s, o) return netcl.empty(s, o) end, "empty_like")
netcl.full_like = like(function(s, v, o) return netcl.full(s, v, o) end, "full_like")

-- ---- data readers ----------------------------------------------------------------

-- IDX file (MNIST / Fashion-MNIST; gzip or plain) -> cpu tensor (uint8 for images and labels)
function netcl.read_idx(path)
  if type(path) ~= "string" then throw("read_idx: path must be a string") end
  return call1(C.netcl_read_idx, path)
end

-- ---- tensor methods that need the module ---------------------------------------

local methods = tensor.methods

-- to(device name | device | dtype name)
-- to(device name | device object | dtype name | {device=, dtype=}); returns
-- t itself when nothing changes (as PyTorch does)
function methods.to(t, target_)
  if type(target_) == "string" then
    local code = C.netcl_dtype_from_name(target_)
    if code ~= C.NETCL_DTYPE_COUNT then   -- a dtype name
      if C.netcl_tensor_dtype(H(t)) == code then return t end
      return call1(C.netcl_tensor_cast, H(t), code)
    end
  elseif type(target_) == "table" and not target_.handle then
    local out = t
    if target_.device ~= nil then out = methods.to(out, target_.device) end
    if target_.dtype ~= nil then out = methods.to(out, dtype_name(target_.dtype)) end
    return out
  end
  if type(target_) == "string" and C.netcl_device_get(ffi.new("netcl_device *[1]"), target_) ~= 0 then
    throw(("to: '%s' is neither a dtype nor a device (%s)"):format(target_, ffi.string(C.netcl_last_error())))
  end
  if type(target_) ~= "string" and not (type(target_) == "table" and target_.handle) then
    throw("to: expected a dtype name, a device name, a device or {device=, dtype=}, got " .. type(target_))
  end
  local dev = resolve(target_, "to")
  if t.device == dev.name then return t end
  return call1(C.netcl_tensor_to_device, H(t), dev.handle)
end

function methods.cpu(t) return methods.to(t, "cpu") end

-- t:pin_memory(dev): a copy of cpu tensor t in pinned memory for dev (the default device)
function methods.pin_memory(t, dev)
  if t.device ~= "cpu" then throw("pin_memory: " .. t.device .. " tensors cannot be pinned, only cpu ones") end
  local p = netcl.empty_pinned(t:size(), { device = dev, dtype = t.dtype })
  return p:copy_(t)
end

-- module-level forms of the tensor methods: netcl.add(a, b), netcl.exp(x), ...
for _, name in ipairs({ "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
                        "neg", "abs", "exp", "log", "sqrt", "relu", "sigmoid", "tanh", "sign", "reciprocal", "square",
                        "rsqrt", "expm1", "log1p", "log2", "sin", "cos", "tan", "floor", "ceil", "round", "trunc",
                        "silu", "gelu", "softplus", "relu6", "leaky_relu", "elu", "clamp", "hardtanh", "erf",
                        "sum", "mean", "prod", "max",
                        "min", "argmax", "argmin", "matmul", "view", "reshape", "transpose", "permute", "narrow",
                        "select", "expand", "squeeze", "unsqueeze", "contiguous", "flatten", "clone", "detach" }) do
  netcl[name] = methods[name]
end

-- ---- op families ---------------------------------------------------------------------
-- Each lua/netcl/ops/<family>.lua returns function(netcl, methods) and installs
-- module functions and tensor methods of one family into this module and
-- the Tensor type (1-based dims and indices there, converted to 0-based for
-- the C call).

for _, install in ipairs({ require("netcl.ops.select"), require("netcl.ops.reductions"), require("netcl.ops.conv"),
                           require("netcl.ops.index") }) do
  install(netcl, methods)
end

-- GEMM tuning, configurations and netcl.backends (netcl/tune.lua)
require("netcl.tune")(netcl, resolve)

-- ---- autograd switches ---------------------------------------------------------------

function netcl.is_grad_enabled() return C.netcl_grad_enabled() ~= 0 end
function netcl.set_grad_enabled(flag) C.netcl_set_grad_enabled(flag and 1 or 0) end

-- Runs fn(...) with gradient recording off; restores the mode after, also on error.
function netcl.no_grad(fn, ...)
  lib.typed("no_grad", "the argument", fn, "function")
  return tensor.with_grad_mode(false, fn, ...)
end

-- Teardown when the Lua state closes (normal end of a script, an error, or
-- Ctrl-C under the launcher): queued work finishes and devices are released
-- before exit handlers run. netcl_shutdown is idempotent.
netcl._teardown = ffi.gc(ffi.new("char[1]"), function() C.netcl_shutdown() end)

return netcl
