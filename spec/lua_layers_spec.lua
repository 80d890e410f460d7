-- spec/lua_layers_spec.lua — the Lua modules depend downward only: every
-- require() in lua/netcl/**/*.lua (at the top of a file or inside a function,
-- called lazily) names a module of the requiring module's layer or of a
-- layer below it, never one above. A require whose argument is not a
-- literal name cannot be checked and is refused. The C side has its own
-- check of src/'s layers.
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

-- The Lua layers, lowest first: the ```lua-layers block of
-- docs/architecture.md, one layer a line. A module may require modules of
-- its own layer and of the layers below. "x.*" stands for every module
-- under x (x itself not included).
local function read_layers()
  local block = H.read_file(root .. "/docs/architecture.md"):match("```lua%-layers\n(.-)```")
  assert(block, "docs/architecture.md has no ```lua-layers block")
  local layers = {}
  for line in block:gmatch("[^\n]+") do
    local layer = {}
    for name in line:gmatch("%S+") do layer[#layer + 1] = name end
    if #layer > 0 then layers[#layers + 1] = layer end
  end
  return layers
end
local LAYERS = read_layers()

local function matches(pat, name)
  if pat:sub(-2) == ".*" then return name:sub(1, #pat - 1) == pat:sub(1, -2) end
  return pat == name
end

local function layer_of(name)
  for i, layer in ipairs(LAYERS) do
    for _, pat in ipairs(layer) do
      if matches(pat, name) then return i end
    end
  end
end

-- Lua source -> tokens {kind, text}: kind "name", "string" (its text as
-- written between the quotes), "number" or "op" (one character). Comments
-- are dropped, so a require in a comment is not one.
local function tokens(src)
  local out, i, n = {}, 1, #src
  local function long_end(from, eq)
    local _, e = src:find("]" .. eq .. "]", from, true)
    return e or n
  end
  while i <= n do
    local c = src:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif src:sub(i, i + 1) == "--" then
      local eq = src:match("^%[(=*)%[", i + 2)
      if eq then i = long_end(i + 4 + #eq, eq) + 1
      else i = (src:find("\n", i, true) or n) + 1 end
    elseif c == "[" and src:match("^%[=*%[", i) then
      local eq = src:match("^%[(=*)%[", i)
      local e = long_end(i + 2 + #eq, eq)
      out[#out + 1] = { "string", src:sub(i + 2 + #eq, e - 2 - #eq) }
      i = e + 1
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n and src:sub(j, j) ~= c do j = j + (src:sub(j, j) == "\\" and 2 or 1) end
      out[#out + 1] = { "string", src:sub(i + 1, j - 1) }
      i = j + 1
    elseif c:match("[%a_]") then
      local w = src:match("^[%w_]+", i)
      out[#out + 1] = { "name", w }
      i = i + #w
    elseif c:match("%d") then
      local w = src:match("^[%w%.]+", i)
      out[#out + 1] = { "number", w }
      i = i + #w
    else
      out[#out + 1] = { "op", c }
      i = i + 1
    end
  end
  return out
end

-- The modules a source requires: a list of {name = , line = } and a list of
-- problems (requires of no literal name). `require "x"`, `require("x")` and
-- `require [[x]]` count, wherever they are.
local function requires_of(src)
  local toks, found, bad = tokens(src), {}, {}
  for k, t in ipairs(toks) do
    local prev = toks[k - 1]
    if t[1] == "name" and t[2] == "require" and not (prev and prev[1] == "op" and (prev[2] == "." or prev[2] == ":")) then
      local a, b, c = toks[k + 1], toks[k + 2], toks[k + 3]
      if a and a[1] == "string" then
        found[#found + 1] = a[2]
      elseif a and a[1] == "op" and a[2] == "(" and b and b[1] == "string" and c and c[1] == "op" and c[2] == ")" then
        found[#found + 1] = b[2]
      else
        bad[#bad + 1] = "a require() of no literal module name (spell the name out, e.g. require(\"netcl.core\"))"
      end
    end
  end
  return found, bad
end

-- every Lua module of lua/netcl: {name = "netcl.nn.module", path = ...}
local function modules()
  local list = {}
  local p = io.popen("cd " .. root .. "/lua && find netcl -name '*.lua' | sort")
  for f in p:lines() do
    local name = f:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
    list[#list + 1] = { name = name, path = root .. "/lua/" .. f }
  end
  p:close()
  return list
end

TestLuaLayers = {}

-- static checks: the same on every device, so they run on the cpu pass only
function TestLuaLayers:setUp() lu.skipIf(not H.is_cpu, "reads the sources once, on the cpu pass") end

function TestLuaLayers:test_every_module_has_a_layer()
  local list, missing, stale = modules(), {}, {}
  lu.assertTrue(#list > 30, "found the Lua modules")
  for _, m in ipairs(list) do
    if not layer_of(m.name) then missing[#missing + 1] = m.name end
  end
  lu.assertEquals(missing, {}, "modules in no layer: add them to LAYERS (and docs/architecture.md)")
  for _, layer in ipairs(LAYERS) do
    for _, pat in ipairs(layer) do
      local used = false
      for _, m in ipairs(list) do used = used or matches(pat, m.name) end
      if not used then stale[#stale + 1] = pat end
    end
  end
  lu.assertEquals(stale, {}, "LAYERS entries that match no module")
end

function TestLuaLayers:test_requires_point_downward()
  local known, problems = {}, {}
  local list = modules()
  for _, m in ipairs(list) do known[m.name] = true end
  for _, m in ipairs(list) do
    local own = layer_of(m.name)
    local found, bad = requires_of(H.read_file(m.path))
    for _, b in ipairs(bad) do problems[#problems + 1] = m.name .. ": " .. b end
    for _, name in ipairs(found) do
      if name == "netcl" or name:sub(1, 6) == "netcl." then
        local l = layer_of(name)
        if not known[name] then
          problems[#problems + 1] = ("%s requires %s, which is no module of lua/netcl"):format(m.name, name)
        elseif own and l and l > own then
          problems[#problems + 1] = ("%s (layer %d) requires %s of layer %d above it"):format(m.name, own, name, l)
        end
      end
    end
  end
  lu.assertEquals(problems, {})
end

-- the scanner itself: lazy, spaced and commented requires
function TestLuaLayers:test_scanner()
  local found, bad = requires_of([==[
    local a = require("netcl.lib")
    local function f() return require "netcl" end
    -- require("netcl.commented")
    --[[ require("netcl.long_comment") ]]
    local s = "require('netcl.in_a_string')"
    local t = require [[netcl.tensor]]
    x.require("not.this")
    local g = require("netcl.ops." .. name)
    local h = pcall(require, "netcl.nn")
  ]==])
  lu.assertEquals(found, { "netcl.lib", "netcl", "netcl.tensor" })
  lu.assertEquals(#bad, 2)
end

-- Loading every module below init.lua leaves "netcl" itself unloaded.
function TestLuaLayers:test_lower_modules_load_without_netcl()
  local top = layer_of("netcl")
  local names = {}
  for _, m in ipairs(modules()) do
    local l = layer_of(m.name)
    if l and l < top then names[#names + 1] = { l, m.name } end
  end
  table.sort(names, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
  local list = {}
  for i, e in ipairs(names) do list[i] = ("%q"):format(e[2]) end
  local code = "for _, m in ipairs({" .. table.concat(list, ", ") .. "}) do require(m) " ..
               "if package.loaded.netcl ~= nil then error('loading ' .. m .. ' loaded netcl') end end print('ok')"
  local out, status = H.run_lua(code, "NETCL_NO_OPENCL=1")
  lu.assertEquals(status, 0, out)
  lu.assertStrContains(out, "ok")
end
