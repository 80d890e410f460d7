-- netcl/data/util.lua — pieces the data modules share: objects with `#`
-- and __gc (LuaJIT's tables honour neither, so objects are proxies), the
-- dataset protocol (length, get), collation of samples into batch fields,
-- and the libc calls the worker pool makes.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local C, throw = lib.C, lib.throw
local DTYPE = tensor.DTYPE

local M = {}

for _, decl in ipairs({ "int getpid(void);", "int waitpid(int pid, int *status, int options);", "int kill(int pid, int sig);",
                        "int close(int fd);", "void _exit(int status);", "int usleep(unsigned int usec);" }) do
  pcall(ffi.cdef, decl)
end
M.libc = ffi.C
pcall(ffi.cdef, [[
  struct netcl_data_ts { long tv_sec; long tv_nsec; };
  int netcl_data_clock_gettime(int clk, struct netcl_data_ts *ts) __asm__("clock_gettime");
]])
local ts = ffi.new("struct netcl_data_ts")
-- seconds on the monotonic clock
function M.monotonic()
  ffi.C.netcl_data_clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- A proxy object: reads and writes go to `fields` (whose metatable is
-- `class`), and `class` may give __len, __call, __gc and __tostring.
function M.object(class, fields)
  local p = newproxy(true)
  local mt = getmetatable(p)
  local state = setmetatable(fields, { __index = class })
  mt.__index, mt.__newindex = state, state
  mt.__len, mt.__call, mt.__gc, mt.__tostring = class.__len, class.__call, class.__gc, class.__tostring
  return p, state
end

-- Length of a dataset: # on proxies and tensors, __len or len() on tables,
-- else the raw length (a plain array of samples).
function M.dataset_len(ds, who)
  local t = type(ds)
  if t == "userdata" or t == "cdata" then return #ds end
  if t == "table" then
    local mt = getmetatable(ds)
    if mt and mt.__len then return mt.__len(ds) end
    if M.method(ds, "len") then return ds:len() end
    return #ds
  end
  throw(("%s: a dataset is an object with __len and get(i) (or __index), got %s"):format(who, t))
end

-- ds's method `name`, or nil, without calling an __index function with a
-- string (a dataset's __index(ds, i) may expect only numbers)
function M.method(ds, name)
  local v
  if type(ds) == "table" then
    v = rawget(ds, name)
    local mt = getmetatable(ds)
    if v == nil and mt and type(mt.__index) == "table" then v = mt.__index[name] end
  elseif type(ds) == "userdata" then
    v = ds[name]
  end
  return type(v) == "function" and v or nil
end

-- function(i) -> the sample's values (1-based i)
function M.getter(ds)
  local get = M.method(ds, "get")
  if type(get) == "function" then return function(i) return get(ds, i) end end
  return function(i) return ds[i] end
end

-- a tensor's values as a flat Lua list
function M.flat_table(t)
  local buf, n = tensor.to_doubles(t)
  local out = {}
  for i = 1, n do out[i] = buf[i - 1] end
  return out
end

local function pack(...) return { n = select("#", ...), ... } end
M.pack = pack

-- The shape of a sample or batch: {kind = "tuple", n} for multiple values,
-- {kind = "table", keys} for one plain Lua table (keys sorted for arrays
-- and names alike, so every process orders fields the same way).
function M.structure_of(values)
  local first = values[1]
  if values.n == 1 and type(first) == "table" then
    local keys = {}
    for k in pairs(first) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) == "number"
    end)
    return { kind = "table", keys = keys, n = #keys }
  end
  return { kind = "tuple", n = values.n }
end

-- values (packed) -> list of fields in the structure's order
function M.fields_of(values, st)
  if st.kind == "tuple" then return values end
  local t, out = values[1], { n = st.n }
  for i, k in ipairs(st.keys) do out[i] = t[k] end
  return out
end

-- fields -> what the user receives (multiple values or one table)
function M.unfields(fields, st)
  if st.kind == "tuple" then return unpack(fields, 1, st.n) end
  local t = {}
  for i, k in ipairs(st.keys) do t[k] = fields[i] end
  return t
end

local cpu_box = ffi.new("netcl_device *[1]")
-- the cpu device's handle (devices live until netcl_shutdown)
function M.cpu_handle()
  if cpu_box[0] == nil then lib.check(C.netcl_device_get(cpu_box, "cpu")) end
  return cpu_box[0]
end

local items = ffi.new("netcl_tensor *[?]", 64)
local items_cap = 64
local doubles = ffi.new("double[?]", 64)
local doubles_cap = 64
local outp = ffi.new("netcl_tensor *[1]")
local size1 = ffi.new("int64_t[1]")

-- One field over a batch of samples -> a stacked cpu tensor. Tensors stack
-- along a new leading dim; numbers become int64 (all integral) or float32;
-- booleans a bool tensor.
local function collate_field(samples, st, f, who)
  local n = #samples
  local first = M.fields_of(samples[1], st)[f]
  if tensor.is_tensor(first) then
    if n > items_cap then items_cap = n * 2; items = ffi.new("netcl_tensor *[?]", items_cap) end
    for s = 1, n do
      local v = M.fields_of(samples[s], st)[f]
      if not tensor.is_tensor(v) then throw(("%s: field %d of sample %d is a %s, sample 1 has a tensor there"):format(who, f, s, type(v))) end
      items[s - 1] = tensor.handle(v)
    end
    return tensor.call1(C.netcl_data_stack, n, items)
  end
  if n > doubles_cap then doubles_cap = n * 2; doubles = ffi.new("double[?]", doubles_cap) end
  local integral, kind = true, type(first)
  if kind ~= "number" and kind ~= "boolean" then
    throw(("%s: field %d of sample 1 is a %s; samples hold tensors, numbers or booleans"):format(who, f, kind))
  end
  for s = 1, n do
    local v = M.fields_of(samples[s], st)[f]
    if type(v) ~= kind then throw(("%s: field %d of sample %d is a %s, sample 1 has a %s there"):format(who, f, s, type(v), kind)) end
    if kind == "boolean" then v = v and 1 or 0 elseif v ~= math.floor(v) then integral = false end
    doubles[s - 1] = v
  end
  size1[0] = n
  local dtype = kind == "boolean" and DTYPE.bool or (integral and DTYPE.int64 or DTYPE.float32)
  return tensor.call1(C.netcl_tensor_from_doubles, M.cpu_handle(), dtype, 1, size1, doubles)
end

-- samples: list of packed sample values -> (fields, structure)
function M.collate(samples, who)
  local st = M.structure_of(samples[1])
  local fields = { n = st.n }
  for f = 1, st.n do fields[f] = collate_field(samples, st, f, who) end
  return fields, st
end

return M
