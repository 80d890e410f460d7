-- spec/helper.lua — shared test helpers: the device under test, closeness
-- checks, and running one workload on the device and on the cpu reference.
local lu = require("luaunit")
local netcl = require("netcl")

local H = {}
H.netcl = netcl
H.device = os.getenv("NETCL_TEST_DEVICE") or "cpu"
H.is_cpu = H.device == "cpu"
-- the tolerance every float32 OpenCL result must meet against the cpu result
H.rtol, H.atol = 1e-4, 1e-5

local function flatten(v, out)
  out = out or {}
  if type(v) == "table" then
    for i = 1, #v do flatten(v[i], out) end
  else
    out[#out + 1] = v
  end
  return out
end
H.flatten = flatten

local function values(x)
  if type(x) == "cdata" then return flatten(x:totable()), x:size() end
  if type(x) == "table" then return flatten(x) end
  return { x }
end

-- Elementwise |a - b| <= atol + rtol * |b|, NaNs equal; shapes must agree.
function H.assert_close(a, b, rtol, atol, what)
  rtol, atol = rtol or H.rtol, atol or H.atol
  local va, sa = values(a)
  local vb, sb = values(b)
  if sa and sb then lu.assertEquals(sa, sb, (what or "") .. " shape") end
  lu.assertEquals(#va, #vb, (what or "") .. " element count")
  for i = 1, #va do
    local x, y = va[i], vb[i]
    if type(x) == "boolean" then x = x and 1 or 0 end
    if type(y) == "boolean" then y = y and 1 or 0 end
    local both_nan = x ~= x and y ~= y
    local same_inf = x == y
    if not both_nan and not same_inf and not (math.abs(x - y) <= atol + rtol * math.abs(y)) then
      lu.fail(("%s element %d: %.9g vs %.9g (rtol %g, atol %g)"):format(what or "values", i, x, y, rtol, atol))
    end
  end
end

local function compare_with_cpu(fn, got, rtol, atol)
  local want = { fn("cpu") }
  lu.assertEquals(#got, #want, "number of results")
  for i = 1, #got do
    if type(got[i]) == "cdata" then
      lu.assertEquals(got[i].dtype, want[i].dtype, "result " .. i .. " dtype")
      lu.assertEquals(got[i].device, H.device, "result " .. i .. " device")
    end
    H.assert_close(got[i], want[i], rtol, atol, "result " .. i)
  end
end

-- Runs fn(device) on the device under test and on "cpu" and compares every
-- returned tensor (also dtype and shape). Returns the device results. When
-- the device under test is the cpu there is nothing to compare: the test
-- is skipped (saying so), not passed.
H.CPU_ITSELF = "against_cpu: the device under test is the cpu itself"
function H.against_cpu(fn, rtol, atol)
  lu.skipIf(H.is_cpu, H.CPU_ITSELF)
  local got = { fn(H.device) }
  compare_with_cpu(fn, got, rtol, atol)
  return unpack(got)
end

-- For a test that asserts on the results itself (exact values, say), so
-- that it means something on the cpu too: returns fn(H.device)'s results,
-- compared first with fn("cpu")'s as H.against_cpu does when the device
-- under test is not the cpu.
function H.on_device(fn, rtol, atol)
  local got = { fn(H.device) }
  if not H.is_cpu then compare_with_cpu(fn, got, rtol, atol) end
  return unpack(got)
end

-- Asserts that fn raises an error whose message contains every fragment.
function H.assert_error(fn, ...)
  local ok, err = pcall(fn)
  lu.assertFalse(ok, "expected an error")
  err = tostring(err)
  for _, frag in ipairs({ ... }) do
    if not err:find(frag, 1, true) then
      lu.fail(("error message %q lacks %q"):format(err, frag))
    end
  end
  return err
end

-- Runs a shell command; returns its output (stdout and stderr) and exit code.
-- The whole contents of a file (an error when it cannot be read).
function H.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

function H.run(cmd)
  local p = io.popen(cmd .. ' 2>&1; echo "__exit=$?"')
  local out = p:read("*a")
  p:close()
  local body, code = out:match("^(.*)__exit=(%d+)%s*$")
  return body or out, tonumber(code)
end

-- Runs Lua code in a child luajit that loads this checkout's netcl, after
-- the shell assignments in env ("NAME=value ...", optional); returns what
-- H.run returns. A child gets its own environment and process state.
function H.run_lua(code, env)
  local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."
  return H.run(("%s LUA_PATH='%s/lua/?.lua;%s/lua/?/init.lua;;' LUA_CPATH='%s/build/?.so;;' luajit -e %q")
    :format(env or "", root, root, root, code))
end

-- ---- op-table coverage ------------------------------------------------------
-- A full run of spec/run.lua sets NETCL_COVERAGE_FILE; checks append the op
-- names they covered ("grad NAME" / "device NAME"), and the runner fails
-- for any op of the C op table (netcl_op_table_entry) left uncovered.
local coverage_file = os.getenv("NETCL_COVERAGE_FILE")

function H.cover(kind, names)
  if not coverage_file then return end
  if type(names) == "string" then names = { names } end
  local f = io.open(coverage_file, "a")
  if not f then return end
  for _, n in ipairs(names) do f:write(kind, " ", n, "\n") end
  f:close()
end

-- gradcheck that counts towards the op table's "grad" coverage
function H.gradcheck(names, fn, inputs, opts)
  local ok, err = netcl.autograd.gradcheck(fn, inputs, opts)
  lu.assertTrue(ok, (type(names) == "table" and names[1] or names) .. ": " .. tostring(err))
  H.cover("grad", names)
end

-- against_cpu that counts towards the op table's "device" coverage (a
-- comparison only runs on an OpenCL device: on the cpu it skips)
function H.device_check(names, fn, rtol, atol)
  local r = { H.against_cpu(fn, rtol, atol) }
  H.cover("device", names)
  return unpack(r)
end

-- ---- operands at offsets -------------------------------------------------------
-- Every backend entry must read and write each operand from its own
-- offset. Inputs at offsets are views (big:narrow(...)); outputs reach a
-- kernel at an offset when a program's arguments are pointed at views
-- (netcl_program_rebind, the C API's way to replay into caller memory).
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor_lib = require("netcl.tensor")

-- A C function writing two new handles (outputs first), its two tensors.
function H.call2(f, ...)
  local a, b = ffi.new("netcl_tensor *[1]"), ffi.new("netcl_tensor *[1]")
  if f(a, b, ...) ~= 0 then error(ffi.string(lib.C.netcl_last_error()), 2) end
  return tensor_lib.wrap(a[0]), tensor_lib.wrap(b[0])
end

-- Captures fn() on the device under test (its kernels as they ran, no
-- fusion) and replays it with each result named in `at` ({[result index]
-- = k}, each the whole of its storage) moved k elements into a larger
-- tensor filled with `fill`: every kernel that wrote or read that result
-- then gets it at offset k. Returns the results after the replay (those
-- views in their places) and the larger tensors by result index.
function H.replay_at_offsets(fn, at, fill)
  local C, handle = lib.C, tensor_lib.handle
  local function check(st) if st ~= 0 then error(ffi.string(C.netcl_last_error()), 3) end end
  collectgarbage("collect")
  check(C.netcl_capture_begin(netcl.device(H.device).handle))
  local ok, res = pcall(function() return { fn() } end)
  collectgarbage("collect")
  local box = ffi.new("netcl_program *[1]")
  local st = C.netcl_capture_end(box, 0)
  if not ok then
    if st == 0 then C.netcl_program_release(box[0]) end
    error(res, 0)
  end
  check(st)
  local prog = ffi.gc(box[0], C.netcl_program_release)
  local ids, bigs = {}, {}
  for i in pairs(at) do
    local id = ffi.new("int[1]")
    check(C.netcl_program_bind(prog, handle(res[i]), 0, id))
    ids[i] = id[0]
  end
  for i, k in pairs(at) do
    local r, n = res[i], res[i]:numel()
    bigs[i] = netcl.full({ n + 2 * k + 3 }, fill, { dtype = r.dtype, device = H.device })
    res[i] = bigs[i]:narrow(1, k + 1, n):view(r:size())
    check(C.netcl_program_rebind(prog, ids[i], handle(res[i])))
  end
  check(C.netcl_program_run(prog))
  return res, bigs
end

-- The elements of big around the view at offset k of n elements still hold fill.
function H.assert_untouched(big, k, n, fill, what)
  local total = big:numel()
  for _, part in ipairs({ big:narrow(1, 1, k), big:narrow(1, k + n + 1, total - k - n) }) do
    if part:numel() > 0 then
      lu.assertEquals((part:double() - fill):abs():max():item(), 0, (what or "") .. ": written outside its view")
    end
  end
end

function H.device_info()
  for _, d in ipairs(netcl.devices()) do
    if d.name == H.device then return d end
  end
end

function H.skip_without_fp64()
  local d = H.device_info()
  lu.skipIf(d and not d.fp64, H.device .. " has no float64 support")
end

return H
