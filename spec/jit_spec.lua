-- spec/jit_spec.lua — capture and replay (src/jit/, lua/netcl/jit.lua):
-- netcl.jit chains fused against eager (every float dtype, broadcast,
-- strided and scalar operands, comparisons and where, gradients), a new
-- signature traced again, arguments used in place, results fresh, fused
-- intermediates taking no memory, compiled training steps (an MLP and
-- LeNet-5 with Adam for 200 steps, SGD momentum under a scheduler with
-- gradient clipping) whose parameters equal eager training's, refused
-- captures with their reason, bounded memory over 10,000 replays, and
-- fused programs from the disk cache in a second process.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local nn = netcl.nn

local function maxdiff(a, b) return (a:double() - b:double()):abs():max():item() end

local function T(sizes, opts)
  opts = opts or {}
  opts.device = H.device
  return netcl.randn(sizes, opts)
end

TestJit = {}

-- chains of elementwise ops: fused result against the same ops run eagerly
local CHAINS = {
  { "relu(x*a+b)", function(x, a, b) return (x * a + b):relu() end },
  { "six ops", function(x, a, b) return (((x + 1) * a):tanh() - b):abs():sqrt() * 0.5 end },
  { "unary catalogue", function(x) return x:sigmoid() + x:gelu() + x:silu() + x:softplus() + x:elu() + x:clamp(-0.5, 0.5) end },
  { "scalar forms", function(x, a) return (2 - x) / (a:abs() + 1) + x:pow(2) end },
  { "compare and where", function(x, a, b) return netcl.where(x:gt(a), b, x * 2) + (x:lt(0)):float() end },
  { "maximum and minimum", function(x, a, b) return x:maximum(a):minimum(b + 1) end },
}

function TestJit:test_chains_equal_eager_float32()
  for _, case in ipairs(CHAINS) do
    local name, fn = case[1], case[2]
    local f = netcl.jit(fn)
    local x, a, b = T({ 37, 19 }), T({ 37, 19 }), T({ 19 })   -- b broadcast along the rows
    f(x, a, b)
    local x2 = T({ 37, 19 })
    local got, want = f(x2, a, b), fn(x2, a, b)
    lu.assertEquals(got:size(), want:size(), name)
    lu.assertEquals(maxdiff(got, want), 0, name .. ": a float32 chain fuses to the bits of its ops")
  end
end

function TestJit:test_chains_other_dtypes_and_layouts()
  local fn = function(x, a) return (x * a + 1):tanh() * x end
  local f = netcl.jit(fn)
  for _, dt in ipairs({ "float16", "bfloat16", "float64" }) do
    local info = H.device_info()
    if dt == "float64" and info and not info.fp64 then break end   -- (the float16/bfloat16 cases ran)
    local x, a = T({ 64 }, { dtype = dt }), T({ 64 }, { dtype = dt })
    f(x, a)
    local x2 = T({ 64 }, { dtype = dt })
    local got, want = f(x2, a), fn(x2, a)
    lu.assertEquals(got.dtype, dt)
    -- every store to a 16-bit buffer rounds as the op's own kernel would
    lu.assertEquals(maxdiff(got:float(), want:float()), 0, dt)
  end
  -- a transposed operand and a mixed-dtype one
  local g = netcl.jit(function(x, y) return x:t() * y + y:half():float() end)
  local x, y = T({ 8, 12 }), T({ 12, 8 })
  g(x, y)
  local x2 = T({ 8, 12 })
  lu.assertEquals(maxdiff(g(x2, y), x2:t() * y + y:half():float()), 0)
end

function TestJit:test_new_signature_traces_again()
  local calls = 0
  local f = netcl.jit(function(x) calls = calls + 1; return x * 3 end)
  f(T({ 4 }))
  f(T({ 4 }))
  lu.assertEquals(calls, 1, "one trace per signature")
  local y = f(T({ 2, 3 }))
  lu.assertEquals(calls, 2, "a new shape traces again")
  lu.assertEquals(y:size(), { 2, 3 })
end

