-- netcl/lib.lua — loads libnetcl through the FFI (once), checks the ABI,
-- and turns C statuses into Lua errors that point at the user's line (the
-- first frame outside lua/netcl/, so internal call depth never matters).
local ffi = require("ffi")

local M = {}
M.ABI_VERSION = 1

ffi.cdef(require("netcl.cdef"))
ffi.cdef [[ struct netcl_lua_tensor { netcl_tensor *h; }; ]]

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

-- activations the GEMM and convolution kernels fuse, by name: netcl_op codes
M.FUSED_ACTS = { relu = 5, sigmoid = 6, tanh = 7, silu = 22, gelu = 23, gelu_tanh = 24, relu6 = 26, leaky_relu = 27 }
-- the code of opts.act for op (-1 when absent); an unknown name is an error
function M.fused_act(opts, op)
  if opts.act == nil then return -1 end
  return M.FUSED_ACTS[opts.act] or throw(("%s: unknown or unfusable activation %s (relu, sigmoid, tanh, silu, gelu, "
    .. "gelu_tanh, relu6, leaky_relu)"):format(op, tostring(opts.act)))
end

function M.raise() throw(ffi.string(C.netcl_last_error())) end

local OOM = 3

-- For a failed status st of f(out, ...): on out-of-memory, collect garbage
-- twice and call f once more; raises unless that succeeded. No closures, so
-- the callers' hot paths stay compilable.
function M.fail(st, f, out, ...)
  if st == OOM and f then
    collectgarbage("collect")
    collectgarbage("collect")
    if f(out, ...) == 0 then return end
  end
  throw(ffi.string(C.netcl_last_error()))
end

-- For statuses of calls that allocate nothing the caller can free.
function M.check(st)
  if st ~= 0 then throw(ffi.string(C.netcl_last_error())) end
end

return M
