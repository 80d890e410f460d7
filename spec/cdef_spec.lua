-- spec/cdef_spec.lua — the FFI declarations must be exactly the header's
-- cdef section (the build generates them; a stale copy is a failure), and
-- the library's ABI version must match the Lua side's.
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

TestCdef = {}

function TestCdef:test_generated_matches_header()
  local lines = {}
  for _, name in ipairs({ "netcl.h", "netcl_data.h" }) do
    local section = read(root .. "/src/" .. name):match("/%* cdef%-begin %*/\n(.-)/%* cdef%-end %*/")
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