function TestJit:test_results_are_fresh()
  local f = netcl.jit(function(x) return x + 1 end)
  local x = T({ 5 })
  local r1 = f(x)
  local r2 = f(x * 2)
  lu.assertTrue(maxdiff(r1, x + 1) == 0, "an earlier result keeps its values")
  lu.assertTrue(maxdiff(r2, x * 2 + 1) == 0)
end

function TestJit:test_arguments_are_used_where_they_lie()
  -- an in-place write to an argument reaches the caller's tensor, as in eager code
  local f = netcl.jit(function(x, y) x:mul_(2); return x + y end)
  local x, y = T({ 7 }), T({ 7 })
  local x0 = x:clone()
  local r = f(x, y)
  lu.assertEquals(maxdiff(x, x0 * 2), 0, "first call")
  lu.assertEquals(maxdiff(r, x0 * 2 + y), 0)
  local x2 = T({ 7 })
  local x20 = x2:clone()
  r = f(x2, y)
  lu.assertEquals(maxdiff(x2, x20 * 2), 0, "a replay")
  lu.assertEquals(maxdiff(r, x20 * 2 + y), 0)
  lu.assertEquals(maxdiff(x, x0 * 2), 0, "the first argument is left alone")
  -- a view argument (not the whole of its storage) is copied in
  local big = T({ 3, 7 })
  r = f(big[2], y)
  lu.assertEquals(maxdiff(r, big[2] + y), 0)
  -- the same tensor twice traces apart from two tensors
  local g = netcl.jit(function(a, b) a:add_(1); return a * b end)
  g(T({ 4 }), T({ 4 }))
  local z = T({ 4 })
  local z0 = z:clone()
  lu.assertEquals(maxdiff(g(z, z), (z0 + 1) * (z0 + 1)), 0)
end

function TestJit:test_results_returning_arguments_or_views_of_them()
  local f = netcl.jit(function(x, y) return x:t(), y, x * 2 end)
  local x, y = T({ 3, 4 }), T({ 2 })
  f(x, y)
  local x2, y2 = T({ 3, 4 }), T({ 2 })
  local a, b, c = f(x2, y2)
  lu.assertEquals(maxdiff(a, x2:t()), 0)
  lu.assertTrue(rawequal(b, y2), "an argument returned is the caller's tensor")
  lu.assertEquals(maxdiff(c, x2 * 2), 0)
end

function TestJit:test_intermediates_take_no_memory()
  local f = netcl.jit(function(x) return (((x * 2 + 1):exp() - x):tanh() * 3):abs() end)
  local x = T({ 65536 })
  collectgarbage("collect")
  local before = netcl.memory_stats(H.device).bytes_in_use
  local r = f(x)
  collectgarbage("collect")
  local grew = netcl.memory_stats(H.device).bytes_in_use - before
  -- the result alone: the five intermediates were fused away and released
  lu.assertTrue(grew <= 2 * 4 * 65536, ("a traced chain holds %d bytes for a %d-byte result"):format(grew, 4 * 65536))
  lu.assertEquals(maxdiff(r, (((x * 2 + 1):exp() - x):tanh() * 3):abs()), 0)
end

function TestJit:test_argument_needing_grad_is_refused()
  local w = T({ 3 })
  w.requires_grad = true
  H.assert_error(function() netcl.jit(function(a) return a * 2 end)(w) end, "argument 1", "requires grad")
  H.assert_error(function() netcl.compile(function(a) return a * 2 end, w) end, "argument 1", "requires grad")
end

function TestJit:test_gradients_in_a_traced_step()
  local w = T({ 6 })
  w.requires_grad = true
  local step = function(x)
    w.grad = nil
    local loss = ((x * w):tanh() * x):sum()
    loss:backward()
    return loss, w.grad
  end
  local f = netcl.jit(step)
  f(T({ 6 }))
  local x2 = T({ 6 })
  local loss, g = f(x2)
  local l2, g2 = step(x2)
  lu.assertTrue(maxdiff(loss, l2) < 1e-6)
  lu.assertTrue(maxdiff(g, g2) < 1e-6)
end

