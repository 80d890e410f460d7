-- spec/capi_spec.lua — the C API used from C: the example in docs/c-api.md
-- is compiled against build/libnetcl.so and run on the device under test.
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

TestCApi = {}

function TestCApi:test_docs_example_compiles_and_runs()
  local f = assert(io.open(root .. "/docs/c-api.md"))
  local doc = f:read("*a")
  f:close()
  local code = doc:match("```c\n(.-)```")
  lu.assertNotNil(code, "C example in docs/c-api.md")
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local src = io.open(dir .. "/example.c", "w")
  src:write(code)
  src:close()
  local lib = os.getenv("NETCL_LIB") and os.getenv("NETCL_LIB"):match("^(.*)/[^/]*$") or (root .. "/build")
  local cc = ("gcc -std=c11 -Wall -Werror -I%s/src %s/example.c -o %s/example -L%s -lnetcl -Wl,-rpath,%s")
    :format(root, dir, dir, lib, lib)
  local out, code = H.run(cc)
  lu.assertEquals(code, 0, "compile failed:\n" .. out)
  out, code = H.run(("NETCL_DEVICE=%s %s/example"):format(H.device, dir))
  os.execute("rm -rf " .. dir)
  lu.assertEquals(code, 0, out)
  local x, y = out:match("^(%S+) (%S+)\n$")
  lu.assertNotNil(tonumber(x), "printed two numbers, got: " .. out)
  lu.assertNotNil(tonumber(y))
end

-- examples/embed/embed.c: an application embedding LuaJIT trains through
-- netcl, and a second Lua state in its process is refused with the reason
function TestCApi:test_embedded_luajit_and_a_second_state()
  if not H.is_cpu then lu.skip("the embedding example runs once, on the cpu pass") end
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local out, code = H.run(("gcc -std=c11 -Wall -Werror -I/usr/include/luajit-2.1 %s/examples/embed/embed.c -o %s/embed -lluajit-5.1")
    :format(root, dir))
  lu.assertEquals(code, 0, "compile failed:\n" .. out)
  out, code = H.run(("LUA_PATH='%s/lua/?.lua;%s/lua/?/init.lua;;' LUA_CPATH='%s/build/?.so;;' NETCL_DEVICE=cpu %s/embed")
    :format(root, root, root, dir))
  os.execute("rm -rf " .. dir)
  lu.assertEquals(code, 0, out)
  lu.assertStrContains(out, "second state refused: netcl: another Lua state in this process has already loaded netcl")
end

-- examples/embed/capi_train.c: a plain C program (no Lua) trains a linear
-- model through the C API alone, on the device under test
function TestCApi:test_plain_c_program_trains()
  local dir = (H.run("mktemp -d")):match("%S+")
  local lib = os.getenv("NETCL_LIB") and os.getenv("NETCL_LIB"):match("^(.*)/[^/]*$") or (root .. "/build")
  local out, code = H.run(("gcc -std=c11 -Wall -Werror -I%s/src %s/examples/embed/capi_train.c -o %s/capi_train -L%s -lnetcl -Wl,-rpath,%s -lm")
    :format(root, root, dir, lib, lib))
  lu.assertEquals(code, 0, "compile failed:\n" .. out)
  out, code = H.run(("NETCL_DEVICE=%s %s/capi_train"):format(H.device, dir))
  os.execute("rm -rf " .. dir)
  lu.assertEquals(code, 0, out)
  lu.assertNotNil(out:match("loss [%d.]+ %-> [%d.]+, largest weight error"), out)
end
