-- spec/autograd_spec.lua — the C autograd engine through Lua: finite-
-- difference gradient checks (float64, cpu) for every differentiable op with
-- broadcast and non-contiguous inputs, device gradients against the cpu,
-- graph semantics (accumulation, retain_graph, no_grad, detach, in-place
-- safety) and bounded memory over a 1,000-step training loop.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local dev = H.device

local function leaf(seed, ...)
  netcl.manual_seed(seed)
  return netcl.randn({ ... }, { dtype = "float64", device = "cpu", requires_grad = true })
end

local function positive(seed, ...)
  netcl.manual_seed(seed)
  local t = netcl.rand({ ... }, { dtype = "float64", device = "cpu" }) + 0.5
  return t:detach():requires_grad_()
end

local function check(fn, inputs, opts)
  local ok, err = netcl.autograd.gradcheck(fn, inputs, opts)
  lu.assertTrue(ok, err)
end

-- Gradient checks run once, on the cpu reference (float64).
TestGradcheck = {}

function TestGradcheck:setUp() lu.skipIf(not H.is_cpu, "gradchecks run on the cpu backend in float64") end

function TestGradcheck:test_unary()
  local x = leaf(1, 3, 4)
  for _, name in ipairs({ "neg", "exp", "sigmoid", "tanh", "relu", "abs" }) do
    check(function(a) return a[name](a) end, { x })
  end
  local p = positive(2, 5)
  check(function(a) return a:log() end, { p })
  check(function(a) return a:sqrt() end, { p })
end

function TestGradcheck:test_more_unary()
  local x = leaf(50, 3, 5)
  for _, name in ipairs({ "sign", "square", "expm1", "sin", "cos", "floor", "ceil", "round", "trunc", "silu", "gelu",
                          "softplus", "relu6", "erf", "leaky_relu", "elu", "hardtanh" }) do
    check(function(a) return a[name](a) end, { x })
  end
  check(function(a) return a:gelu("tanh") end, { x })
  check(function(a) return a:leaky_relu(0.2) end, { x })
  check(function(a) return a:elu(0.5) end, { x })
  check(function(a) return a:clamp(-0.5, 0.7) end, { x })
  check(function(a) return (a * 0.5):tan() end, { x })
  check(function(a) return (a * 4):relu6() end, { x })
  local p = positive(51, 4)
  for _, name in ipairs({ "reciprocal", "rsqrt", "log1p", "log2" }) do
    check(function(a) return a[name](a) end, { p })
  end
end

function TestGradcheck:test_binary_with_broadcast()
  local a, b = leaf(3, 2, 3, 4), leaf(4, 3, 1)
  for _, name in ipairs({ "add", "sub", "mul", "maximum", "minimum" }) do
    check(function(x, y) return x[name](x, y) end, { a, b })
  end
  local p, q = positive(5, 3, 4), positive(6, 4)
  check(function(x, y) return x / y end, { p, q })
  check(function(x, y) return x ^ y end, { p, q })
end

function TestGradcheck:test_scalar_forms()
  local p = positive(7, 2, 5)
  check(function(x) return (x + 2) * 3 - 1 end, { p })
  check(function(x) return 2 - x end, { p })
  check(function(x) return 1 / x end, { p })
  check(function(x) return x / 4 end, { p })
  check(function(x) return x ^ 3 end, { p })
  check(function(x) return 2 ^ x end, { p })
  check(function(x) return x:maximum(1) end, { p })
end

function TestGradcheck:test_reductions()
  local x = leaf(8, 3, 5)
  check(function(a) return a:sum() end, { x })
  check(function(a) return a:sum(2) end, { x })
  check(function(a) return a:mean(1, true) end, { x })
  check(function(a) return a:max() end, { x })
  check(function(a) return (a:max(2)) end, { x })
  check(function(a) return (a:min(1, true)) end, { x })
  check(function(a) return a:prod(2) end, { positive(9, 3, 4) })
end

