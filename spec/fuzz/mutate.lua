-- spec/fuzz/mutate.lua — a child of spec/fuzz_spec.lua: mutation fuzzing
-- of the Lua-side parsers, seeded so a failure repeats: N mutated
-- checkpoints (flipped bytes, cut files, header lengths and JSON text
-- changed) through netcl.load, and N random nested tables through
-- netcl.tensor. Each must load, or raise an error naming the function
-- (netcl.load also the path); never a crash or a raw Lua error. Prints
-- "checked <n>" and "done".
local netcl = require("netcl")
local kind, n, seed = arg[1], tonumber(arg[2]), tonumber(arg[3])
math.randomseed(seed)
local RAW = { "attempt to ", "bad argument #", "table index is nil", "cannot convert", "stack overflow" }
local function clean(msg, who)
  msg = tostring(msg)
  if not msg:find(who, 1, true) then return false, "does not name " .. who end
  local own = msg:gsub('"[^"]*"', '""')   -- text quoted from the file may read like anything
  for _, r in ipairs(RAW) do if own:find(r, 1, true) then return false, "a raw Lua error" end end
  return true
end
local checked = 0

if kind == "load" then
  local path = os.tmpname()
  netcl.save({ w = netcl.randn(3, 4), b = netcl.arange(0, 5), meta = { epoch = 3, name = "x" }, flag = true }, path)
  local f = io.open(path, "rb")
  local good = f:read("*a")
  f:close()
  local function mutate(s)
    local r = math.random(6)
    if r == 1 then   -- flip bytes
      local t = { s:byte(1, -1) }
      for _ = 1, math.random(1, 8) do local i = math.random(#t); t[i] = math.random(0, 255) end
      return string.char(unpack(t))
    elseif r == 2 then return s:sub(1, math.random(0, #s - 1))                          -- cut
    elseif r == 3 then                                                                  -- the header length
      local len = math.random(0, 2 ^ 31)
      local b = {}
      for i = 1, 8 do b[i] = string.char(len % 256); len = math.floor(len / 256) end
      return table.concat(b) .. s:sub(9)
    elseif r == 4 then                                                                  -- JSON text
      local hl = s:byte(1) + 256 * s:byte(2)
      local head = s:sub(9, 8 + hl)
      local edits = { { '"F32"', '"F99"' }, { '%[3, 4%]', '[3, -4]' }, { '%[3, 4%]', '[99999999999, 4]' },
                      { '"data_offsets": %[', '"data_offsets": [5000000, ' }, { '{', '[' }, { '"', "'" }, { ',', ',,' } }
      local e = edits[math.random(#edits)]
      local nh = head:gsub(e[1], e[2], 1)
      nh = nh .. (" "):rep(math.max(0, #head - #nh))
      return s:sub(1, 8) .. nh:sub(1, #head) .. s:sub(9 + hl)
    elseif r == 5 then return s .. ("\0"):rep(math.random(1, 64))                       -- trailing bytes
    else                                                                                -- random bytes
      local t = {}
      for i = 1, math.random(0, 200) do t[i] = string.char(math.random(0, 255)) end
      return table.concat(t)
    end
  end
  local mpath = path .. ".m"
  for i = 1, n do
    local f2 = io.open(mpath, "wb")
    f2:write(mutate(good))
    f2:close()
    local ok, err = pcall(netcl.load, mpath)
    if not ok then
      local fine, why = clean(err, "load")
      if fine and not tostring(err):find(mpath, 1, true) then fine, why = false, "does not name the file" end
      if not fine then print(("case %d: %s: %s"):format(i, why, tostring(err):sub(1, 300))) end
    end
    checked = checked + 1
  end
  os.remove(mpath)
  os.remove(path)
elseif kind == "tensor" then
  local function value(depth)
    local r = math.random(12)
    if depth > 4 or r <= 6 then
      local v = ({ 1, -2.5, 0 / 0, math.huge, true, false, "x", 3 })[math.random(8)]
      return v
    end
    local t = {}
    for i = 1, math.random(0, 4) do t[i] = value(depth + 1) end
    if math.random(10) == 1 then t.key = 1 end
    return t
  end
  for i = 1, n do
    local v = value(0)
    local ok, err = pcall(netcl.tensor, v, { device = "cpu" })
    if not ok then
      local fine, why = clean(err, "tensor")
      if not fine then print(("case %d: %s: %s"):format(i, why, tostring(err):sub(1, 300))) end
    end
    checked = checked + 1
  end
end
print("checked " .. checked)
print("done")
