-- netcl/printing.lua — tostring for tensors, Torch7/PyTorch style: values
-- (each dim past 6 entries summarised with "..." when numel > 1000; 3-D and
-- up as "(i,j,.,.) =" matrices), then "[netcl.Tensor dtype of size AxB on dev]".
-- Only the shown elements are read from the device; int64 is read exactly.
local ffi = require("ffi")
local tensor = require("netcl.tensor")
local lib = require("netcl.lib")
local C, check = lib.C, lib.check

local M = {}
local EDGE = 3          -- entries shown at each end of a summarised dim
local SUMMARY = 1000    -- more elements than this: summarise
local FLOATS = { float32 = true, float64 = true, float16 = true, bfloat16 = true }

-- values of a tensor in logical order: numbers, or int64 cdata for int64
local function read(t)
  if t:type() == "int64" then
    local n = t:numel()
    local buf = ffi.new("int64_t[?]", math.max(n, 1))
    check(C.netcl_tensor_to_host(tensor.handle(t), buf, 8 * n))
    local out = {}
    for i = 0, n - 1 do out[i + 1] = buf[i] end
    return out
  end
  local buf, n = tensor.to_doubles(t)
  local out = {}
  for i = 0, n - 1 do out[i + 1] = buf[i] end
  return out
end

-- shown entries of a 1-D tensor, false marking the gap
local function row_values(t, summarise)
  local n = t:size(1)
  if not summarise or n <= 2 * EDGE then return read(t) end
  local vals = read(t:narrow(1, 1, EDGE))
  vals[#vals + 1] = false
  for _, v in ipairs(read(t:narrow(1, n - EDGE + 1, EDGE))) do vals[#vals + 1] = v end
  return vals
end

-- 1-based indices shown along a dim of size n, false marking the gap
local function shown(n, summarise)
  local out = {}
  for i = 1, n do
    if not summarise or n <= 2 * EDGE or i <= EDGE or i > n - EDGE then
      out[#out + 1] = i
    elseif i == EDGE + 1 then
      out[#out + 1] = false
    end
  end
  return out
end

local function formatter(dtype, sample)
  if dtype == "bool" then return function(v) return v ~= 0 and "true" or "false" end end
  if dtype == "int64" then
    return function(v) return (tostring(v):gsub("LL$", "")) end
  end
  if not FLOATS[dtype] then return function(v) return ("%d"):format(v) end end
  local maxabs, minabs, integral = 0, math.huge, true
  for _, v in ipairs(sample) do
    if v and v == v and math.abs(v) ~= math.huge then
      local a = math.abs(v)
      maxabs = math.max(maxabs, a)
      if a > 0 then minabs = math.min(minabs, a) end
      if v ~= math.floor(v) then integral = false end
    end
  end
  local body
  if integral and maxabs < 1e8 then
    body = function(v) return ("%.0f."):format(v) end
  elseif maxabs >= 1e8 or minabs < 1e-4 or maxabs / minabs > 1000 then
    body = function(v) return ("%.4e"):format(v) end
  else
    body = function(v) return ("%.4f"):format(v) end
  end
  return function(v)
    if v ~= v then return "nan" end
    if v == math.huge then return "inf" end
    if v == -math.huge then return "-inf" end
    return body(v)
  end
end

-- Walks the leading dims: items are { prefix = {...}, rows = {...} } for each
-- shown matrix (or row, for 1-D), or "..." where a leading dim is summarised.
local function collect(t, summarise, prefix, items)
  local nd = t:dim()
  if nd <= 2 then
    local rows = {}
    if nd == 1 then
      rows[1] = row_values(t, summarise)
    else
      for _, i in ipairs(shown(t:size(1), summarise)) do
        rows[#rows + 1] = i and row_values(t:select(1, i), summarise) or "..."
      end
    end
    items[#items + 1] = { prefix = prefix, rows = rows }
    return
  end
  for _, i in ipairs(shown(t:size(1), summarise)) do
    if i then
      local p = { unpack(prefix) }
      p[#p + 1] = i
      collect(t:select(1, i), summarise, p, items)
    else
      items[#items + 1] = "..."
    end
  end
end

function M.format(t)
  local dtype, sizes = t:type(), t:size()
  local footer = ("[netcl.Tensor %s of size %s on %s]"):format(dtype, #sizes > 0 and table.concat(sizes, "x") or "()",
                                                            t.device)
  if t:numel() == 0 then return "[]\n" .. footer end
  if #sizes == 0 then
    local v = read(t)[1]
    return formatter(dtype, { v })(v) .. "\n" .. footer
  end
  local items = {}
  collect(t, t:numel() > SUMMARY, {}, items)
  local sample = {}
  for _, it in ipairs(items) do
    if it ~= "..." then
      for _, r in ipairs(it.rows) do
        if r ~= "..." then for _, v in ipairs(r) do if v then sample[#sample + 1] = v end end end
      end
    end
  end
  local fmt = formatter(dtype, sample)
  local width = 0
  for _, v in ipairs(sample) do width = math.max(width, #fmt(v)) end
  local lines = {}
  for k, it in ipairs(items) do
    if it == "..." then
      lines[#lines + 1] = " ..."
      lines[#lines + 1] = ""
    else
      if #sizes > 2 then
        lines[#lines + 1] = "(" .. table.concat(it.prefix, ",") .. ",.,.) ="
      end
      for _, r in ipairs(it.rows) do
        if r == "..." then
          lines[#lines + 1] = " ..."
        else
          local cells = {}
          for i, v in ipairs(r) do
            local s = v and fmt(v) or "..."
            cells[i] = (" "):rep(width - #s) .. s
          end
          lines[#lines + 1] = " " .. table.concat(cells, " ")
        end
      end
      if #sizes > 2 and k < #items then lines[#lines + 1] = "" end
    end
  end
  if lines[#lines] == "" then lines[#lines] = nil end
  return table.concat(lines, "\n") .. "\n" .. footer
end

-- inspect(v): a value as text, tables shown with their contents ({1, 2,
-- x = "a"}; nested to depth 3, cycles as <cycle>, long tables cut after 40
-- entries); the REPL prints tables this way.
function M.inspect(v, depth, seen)
  depth, seen = depth or 0, seen or {}
  if type(v) == "string" then return ("%q"):format(v) end
  if type(v) ~= "table" or getmetatable(v) and getmetatable(v).__tostring then return tostring(v) end
  if seen[v] then return "<cycle>" end
  if depth >= 3 then return "{...}" end
  seen[v] = true
  local parts, n = {}, #v
  for i = 1, math.min(n, 40) do parts[#parts + 1] = M.inspect(v[i], depth + 1, seen) end
  if n > 40 then parts[#parts + 1] = ("... (%d entries)"):format(n) end
  local keys = {}
  for k in pairs(v) do
    if not (type(k) == "number" and k >= 1 and k <= n and k == math.floor(k)) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for i, k in ipairs(keys) do
    if i > 40 then parts[#parts + 1] = ("... (%d keys)"):format(#keys); break end
    local name = type(k) == "string" and k:match("^[%a_][%w_]*$") and k or "[" .. M.inspect(k, depth + 1, seen) .. "]"
    parts[#parts + 1] = name .. " = " .. M.inspect(v[k], depth + 1, seen)
  end
  seen[v] = nil
  return "{" .. table.concat(parts, ", ") .. "}"
end

return M
