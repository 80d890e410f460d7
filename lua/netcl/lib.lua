-- netcl/lib.lua — loads libnetcl through the FFI (once), checks the ABI,
-- and turns C statuses into Lua errors that point at the user's line (the
-- first frame outside lua/netcl/, so internal call depth never matters).
local ffi = require("ffi")

local M = {}
M.ABI_VERSION = 1

local CDEF = require("netcl.cdef")
ffi.cdef(CDEF)
-- scope: the box's place in netcl.lifetime's list of a module call's
-- intermediates (0: none; negative: released when that call returned)
ffi.cdef [[ struct netcl_lua_tensor { netcl_tensor *h; int32_t scope; }; ]]

-- NETCL_LIB, else libnetcl.so on package.cpath (build/ under the launcher,
-- the rocks tree after `luarocks make`), else the system's library path.
local function find_library()
  local env = os.getenv("NETCL_LIB")
  if env and env ~= "" then return env end
  return package.searchpath("libnetcl", package.cpath) or "netcl"
end

local path = find_library()
local ok, C = pcall(ffi.load, path)
if not ok then
  error("netcl: cannot load libnetcl from '" .. path .. "' (" .. tostring(C) .. "); build it with `make` and put " ..
        "its folder on LUA_CPATH (e.g. LUA_CPATH=\"$ROOT/build/?.so;;\") or set NETCL_LIB=/path/libnetcl.so", 2)
end
local okv, abi = pcall(function() return C.netcl_abi_version() end)
if not okv or abi ~= M.ABI_VERSION then
  error(("netcl: %s has ABI version %s, this Lua side expects %d: rebuild the library with `make` " ..
         "(or point NETCL_LIB at a matching build)"):format(path, okv and tostring(abi) or "(none)", M.ABI_VERSION), 2)
end
M.C = C
M.path = path

-- One Lua state per process: devices, memory pools, the RNG and the
-- autocast and capture state are the process's, and a state that closes
-- shuts them down (docs/c-api.md, "Embedding").
if C.netcl_claim_lua_state() ~= 0 then
  error("netcl: another Lua state in this process has already loaded netcl; netcl serves one Lua state per " ..
        "process (its devices, memory pools and RNG are process-wide): use netcl from that state, or from " ..
        "another process", 2)
end

-- ---- enums -------------------------------------------------------------------------

