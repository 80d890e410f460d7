-- spec/fork_spec.lua — OpenCL is not fork-safe: a forked child that touches
-- an OpenCL device gets a clear error instead of a hang; cpu work is fine.
local lu = require("luaunit")
local H = require("helper")
local ffi = require("ffi")
local netcl = H.netcl

pcall(ffi.cdef, [[
  int fork(void);
  int waitpid(int pid, int *status, int options);
  void _exit(int status);
]])

-- Runs fn in a forked child; returns the child's exit code.
local function in_child(fn)
  local pid = ffi.C.fork()
  if pid == 0 then
    local ok, code = pcall(fn)
    ffi.C._exit(ok and code or 99)
  end
  local st = ffi.new("int[1]")
  ffi.C.waitpid(pid, st, 0)
  return bit.rshift(bit.band(st[0], 0xff00), 8)
end

TestFork = {}

function TestFork:test_opencl_in_child_fails_clearly()
  lu.skipIf(H.is_cpu, "OpenCL after fork: the cpu backend works in a child (test_cpu_work_in_child)")
  local t = netcl.ones(4, { device = H.device })   -- OpenCL is initialised in the parent
  local code = in_child(function()
    local ok, err = pcall(function() return (t + 1):sum():item() end)
    if ok then return 1 end
    if not tostring(err):find("fork", 1, true) then return 2 end
    return 0
  end)
  lu.assertEquals(code, 0, "child must get a fork error (1 = no error, 2 = wrong message)")
  lu.assertEquals((t + 1):sum():item(), 8)     -- the parent is unaffected
end

-- the device layer's prefix names the op; the backend's own lead naming it
-- again ("synchronize opencl:0: synchronize: ...") is dropped
function TestFork:test_fork_error_names_the_op_once()
  lu.skipIf(H.is_cpu, "OpenCL after fork: the cpu backend works in a child (test_cpu_work_in_child)")
  netcl.ones(4, { device = H.device }):sum():item()
  local code = in_child(function()
    local ok, err = pcall(netcl.synchronize, H.device)
    if ok then return 1 end
    local msg = tostring(err)
    if not msg:find("synchronize " .. H.device .. ": OpenCL used in a forked child", 1, true) then return 2 end
    local _, n = msg:gsub("synchronize", "")
    return n == 1 and 0 or 3
  end)
  lu.assertEquals(code, 0, "1 = no error, 2 = not the prefixed fork message, 3 = the op named twice")
end

function TestFork:test_cpu_work_in_child()
  local code = in_child(function()
    local x = netcl.ones(100000, { device = "cpu" })
    return (x * 2):sum():item() == 200000 and 0 or 1
  end)
  lu.assertEquals(code, 0)
end
