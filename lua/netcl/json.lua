-- netcl/json.lua — a small strict JSON codec for checkpoint headers.
-- encode: tables with keys exactly 1..n become arrays, tables with string
-- keys objects (keys sorted, so output is deterministic); numbers in the
-- shortest form that reads back to the same double; NaN, infinities, other
-- key types and invalid UTF-8 are errors (callers tag such values first).
-- decode: RFC 8259 grammar only, with a depth limit, duplicate keys
-- refused, and errors that give the byte position; null decodes to json.null.
local M = {}

M.null = setmetatable({}, { __tostring = function() return "json.null" end })

local byte, char, sub, find, format, concat = string.byte, string.char, string.sub, string.find, string.format, table.concat

-- ---- encoding -----------------------------------------------------------------------------

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

-- True when s is well-formed UTF-8 (no overlong forms, no surrogates).
function M.valid_utf8(s)
  local i, n = 1, #s
  while i <= n do
    local c = byte(s, i)
    local len, lo = 1, 0
    if c >= 0xF0 and c <= 0xF4 then len, lo = 4, 0x10000
    elseif c >= 0xE0 then len, lo = 3, 0x800
    elseif c >= 0xC2 and c <= 0xDF then len, lo = 2, 0x80
    elseif c >= 0x80 then return false end
    if len > 1 then
      if i + len - 1 > n then return false end
      local cp = c % (2 ^ (7 - len))
      for j = i + 1, i + len - 1 do
        local d = byte(s, j)
        if d < 0x80 or d > 0xBF then return false end
        cp = cp * 64 + d % 64
      end
      if cp < lo or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then return false end
    end
    i = i + len
  end
  return true
end

local function encode_string(s)
  if not M.valid_utf8(s) then error("json.encode: string is not valid UTF-8", 0) end
  return '"' .. s:gsub('[%c"\\]', function(c) return ESC[c] or format("\\u%04x", byte(c)) end) .. '"'
end

local function encode_number(v)
  if v ~= v or v == math.huge or v == -math.huge then error("json.encode: " .. tostring(v) .. " has no JSON form", 0) end
  if v == 0 then return 1 / v < 0 and "-0" or "0" end
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return format("%d", v) end
  for _, f in ipairs({ "%.15g", "%.16g", "%.17g" }) do
    local s = format(f, v)
    if tonumber(s) == v then return s end
  end
end

-- json.array(t): t encodes as an array even when empty
local ARRAY = { __jsontype = "array" }
function M.array(t) return setmetatable(t or {}, ARRAY) end

local function is_array(t)
  if getmetatable(t) == ARRAY then return true end
  local n = #t
  if n == 0 then return false end
  local count = 0
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k > n or k ~= math.floor(k) then return false end
    count = count + 1
  end
  return count == n
end

