-- spec/optim_sched_spec.lua — learning-rate schedulers: each sequence
-- against its closed form over 100 steps, chaining and sequencing,
-- OneCycleLR's momentum cycle, ReduceLROnPlateau on a scripted metric
-- sequence (hand-derived), and state_dict round trips.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local optim = netcl.optim
local S = optim.lr_scheduler
local dev = H.device

local function opt_of(lr, name, extra)
  local p = netcl.zeros(2, { device = dev, requires_grad = true })
  local o = { lr = lr }
  for k, v in pairs(extra or {}) do o[k] = v end
  return optim[name or "SGD"]({ p }, o)
end

-- lr after construction and after each of n steps vs want(t), t = 0..n
local function sequence(sched, opt, n, want, rtol)
  for t = 0, n do
    if t > 0 then sched:step() end
    local got = opt.param_groups[1].lr
    local w = want(t)
    if math.abs(got - w) > (rtol or 1e-9) * math.abs(w) + 1e-15 then
      lu.fail(("%s at epoch %d: lr %.15g, closed form %.15g"):format(sched.__name, t, got, w))
    end
    lu.assertEquals(sched:get_last_lr()[1], got)
  end
end

local cos, pi, floor = math.cos, math.pi, math.floor

TestSchedulers = {}

function TestSchedulers:test_step_multistep_exponential()
  local o = opt_of(0.1)
  sequence(S.StepLR(o, { step_size = 7, gamma = 0.5 }), o, 100, function(t) return 0.1 * 0.5 ^ floor(t / 7) end)
  o = opt_of(0.1)
  sequence(S.MultiStepLR(o, { milestones = { 30, 10, 10, 80 }, gamma = 0.1 }), o, 100, function(t)
    local n = 0
    for _, m in ipairs({ 10, 10, 30, 80 }) do if m <= t then n = n + 1 end end
    return 0.1 * 0.1 ^ n
  end)
  o = opt_of(0.1)
  sequence(S.ExponentialLR(o, { gamma = 0.95 }), o, 100, function(t) return 0.1 * 0.95 ^ t end)
end

function TestSchedulers:test_lambda_multiplicative_linear()
  local o = opt_of(0.2)
  sequence(S.LambdaLR(o, { lr_lambda = function(t) return 1 / (1 + t) end }), o, 100, function(t) return 0.2 / (1 + t) end)
  o = opt_of(0.2)
  sequence(S.MultiplicativeLR(o, { lr_lambda = function() return 0.97 end }), o, 100, function(t) return 0.2 * 0.97 ^ t end)
  o = opt_of(0.2)
  sequence(S.LinearLR(o, { start_factor = 0.25, total_iters = 10 }), o, 100,
           function(t) return 0.2 * (0.25 + 0.75 * math.min(t, 10) / 10) end)
  H.assert_error(function() S.LambdaLR(opt_of(1), { lr_lambda = { function() end, function() end } }) end,
                 "one function per parameter group")
end

function TestSchedulers:test_cosine_and_warmup_cosine()
  local o = opt_of(0.1)
  sequence(S.CosineAnnealingLR(o, { T_max = 30, eta_min = 0.001 }), o, 100,
           function(t) return 0.001 + 0.099 * (1 + cos(pi * t / 30)) / 2 end)
  o = opt_of(0.1)
  sequence(S.WarmupCosine(o, { warmup_steps = 10, total_steps = 80, eta_min = 0.001 }), o, 100, function(t)
    if t < 10 then return 0.1 * t / 10 end
    if t >= 80 then return 0.001 end
    return 0.001 + 0.099 * (1 + cos(pi * (t - 10) / 70)) / 2
  end)
  -- step(epoch) jumps with the closed form
  local c = S.CosineAnnealingLR(opt_of(0.1), { T_max = 10 })
  c:step(5)
  lu.assertAlmostEquals(c:get_last_lr()[1], 0.05, 1e-12)
  H.assert_error(function() S.CosineAnnealingLR(opt_of(0.1), {}) end, "T_max must be a valid number")
end

function TestSchedulers:test_one_cycle()
  local o = opt_of(0.1, "SGD", { momentum = 0.9 })
  local s = S.OneCycleLR(o, { max_lr = 1, total_steps = 100 })
  local function anneal(a, b, pct) return b + (a - b) / 2 * (cos(pi * pct) + 1) end
  local init, lo = 1 / 25, 1 / 25 / 1e4
  local function want(t)
    if t <= 29 then return anneal(init, 1, t / 29), anneal(0.95, 0.85, t / 29) end
    return anneal(1, lo, (t - 29) / 70), anneal(0.85, 0.95, (t - 29) / 70)
  end
  for t = 0, 99 do
    if t > 0 then s:step() end
    local lr, m = want(t)
    lu.assertAlmostEquals(o.param_groups[1].lr, lr, 1e-12)
    lu.assertAlmostEquals(o.param_groups[1].momentum, m, 1e-12)
  end
  s:step()
  H.assert_error(function() s:step() end, "OneCycleLR: stepped 101 times, but total_steps is 100")
  -- Adam's beta1 cycles; three phases; linear annealing
  local a = opt_of(0.1, "Adam")
  local s3 = S.OneCycleLR(a, { max_lr = 0.5, epochs = 4, steps_per_epoch = 25, three_phase = true, anneal_strategy = "linear" })
  lu.assertAlmostEquals(a.param_groups[1].betas[1], 0.95, 1e-12)
  for _ = 1, 29 do s3:step() end
  lu.assertAlmostEquals(a.param_groups[1].lr, 0.5, 1e-12)
  lu.assertAlmostEquals(a.param_groups[1].betas[1], 0.85, 1e-12)
  for _ = 1, 29 do s3:step() end
  lu.assertAlmostEquals(a.param_groups[1].lr, 0.02, 1e-12)
  H.assert_error(function() S.OneCycleLR(opt_of(0.1, "Adagrad"), { max_lr = 1, total_steps = 10 }) end,
                 "cycle_momentum needs an optimizer with momentum or betas")
