-- netcl/nn/containers.lua — Sequential, ModuleList and ModuleDict. Children
-- of the list-like containers are named "1", "2", ... (Lua's 1-based
-- indices, so seq[2] and the state_dict key "2.weight" agree); `#` does not
-- see them under LuaJIT, so the containers offer len().
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local Module, is_module, throw = module.Module, module.is_module, lib.throw
local release_passed = require("netcl.lifetime").release_passed

local M = {}

local function count(self) return #rawget(self, "_modules_order") end

local function check_module(who, m, i)
  if not is_module(m) then throw(("%s: entry %s is not an nn.Module (got %s)"):format(who, tostring(i), type(m))) end
  return m
end

-- i (1-based, negative from the end) -> name of the i-th child
local function child_name(self, who, i)
  local n = count(self)
  if type(i) ~= "number" or i ~= math.floor(i) then throw(who .. ": index must be an integer, got " .. tostring(i)) end
  local j = i < 0 and n + i + 1 or i
  if j < 1 or j > n then throw(("%s: index %d out of range (%d modules)"):format(who, i, n)) end
  return tostring(j)
end

-- Re-registers children as "1".."n" in the given order.
local function renumber(self, list)
  for _, name in ipairs({ unpack(rawget(self, "_modules_order")) }) do self:add_module(name, nil) end
  for i, m in ipairs(list) do self:add_module(tostring(i), m) end
end

-- ---- Sequential -------------------------------------------------------------------------

local Sequential = Module:extend("Sequential")
M.Sequential = Sequential

-- Sequential(m1, m2, ...) or Sequential({m1, m2, ...})
function Sequential:__init(...)
  local list = { ... }
  if #list == 1 and type(list[1]) == "table" and not is_module(list[1]) then list = list[1] end
  for i, m in ipairs(list) do self:add_module(tostring(i), check_module("Sequential", m, i)) end
end

-- A module that can end in a ReLU followed by an nn.ReLU, neither hooked,
-- runs as one call (module.fuses_relu: a batch norm then normalises and
-- clamps in one pass); the result is the same.
function Sequential:forward(x, ...)
  local mods = rawget(self, "_modules")
  local order = rawget(self, "_modules_order")
  local n, i, extra, first = #order, 1, select("#", ...) > 0, true
  while i <= n do
    local m, nxt = mods[order[i]], mods[order[i + 1]]
    local y
    if nxt and not (i == 1 and extra) and module.fuses_relu(m) and module.is_plain_relu(nxt) then
      y = m(x, "relu")
      i = i + 2
    else
      if i == 1 then y = m(x, ...) else y = m(x) end
      i = i + 1
    end
    if not first and y ~= x then release_passed(x, self) end   -- a result only the next module read
    x, first = y, false
  end
  return x
end

function Sequential:len() return count(self) end
-- appends a module (Torch7's add); returns self
function Sequential:add(m)
  self:add_module(tostring(count(self) + 1), check_module("Sequential:add", m, count(self) + 1))
  return self
end
Sequential.append = Sequential.add
function Sequential:get(i) return rawget(self, "_modules")[child_name(self, "Sequential:get", i)] end
function Sequential:insert(i, m)
  local list = self:children()
  if type(i) ~= "number" or i < 1 or i > #list + 1 then throw(("Sequential:insert: index %s out of range 1..%d"):format(tostring(i), #list + 1)) end
  table.insert(list, i, check_module("Sequential:insert", m, i))
  renumber(self, list)
  return self
end
function Sequential:remove(i)
  local list = self:children()
  local name = child_name(self, "Sequential:remove", i)
  local m = table.remove(list, tonumber(name))
  renumber(self, list)
  return m
end

-- ---- ModuleList ------------------------------------------------------------------------

local ModuleList = Module:extend("ModuleList")
M.ModuleList = ModuleList

function ModuleList:__init(list)
  for i, m in ipairs(list or {}) do self:add_module(tostring(i), check_module("ModuleList", m, i)) end
end

function ModuleList:forward() throw("ModuleList has no forward: call its modules (for i, m in list:ipairs() do ...)") end
function ModuleList:len() return count(self) end
function ModuleList:append(m)
  self:add_module(tostring(count(self) + 1), check_module("ModuleList:append", m, count(self) + 1))
  return self
end
function ModuleList:extend(list)
  for _, m in ipairs(list) do self:append(m) end
  return self
end
function ModuleList:get(i) return rawget(self, "_modules")[child_name(self, "ModuleList:get", i)] end
function ModuleList:insert(i, m)
  local list = self:children()
  if type(i) ~= "number" or i < 1 or i > #list + 1 then throw(("ModuleList:insert: index %s out of range 1..%d"):format(tostring(i), #list + 1)) end
  table.insert(list, i, check_module("ModuleList:insert", m, i))
  renumber(self, list)
  return self
end
-- for i, m in list:ipairs() do ... end
function ModuleList:ipairs()
  local list = self:children()
  return ipairs(list)
end
Sequential.ipairs = ModuleList.ipairs

-- ---- ModuleDict -------------------------------------------------------------------------

local ModuleDict = Module:extend("ModuleDict")
M.ModuleDict = ModuleDict

-- ModuleDict({name = module, ...}): entries are added in sorted name order
-- (a Lua table has none of its own); later ones with set() in call order.
function ModuleDict:__init(tbl)
  local names = {}
  for k in pairs(tbl or {}) do names[#names + 1] = k end
  table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(names) do self:set(k, tbl[k]) end
end

function ModuleDict:forward() throw("ModuleDict has no forward: call its modules (dict:get(name)(x))") end
function ModuleDict:set(name, m)
  self:add_module(name, check_module("ModuleDict:set", m, name))
  return self
end
function ModuleDict:get(name) return rawget(self, "_modules")[tostring(name)] end
function ModuleDict:contains(name) return rawget(self, "_modules")[tostring(name)] ~= nil end
function ModuleDict:pop(name)
  local m = self:get(name)
  if m == nil then throw("ModuleDict:pop: no module named '" .. tostring(name) .. "'") end
  self:add_module(name, nil)
  return m
end
function ModuleDict:len() return count(self) end
function ModuleDict:keys() return { unpack(rawget(self, "_modules_order")) } end
-- for name, m in dict:items() do ... end (insertion order)
function ModuleDict:items() return self:named_children() end

return M
