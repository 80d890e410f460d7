-- spec/device_spec.lua — device discovery, profiles, naming and the
-- default-device rule.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl

TestDevices = {}

function TestDevices:test_cpu_always_first()
  local devs = netcl.devices()
  lu.assertTrue(#devs >= 1)
  lu.assertEquals(devs[1].name, "cpu")
  lu.assertEquals(devs[1].type, "cpu")
end

function TestDevices:test_profile_fields()
  for _, d in ipairs(netcl.devices()) do
    lu.assertIsString(d.hw_name)
    lu.assertIsString(d.vendor)
    lu.assertIsString(d.driver)
    lu.assertTrue(d.compute_units >= 1, d.name)
    lu.assertTrue(d.global_mem > 0, d.name)
    lu.assertTrue(d.max_work_group >= 1, d.name)
    lu.assertIsBoolean(d.fp16)
    lu.assertIsBoolean(d.fp64)
    lu.assertIsNumber(d.compute_capability)
    if d.name ~= "cpu" then lu.assertStrMatches(d.name, "opencl:%d+") end
  end
end

function TestDevices:test_device_under_test_exists()
  lu.assertNotNil(H.device_info(), H.device)
  lu.assertEquals(netcl.device(H.device).name, H.device)
end

function TestDevices:test_unknown_device_is_a_clear_error()
  H.assert_error(function() netcl.device("opencl:99") end, "opencl:99", "cpu")
  H.assert_error(function() netcl.zeros(2, { device = "tpu" }) end, "tpu")
end

function TestDevices:test_default_device_rule()
  local first_gpu
  for _, d in ipairs(netcl.devices()) do
    if d.type == "opencl_gpu" and not first_gpu then first_gpu = d.name end
  end
  local env = os.getenv("NETCL_DEVICE")
  local want = (env and env ~= "") and env or first_gpu or "cpu"
  lu.assertEquals(netcl.default_device(), want)
end

function TestDevices:test_netcl_device_env_override()
  local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."
  local cmd = ("NETCL_DEVICE=%s luajit -e \"package.path='%s/lua/?.lua;%s/lua/?/init.lua;'..package.path; " ..
    "package.cpath='%s/build/?.so;'..package.cpath; print(require('netcl').default_device())\""):format(H.device, root, root, root)
  local p = io.popen(cmd)
  local out = p:read("*a")
  p:close()
  lu.assertEquals(out, H.device .. "\n")
end

function TestDevices:test_synchronize()
  netcl.synchronize(H.device)
  netcl.synchronize()
end
