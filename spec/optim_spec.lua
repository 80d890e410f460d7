-- spec/optim_spec.lua — optimizers on the device under test: a few steps
-- on fixed tensors against the update formulas computed here in Lua
-- doubles (float32 within rtol 1e-5), every option, parameter groups, the
-- flat buffers (shared storage, gradients re-attached, one kernel per
-- step), state_dict round trips that resume bit-identically, clipping,
-- and clear errors.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local optim = netcl.optim
local dev = H.device

local A0 = { 0.5, -1, 2, 0.1, 0.2, -0.3 }   -- parameter a is [2, 3]
local B0 = { 1, -2, 0.3, 0.7 }              -- parameter b is [4]

-- coefficient of element i at step k: the loss sum(c * p + p^2 / 2) has gradient c + p
local function coef(k, i, which) return math.sin(k * 1.7 + i * 0.9 + which) * 0.8 end

-- ---- reference updates in Lua doubles (PyTorch's formulas) ---------------------------------

local REF = {}
function REF.SGD(o, st, p, g, t)
  for i = 1, #p do
    local gi = o.maximize and -g[i] or g[i]
    gi = gi + (o.weight_decay or 0) * p[i]
    local mu = o.momentum or 0
    if mu ~= 0 then
      local b = t == 1 and gi or mu * st.buf[i] + (1 - (o.dampening or 0)) * gi
      st.buf[i] = b
      gi = o.nesterov and gi + mu * b or b
    end
    p[i] = p[i] - o.lr * gi
  end
end
REF.Momentum = function(o, st, p, g, t)
  local q = setmetatable({ momentum = o.momentum or 0.9 }, { __index = o })
  REF.SGD(q, st, p, g, t)
end
function REF.Adam(o, st, p, g, t, decoupled)
  local b1, b2 = (o.betas or {})[1] or 0.9, (o.betas or {})[2] or 0.999
  local wd, eps, lr = o.weight_decay or (decoupled and 1e-2 or 0), o.eps or 1e-8, o.lr or 1e-3
  for i = 1, #p do
    local gi = o.maximize and -g[i] or g[i]
    if decoupled then p[i] = p[i] * (1 - lr * wd) else gi = gi + wd * p[i] end
    st.m[i] = b1 * (st.m[i] or 0) + (1 - b1) * gi
    st.v[i] = b2 * (st.v[i] or 0) + (1 - b2) * gi * gi
    local v = st.v[i]
    if o.amsgrad then st.vmax[i] = math.max(st.vmax[i] or 0, v); v = st.vmax[i] end
    p[i] = p[i] - lr / (1 - b1 ^ t) * st.m[i] / (math.sqrt(v) / math.sqrt(1 - b2 ^ t) + eps)
  end
end
REF.AdamW = function(o, st, p, g, t) REF.Adam(o, st, p, g, t, true) end
function REF.RMSprop(o, st, p, g)
  local a, eps, mu, lr = o.alpha or 0.99, o.eps or 1e-8, o.momentum or 0, o.lr or 1e-2
  for i = 1, #p do
    local gi = o.maximize and -g[i] or g[i]
    gi = gi + (o.weight_decay or 0) * p[i]
    st.sq[i] = a * (st.sq[i] or 0) + (1 - a) * gi * gi
    local avg
    if o.centered then
      st.ga[i] = a * (st.ga[i] or 0) + (1 - a) * gi
      avg = math.sqrt(st.sq[i] - st.ga[i] ^ 2) + eps
    else
      avg = math.sqrt(st.sq[i]) + eps
    end
    if mu > 0 then
      st.buf[i] = mu * (st.buf[i] or 0) + gi / avg
      p[i] = p[i] - lr * st.buf[i]
    else
      p[i] = p[i] - lr * gi / avg
    end
  end
end
function REF.Adagrad(o, st, p, g, t)
  local lr = (o.lr or 1e-2) / (1 + (t - 1) * (o.lr_decay or 0))
  for i = 1, #p do
    local gi = o.maximize and -g[i] or g[i]
    gi = gi + (o.weight_decay or 0) * p[i]
    st.sum[i] = (st.sum[i] or o.initial_accumulator_value or 0) + gi * gi
    p[i] = p[i] - lr * gi / (math.sqrt(st.sum[i]) + (o.eps or 1e-10))
  end
end

local function new_state() return { buf = {}, m = {}, v = {}, vmax = {}, sq = {}, ga = {}, sum = {} } end

-- Lua reference: per parameter {values, options, state}
local function reference(name, groups, steps)
  local out = {}
  for gi, grp in ipairs(groups) do
    for _, which in ipairs(grp.which) do
      local p = { unpack(which == 1 and A0 or B0) }
      local st = new_state()
      for t = 1, steps do
        local g = {}
        for i = 1, #p do g[i] = coef(t, i, which) + p[i] end
        REF[name](grp.opts, st, p, g, t)
      end
      out[which] = p
    end
  end
  return out
end

local function params(d, dtype)
  return { netcl.tensor({ { A0[1], A0[2], A0[3] }, { A0[4], A0[5], A0[6] } }, { device = d, dtype = dtype, requires_grad = true }),
           netcl.tensor(B0, { device = d, dtype = dtype, requires_grad = true }) }
end

local function loss_at(t, ps)
  local total
  for which, p in ipairs(ps) do
    local c = {}
    for i = 1, p:numel() do c[i] = coef(t, i, which) end
    local l = (p * netcl.tensor(c, { device = p.device, dtype = p.dtype }):view(p:size())):sum() + (p * p):sum() * 0.5
    total = total and total + l or l
  end
  return total
end

-- runs `steps` steps on the device; groups: {{which = {1, 2}, opts = {...}}, ...}
local function run(name, groups, steps, d, ps)
  ps = ps or params(d or dev)
  local spec = {}
  for i, g in ipairs(groups) do
    local entry = { params = {} }
    for k, v in pairs(g.opts) do entry[k] = v end
    for _, w in ipairs(g.which) do entry.params[#entry.params + 1] = ps[w] end
    spec[i] = entry
  end
  local opt = optim[name](spec)
  for t = 1, steps do
    opt:zero_grad()
    loss_at(t, ps):backward()
    opt:step()
  end
  return ps, opt
end

local function check(name, opts, steps, dtype, rtol)
  local groups = { { which = { 1, 2 }, opts = opts } }
  local ps = run(name, groups, steps or 4, nil, dtype and params(dev, dtype))
  local want = reference(name, groups, steps or 4)
  H.assert_close(H.flatten(ps[1]:totable()), want[1], rtol or 1e-5, (rtol or 1e-5) / 10, name .. " a")
  H.assert_close(ps[2]:totable(), want[2], rtol or 1e-5, (rtol or 1e-5) / 10, name .. " b")
end

TestOptimFormulas = {}

function TestOptimFormulas:test_sgd()
  check("SGD", { lr = 0.1 })
  check("SGD", { lr = 0.1, momentum = 0.9 })
  check("SGD", { lr = 0.05, momentum = 0.8, dampening = 0.3, weight_decay = 0.1 })
  check("SGD", { lr = 0.05, momentum = 0.9, nesterov = true, weight_decay = 0.01 })
  check("SGD", { lr = 0.1, maximize = true })
  check("Momentum", { lr = 0.1 })
end

function TestOptimFormulas:test_adam_adamw()
  check("Adam", { lr = 0.01 })
  check("Adam", { lr = 0.02, betas = { 0.8, 0.99 }, eps = 1e-6, weight_decay = 0.1 })
  check("Adam", { lr = 0.01, amsgrad = true, maximize = true })
  check("AdamW", { lr = 0.01 })
  check("AdamW", { lr = 0.05, weight_decay = 0.3, amsgrad = true })
end

function TestOptimFormulas:test_rmsprop_adagrad()
  check("RMSprop", { lr = 0.01 })
  check("RMSprop", { lr = 0.01, momentum = 0.9, alpha = 0.9, weight_decay = 0.1 })
  check("RMSprop", { lr = 0.01, centered = true, momentum = 0.5 })
  check("Adagrad", { lr = 0.1 })
  check("Adagrad", { lr = 0.1, lr_decay = 0.1, weight_decay = 0.05, initial_accumulator_value = 0.5, maximize = true })
end

-- float64 computes in double; float16/bfloat16 store rounded, compute in float
function TestOptimFormulas:test_other_dtypes()
  if H.device_info().fp64 then
    check("Adam", { lr = 0.01, amsgrad = true }, 4, "float64", 1e-12)
    check("SGD", { lr = 0.1, momentum = 0.9, nesterov = true }, 4, "float64", 1e-12)
  end
  check("SGD", { lr = 0.1, momentum = 0.9 }, 2, "float16", 1e-2)
  check("Adam", { lr = 0.01 }, 2, "bfloat16", 2e-2)
  check("RMSprop", { lr = 0.01, centered = true }, 2, "float16", 1e-2)
end

-- every kind and flag on the device against the cpu (the op table's coverage of optim_step)
function TestOptimFormulas:test_device_matches_cpu()
  local cases = {
    { "SGD", { lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 0.01 } }, { "SGD", { lr = 0.1, maximize = true } },
    { "Adam", { lr = 0.01, amsgrad = true } }, { "AdamW", { lr = 0.01 } },
    { "RMSprop", { lr = 0.01, centered = true, momentum = 0.5 } }, { "Adagrad", { lr = 0.1, lr_decay = 0.1 } },
  }
  H.device_check("optim_step", function(d)
    local out = {}
    for _, c in ipairs(cases) do
      local ps = run(c[1], { { which = { 1, 2 }, opts = c[2] } }, 3, d)
      out[#out + 1], out[#out + 2] = ps[1], ps[2]
    end
    return unpack(out)
  end)
end

function TestOptimFormulas:test_param_groups()
  local groups = { { which = { 1 }, opts = { lr = 0.1, momentum = 0.9 } }, { which = { 2 }, opts = { lr = 0.01 } } }
  local ps, opt = run("SGD", groups, 3)
  local want = reference("SGD", groups, 3)
  H.assert_close(H.flatten(ps[1]:totable()), want[1], 1e-5, 1e-6)
  H.assert_close(ps[2]:totable(), want[2], 1e-5, 1e-6)
  lu.assertEquals(#opt.param_groups, 2)
  lu.assertEquals(opt.param_groups[2].momentum, 0)   -- defaults fill what a group leaves out
  local extra = netcl.zeros(3, { device = dev, requires_grad = true })
  opt:add_param_group({ params = { extra }, lr = 0.5 })
  lu.assertEquals(opt.param_groups[3].lr, 0.5)
  H.assert_error(function() opt:add_param_group({ params = { extra } }) end, "appears more than once")
end

TestOptimFlat = {}

function TestOptimFlat:test_parameters_live_in_flat_buffers()
  local ps = params(dev)
  local opt = optim.SGD(ps, { lr = 0.1 })
  local flat, grad = opt:flat_params()[1], opt:flat_grads()[1]
  lu.assertEquals(flat:numel(), 32)   -- two slices, each starting 16-element aligned
  for _, p in ipairs(ps) do
    lu.assertTrue(netcl.C.netcl_tensor_same_storage(p.h, flat.h) ~= 0)
    lu.assertTrue(netcl.C.netcl_tensor_same_storage(p.grad.h, grad.h) ~= 0)
    lu.assertTrue(p.is_leaf and p.requires_grad)
  end
  H.assert_close(flat:narrow(1, 17, 4), B0)
  netcl.no_grad(function() flat:narrow(1, 17, 4):fill_(3) end)
  lu.assertEquals(ps[2]:totable(), { 3, 3, 3, 3 })
end

function TestOptimFlat:test_replaced_and_cleared_gradients()
  local ps = params(dev)
  local opt = optim.SGD(ps, { lr = 1 })
  ps[1].grad = netcl.ones(2, 3, { device = dev })   -- a foreign gradient is copied in
  ps[2].grad = nil                                   -- no gradient: the slice counts as zero
  opt:step()
  H.assert_close(H.flatten(ps[1]:totable()), { A0[1] - 1, A0[2] - 1, A0[3] - 1, A0[4] - 1, A0[5] - 1, A0[6] - 1 })
  H.assert_close(ps[2]:totable(), B0)
  lu.assertTrue(netcl.C.netcl_tensor_same_storage(ps[2].grad.h, opt:flat_grads()[1].h) ~= 0)
  -- a backward with .grad cleared accumulates into a fresh tensor, then gets copied in
  ps[1].grad = nil
  loss_at(1, ps):backward()
  local g = ps[1].grad:totable()
  opt:step()
  lu.assertTrue(netcl.C.netcl_tensor_same_storage(ps[1].grad.h, opt:flat_grads()[1].h) ~= 0)
  H.assert_close(ps[1].grad:totable(), g)
end

function TestOptimFlat:test_one_kernel_per_step()
  lu.skipIf(H.is_cpu, "counts OpenCL kernel launches: the cpu backend launches none")
  local m = netcl.nn.Sequential(netcl.nn.Linear(8, 16, { device = dev }), netcl.nn.ReLU(), netcl.nn.Linear(16, 4, { device = dev }))
  for _, name in ipairs({ "SGD", "Adam", "RMSprop", "Adagrad" }) do
    local opt = optim[name](m, { lr = 0.01 })
    m(netcl.randn(2, 8, { device = dev })):sum():backward()
    opt:step()   -- first step: state buffers are created and filled
    local n0 = netcl.runtime_stats().kernels_launched
    opt:step()
    local n1 = netcl.runtime_stats().kernels_launched
    opt:zero_grad()
    local n2 = netcl.runtime_stats().kernels_launched
    lu.assertEquals(n1 - n0, 1, name .. " step")
    lu.assertEquals(n2 - n1, 1, name .. " zero_grad")
  end
end

function TestOptimFlat:test_frozen_and_mixed_dtypes()
  local a = netcl.ones(3, { device = dev, requires_grad = true })
  local frozen = netcl.ones(3, { device = dev })
  local list = { a, frozen }
  if H.device_info().fp64 then list[3] = netcl.ones(2, { device = dev, dtype = "float64", requires_grad = true }) end
  local opt = optim.SGD(list, { lr = 0.5, weight_decay = 1 })
  opt:step()
  lu.assertEquals(frozen:totable(), { 1, 1, 1 })
  lu.assertEquals(a:totable(), { 0.5, 0.5, 0.5 })
  if list[3] then
    lu.assertEquals(#opt:flat_params(), 2)
    lu.assertEquals(list[3]:totable(), { 0.5, 0.5 })
  end
end

function TestOptimFlat:test_module_moved_after_creation()
  lu.skipIf(H.is_cpu, "moves a module from the cpu to the device under test: needs an OpenCL device under test")
  netcl.manual_seed(1)
  local m = netcl.nn.Linear(3, 2, { device = "cpu" })
  local opt = optim.Adam(m, { lr = 0.01 })
  m(netcl.randn(4, 3, { device = "cpu" })):sum():backward()
  opt:step()
  local before = m.weight:totable()
  m:to(dev)
  m(netcl.randn(4, 3, { device = dev })):sum():backward()
  opt:step()   -- the group is flattened again on the new device, its state moved along
  lu.assertEquals(opt:flat_params()[1].device, dev)
  lu.assertEquals(opt:state_dict().state[1].exp_avg.device, dev)
  lu.assertEquals(opt:state_dict().state[1].step, 2)
  lu.assertNotEquals(m.weight:totable()[1][1], before[1][1])
end

TestOptimState = {}

-- k steps, save, continue; a fresh model and optimizer loaded from the save
-- continue identically, bit for bit
local function resume_case(name, opts)
  local path = os.tmpname()
  local ps, opt = run(name, { { which = { 1, 2 }, opts = opts } }, 3)
  netcl.save({ params = ps, optim = opt }, path)
  for t = 4, 6 do opt:zero_grad(); loss_at(t, ps):backward(); opt:step() end
  local ck = netcl.load(path, { device = dev })
  local qs = { ck.params[1]:requires_grad_(), ck.params[2]:requires_grad_() }
  local opt2 = optim[name]({ { params = qs } })
  opt2:load_state_dict(ck.optim)
  for t = 4, 6 do opt2:zero_grad(); loss_at(t, qs):backward(); opt2:step() end
  H.assert_close(qs[1], ps[1], 0, 0, name .. " a")
  H.assert_close(qs[2], ps[2], 0, 0, name .. " b")
  lu.assertEquals(opt2.param_groups[1].lr, opts.lr)
  os.remove(path)
end

function TestOptimState:test_resume_bit_identical()
  resume_case("SGD", { lr = 0.1, momentum = 0.9, dampening = 0.1 })
  resume_case("Adam", { lr = 0.01, amsgrad = true })
  resume_case("AdamW", { lr = 0.01 })
  resume_case("RMSprop", { lr = 0.01, momentum = 0.5, centered = true })
  resume_case("Adagrad", { lr = 0.1, lr_decay = 0.01 })
end

function TestOptimState:test_state_dict_layout_and_errors()
  local ps, opt = run("Adam", { { which = { 1 }, opts = { lr = 0.1 } }, { which = { 2 }, opts = { lr = 0.2 } } }, 2)
  local sd = opt:state_dict()
  lu.assertEquals(sd.param_groups[1].params, { 1 })
  lu.assertEquals(sd.param_groups[2].params, { 2 })
  lu.assertEquals(sd.param_groups[2].lr, 0.2)
  lu.assertEquals(sd.param_groups[1].betas, { 0.9, 0.999 })
  lu.assertEquals(sd.state[1].step, 2)
  lu.assertEquals(sd.state[2].exp_avg:size(), { 4 })
  lu.assertNil(sd.state[1].max_exp_avg_sq)
  local other = optim.Adam({ ps[1], ps[2] })
  H.assert_error(function() other:load_state_dict(sd) end, "the state has 2 parameter groups, this optimizer has 1")
  local sgd = optim.SGD({ { params = { ps[1] } }, { params = { ps[2] } } })
  H.assert_error(function() sgd:load_state_dict(sd) end, "'exp_avg' (parameter 1) is not a state of SGD")
  sd.state[2].exp_avg = netcl.zeros(5)
  H.assert_error(function() opt:load_state_dict(sd) end, "exp_avg of parameter 2 is [5], the parameter is [4]")
end

TestOptimClip = {}

local function grad_setup()
  local ps = params(dev)
  local g = { { 3, 0, 0, 0, 0, 4 }, { 0, 12, 0, 0 } }   -- total 2-norm 13
  ps[1].grad = netcl.tensor(g[1], { device = dev }):view(2, 3)
  ps[2].grad = netcl.tensor(g[2], { device = dev })
  return ps
end

function TestOptimClip:test_clip_grad_norm()
  local ps = grad_setup()
  lu.assertAlmostEquals(optim.clip_grad_norm(ps, 6.5), 13, 1e-5)
  H.assert_close(ps[2].grad, { 0, 6, 0, 0 }, 1e-5)
  ps = grad_setup()
  local opt = optim.SGD(ps, { lr = 0.1 })
  local n = optim.clip_grad_norm_device(opt, 1)
  lu.assertEquals(n.device, dev)
  lu.assertAlmostEquals(n:item(), 13, 1e-5)
  lu.assertAlmostEquals(opt:flat_grads()[1]:square():sum():sqrt():item(), 1, 1e-5)
  ps = grad_setup()
  lu.assertAlmostEquals(optim.clip_grad_norm(ps, 100, math.huge), 12, 1e-6)   -- under the limit: unchanged
  lu.assertAlmostEquals(optim.clip_grad_norm(ps, 100, 1), 19, 1e-5)
  H.assert_close(ps[1].grad:view(-1), { 3, 0, 0, 0, 0, 4 })
  ps[1].grad = netcl.tensor({ 0 / 0, 0, 0, 0, 0, 0 }, { device = dev }):view(2, 3)
  H.assert_error(function() optim.clip_grad_norm(ps, 1, 2, true) end, "the total gradient norm is nan", "nothing was scaled")
end

function TestOptimClip:test_clip_grad_value()
  local ps = grad_setup()
  local opt = optim.Adam(ps)
  optim.clip_grad_value(opt, 3.5)
  H.assert_close(ps[1].grad:view(-1), { 3, 0, 0, 0, 0, 3.5 })
  H.assert_close(ps[2].grad, { 0, 3.5, 0, 0 })
  H.assert_error(function() optim.clip_grad_value(ps, -1) end, "clip_value must be a non-negative number")
end

TestOptimErrors = {}

function TestOptimErrors:test_bad_options()
  local p = netcl.zeros(2, { device = dev, requires_grad = true })
  H.assert_error(function() optim.SGD({ p }, { lr = -1 }) end, "SGD: lr must be a non-negative number")
  H.assert_error(function() optim.SGD({ p }, { momentun = 0.9 }) end, "SGD: unknown option 'momentun'", "momentum")
  H.assert_error(function() optim.SGD({ p }, { nesterov = true }) end, "Nesterov momentum needs momentum > 0")
  H.assert_error(function() optim.Momentum({ p }, { momentum = 0 }) end, "momentum must be positive")
  H.assert_error(function() optim.Adam({ p }, { betas = { 0.9, 1 } }) end, "betas must be {beta1, beta2}")
  H.assert_error(function() optim.Adam({ p, p }) end, "appears more than once")
  H.assert_error(function() optim.Adam({}) end, "empty parameter list")
  H.assert_error(function() optim.Adam({ p * 2 }) end, "must be a float leaf tensor")
  H.assert_error(function() optim.RMSprop(5) end, "params must be a Module")
  lu.assertStrContains(tostring(optim.Adam({ p })), "Adam (2 parameters, 1 flat buffers)")
end
