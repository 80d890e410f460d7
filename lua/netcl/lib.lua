-- netcl/lib.lua — loads libnetcl through the FFI (once), checks the ABI,
-- and turns C statuses into Lua errors that point at the caller's line.
local ffi = require("ffi")

local M = {}
M.ABI_VERSION = 1

ffi.cdef(require("netcl.cdef"))
ffi.cdef [[ struct netcl_lua_tensor { netcl_tensor *h; }; ]]

local function find_library()
  local env = os.getenv("NETCL_LIB")
  if env and env ~= "" then return env end
  return package.searchpath("libnetcl", package.cpath) or "netcl"
end

local ok, C = pcall(ffi.load, find_library())
if not ok then
  error("netcl: cannot load libnetcl (" .. tostring(C) .. "); build it with `make` and put its folder on LUA_CPATH " ..
        "(e.g. LUA_CPATH=\"$ROOT/build/?.so;;\") or set NETCL_LIB", 2)
end
if C.netcl_abi_version() ~= M.ABI_VERSION then
  error(("netcl: libnetcl ABI version %d, the Lua side expects %d: rebuild with `make`"):format(
    C.netcl_abi_version(), M.ABI_VERSION), 2)
end
M.C = C

local OOM = 3

-- Raises the last C error at `level` (relative to the caller of raise).
function M.raise(level)
  error(ffi.string(C.netcl_last_error()), (level or 1) + 1)
end

-- For a failed status: on out-of-memory, collect garbage and run retry()
-- once; raise unless that succeeded. Returns nothing on success.
function M.fail(st, level, retry)
  if st == OOM and retry then
    collectgarbage("collect")
    collectgarbage("collect")
    if retry() == 0 then return end
  end
  error(ffi.string(C.netcl_last_error()), (level or 1) + 1)
end

return M
