-- spec/cdef_spec.lua — the FFI declarations must be exactly the header's
-- cdef section (the build generates them; a stale copy is a failure), and
-- the library's ABI version must match the Lua side's.
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

TestCdef = {}

function TestCdef:test_generated_matches_header()
  local lines = {}
  -- the headers in the Makefile's order (CDEF_HEADERS)
  local list = H.read_file(root .. "/Makefile"):match("\nCDEF_HEADERS = ([^\n]+)")
  lu.assertNotNil(list, "CDEF_HEADERS in the Makefile")
  for name in list:gmatch("src/(%S+)") do
    local section = H.read_file(root .. "/src/" .. name):match("/%* cdef%-begin %*/\n(.-)/%* cdef%-end %*/")
    lu.assertNotNil(section, "cdef markers in src/" .. name)
    for line in (section):gmatch("([^\n]*)\n") do
      if not line:match("^#") then lines[#lines + 1] = line end
    end
  end
  local want = table.concat(lines, "\n")
  local got = require("netcl.cdef")
  lu.assertEquals(got:gsub("%s+$", ""), want:gsub("%s+$", ""))
end

function TestCdef:test_abi_version()
  local netcl = H.netcl
  lu.assertEquals(netcl.C.netcl_abi_version(), netcl.ABI_VERSION)
  lu.assertIsString(netcl.version)
end

-- Lua's enum tables are read from the cdef (lib.enum), never typed again:
-- their names are the engine's own names for the same codes.
function TestCdef:test_lua_enums_from_the_cdef()
  local ffi = require("ffi")
  local tensor = require("netcl.tensor")
  local C = H.netcl.C
  local n = 0
  for code, name in pairs(tensor.DTYPES) do
    lu.assertEquals(ffi.string(C.netcl_dtype_name(code)), name)
    n = n + 1
  end
  lu.assertEquals(n, C.NETCL_DTYPE_COUNT)
  for name, code in pairs(tensor.OP) do lu.assertEquals(ffi.string(C.netcl_op_name(code)), name) end
  lu.assertEquals(tensor.OP.add, C.NETCL_OP_ADD)
  lu.assertNil(tensor.OP.unary_end, "bounds are not ops")
  lu.assertError(require("netcl.lib").enum, "netcl_no_such_enum", "NETCL_")
end