-- The C enum `ctype` of the cdef (e.g. "netcl_dtype") as two Lua tables:
-- by_name {[name] = value} and by_value {[value] = name}, a name being the
-- member's without `prefix`, lower-cased (NETCL_DTYPE_FLOAT32 -> float32).
-- The member names come from the cdef text, their values through the FFI,
-- so no C constant is typed again in Lua. `sentinels` lists the members
-- that are bounds, not values (e.g. { "count" }); they are left out (read
-- them as C.NETCL_...). A name missing from the cdef is an error here, at load.
local enum_bodies   -- enum name -> the text between its braces, from one pass over the cdef
function M.enum(ctype, prefix, sentinels)
  if not enum_bodies then
    enum_bodies = {}
    for name, body in CDEF:gmatch("typedef%s+enum%s+([%w_]+)%s*{(.-)}%s*%1%s*;") do enum_bodies[name] = body end
  end
  local body = enum_bodies[ctype]
  if not body then error("netcl.lib: the cdef has no enum " .. ctype, 2) end
  local skip = {}
  for _, s in ipairs(sentinels or {}) do skip[s] = true end
  local by_name, by_value = {}, {}
  for item in (body:gsub("/%*.-%*/", "") .. ","):gmatch("([^,]*),") do
    local member = item:match("^%s*([%w_]+)")
    if member then
      if member:sub(1, #prefix) ~= prefix then error(("netcl.lib: %s of enum %s lacks the prefix %s"):format(member, ctype, prefix), 2) end
      local name = member:sub(#prefix + 1):lower()
      if skip[name] then
        skip[name] = nil
      else
        local value = C[member]
        by_name[name], by_value[value] = value, name
      end
    end
  end
  local missing = next(skip)
  if missing then error(("netcl.lib: enum %s has no member %s%s"):format(ctype, prefix, missing:upper()), 2) end
  return by_name, by_value
end

-- ---- errors ------------------------------------------------------------------------

local getinfo, sub = debug.getinfo, string.sub
local LIBSRC = getinfo(1, "S").source:match("^(@.*[/\\])[^/\\]*$") or "@?"
local NLIB = #LIBSRC

-- Raises msg at the first Lua frame that is neither netcl's own code nor a C
-- function (pcall, tostring, ...): the user's line, whatever the call depth.
local function throw(msg)
  local level = 2
  while true do
    local info = getinfo(level, "S")
    if not info then level = 0; break end
    if info.what ~= "C" and sub(info.source, 1, NLIB) ~= LIBSRC then break end
    level = level + 1
  end
  error(msg, level)
end
M.throw = throw

-- ---- argument checks shared by the Lua entry points -------------------------
-- Each raises "<who>: <what> must be ..., got <value>" at the user's line.
local function shown(v)
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end

-- an integer (a number with no fraction; finite) in [lo, hi] where given
function M.integer(who, what, v, lo, hi)
  if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge or v % 1 ~= 0 then
    throw(("%s: %s must be an integer, got %s"):format(who, what, shown(v)))
  end
  if (lo and v < lo) or (hi and v > hi) then
    throw(("%s: %s must be %s, got %s"):format(who, what,
      lo and hi and ("in [%s, %s]"):format(lo, hi) or lo and (">= " .. lo) or ("<= " .. hi), shown(v)))
  end
  return v
end

-- an options table (nil: empty) whose keys are all in `allowed` (a set);
-- the error points `level` frames up (default: the caller's caller)
function M.options(who, opts, allowed, level)
  if opts == nil then return {} end
  if type(opts) ~= "table" then throw(("%s: options must be a table, got %s"):format(who, type(opts)), level or 3) end
  for k in pairs(opts) do
    if not allowed[k] then throw(("%s: unknown option '%s'"):format(who, tostring(k)), level or 3) end
  end
  return opts
end

-- a finite number (NaN and the infinities refused)
function M.finite(who, what, v)
  if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then
    throw(("%s: %s must be a finite number, got %s"):format(who, what, shown(v)))
  end
  return v
end

-- a value of Lua type ty ("function", "table", ...)
function M.typed(who, what, v, ty)
  if type(v) ~= ty then throw(("%s: %s must be a %s, got %s"):format(who, what, ty, type(v))) end
  return v
end

-- activations the GEMM and convolution kernels fuse, by name: netcl_op codes
M.FUSED_ACTS = {}
for _, name in ipairs({ "relu", "sigmoid", "tanh", "silu", "gelu", "gelu_tanh", "relu6", "leaky_relu" }) do
  M.FUSED_ACTS[name] = C["NETCL_OP_" .. name:upper()]
end
-- the code of opts.act for op (-1 when absent); an unknown name is an error
function M.fused_act(opts, op)
  if opts.act == nil then return -1 end
  return M.FUSED_ACTS[opts.act] or throw(("%s: unknown or unfusable activation %s (relu, sigmoid, tanh, silu, gelu, "
    .. "gelu_tanh, relu6, leaky_relu)"):format(op, tostring(opts.act)))
end

function M.raise() throw(ffi.string(C.netcl_last_error())) end

local OOM = C.NETCL_ERR_OOM

local tensor_ptr = ffi.typeof("netcl_tensor *")
local tensor_ptrs = ffi.typeof("netcl_tensor *[?]")
local PTR = ffi.sizeof("netcl_tensor *")

-- Retains (d = 1) or releases (d = -1) every tensor handle among the
-- arguments, arrays of handles included.
local function hold(d, ...)
  for i = 1, select("#", ...) do
    local a = select(i, ...)
    if type(a) == "cdata" then
      if ffi.istype(tensor_ptr, a) then
        if a ~= nil then if d > 0 then C.netcl_tensor_retain(a) else C.netcl_tensor_release(a) end end
      elseif ffi.istype(tensor_ptrs, a) then
        for k = 0, ffi.sizeof(a) / PTR - 1 do
          if a[k] ~= nil then if d > 0 then C.netcl_tensor_retain(a[k]) else C.netcl_tensor_release(a[k]) end end
        end
      end
    end
  end
end

-- Every device's pool gives its cached free blocks back to the driver (a
-- driver that allocates lazily fails at a kernel's launch, past the pool).
local function empty_caches()
  for i = 0, C.netcl_device_count() - 1 do C.netcl_memory_empty_cache(C.netcl_device_at(i)) end
end

-- For a failed status st of f(out, ...): on out-of-memory, drop LuaJIT's
-- compiled traces (their constants can keep a discarded model's tables and
-- tensor boxes reachable), collect garbage twice, return the pools' cached
-- blocks and call f once more; raises unless that succeeded. The arguments
-- are raw handles whose Lua boxes may be unreferenced temporaries, which
-- the collection would free: the retry holds a reference to each. No
-- closures, so the callers' hot paths stay compilable.
function M.fail(st, f, out, ...)
  if st == OOM and f then
    hold(1, ...)
    jit.flush()
    collectgarbage("collect")
    collectgarbage("collect")
    empty_caches()
    local again = f(out, ...)
    hold(-1, ...)
    if again == 0 then return end
  end
  throw(ffi.string(C.netcl_last_error()))
end

-- For statuses of calls that allocate nothing the caller can free.
function M.check(st)
  if st ~= 0 then throw(ffi.string(C.netcl_last_error())) end
end

return M