function TestGradcheck:test_matmul_forms()
  check(function(a, b) return a:matmul(b) end, { leaf(10, 4, 3), leaf(11, 3, 5) })
  check(function(a, b) return a:matmul(b) end, { leaf(12, 2, 4, 3), leaf(13, 3, 2) })
  check(function(a, b) return a:matmul(b) end, { leaf(14, 3), leaf(15, 3, 2) })
  check(function(a, b) return a:matmul(b) end, { leaf(16, 2, 3), leaf(17, 3) })
  check(function(a, b) return a:matmul(b) end, { leaf(18, 4), leaf(19, 4) })
  check(function(a, b) return a:t():matmul(b) end, { leaf(20, 3, 4), leaf(21, 3, 2) })   -- non-contiguous
end

function TestGradcheck:test_views()
  local x = leaf(22, 2, 3, 4)
  check(function(a) return a:transpose(1, 3):contiguous():view(4, 6) end, { x })
  check(function(a) return a:permute(3, 1, 2) * 1 end, { x })
  check(function(a) return a:narrow(3, 2, 2) end, { x })
  check(function(a) return a:select(2, 3) end, { x })
  check(function(a) return a[{ { 1, 1 }, {}, { 2, 4 } }] end, { x })
  check(function(a) return a:unsqueeze(1):squeeze(1):reshape(6, 4) end, { x })
  check(function(a) return leaf(23, 3, 1):expand(3, 5) * a:sum() end, { x })
  check(function(a) return a:float():double() * 1 end, { x }, { eps = 1e-2, atol = 1e-3, rtol = 1e-2 })
end

-- Device gradients equal the cpu's.
TestDeviceGrad = {}

-- relu's backward is where(x > 0, g, 0), as PyTorch's threshold_backward:
-- an infinite gradient where x <= 0 gives 0, not NaN
function TestDeviceGrad:test_relu_backward_masks_nonfinite_gradients()
  local x = netcl.tensor({ -1, 0, 2, 3 }, { device = dev }):requires_grad_()
  x:relu():backward(netcl.tensor({ math.huge, -math.huge, 7, 0 / 0 }, { device = dev }))
  local g = x.grad:totable()
  lu.assertEquals({ g[1], g[2], g[3] }, { 0, 0, 7 })
  lu.assertTrue(g[4] ~= g[4], "NaN passes where x > 0")
end

function TestDeviceGrad:test_gradients_match_cpu()
  H.against_cpu(function(d)
    netcl.manual_seed(30)
    local w = netcl.randn(6, 4, { device = d, requires_grad = true })
    local b = netcl.randn(4, { device = d, requires_grad = true })
    local x = netcl.randn(5, 6, { device = d })
    local h = (x:matmul(w) + b):tanh()
    local loss = (h * h:sigmoid()):mean() + h:max(2):sum() * 0.1
    loss:backward()
    return w.grad, b.grad
  end, 1e-4, 1e-5)
end