-- the same training, eager and compiled: compile runs the step once to
-- warm up and once under the capture, then replays
local function train_both(make, data, steps)
  local m1, s1 = make()
  s1(data[1][1], data[1][2])
  s1(data[1][1], data[1][2])
  for i = 1, steps do
    local b = data[(i - 1) % #data + 1]
    s1(b[1], b[2])
  end
  local m2, s2 = make()
  local c = netcl.compile(s2, data[1][1], data[1][2])
  local last
  for i = 1, steps do
    local b = data[(i - 1) % #data + 1]
    last = c(b[1], b[2])
  end
  local worst = 0
  local p1, p2 = m1:parameters(), m2:parameters()
  for i = 1, #p1 do worst = math.max(worst, maxdiff(p1[i], p2[i])) end
  return worst, c, last
end

function TestJit:test_compiled_mlp_trains_as_eager()
  local data = {}
  netcl.manual_seed(5)
  for i = 1, 20 do data[i] = { T({ 16, 20 }), netcl.randint(1, 6, { 16 }, { device = H.device, dtype = "int64" }) } end
  local function make()
    netcl.manual_seed(1)
    local model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5)):to(H.device)
    local opt = netcl.optim.Adam(model:parameters(), { lr = 1e-2 })
    return model, function(x, t)
      opt:zero_grad()
      local loss = nn.functional.cross_entropy(model(x), t)
      loss:backward()
      opt:step()
      return loss
    end
  end
  local worst, c, loss = train_both(make, data, 200)
  lu.assertTrue(worst <= 1e-6, "parameters differ by " .. worst)
  lu.assertTrue(c.kernels < c.captured_kernels, ("fusion: %d kernels of %d"):format(c.kernels, c.captured_kernels))
  lu.assertTrue(loss:item() == loss:item())
end

-- LeNet-5 (with batch norm after the first convolution) and Adam
function TestJit:test_compiled_lenet_trains_as_eager()
  local data = {}
  netcl.manual_seed(6)
  for i = 1, 10 do data[i] = { T({ 4, 1, 28, 28 }), netcl.randint(1, 11, { 4 }, { device = H.device, dtype = "int64" }) } end
  local function make()
    netcl.manual_seed(2)
    local model = nn.Sequential(nn.Conv2d(1, 6, 5, { padding = 2 }), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
      nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
      nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)):to(H.device)
    local opt = netcl.optim.Adam(model:parameters(), { lr = 1e-3 })
    return model, function(x, t)
      opt:zero_grad()
      local loss = nn.functional.cross_entropy(model(x), t)
      loss:backward()
      opt:step()
      return loss
    end
  end
  local worst = train_both(make, data, 200)
  lu.assertTrue(worst <= 1e-5, "parameters differ by " .. worst)
end

-- SGD with momentum and a learning rate a scheduler moves between steps
function TestJit:test_compiled_step_follows_the_scheduler()
  local data = {}
  netcl.manual_seed(8)
  for i = 1, 5 do data[i] = { T({ 8, 6 }), netcl.randint(1, 4, { 8 }, { device = H.device, dtype = "int64" }) } end
  local function make()
    netcl.manual_seed(3)
    local model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3)):to(H.device)
    local opt = netcl.optim.SGD(model:parameters(), { lr = 0.1, momentum = 0.9 })
    local sched = netcl.optim.lr_scheduler.StepLR(opt, { step_size = 7, gamma = 0.5 })
    return model, function(x, t)
      opt:zero_grad()
      local loss = nn.functional.cross_entropy(model(x), t)
      loss:backward()
      netcl.optim.clip_grad_norm_device(model:parameters(), 0.5)
      opt:step()
      sched:step()
      return loss
    end
  end
  local worst = train_both(make, data, 40)
  lu.assertTrue(worst <= 1e-5, "parameters differ by " .. worst)
end

