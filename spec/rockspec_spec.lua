-- spec/rockspec_spec.lua — the luarocks route: `luarocks make` of the
-- rockspec into a private tree installs every Lua module, the library and
-- the launcher, and `require "netcl"` works from plain LuaJIT with only that
-- tree on its paths (from another directory); `make rock` packs a source
-- rock that `luarocks install` builds into a fresh tree from anywhere.
-- Also `make install` itself. Nothing is left in the checkout.
local lu = require("luaunit")
local H = require("helper")

local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

TestRockspec = {}

function TestRockspec:setUp() lu.skipIf(not H.is_cpu, "installs once, on the cpu pass") end

-- every Lua file of lua/netcl must arrive under the tree's Lua dir
local function check_tree(luadir, libdir, bindir)
  local p = io.popen("cd " .. root .. "/lua && find netcl -name '*.lua'")
  local n = 0
  for f in p:lines() do
    n = n + 1
    local fh = io.open(luadir .. "/" .. f)
    lu.assertNotNil(fh, "installed: " .. f)
    if fh then fh:close() end
  end
  p:close()
  lu.assertTrue(n > 30, "found the Lua modules")
  lu.assertNotNil(io.open(libdir .. "/libnetcl.so"), "installed the library")
  local out, code = H.run(("cd /tmp && LUA_PATH='%s/?.lua;%s/?/init.lua;;' LUA_CPATH='%s/?.so;;' luajit -e " ..
    "'local n = require(\"netcl\"); print(n.version, (n.ones(2, {device = \"cpu\"}) * 3):sum():item())'")
    :format(luadir, luadir, libdir))
  lu.assertEquals(code, 0, out)
  lu.assertStrContains(out, "6")
  local lout, lcode = H.run("cd /tmp && " .. bindir .. "/netcl -e 'print(netcl.zeros(3):numel())'")
  lu.assertEquals(lcode, 0, lout)
  lu.assertStrContains(lout, "3")
end

function TestRockspec:test_luarocks_make_into_a_private_tree()
  local _, has = H.run("command -v luarocks")
  lu.skipIf(has ~= 0, "luarocks is not installed (make deps installs it)")
  local tree = os.tmpname()
  os.remove(tree)
  local out, code = H.run(("cd %s && luarocks make --tree %s rockspec/netcl-scm-1.rockspec"):format(root, tree))
  lu.assertEquals(code, 0, out)
  check_tree(tree .. "/share/lua/5.1", tree .. "/lib/lua/5.1", tree .. "/bin")
  os.execute("rm -rf " .. tree .. " " .. root .. "/build-rock")
end

function TestRockspec:test_packed_source_rock_installs_anywhere()
  local _, has = H.run("command -v luarocks")
  lu.skipIf(has ~= 0, "luarocks is not installed (make deps installs it)")
  local _, git = H.run("cd " .. root .. " && git rev-parse --git-dir")
  lu.skipIf(git ~= 0, "make rock packs the tracked files: needs a git checkout")
  local work = (H.run("mktemp -d")):match("%S+")
  local out, code = H.run(("cd %s && make -s rock ROCK_DIR=%s/pack"):format(root, work))
  lu.assertEquals(code, 0, out)
  -- the rock alone, in a directory of its own: no checkout, no tarball beside it
  os.execute(("mkdir -p %s/elsewhere && mv %s/pack/netcl-scm-1.src.rock %s/elsewhere/ && rm -rf %s/pack"):format(work, work, work, work))
  out, code = H.run(("cd %s/elsewhere && luarocks install --tree %s/tree netcl-scm-1.src.rock"):format(work, work))
  lu.assertEquals(code, 0, out)
  check_tree(work .. "/tree/share/lua/5.1", work .. "/tree/lib/lua/5.1", work .. "/tree/bin")
  os.execute("rm -rf " .. work)
end

function TestRockspec:test_make_install()
  local dir = os.tmpname()
  os.remove(dir)
  local out, code = H.run(("cd %s && make -s install INST_LUADIR=%s/lua INST_LIBDIR=%s/lib INST_BINDIR=%s/bin")
    :format(root, dir, dir, dir))
  lu.assertEquals(code, 0, out)
  check_tree(dir .. "/lua", dir .. "/lib", dir .. "/bin")
  os.execute("rm -rf " .. dir)
end