-- unary gradients over contiguous operands (4 elements an item and a
-- tail) and strided ones (a transposed view)
function TestDeviceGrad:test_unary_gradients_match_cpu()
  H.against_cpu(function(d)
    local outs = {}
    for _, op in ipairs({ "relu", "sigmoid", "tanh", "exp", "abs", "sqrt" }) do
      for _, size in ipairs({ { 7, 9 }, { 4, 8 } }) do
        netcl.manual_seed(31)
        local base = netcl.randn(size[1], size[2], { device = d })
        if op == "sqrt" then base = base:abs() + 0.5 end
        for _, strided in ipairs({ false, true }) do
          local x = (strided and base:t() or base):detach():requires_grad_()
          local y = x[op](x)
          y:backward(y:cos())
          outs[#outs + 1] = x.grad
        end
      end
    end
    return unpack(outs)
  end, 1e-5, 1e-5)
end

TestGraph = {}

function TestGraph:test_accumulation_and_zeroing()
  local x = netcl.tensor({ 1, 2 }, { device = dev, requires_grad = true })
  ;(x * 3):sum():backward()
  ;(x * 3):sum():backward()
  lu.assertEquals(x.grad:totable(), { 6, 6 })
  x.grad = nil
  lu.assertNil(x.grad)
end

function TestGraph:test_retain_graph()
  local x = netcl.tensor({ 1, 2 }, { device = dev, requires_grad = true })
  local y = (x * x):sum()
  y:backward(nil, true)
  y:backward()
  lu.assertEquals(x.grad:totable(), { 4, 8 })
  H.assert_error(function() y:backward() end, "already freed")
end

function TestGraph:test_non_scalar_needs_gradient()
  local x = netcl.tensor({ 1, 2 }, { device = dev, requires_grad = true })
  local y = x * 2
  H.assert_error(function() y:backward() end, "not a single element")
  y:backward(netcl.tensor({ 1, 10 }, { device = dev }))
  lu.assertEquals(x.grad:totable(), { 2, 20 })
end

function TestGraph:test_no_grad_detach_and_flags()
  local x = netcl.tensor({ 1, 2 }, { device = dev, requires_grad = true })
  local y = netcl.no_grad(function() return x * 2 end)
  lu.assertFalse(y.requires_grad)
  lu.assertTrue((x * 2).requires_grad)
  lu.assertEquals((x * 2).grad_fn, "mul")
  lu.assertTrue(x.is_leaf)
  local d = x:detach()
  lu.assertFalse(d.requires_grad)
  lu.assertTrue(netcl.is_grad_enabled())
  H.assert_error(function() netcl.tensor({ 1 }, { dtype = "int32", device = dev }):requires_grad_() end, "floating")
end

function TestGraph:test_retain_grad_of_intermediate()
  local x = netcl.tensor({ 1, 2 }, { device = dev, requires_grad = true })
  local h = (x * 3):retain_grad()
  ;(h * h):sum():backward()
  lu.assertEquals(h.grad:totable(), { 6, 12 })
  lu.assertEquals(x.grad:totable(), { 18, 36 })
end

function TestGraph:test_inplace_safety()
  local w = netcl.tensor({ 1, 2 }, { device = dev, requires_grad = true })
  H.assert_error(function() w:fill_(0) end, "requires grad")
  local x = netcl.tensor({ 3, 4 }, { device = dev })
  local y = (w * x):sum()          -- saves x
  x:fill_(0)                       -- modified after being saved
  H.assert_error(function() y:backward() end, "modified in place")
  netcl.no_grad(function() w:fill_(5) end)   -- allowed without recording
  lu.assertEquals(w:totable(), { 5, 5 })
end

function TestGraph:test_inplace_ops_record_history()
  local w = netcl.tensor({ 1, 2, 3 }, { device = dev, requires_grad = true })
  H.assert_error(function() w:add_(1) end, "add_", "leaf that requires grad")
  local y = w * 2
  y:add_(1):mul_(3)                -- y = (2w + 1) * 3
  lu.assertEquals(y.grad_fn, "mul")
  y:sum():backward()
  lu.assertEquals(w.grad:totable(), { 6, 6, 6 })
  lu.assertEquals(y:totable(), { 9, 15, 21 })
  -- rules that need the old values get them (the op works on a recorded copy)
  w.grad = nil
  local u = w * 1
  u:sin_():mul_(u)                 -- u = sin(w)^2
  u:sum():backward()
  H.assert_close(w.grad, (w:detach():sin() * w:detach():cos() * 2), 1e-5, 1e-6)
end

function TestGraph:test_inplace_on_saved_tensor_is_refused_at_backward()
  local w = netcl.tensor({ 1, 2 }, { device = dev, requires_grad = true })
  local z = w:exp()
  local q = z * z                  -- saves z
  z:add_(1)
  H.assert_error(function() q:sum():backward() end, "modified in place")
  local b = w * 1
  local v = b:view(2, 1)
  b:mul_(2)                        -- v's recorded history no longer holds
  H.assert_error(function() v:sum():backward() end, "view", "modified in place")
  H.assert_error(function() (w * 1):view(2, 1):add_(1) end, "add_", "view")
end

function TestGraph:test_leaf_grad_accumulates_in_place()
  local w = netcl.tensor({ 1, 2 }, { device = dev, requires_grad = true })
  ;(w * 2):sum():backward()
  local g = w.grad
  ;(w * 3):sum():backward()
  lu.assertEquals(g:totable(), { 5, 5 })      -- the same tensor, updated
  lu.assertEquals(w.grad:totable(), { 5, 5 })
  -- a gradient handed to two leaves is copied: they never share storage
  local a = netcl.tensor({ 1 }, { device = dev, requires_grad = true })
  local b = netcl.tensor({ 1 }, { device = dev, requires_grad = true })
  ;(a + b):sum():backward()
  ;(a * 1):sum():backward()
  lu.assertEquals(a.grad:totable(), { 2 })
  lu.assertEquals(b.grad:totable(), { 1 })
end

function TestGraph:test_set_rebinds_a_leaf_into_a_flat_buffer()
  local p = netcl.tensor({ { 1, 2 }, { 3, 4 } }, { device = dev, requires_grad = true })
  local flat = netcl.zeros(6, { device = dev })
  netcl.no_grad(function() flat:narrow(1, 2, 4):copy_(p:view(-1)) end)
  p:set_(flat:narrow(1, 2, 4):view(2, 2))
  lu.assertTrue(p.is_leaf)
  ;(p * p):sum():backward()
  lu.assertEquals(p.grad:totable(), { { 2, 4 }, { 6, 8 } })
  netcl.no_grad(function() flat:mul_(10) end)  -- writes through the buffer
  lu.assertEquals(p:totable(), { { 10, 20 }, { 30, 40 } })
  H.assert_error(function() (p * 1):set_(flat) end, "set_", "not a leaf")
end

function TestGraph:test_tape_form()
  local x = netcl.tensor({ 2 }, { device = dev, requires_grad = true })
  local tape = netcl.autograd.Tape()
  local loss = netcl.no_grad(function() return tape:record(function() return (x ^ 2):sum() end) end)
  tape:backward(loss)
  lu.assertEquals(x.grad:totable(), { 4 })
end

function TestGraph:test_training_loop_memory_is_bounded()
  netcl.manual_seed(40)
  local w1 = netcl.randn(16, 32, { device = dev }) * 0.1
  local w2 = netcl.randn(32, 4, { device = dev }) * 0.1
  w1, w2 = w1:detach():requires_grad_(), w2:detach():requires_grad_()
  local x = netcl.randn(64, 16, { device = dev })
  local y = netcl.randn(64, 4, { device = dev })
  local first, peak_after_warmup
  for step = 1, 1000 do
    local loss = (((x:matmul(w1)):relu():matmul(w2) - y) ^ 2):mean()
    loss:backward()
    netcl.no_grad(function()
      w1:copy_(w1 - w1.grad * 0.05)
      w2:copy_(w2 - w2.grad * 0.05)
    end)
    w1.grad, w2.grad = nil, nil
    if step == 1 then first = loss:item() end
    if step == 100 then peak_after_warmup = netcl.memory_stats(dev).bytes_in_use end
    if step == 1000 then
      lu.assertTrue(loss:item() < first, "loss went down")
    end
  end
  local s = netcl.memory_stats(dev)
  -- no growth with the step count: bounded by the GC threshold, not by 1,000 graphs
  lu.assertTrue(s.bytes_in_use < 300 * 1024 * 1024, "in use " .. s.bytes_in_use)
  lu.assertTrue(peak_after_warmup ~= nil)
end

TestHooks = {}

function TestHooks:test_hooks_see_and_replace_gradients()
  local x = netcl.tensor({ 1, 2, 3 }, { device = dev, requires_grad = true })
  local seen
  local h = x:register_hook(function(g) seen = g:totable(); return g * 2 end)
  local y = x * 3
  y:register_hook(function(g) return g + 1 end)     -- on a non-leaf: before it flows on
  y:sum():backward()
  lu.assertEquals(seen, { 6, 6, 6 })
  lu.assertEquals(x.grad:totable(), { 12, 12, 12 })
  h.remove()
  x.grad = nil
  ;(x * 3):sum():backward()
  lu.assertEquals(x.grad:totable(), { 3, 3, 3 })
  for _ = 1, 200 do (x * 1):sum():backward() end    -- stays correct once the loop is compiled
  lu.assertEquals(x.grad:totable(), { 203, 203, 203 })
end

function TestHooks:test_hook_errors_are_clear()
  local x = netcl.tensor({ 1, 2 }, { device = dev, requires_grad = true })
  local h = x:register_hook(function() error("boom") end)
  H.assert_error(function() (x * 1):sum():backward() end, "gradient hook on a leaf tensor failed", "boom")
  h.remove()
  x:register_hook(function() return netcl.zeros(3, { device = dev }) end)
  H.assert_error(function() (x * 1):sum():backward() end, "hook returned", "same shape")
  H.assert_error(function() netcl.ones(2):register_hook(print) end, "does not require grad")
end

-- post-accumulate hooks run on the leaf once .grad holds the sum (what
-- DistributedDataParallel starts its bucket all-reduces from)
function TestHooks:test_post_accumulate_hooks_see_the_summed_grad()
  local x = netcl.tensor({ 1, 2, 3 }, { device = dev, requires_grad = true })
  local seen, calls = nil, 0
  local h = x:register_post_accumulate_grad_hook(function(t)
    calls = calls + 1
    lu.assertTrue(t == x)
    seen = t.grad:totable()
  end)
  x:register_hook(function(g) return g * 10 end)   -- runs first: the post hook sees its result
  ;(x * 2):sum():backward()
  lu.assertEquals(seen, { 20, 20, 20 })
  ;(x * 1):sum():backward()
  lu.assertEquals(seen, { 30, 30, 30 })
  lu.assertEquals(calls, 2)
  h.remove()
  ;(x * 1):sum():backward()
  lu.assertEquals(calls, 2)
  local y = x * 2
  H.assert_error(function() y:register_post_accumulate_grad_hook(print) end, "not a leaf")
  local bad = netcl.tensor({ 1 }, { device = dev, requires_grad = true })
  bad:register_post_accumulate_grad_hook(function() error("boom") end)
  H.assert_error(function() (bad * 1):sum():backward() end, "post-accumulate hook", "boom")
end

-- backward(g) hands the caller's g to the graph without a copy (as
-- PyTorch): nothing the graph stores may share its memory, so changing g
-- afterwards leaves the gradients alone, also through views and at a leaf
function TestGraph:test_explicit_gradient_stays_the_callers()
  local x = netcl.randn(3, 4, { device = dev }):requires_grad_()
  local g = netcl.ones(3, 4, { device = dev })
  local y = x * 2
  y:retain_grad()
  y:backward(g)
  g:fill_(5)
  lu.assertEquals(x.grad:totable(), netcl.full({ 3, 4 }, 2):totable())
  lu.assertEquals(y.grad:totable(), netcl.ones(3, 4):totable())
  x.grad = nil
  local g12 = netcl.ones(12, { device = dev })
  x:view(12):backward(g12)   -- the view's rule passes g through to the leaf
  g12:fill_(7)
  lu.assertEquals(x.grad:totable(), netcl.ones(3, 4):totable())
  x.grad = nil
  local gx = netcl.ones(3, 4, { device = dev })
  x:backward(gx)             -- a leaf root keeps a copy
  gx:fill_(9)
  lu.assertEquals(x.grad:totable(), netcl.ones(3, 4):totable())
  lu.assertEquals(g:totable(), netcl.full({ 3, 4 }, 5):totable())
  -- a retained intermediate the gradient reaches unchanged (h + 1, a view)
  -- keeps its own copy
  x.grad = nil
  local h = x * 2
  h:retain_grad()
  local gh = netcl.ones(3, 4, { device = dev })
  ;(h + 1):backward(gh)
  gh:fill_(5)
  lu.assertEquals(h.grad:totable(), netcl.ones(3, 4):totable())
  local h2 = x * 3
  h2:retain_grad()
  local g2 = netcl.ones(12, { device = dev })
  h2:view(12):backward(g2)
  h2.grad:zero_()
  lu.assertEquals(g2:totable(), netcl.ones(12):totable())
  local r = x * 4
  r:retain_grad()
  local gr = netcl.ones(3, 4, { device = dev })
  r:backward(gr)
  gr:fill_(3)
  lu.assertEquals(r.grad:totable(), netcl.ones(3, 4):totable())
end
