-- spec/errors_spec.lua — bad input gives a Lua error naming the op, the
-- shapes, dtypes and devices involved; never a crash.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local dev = H.device
local o = { device = dev }

TestErrors = {}

function TestErrors:test_shape_mismatch_in_binary_op()
  local a, b = netcl.zeros(2, 3, o), netcl.zeros(4, o)
  H.assert_error(function() return a + b end, "add", "[2,3]", "[4]", "float32", dev)
end

function TestErrors:test_matmul_shape_mismatch()
  H.assert_error(function() return netcl.zeros(2, 3, o):matmul(netcl.zeros(4, 5, o)) end, "matmul", "[2,3]", "[4,5]")
end

function TestErrors:test_matmul_dtype_mismatch()
  H.assert_error(function() return netcl.zeros(2, 3, o):matmul(netcl.zeros(3, 2, { device = dev, dtype = "int32" })) end,
                 "matmul", "int32", "float32")
end

function TestErrors:test_index_out_of_range()
  local t = netcl.zeros(2, 3, o)
  H.assert_error(function() return t[3] end, "out of range")
  H.assert_error(function() return t:select(2, 4) end, "select", "[2,3]")
  H.assert_error(function() return t:narrow(1, 2, 5) end, "narrow")
  H.assert_error(function() return t:sum(3) end, "sum")
  H.assert_error(function() return t:transpose(1, 5) end, "transpose")
end

function TestErrors:test_different_devices()
  local other
  for _, d in ipairs(netcl.devices()) do if d.name ~= dev then other = d.name end end
  lu.skipIf(not other, "no device other than " .. dev .. " to mix with")
  local a, b = netcl.zeros(2, o), netcl.zeros(2, { device = other })
  H.assert_error(function() return a + b end, "different devices", dev, other)
  H.assert_error(function() return a:matmul(b) end, "different devices")
end

function TestErrors:test_unknown_device_and_dtype()
  H.assert_error(function() return netcl.zeros(2, { device = "opencl:42" }) end, "opencl:42")
  H.assert_error(function() return netcl.zeros(2, { device = dev, dtype = "float8" }) end, "float8")
end

function TestErrors:test_negative_or_huge_size()
  H.assert_error(function() return netcl.zeros(-1, o) end, "negative", "-1")
  H.assert_error(function() return netcl.zeros(1e12, 1e12, o) end, "too large")
end

function TestErrors:test_invalid_view()
  local t = netcl.zeros(2, 3, o):t()
  H.assert_error(function() return t:view(6) end, "view", "[3,2]", "contiguous")
  H.assert_error(function() return netcl.zeros(2, 3, o):view(4) end, "view", "[4]")
end

function TestErrors:test_freed_tensor()
  local t = netcl.zeros(2, o)
  t:free()
  H.assert_error(function() return t:size() end, "freed")
  H.assert_error(function() return netcl.zeros(2, o) + t end, "freed")
end

function TestErrors:test_error_points_at_caller()
  local ok, err = pcall(function() return netcl.zeros(2, o) + netcl.zeros(3, o) end)
  lu.assertFalse(ok)
  lu.assertStrContains(err, "errors_spec.lua")
end

function TestErrors:test_kernel_compile_error_reports_build_log()
  lu.skipIf(H.is_cpu, "OpenCL build logs: the cpu backend compiles no kernels")
  local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local f = io.open(dir .. "/binary.cl", "w")
  f:write("__kernel void broken(__global float *x) { x[0] = undefined_thing; }\n")
  f:close()
  local out = H.run(("NETCL_CACHE_DIR=%s NETCL_KERNEL_DIR=%s %s/build/netcl -e " ..
    "\"local a = netcl.ones(3, {device = '%s'}) print(pcall(function() return a + a end))\""):format(dir, dir, root, H.device))
  os.execute("rm -rf " .. dir)
  lu.assertStrContains(out, "false")
  lu.assertStrContains(out, "binary")
  lu.assertStrContains(out, "undefined_thing")    -- the compiler's build log
end
