-- spec/custom_op_spec.lua — ops a program defines itself: autograd.Function
-- (a forward and a hand-written backward, recorded as one node) on every
-- device, gradient-checked, with its errors; netcl.kernel (the program's
-- own OpenCL C, arguments as buffer + offset and typed scalars) on OpenCL
-- devices, and examples/custom_kernel.lua (a kernel pair as a
-- differentiable op, checked against netcl's ops, training a model).
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local ag = netcl.autograd
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

local Cube = ag.Function({ name = "cube",
  forward = function(ctx, x) ctx.x = x; return x * x * x end,
  backward = function(ctx, g) return g * ctx.x * ctx.x * 3 end })

-- two inputs, a gradient for the first only
local ScaleBy = ag.Function({ name = "scale_by",
  forward = function(ctx, x, s) ctx.s = s; return x * s end,
  backward = function(ctx, g) return g * ctx.s, nil end })

TestCustomOp = {}

function TestCustomOp:test_function_records_one_node_with_its_backward()
  local x = netcl.randn(4, 3, { device = H.device, requires_grad = true })
  local y = Cube(x)
  lu.assertEquals(y.grad_fn, "cube")
  y:sum():backward()
  H.assert_close(x.grad, x:detach() * x:detach() * 3, 1e-5, 1e-6)
  -- chained with netcl's ops on both sides, and a second input with no gradient
  local a = netcl.randn(5, { device = H.device, requires_grad = true })
  local s = netcl.full({ 5 }, 2, { device = H.device, requires_grad = true })
  local out = (ScaleBy(a:exp(), s) + 1):sum()
  out:backward()
  H.assert_close(a.grad, a:detach():exp() * 2, 1e-5, 1e-6)
  lu.assertNil(s.grad)
  -- without grad mode (or no input requiring grad) nothing is recorded
  local z = netcl.no_grad(function() return Cube(x) end)
  lu.assertNil(z.grad_fn)
  lu.assertNil(Cube(netcl.ones(2, { device = H.device })).grad_fn)
end

function TestCustomOp:test_function_gradcheck()
  if not H.is_cpu then lu.skip("finite differences in float64: on the cpu (the device test above compares the gradient)") end
  local ok, msg = ag.gradcheck(function(x) return Cube(x) end, { netcl.randn(3, 4, { dtype = "float64", requires_grad = true }) })
  lu.assertTrue(ok, msg)
end

function TestCustomOp:test_function_errors()
  local x = netcl.ones(2, { device = H.device, requires_grad = true })
  local Boom = ag.Function({ name = "boom", forward = function(_, t) return t * 2 end, backward = function() error("no backward today") end })
  H.assert_error(function() Boom(x):sum():backward() end, "boom", "no backward today")
  local Wrong = ag.Function({ name = "wrong", forward = function(_, t) return t * 2 end,
                              backward = function(_, g) return netcl.ones(3, { device = g.device }) end })
  H.assert_error(function() Wrong(x):sum():backward() end, "wrong", "gradient of input 1")
  local NotT = ag.Function({ forward = function() return 3 end, backward = function() end })
  H.assert_error(function() NotT(x) end, "forward must return a tensor")
  H.assert_error(function() ag.Function({ forward = 1 }) end, "autograd.Function")
end

function TestCustomOp:test_function_state_is_freed_with_its_nodes()
  for _ = 1, 200 do Cube(netcl.ones(3, { device = H.device, requires_grad = true })):sum():backward() end
  collectgarbage()
  collectgarbage()
  lu.assertTrue(ag.live_function_states() < 50, "states kept: " .. ag.live_function_states())
end

local ADD = [[
__kernel void add_scalar(__global float *y, long yo, __global const float *x, long xo, float s, int n) {
  int i = get_global_id(0);
  if (i < n) y[yo + i] = x[xo + i] + s;
}
]]

function TestCustomOp:test_kernel_runs_with_offsets_and_typed_scalars()
  if H.is_cpu then
    H.assert_error(function() netcl.kernel(ADD, "add_scalar", { device = "cpu" }) end, "add_scalar", "runs no OpenCL C")
    return
  end
  local k = netcl.kernel(ADD, "add_scalar", { device = H.device })
  local x = netcl.arange(0, 20, 1, { device = H.device }):narrow(1, 6, 10)   -- a view at offset 5
  local y = netcl.zeros(12, { device = H.device }):narrow(1, 3, 10)
  k(10, y, x, { float = 0.5 }, { int = 10 })
  lu.assertEquals(y:totable(), { 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5 })
  H.assert_error(function() k(10, y, x, 0.5, { int = 10 }) end, "add_scalar", "argument 3", "{float = x}")
  H.assert_error(function() k(10, y, netcl.ones(10, { device = "cpu" }), { float = 1 }, { int = 10 }) end,
    "add_scalar", "argument 2", "on cpu")
  H.assert_error(function() k(0, y, x, { float = 1 }, { int = 10 }) end, "add_scalar", "global size 0")
  H.assert_error(function() netcl.kernel("__kernel void broken(__global float *y) { y[0] = undefined_thing; }", "broken",
    { device = H.device }) end, "broken")
end

function TestCustomOp:test_custom_kernel_example()
  if H.is_cpu then lu.skip("examples/custom_kernel.lua: its kernels run on OpenCL devices (the OpenCL passes run it)") end
  local out, code = H.run(("%s/build/netcl %s/examples/custom_kernel.lua --device %s --steps 20"):format(root, root, H.device))
  lu.assertEquals(code, 0, out)
  lu.assertStrContains(out, "forward max error")
  lu.assertStrContains(out, "training with the custom activation: loss")
end
