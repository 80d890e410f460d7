-- netcl/help.lua — help(x) and `?name` in the REPL: a function's
-- documentation is the comment block written above its definition in the
-- source (the doc-strings netcl keeps next to its functions), shown with
-- where it is defined; a table lists its fields (methods of its metatable
-- too); a tensor or a module prints itself. Also the completion of names
-- the REPL offers on Tab: globals, table fields and, following
-- metatables, the methods of tensors and modules.
local tensor = require("netcl.tensor")

local M = {}

local function read_lines(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local lines = {}
  for l in f:lines() do lines[#lines + 1] = l end
  f:close()
  return lines
end

local cache = {}

-- the comment lines directly above line n of a file (blank lines end it)
local function comment_above(path, n)
  cache[path] = cache[path] or read_lines(path) or false
  local lines = cache[path]
  if not lines then return nil end
  local out = {}
  for i = n - 1, 1, -1 do
    local c = lines[i]:match("^%s*%-%-+%s?(.*)$")
    if not c then break end
    table.insert(out, 1, c)
  end
  return #out > 0 and table.concat(out, "\n") or nil, lines[n]
end

-- netcl's Lua files, for names bound by assignment (netcl.zeros = sized(...))
local function netcl_files()
  local here = debug.getinfo(1, "S").source:match("^@(.*)/help%.lua$")
  local out = {}
  if not here then return out end
  local p = io.popen(("find '%s' -name '*.lua' 2>/dev/null"):format(here))
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- the comment above the line that binds `short` (x.short = / function x.short()
local function comment_of_binding(short)
  for _, path in ipairs(netcl_files()) do
    cache[path] = cache[path] or read_lines(path) or false
    for n, l in ipairs(cache[path] or {}) do
      if l:match("[%.:]" .. short .. "%s*=[^=]") or l:match("^%s*function%s+[%w_.:]*[%.:]" .. short .. "%(") then
        local text = comment_above(path, n)
        if text then return text, ("bound at %s:%d"):format(path, n) end
      end
    end
  end
end

-- the first line of docs/*.md (a checkout's) that shows `short(`
function M.docs_line(short)
  local here = debug.getinfo(1, "S").source:match("^@(.*)/lua/netcl/help%.lua$")
  if not here then return nil end
  local p = io.popen(("grep -n -m1 -F '%s(' '%s'/docs/*.md 2>/dev/null | head -1"):format(short, here))
  local l = p:read("*l")
  p:close()
  if not l then return nil end
  local file, n, text = l:match("^(.-):(%d+):(.*)$")
  return file and ("%s\n(docs: %s:%s)"):format(text, file, n) or nil
end

-- the documentation of a function: its comment block and where it is
-- (name: the name it was asked by, for functions made by other functions)
function M.doc(fn, name)
  local info = debug.getinfo(fn, "S")
  if info.what == "C" then return "(a built-in function)" end
  local path = info.source:match("^@(.*)$")
  if not path then return "(defined in a chunk with no file)" end
  local text, line = comment_above(path, info.linedefined)
  local short = name and name:match("([%w_]+)$")
  if not text and short then
    local t, where = comment_of_binding(short)
    if t then return t .. "\n" .. where end
    text = M.docs_line(short)
  end
  local where = ("defined at %s:%d"):format(path, info.linedefined)
  local sig = line and line:match("function%s+[%w_.:]*%s*(%b())") or line and line:match("function%s*(%b())")
  local parts = {}
  if sig then parts[#parts + 1] = "arguments " .. sig end
  parts[#parts + 1] = text or "(no comment above the definition)"
  parts[#parts + 1] = where
  return table.concat(parts, "\n")
end

-- the names reachable from v: its own fields and its metatable's __index chain
local function field_names(v)
  local names, seen = {}, {}
  -- v's own fields, then along the metatables: an __index table, or (a
  -- function __index: classes keep their methods there) the metatable itself
  local cur = v
  for _ = 1, 10 do
    if type(cur) == "table" and not seen[cur] then
      seen[cur] = true
      for k in pairs(cur) do if type(k) == "string" then names[k] = true end end
    end
    local ok, mt = pcall(getmetatable, cur)
    if not ok or type(mt) ~= "table" then break end
    local idx = rawget(mt, "__index")
    local nxt = type(idx) == "table" and idx or mt
    if nxt == cur then break end
    cur = nxt
  end
  local out = {}
  for k in pairs(names) do if not k:match("^_") then out[#out + 1] = k end end
  table.sort(out)
  return out
end
M.field_names = field_names

-- methods of values whose metatable's __index is a function: tensors keep
-- theirs in netcl.tensor's methods table
local function methods_of(v)
  if tensor.is_tensor(v) then
    local out = {}
    for k in pairs(tensor.methods) do if type(k) == "string" then out[#out + 1] = k end end
    for _, k in ipairs({ "dtype", "device", "shape", "requires_grad", "is_leaf", "grad", "grad_fn" }) do out[#out + 1] = k end
    table.sort(out)
    return out
  end
  return field_names(v)
end

-- the value an expression like "netcl.nn.Linear" names, or nil
local function resolve(expr, env)
  local cur = env
  for part in expr:gmatch("[^.:]+") do
    if cur == nil then return nil end
    local ok, v = pcall(function() return cur[part] end)
    if not ok then return nil end
    cur = v
  end
  return cur
end
M.resolve = resolve

-- completions of the word before the cursor: "netcl.ze" -> {"netcl.zeros", "netcl.zeros_like"}
function M.complete(word, env)
  env = env or _G
  local base, sep, partial = word:match("^(.*)([.:])([%w_]*)$")
  local names
  if base then
    local v = resolve(base, env)
    if v == nil then return {} end
    names = methods_of(v)
  else
    partial, base, sep = word, "", ""
    names = field_names(env)
  end
  local out = {}
  for _, n in ipairs(names) do
    if n:sub(1, #partial) == partial and n:match("^[%a_][%w_]*$") then out[#out + 1] = base .. sep .. n end
  end
  return out
end

-- help(x): prints what is known about x (a value, or a name as a string)
function M.help(x, env)
  local name
  if type(x) == "string" and x:match("^[%a_][%w_.:]*$") then
    name, x = x, resolve(x, env or _G)
    if x == nil then return print(("help: %s is nil"):format(name)) end
  end
  local t = type(x)
  if t == "function" then
    print((name and name .. "\n" or "") .. M.doc(x, name))
  elseif t == "table" or t == "userdata" or t == "cdata" then
    local ok, s = pcall(tostring, x)
    if ok and s and not s:match("^table: ") then print(s) end
    local names = methods_of(x)
    if #names > 0 then
      print(("%s fields and methods (%d): %s"):format(name or t, #names, table.concat(names, "  ")))
    end
  else
    print(("%s: a %s, %s"):format(name or "value", t, tostring(x)))
  end
end

return M
