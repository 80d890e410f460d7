-- netcl/printing.lua — tostring for tensors: values (rows summarised with
-- "..." past 6 entries when the tensor is large), then a footer with dtype,
-- shape and device. Only the shown elements are read from the device.
local ffi = require("ffi")
local tensor = require("netcl.tensor")
local lib = require("netcl.lib")
local C = lib.C

local M = {}
local EDGE = 3          -- entries shown at each end of a summarised dim
local SUMMARY = 1000    -- more elements than this: summarise

local function read(t)
  local buf, n = tensor.to_doubles(t, 3)
  local out = {}
  for i = 0, n - 1 do out[i + 1] = buf[i] end
  return out
end

-- values of the shown part of a 1-D tensor, with false marking the gap
local function row_values(t, summarise)
  local n = t:size(1)
  if not summarise or n <= 2 * EDGE then return read(t) end
  local vals = read(t:narrow(1, 1, EDGE))
  vals[#vals + 1] = false
  for _, v in ipairs(read(t:narrow(1, n - EDGE + 1, EDGE))) do vals[#vals + 1] = v end
  return vals
end

local function formatter(dtype, sample)
  if dtype == "bool" then return function(v) return v ~= 0 and "true" or "false" end end
  if dtype ~= "float32" and dtype ~= "float64" and dtype ~= "float16" and dtype ~= "bfloat16" then
    return function(v) return ("%d"):format(v) end
  end
  local maxabs, integral = 0, true
  for _, v in ipairs(sample) do
    if v and v == v and math.abs(v) ~= math.huge then
      maxabs = math.max(maxabs, math.abs(v))
      if v ~= math.floor(v) then integral = false end
    end
  end
  if integral and maxabs < 1e8 then return function(v) return v == v and ("%.0f."):format(v) or "nan" end end
  if maxabs >= 1e5 or (maxabs < 1e-3 and maxabs > 0) then return function(v) return ("%.4e"):format(v) end end
  return function(v) return ("%.4f"):format(v) end
end

local function collect(t, summarise, rows)
  if t:dim() == 1 then
    rows[#rows + 1] = row_values(t, summarise)
    return
  end
  local n = t:size(1)
  for i = 1, n do
    if summarise and n > 2 * EDGE and i == EDGE + 1 then
      rows[#rows + 1] = "..."
    end
    if not (summarise and n > 2 * EDGE and i > EDGE and i <= n - EDGE) then
      collect(t:select(1, i), summarise, rows)
    end
  end
end

function M.format(t)
  local dtype, sizes = t:type(), t:size()
  local footer = ("[netcl.Tensor %s of size %s on %s]"):format(dtype, #sizes > 0 and table.concat(sizes, "x") or "()", t.device)
  if t:numel() == 0 then return "[]\n" .. footer end
  local summarise = t:numel() > SUMMARY
  if #sizes == 0 then
    local v = read(t)[1]
    return formatter(dtype, { v })(v) .. "\n" .. footer
  end
  local rows = {}
  collect(t, summarise, rows)
  local sample = {}
  for _, r in ipairs(rows) do if type(r) == "table" then for _, v in ipairs(r) do sample[#sample + 1] = v end end end
  local fmt = formatter(dtype, sample)
  local width = 0
  for _, v in ipairs(sample) do if v then width = math.max(width, #fmt(v)) end end
  local lines = {}
  for _, r in ipairs(rows) do
    if r == "..." then
      lines[#lines + 1] = " ..."
    else
      local cells = {}
      for i, v in ipairs(r) do cells[i] = v and (" "):rep(width - #fmt(v)) .. fmt(v) or "..." end
      lines[#lines + 1] = " " .. table.concat(cells, " ")
    end
  end
  return table.concat(lines, "\n") .. "\n" .. footer
end

return M