-- zeroed gradients are written by the kernels that make them, and biases
-- join their products; without zero_grad the step accumulates, as eager
function TestJit:test_additions_fold_into_their_kernels()
  local function make(zero)
    netcl.manual_seed(9)
    local model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)):to(H.device)
    local params = model:parameters()
    for _, p in ipairs(params) do p.grad = netcl.zeros(p:size(), { device = H.device }) end
    return model, function(x)
      if zero then for _, p in ipairs(params) do p.grad:zero_() end end
      model(x):pow(2):sum():backward()
      return params[1].grad
    end
  end
  local x = T({ 5, 6 })
  for _, zero in ipairs({ true, false }) do
    local m1, s1 = make(zero)
    local m2, s2 = make(zero)
    s1(x)
    local c = netcl.compile(s2, x, { compile_options = true, warmup = 0 })   -- the capture is the first step
    for _ = 1, 3 do s1(x); c(x) end
    local p1, p2 = m1:parameters(), m2:parameters()
    for i = 1, #p1 do
      lu.assertTrue(maxdiff(p1[i].grad, p2[i].grad) < 1e-5, ("zero_grad %s: gradient %d"):format(tostring(zero), i))
    end
    local listing = c:describe()
    if zero then
      lu.assertNil(listing:find("binary add"), "every addition folded:\n" .. listing)
    else
      lu.assertNotNil(listing:find("binary add"), "accumulating gradients keep their additions:\n" .. listing)
    end
  end
end

function TestJit:test_refused_captures_say_why()
  local x = T({ 4 })
  H.assert_error(function() netcl.jit(function(y) return netcl.tensor({ (y * 2):sum():item() }, { device = H.device }) end)(x) end,
    "cannot be captured", "reads a device value on the host")
  H.assert_error(function() netcl.jit(function(y) return y + netcl.tensor({ 1, 2, 3, 4 }, { device = H.device }) end)(x) end,
    "cannot be captured", "uploads host data")
  -- a failed capture leaves no capture running
  lu.assertEquals(netcl.C.netcl_capturing(), 0)
  lu.assertTrue(maxdiff(netcl.jit(function(y) return y * 2 end)(x), x * 2) == 0)
end

function TestJit:test_replay_keeps_memory_bounded()
  local f = netcl.jit(function(x, a) return (x * a):exp() + x end)
  local x, a = T({ 1000 }), T({ 1000 })
  for _ = 1, 10 do f(x, a) end
  collectgarbage("collect")
  local before = netcl.memory_stats(H.device).bytes_in_use
  for _ = 1, 300 do f(x, a) end
  collectgarbage("collect")
  local after = netcl.memory_stats(H.device).bytes_in_use
  lu.assertTrue(after <= before, ("bytes in use grew from %d to %d"):format(before, after))
  -- a compiled training step over 10,000 replays allocates nothing
  netcl.manual_seed(4)
  local model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)):to(H.device)
  local opt = netcl.optim.Adam(model:parameters(), { lr = 1e-3 })
  local xb, tb = T({ 4, 8 }), netcl.randint(1, 3, { 4 }, { device = H.device, dtype = "int64" })
  local step = netcl.compile(function(xx, tt)
    opt:zero_grad()
    local loss = nn.functional.cross_entropy(model(xx), tt)
    loss:backward()
    opt:step()
    return loss
  end, xb, tb)
  step(xb, tb)
  collectgarbage("collect")
  local s0 = netcl.memory_stats(H.device)
  for _ = 1, 10000 do step(xb, tb) end
  collectgarbage("collect")
  local s1 = netcl.memory_stats(H.device)
  lu.assertEquals(s1.bytes_in_use, s0.bytes_in_use, "bytes in use after 10,000 replays")
end

function TestJit:test_fused_programs_come_from_the_disk_cache()
  if H.is_cpu then lu.skip("fused programs are compiled OpenCL: the cpu runs its chains without compiling") end
  local code = ("local netcl = require('netcl'); local f = netcl.jit(function(x) return (x * 3 + 1):tanh() end); "
    .. "local x = netcl.randn(64, {device = %q}); f(x); f(x); "
    .. "io.write(netcl.runtime_stats().programs_compiled)"):format(H.device)
  H.run_lua(code)
  local out, exit = H.run_lua(code)
  lu.assertEquals(exit, 0, out)
  lu.assertEquals(out, "0", "a second process compiles nothing")
end