local encode
local function encode_table(t, out, depth, seen)
  if seen[t] then error("json.encode: cyclic table", 0) end
  if depth > 200 then error("json.encode: tables nested deeper than 200", 0) end
  seen[t] = true
  if is_array(t) then
    out[#out + 1] = "["
    for i = 1, table.maxn(t) do
      if i > 1 then out[#out + 1] = "," end
      encode(t[i], out, depth + 1, seen)
    end
    out[#out + 1] = "]"
  else
    local keys = {}
    for k in pairs(t) do
      if type(k) ~= "string" then error("json.encode: object keys must be strings, got a " .. type(k), 0) end
      keys[#keys + 1] = k
    end
    table.sort(keys)
    out[#out + 1] = "{"
    for i, k in ipairs(keys) do
      if i > 1 then out[#out + 1] = "," end
      out[#out + 1] = encode_string(k)
      out[#out + 1] = ":"
      encode(t[k], out, depth + 1, seen)
    end
    out[#out + 1] = "}"
  end
  seen[t] = nil
end

encode = function(v, out, depth, seen)
  local tv = type(v)
  if v == M.null then out[#out + 1] = "null"
  elseif tv == "string" then out[#out + 1] = encode_string(v)
  elseif tv == "number" then out[#out + 1] = encode_number(v)
  elseif tv == "boolean" then out[#out + 1] = v and "true" or "false"
  elseif tv == "table" then encode_table(v, out, depth, seen)
  else error("json.encode: cannot encode a " .. tv, 0) end
end

function M.encode(v)
  local out = {}
  encode(v, out, 0, {})
  return concat(out)
end

-- ---- decoding -----------------------------------------------------------------------------

local function fail(s, pos, what) error(format("json: %s at byte %d", what, pos), 0) end

local function skip(s, pos)
  local _, e = find(s, "^[ \t\r\n]*", pos)
  return e + 1
end

local function utf8_char(cp)
  if cp < 0x80 then return char(cp) end
  if cp < 0x800 then return char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
  if cp < 0x10000 then return char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64) end
  return char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64, 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
end

local UNESC = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

local function decode_string(s, pos)
  local parts, i = {}, pos + 1
  while true do
    local a, b = find(s, '^[^"\\%c]+', i)
    if a then parts[#parts + 1] = sub(s, a, b); i = b + 1 end
    local c = sub(s, i, i)
    if c == '"' then break end
    if c == "" then fail(s, i, "unterminated string") end
    if c ~= "\\" then fail(s, i, "control character in string") end
    local e = sub(s, i + 1, i + 1)
    if UNESC[e] then parts[#parts + 1] = UNESC[e]; i = i + 2
    elseif e == "u" then
      local hex = sub(s, i + 2, i + 5)
      if not find(hex, "^%x%x%x%x$") then fail(s, i, "bad \\u escape") end
      local cp = tonumber(hex, 16)
      i = i + 6
      if cp >= 0xD800 and cp <= 0xDBFF then   -- a surrogate pair
        local lo = sub(s, i, i + 1) == "\\u" and tonumber(sub(s, i + 2, i + 5), 16)
        if not lo or lo < 0xDC00 or lo > 0xDFFF then fail(s, i, "unpaired surrogate") end
        cp = 0x10000 + (cp - 0xD800) * 1024 + (lo - 0xDC00)
        i = i + 6
      elseif cp >= 0xDC00 and cp <= 0xDFFF then fail(s, i, "unpaired surrogate") end
      parts[#parts + 1] = utf8_char(cp)
    else fail(s, i, "bad escape") end
  end
  local str = concat(parts)
  if not M.valid_utf8(str) then fail(s, pos, "string is not valid UTF-8") end
  return str, i + 1
end

local decode_value
local function decode_array(s, pos, depth)
  local out, n = {}, 0
  pos = skip(s, pos + 1)
  if sub(s, pos, pos) == "]" then return out, pos + 1 end
  while true do
    local v
    v, pos = decode_value(s, pos, depth + 1)
    n = n + 1
    out[n] = v
    pos = skip(s, pos)
    local c = sub(s, pos, pos)
    if c == "]" then return out, pos + 1 end
    if c ~= "," then fail(s, pos, "expected ',' or ']'") end
    pos = skip(s, pos + 1)
  end
end

local function decode_object(s, pos, depth)
  local out = {}
  pos = skip(s, pos + 1)
  if sub(s, pos, pos) == "}" then return out, pos + 1 end
  while true do
    if sub(s, pos, pos) ~= '"' then fail(s, pos, "expected a string key") end
    local k
    k, pos = decode_string(s, pos)
    if out[k] ~= nil then fail(s, pos, "duplicate key '" .. k .. "'") end
    pos = skip(s, pos)
    if sub(s, pos, pos) ~= ":" then fail(s, pos, "expected ':'") end
    out[k], pos = decode_value(s, skip(s, pos + 1), depth + 1)
    pos = skip(s, pos)
    local c = sub(s, pos, pos)
    if c == "}" then return out, pos + 1 end
    if c ~= "," then fail(s, pos, "expected ',' or '}'") end
    pos = skip(s, pos + 1)
  end
end

-- -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
local function decode_number(s, pos)
  local i = pos
  if sub(s, i, i) == "-" then i = i + 1 end
  local c = sub(s, i, i)
  if c == "0" then i = i + 1
  elseif find(c, "^[1-9]") then i = select(2, find(s, "^%d+", i)) + 1
  else fail(s, i, "malformed number") end
  if sub(s, i, i) == "." then
    local _, e = find(s, "^%d+", i + 1)
    if not e then fail(s, i, "malformed number") end
    i = e + 1
  end
  if find(sub(s, i, i), "^[eE]") then
    i = i + 1
    if find(sub(s, i, i), "^[-+]") then i = i + 1 end
    local _, e = find(s, "^%d+", i)
    if not e then fail(s, i, "malformed number") end
    i = e + 1
  end
  return tonumber(sub(s, pos, i - 1)), i
end

decode_value = function(s, pos, depth)
  if depth > 200 then fail(s, pos, "nesting deeper than 200") end
  local c = sub(s, pos, pos)
  if c == "{" then return decode_object(s, pos, depth) end
  if c == "[" then return decode_array(s, pos, depth) end
  if c == '"' then return decode_string(s, pos) end
  if sub(s, pos, pos + 3) == "true" then return true, pos + 4 end
  if sub(s, pos, pos + 4) == "false" then return false, pos + 5 end
  if sub(s, pos, pos + 3) == "null" then return M.null, pos + 4 end
  if c == "-" or find(c, "^%d") then return decode_number(s, pos) end
  if c == "" then fail(s, pos, "unexpected end of input") end
  fail(s, pos, "unexpected character '" .. c .. "'")
end

-- JSON text -> Lua value; errors name the byte position.
function M.decode(s)
  if type(s) ~= "string" then error("json.decode: expected a string, got " .. type(s), 2) end
  local v, pos = decode_value(s, skip(s, 1), 0)
  pos = skip(s, pos)
  if pos <= #s then fail(s, pos, "trailing characters") end
  return v
end

return M
