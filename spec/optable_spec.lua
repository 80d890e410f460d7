-- spec/optable_spec.lua — the op table (src/autograd/optable.c) is whole:
-- every row names an entry point and, when differentiable through a node
-- kind, a rule that exists; every family names files that exist in the op
-- and autograd layers (docs/architecture.md, "Where an op lives").
local lu = require("luaunit")
local H = require("helper")
local ffi = require("ffi")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

local function rows()
  local C, out = H.netcl.C, {}
  local d = ffi.new("int[1]")
  for i = 0, C.netcl_op_table_size() - 1 do
    local name, fwd, bwd, family = ffi.string(C.netcl_op_table_entry(i, d)):match("^(%S+) (%S+) (%S+) (%S+)$")
    out[#out + 1] = { name = name, fwd = fwd, bwd = bwd, family = family, diff = d[0] == 1 }
  end
  return out
end

local function has_files(dir, family)
  local p = io.popen("ls '" .. root .. "/src/" .. dir .. "' 2>/dev/null")
  local found = false
  for f in p:lines() do
    if f == family .. ".c" or f:sub(1, #family + 1) == family .. "_" then found = true end
  end
  p:close()
  return found
end

TestOpTable = {}

function TestOpTable:setUp()
  if not H.is_cpu then lu.skip("optable: device-independent, checked in the cpu pass") end
end

function TestOpTable:test_rows_are_whole()
  local names = {}
  for _, r in ipairs(rows()) do
    lu.assertNotNil(r.name, "a row that does not parse")
    lu.assertNil(names[r.name], "op " .. r.name .. " listed twice")
    names[r.name] = true
    lu.assertNotEquals(r.fwd, "MISSING", r.name .. ": no entry point")
    lu.assertNotEquals(r.bwd, "MISSING", r.name .. ": its node kind has no rule in nc_op_rules")
    lu.assertEquals(r.diff, r.bwd ~= "-", r.name .. ": differentiable flag and backward disagree")
  end
end

function TestOpTable:test_families_name_files()
  local seen = {}
  for _, r in ipairs(rows()) do
    if not seen[r.family] then
      seen[r.family] = true
      lu.assertTrue(has_files("autograd", r.family), r.family .. ": no src/autograd/" .. r.family .. "*.c")
      if r.family ~= "interpolate" then   -- a composite only: no forward op of its own
        lu.assertTrue(has_files("ops", r.family), r.family .. ": no src/ops/" .. r.family .. "*.c")
      end
    end
  end
end