end

function TestSchedulers:test_chained_and_sequential()
  local o = opt_of(0.1)
  local chain = S.ChainedScheduler({ S.ExponentialLR(o, { gamma = 0.9 }), S.StepLR(o, { step_size = 3, gamma = 0.5 }) })
  sequence(chain, o, 100, function(t) return 0.1 * 0.9 ^ t * 0.5 ^ floor(t / 3) end, 1e-9)
  o = opt_of(0.1)
  local seq = S.SequentialLR(o, { schedulers = { S.LinearLR(o, { start_factor = 0.1, total_iters = 5 }),
                                                 S.CosineAnnealingLR(o, { T_max = 20 }) }, milestones = { 5 } })
  sequence(seq, o, 100, function(t)
    if t < 5 then return 0.1 * (0.1 + 0.9 * t / 5) end
    return 0.1 * (1 + cos(pi * (t - 5) / 20)) / 2
  end, 1e-9)
  H.assert_error(function() S.SequentialLR(o, { schedulers = { S.StepLR(o, { step_size = 2 }) }, milestones = { 3 } }) end,
                 "1 schedulers need 0 milestones")
end

function TestSchedulers:test_reduce_on_plateau()
  local o = opt_of(1)
  local s = S.ReduceLROnPlateau(o, { factor = 0.5, patience = 2, threshold = 0.1, cooldown = 1, min_lr = 0.2 })
  local metrics = { 10, 9.5, 9.2, 9.1, 9.0, 8.0, 8, 8, 8, 7.5, 8, 8, 8, 8, 8, 8, 8 }
  local want = { 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.2, 0.2, 0.2, 0.2, 0.2 }
  for i, m in ipairs(metrics) do
    s:step(m)
    lu.assertEquals(o.param_groups[1].lr, want[i], "after metric " .. i)
  end
  o = opt_of(1)
  s = S.ReduceLROnPlateau(o, { mode = "max", threshold_mode = "abs", threshold = 1, patience = 0 })
  s:step(netcl.tensor(5))        -- a tensor metric is read back
  s:step(5.5)                    -- not better by 1: reduce at once (patience 0)
  lu.assertAlmostEquals(o.param_groups[1].lr, 0.1, 1e-15)
  s:step(7)
  lu.assertAlmostEquals(o.param_groups[1].lr, 0.1, 1e-15)
  H.assert_error(function() s:step("x") end, "metric must be a number")
  H.assert_error(function() S.ReduceLROnPlateau(o, { mode = "up" }) end, "mode must be 'min' or 'max'")
end

function TestSchedulers:test_state_dict_round_trip()
  local path = os.tmpname()
  local makers = {
    function(o) return S.StepLR(o, { step_size = 3 }) end,
    function(o) return S.CosineAnnealingLR(o, { T_max = 7, eta_min = 0.01 }) end,
    function(o) return S.OneCycleLR(o, { max_lr = 1, total_steps = 40 }) end,
    function(o) return S.LambdaLR(o, { lr_lambda = function(t) return 0.9 ^ t end }) end,
    function(o) return S.ReduceLROnPlateau(o, { patience = 1 }) end,
    function(o) return S.ChainedScheduler({ S.ExponentialLR(o, { gamma = 0.9 }), S.StepLR(o, { step_size = 4 }) }) end,
  }
  for _, make in ipairs(makers) do
    local o1 = opt_of(0.5, "SGD", { momentum = 0.9 })
    local s1 = make(o1)
    local function advance(s, k) if s.__name == "ReduceLROnPlateau" then s:step(1 + k % 3) else s:step() end end
    for k = 1, 10 do advance(s1, k) end
    netcl.save({ optim = o1, sched = s1 }, path)
    local ck = netcl.load(path)
    local o2 = opt_of(0.5, "SGD", { momentum = 0.9 })
    local s2 = make(o2)
    o2:load_state_dict(ck.optim)
    s2:load_state_dict(ck.sched)
    for k = 11, 20 do
      advance(s1, k); advance(s2, k)
      lu.assertEquals(o2.param_groups[1].lr, o1.param_groups[1].lr, s1.__name .. " step " .. k)
      lu.assertEquals(s2:get_last_lr(), s1:get_last_lr())
    end
  end
  os.remove(path)
end
