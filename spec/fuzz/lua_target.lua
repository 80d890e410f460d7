-- spec/fuzz/lua_target.lua — the Lua side of spec/fuzz/fuzz_lua.c: one
-- libFuzzer input through netcl.load (the checkpoint reader: header length,
-- JSON header, offsets) or, decoded as a nested Lua table, through
-- netcl.tensor. Returns nil when netcl loaded it or refused it with a clear
-- error (naming the function; netcl.load also the file), else what went
-- wrong: the harness turns that into a finding.
local netcl = require("netcl")
local RAW = { "attempt to ", "bad argument #", "table index is nil", "cannot convert", "stack overflow" }

local function unclear(err, who, path)
  local msg = tostring(err)
  if not msg:find(who, 1, true) then return "the error does not name " .. who .. ": " .. msg end
  if path and not msg:find(path, 1, true) then return "the error does not name the file: " .. msg end
  -- text quoted from the file (a recorded checksum) may read like anything
  local own = msg:gsub('"[^"]*"', '""')
  for _, r in ipairs(RAW) do
    if own:find(r, 1, true) then return "a raw Lua error: " .. msg end
  end
end

-- bytes -> a value: a small stack machine over the input, so that every
-- input is some nested table of numbers, booleans, strings and keys
local NUMBERS = { 0, 1, -2.5, 1e300, -0.0, 0 / 0, math.huge, -math.huge, 2 ^ 53, 255, 1e-310, 3, 7.25, -1 }
local function decode(bytes)
  local pos = 1
  local function value(depth)
    local b = bytes:byte(pos)
    pos = pos + 1
    if not b then return 0 end
    local op = b % 8
    if op <= 1 and depth < 6 then
      local t, n = {}, 0
      while pos <= #bytes do
        local c = bytes:byte(pos)
        if c % 8 == 2 then pos = pos + 1; break end
        if c % 8 == 6 then pos = pos + 1; t.x = value(depth + 1)
        else n = n + 1; t[n] = value(depth + 1) end
      end
      return t
    elseif op == 3 then return NUMBERS[(math.floor(b / 8) % #NUMBERS) + 1]
    elseif op == 4 then return b >= 128
    elseif op == 5 then return "x"
    else return math.floor(b / 8) - 8 end
  end
  return value(0)
end

local DTYPES = { false, "float32", "float64", "int64", "int32", "uint8", "bool", "float16", "bfloat16" }

return function(kind, bytes, path)
  if kind == "load" then
    local ok, err = pcall(netcl.load, path)
    if not ok then return unclear(err, "load", path) end
    return nil
  end
  local dt = DTYPES[(bytes:byte(1) or 0) % #DTYPES + 1]
  local v = decode(bytes:sub(2))
  local ok, err = pcall(netcl.tensor, v, { device = "cpu", dtype = dt or nil })
  if not ok then return unclear(err, "tensor") end
  return nil
end
