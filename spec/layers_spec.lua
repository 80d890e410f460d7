-- spec/layers_spec.lua — the engine's layers point downward only. The
-- layer order is the ```layers block of docs/architecture.md (each layer
-- and the layers it may use); a layer is a folder of src/. Two kinds of
-- edge are checked against it: every #include "..." of src/, and every
-- symbol one built object takes from another (nm on the build's objects).
-- Backends define no public netcl_* function: the public API lives above
-- the backend contract.
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

local function lines_of(cmd)
  local p = assert(io.popen(cmd))
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- layer name -> set of layers it may use (itself included)
local function layer_table()
  local block = H.read_file(root .. "/docs/architecture.md"):match("```layers\n(.-)```")
  assert(block, "docs/architecture.md has no ```layers block")
  local allowed, order = {}, {}
  for line in block:gmatch("[^\n]+") do
    local name, uses = line:match("^(%S+):%s*(.-)%s*$")
    if name then
      local set = { [name] = true }
      for u in uses:gmatch("[^%s,]+") do
        if u ~= "-" then set[u] = true end
      end
      allowed[name] = set
      order[#order + 1] = name
    end
  end
  return allowed, order
end

-- the layer of a path relative to src/: the longest layer name that is a
-- folder prefix of it; the public headers belong to every layer
local function layer_of(path, order)
  if path:match("^netcl[%w_]*%.h$") then return "api" end
  local best
  for _, name in ipairs(order) do
    if path:sub(1, #name + 1) == name .. "/" and (not best or #name > #best) then best = name end
  end
  return best
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function check(edges, what)
  table.sort(edges)
  if #edges > 0 then
    lu.fail(("%d %s against docs/architecture.md's layers:\n  %s"):format(#edges, what, table.concat(edges, "\n  ")))
  end
end

TestLayers = {}

function TestLayers:setUp()
  if not H.is_cpu then lu.skip("layers: device-independent, checked in the cpu pass") end
  self.allowed, self.order = layer_table()
end

function TestLayers:test_every_file_has_a_layer()
  local missing = {}
  for _, f in ipairs(lines_of("cd '" .. root .. "/src' && find . -name '*.[ch]' | sed 's|^\\./||'")) do
    if not layer_of(f, self.order) then missing[#missing + 1] = f end
  end
  check(missing, "files of src/ in no layer")
end

function TestLayers:test_includes_point_downward()
  local bad = {}
  for _, f in ipairs(lines_of("cd '" .. root .. "/src' && find . -name '*.[ch]' | sed 's|^\\./||'")) do
    local from = layer_of(f, self.order)
    local dir = f:match("^(.*)/[^/]*$") or ""
    for inc in H.read_file(root .. "/src/" .. f):gmatch('#include%s+"([^"]+)"') do
      local rel = dir ~= "" and (dir .. "/" .. inc) or inc
      local target = exists(root .. "/src/" .. rel) and rel or inc
      local to = layer_of(target, self.order)
      if from and to and to ~= "api" and not self.allowed[from][to] then
        bad[#bad + 1] = ("%s (%s) includes %s (%s)"):format(f, from, target, to)
      end
    end
  end
  check(bad, "includes that run upward")
end

-- objects of the library under test: beside $NETCL_LIB (make check's
-- instrumented build) or in build/
local function object_dir()
  local lib = os.getenv("NETCL_LIB")
  local dir = lib and lib:match("^(.*)/[^/]*$") or (root .. "/build")
  return dir .. "/obj"
end

local function symbols(objdir, order)
  local defs, uses = {}, {}
  for _, o in ipairs(lines_of("cd '" .. objdir .. "' && find . -name '*.o' | sed 's|^\\./||' | sort")) do
    local src = o == "kernels_embed.o" and "backend/cl/kernels_embed.c" or o:gsub("%.o$", ".c")
    -- objects left from sources that no longer exist are not the library's
    local layer = (o == "kernels_embed.o" or exists(root .. "/src/" .. src)) and layer_of(src, order)
    for _, l in ipairs(layer and lines_of("nm -g --defined-only '" .. objdir .. "/" .. o .. "'") or {}) do
      local sym = l:match("^%x+%s+%u%s+(%S+)$")
      if sym then defs[sym] = { file = src, layer = layer } end
    end
    for _, l in ipairs(layer and lines_of("nm -u '" .. objdir .. "/" .. o .. "'") or {}) do
      local sym = l:match("^%s+U%s+(%S+)$")
      if sym then uses[#uses + 1] = { file = src, layer = layer, sym = sym } end
    end
  end
  return defs, uses
end

function TestLayers:test_calls_point_downward()
  local objdir = object_dir()
  if not exists(objdir .. "/core/tensor.o") then lu.skip("layers: no built objects in " .. objdir) end
  local defs, uses = symbols(objdir, self.order)
  local bad = {}
  for _, u in ipairs(uses) do
    local d = defs[u.sym]
    if d and d.layer and u.layer and not self.allowed[u.layer][d.layer] then
      bad[#bad + 1] = ("%s (%s) uses %s of %s (%s)"):format(u.file, u.layer, u.sym, d.file, d.layer)
    end
  end
  check(bad, "calls that run upward")
  local public = {}
  for sym, d in pairs(defs) do
    if sym:match("^netcl_") and d.layer and d.layer:match("^backend") then
      public[#public + 1] = ("%s defined in %s (%s)"):format(sym, d.file, d.layer)
    end
  end
  check(public, "public functions inside a backend")
end

