-- netcl/optim/lr_scheduler.lua — learning-rate schedulers with PyTorch's
-- semantics: construction performs step 0 (sets each group's lr and
-- remembers `initial_lr`), each step() advances last_epoch by one and writes
-- group.lr, which the next optimizer step reads (host numbers only: no
-- device work). Multiplicative schedulers use PyTorch's chainable
-- (recursive) forms, so ChainedScheduler composes them; step(epoch) jumps
-- with the closed form. state_dict() holds plain values (no functions).
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local optim_base = require("netcl.optim.optimizer")
local deep_copy = optim_base.deep_copy
local throw = lib.throw

local M = {}
local pi, cos = math.pi, math.cos

local LRScheduler = {}
LRScheduler.__index = LRScheduler
LRScheduler.__name = "LRScheduler"
M.LRScheduler = LRScheduler

-- Base:extend(name) -> a class; Class(optimizer, opts) builds one through cls.init.
function LRScheduler:extend(name)
  local cls = setmetatable({}, { __index = self, __call = function(c, ...)
    local s = setmetatable({}, c)
    c.init(s, ...)
    return s
  end })
  cls.__index, cls.__name, cls.__tostring = cls, name, self.__tostring
  return cls
end

local function opts_of(who, opts)
  if opts ~= nil and type(opts) ~= "table" then throw(who .. ": options must be a table, got " .. type(opts)) end
  return opts or {}
end

local function number(who, opts, key, default, check)
  local v = opts[key]
  if v == nil then v = default end
  if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge or (check and not check(v)) then
    throw(("%s: %s must be a%s number, got %s"):format(who, key, check and " valid" or "", tostring(v)))
  end
  return v
end
local function positive(v) return v > 0 end

local function lrs_of(opt)
  local out = {}
  for i, g in ipairs(opt.param_groups) do out[i] = g.lr end
  return out
end

local function check_optimizer(who, optimizer)
  if type(optimizer) ~= "table" or type(optimizer.param_groups) ~= "table" then
    throw(who .. ": the first argument must be an optimizer, got " .. type(optimizer))
  end
end

-- Common set-up; ends with the initial step (last_epoch -1 -> 0).
function LRScheduler:setup(optimizer, last_epoch)
  check_optimizer(self.__name, optimizer)
  self.optimizer = optimizer
  last_epoch = last_epoch or -1
  for i, g in ipairs(optimizer.param_groups) do
    if last_epoch == -1 then
      if g.initial_lr == nil then g.initial_lr = g.lr end
    elseif g.initial_lr == nil then
      throw(("%s: param_groups[%d] has no initial_lr; resuming (last_epoch ~= -1) needs a scheduled optimizer"):format(self.__name, i))
    end
  end
  self.base_lrs = {}
  for i, g in ipairs(optimizer.param_groups) do self.base_lrs[i] = g.initial_lr end
  self.last_epoch = last_epoch
  self._step_count = 0
  self:step()
end

-- step() advances one epoch (chainable form); step(epoch) sets last_epoch
-- and uses the closed form where the scheduler has one.
function LRScheduler:step(epoch)
  -- a compiled step redoes this before each replay (netcl/jit.lua)
  if optim_base.recorder then optim_base.recorder(function() self:step(epoch) end) end
  self._step_count = self._step_count + 1
  local lrs
  if epoch == nil then
    self.last_epoch = self.last_epoch + 1
    lrs = self:get_lr()
  else
    self.last_epoch = epoch
    lrs = self.closed_form and self:closed_form() or self:get_lr()
  end
  for i, g in ipairs(self.optimizer.param_groups) do g.lr = lrs[i] end
  self._last_lr = lrs
end

function LRScheduler:get_last_lr() return { unpack(self._last_lr) } end

local NOT_STATE = { optimizer = true, schedulers = true, lr_lambdas = true }

function LRScheduler:state_dict()
  local out = {}
  for k, v in pairs(self) do
    if not NOT_STATE[k] and type(v) ~= "function" then
      out[k] = deep_copy(v)
    end
  end
  if self.schedulers then
    out.schedulers = {}
    for i, s in ipairs(self.schedulers) do out.schedulers[i] = s:state_dict() end
  end
  return out
end

function LRScheduler:load_state_dict(sd)
  if type(sd) ~= "table" then throw(self.__name .. ":load_state_dict: expected a table, got " .. type(sd)) end
  for k, v in pairs(sd) do
    if k == "schedulers" then
      for i, s in ipairs(self.schedulers or {}) do if v[i] then s:load_state_dict(v[i]) end end
    elseif tensor.is_tensor(v) then throw(self.__name .. ":load_state_dict: unexpected tensor under '" .. tostring(k) .. "'")
    else self[k] = deep_copy(v) end
  end
end

function LRScheduler:__tostring()
  return ("%s(last_epoch=%d, lr=%s)"):format(self.__name, self.last_epoch or -1, table.concat(self._last_lr or {}, ", "))
end

-- each group's lr times f(i, lr) (i: group index)
local function map_lrs(self, f)
  local out = {}
  for i, g in ipairs(self.optimizer.param_groups) do out[i] = f(i, g.lr) end
  return out
end
local function map_base(self, f)
  local out = {}
  for i, b in ipairs(self.base_lrs) do out[i] = f(i, b) end
  return out
end

-- ---- multiplicative and lambda schedulers ------------------------------------------------

-- lr = base * gamma^floor(epoch / step_size)
local StepLR = LRScheduler:extend("StepLR")
M.StepLR = StepLR
function StepLR:init(optimizer, opts)
  opts = opts_of("StepLR", opts)
  self.step_size = number("StepLR", opts, "step_size", nil, function(v) return v >= 1 and v == math.floor(v) end)
  self.gamma = number("StepLR", opts, "gamma", 0.1)
  self:setup(optimizer, opts.last_epoch)
end
function StepLR:get_lr()
  local e = self.last_epoch
  if e == 0 or e % self.step_size ~= 0 then return lrs_of(self.optimizer) end
  return map_lrs(self, function(_, lr) return lr * self.gamma end)
end
function StepLR:closed_form()
  return map_base(self, function(_, b) return b * self.gamma ^ math.floor(self.last_epoch / self.step_size) end)
end

-- lr = base * gamma^(number of milestones <= epoch)
local MultiStepLR = LRScheduler:extend("MultiStepLR")
M.MultiStepLR = MultiStepLR
function MultiStepLR:init(optimizer, opts)
  opts = opts_of("MultiStepLR", opts)
  if type(opts.milestones) ~= "table" then throw("MultiStepLR: milestones must be a list of epochs") end
  self.milestones = { unpack(opts.milestones) }
  table.sort(self.milestones)
  self.gamma = number("MultiStepLR", opts, "gamma", 0.1)
  self:setup(optimizer, opts.last_epoch)
end
function MultiStepLR:get_lr()
  local hits = 0
  for _, m in ipairs(self.milestones) do if m == self.last_epoch then hits = hits + 1 end end
  if hits == 0 then return lrs_of(self.optimizer) end
  return map_lrs(self, function(_, lr) return lr * self.gamma ^ hits end)
end
function MultiStepLR:closed_form()
  local passed = 0
  for _, m in ipairs(self.milestones) do if m <= self.last_epoch then passed = passed + 1 end end
  return map_base(self, function(_, b) return b * self.gamma ^ passed end)
end

-- lr = base * gamma^epoch
local ExponentialLR = LRScheduler:extend("ExponentialLR")
M.ExponentialLR = ExponentialLR
function ExponentialLR:init(optimizer, opts)
  opts = opts_of("ExponentialLR", opts)
  self.gamma = number("ExponentialLR", opts, "gamma")
  self:setup(optimizer, opts.last_epoch)
end
function ExponentialLR:get_lr()
  if self.last_epoch == 0 then return lrs_of(self.optimizer) end
  return map_lrs(self, function(_, lr) return lr * self.gamma end)
end
function ExponentialLR:closed_form()
  return map_base(self, function(_, b) return b * self.gamma ^ self.last_epoch end)
end

-- lr_lambda: one function of the epoch, or one per group
local function lambdas(who, fn, n)
  if type(fn) == "function" then
    local t = {}
    for i = 1, n do t[i] = fn end
    return t
  end
  if type(fn) ~= "table" or #fn ~= n then throw(who .. ": lr_lambda must be a function or a list of one function per parameter group") end
  for i = 1, n do if type(fn[i]) ~= "function" then throw(("%s: lr_lambda[%d] is not a function"):format(who, i)) end end
  return fn
end

-- lr = base * lr_lambda(epoch)
local LambdaLR = LRScheduler:extend("LambdaLR")
M.LambdaLR = LambdaLR
function LambdaLR:init(optimizer, opts)
  opts = opts_of(self.__name, opts)
  if type(optimizer) == "table" and type(optimizer.param_groups) == "table" then
    self.lr_lambdas = lambdas(self.__name, opts.lr_lambda, #optimizer.param_groups)
  end
  self:setup(optimizer, opts.last_epoch)
end
function LambdaLR:get_lr()
  return map_base(self, function(i, b) return b * self.lr_lambdas[i](self.last_epoch) end)
end

-- lr = lr * lr_lambda(epoch) for epoch > 0
local MultiplicativeLR = LRScheduler:extend("MultiplicativeLR")
M.MultiplicativeLR = MultiplicativeLR
MultiplicativeLR.init = LambdaLR.init
function MultiplicativeLR:get_lr()
  if self.last_epoch == 0 then return lrs_of(self.optimizer) end
  return map_lrs(self, function(i, lr) return lr * self.lr_lambdas[i](self.last_epoch) end)
end

-- factor from start_factor to end_factor linearly over total_iters epochs
local LinearLR = LRScheduler:extend("LinearLR")
M.LinearLR = LinearLR
function LinearLR:init(optimizer, opts)
  opts = opts_of("LinearLR", opts)
  self.start_factor = number("LinearLR", opts, "start_factor", 1 / 3, function(v) return v > 0 and v <= 1 end)
  self.end_factor = number("LinearLR", opts, "end_factor", 1, function(v) return v >= 0 and v <= 1 end)
  self.total_iters = number("LinearLR", opts, "total_iters", 5, positive)
  self:setup(optimizer, opts.last_epoch)
end
function LinearLR:get_lr()
  local e, s, f, n = self.last_epoch, self.start_factor, self.end_factor, self.total_iters
  if e == 0 then return map_lrs(self, function(_, lr) return lr * s end) end
  if e > n then return lrs_of(self.optimizer) end
  return map_lrs(self, function(_, lr) return lr * (1 + (f - s) / (n * s + (e - 1) * (f - s))) end)
end
function LinearLR:closed_form()
  local e, s, f, n = self.last_epoch, self.start_factor, self.end_factor, self.total_iters
  return map_base(self, function(_, b) return b * (s + (f - s) * math.min(n, e) / n) end)
end

-- ---- cosine schedules --------------------------------------------------------------------

-- lr = eta_min + (base - eta_min) (1 + cos(pi epoch / T_max)) / 2 (periodic past T_max)
local CosineAnnealingLR = LRScheduler:extend("CosineAnnealingLR")
M.CosineAnnealingLR = CosineAnnealingLR
function CosineAnnealingLR:init(optimizer, opts)
  opts = opts_of("CosineAnnealingLR", opts)
  self.T_max = number("CosineAnnealingLR", opts, "T_max", nil, positive)
  self.eta_min = number("CosineAnnealingLR", opts, "eta_min", 0)
  self:setup(optimizer, opts.last_epoch)
end
function CosineAnnealingLR:get_lr()
  local e, T, lo = self.last_epoch, self.T_max, self.eta_min
  if e == 0 then return lrs_of(self.optimizer) end
  if self._step_count == 1 and e > 0 then return self:closed_form() end
  if (e - 1 - T) % (2 * T) == 0 then
    return map_lrs(self, function(i, lr) return lr + (self.base_lrs[i] - lo) * (1 - cos(pi / T)) / 2 end)
  end
  return map_lrs(self, function(_, lr) return (1 + cos(pi * e / T)) / (1 + cos(pi * (e - 1) / T)) * (lr - lo) + lo end)
end
function CosineAnnealingLR:closed_form()
  local e, T, lo = self.last_epoch, self.T_max, self.eta_min
  return map_base(self, function(_, b) return lo + (b - lo) * (1 + cos(pi * e / T)) / 2 end)
end

-- linear warm-up from warmup_start_factor * base to base over warmup_steps,
-- then cosine down to eta_min at total_steps (eta_min after)
local WarmupCosine = LRScheduler:extend("WarmupCosine")
M.WarmupCosine = WarmupCosine
function WarmupCosine:init(optimizer, opts)
  opts = opts_of("WarmupCosine", opts)
  self.warmup_steps = number("WarmupCosine", opts, "warmup_steps", nil, function(v) return v >= 0 end)
  self.total_steps = number("WarmupCosine", opts, "total_steps", nil, function(v) return v > self.warmup_steps end)
  self.eta_min = number("WarmupCosine", opts, "eta_min", 0)
  self.warmup_start_factor = number("WarmupCosine", opts, "warmup_start_factor", 0, function(v) return v >= 0 and v <= 1 end)
  self:setup(optimizer, opts.last_epoch)
end
function WarmupCosine:closed_form()
  local t, w, n, lo, s = self.last_epoch, self.warmup_steps, self.total_steps, self.eta_min, self.warmup_start_factor
  return map_base(self, function(_, b)
    if t < w then return b * (s + (1 - s) * t / w) end
    if t >= n then return lo end
    return lo + (b - lo) * (1 + cos(pi * (t - w) / (n - w))) / 2
  end)
end
WarmupCosine.get_lr = WarmupCosine.closed_form

-- ---- one-cycle ----------------------------------------------------------------------------

local function anneal(strategy, a, b, pct)
  if strategy == "linear" then return (b - a) * pct + a end
  return b + (a - b) / 2 * (cos(pi * pct) + 1)
end

-- Smith's 1cycle: lr from max_lr / div_factor up to max_lr over pct_start of
-- total_steps, then down to initial / final_div_factor (three_phase: back
-- to the initial lr first); momentum (or Adam's beta1) cycles inversely.
local OneCycleLR = LRScheduler:extend("OneCycleLR")
M.OneCycleLR = OneCycleLR
function OneCycleLR:init(optimizer, opts)
  local who = "OneCycleLR"
  opts = opts_of(who, opts)
  check_optimizer(who, optimizer)
  local total = opts.total_steps
  if total == nil and opts.epochs and opts.steps_per_epoch then total = opts.epochs * opts.steps_per_epoch end
  if type(total) ~= "number" or total < 1 then throw(who .. ": give total_steps, or epochs and steps_per_epoch (positive numbers)") end
  self.total_steps = total
  local pct = number(who, opts, "pct_start", 0.3, function(v) return v >= 0 and v <= 1 end)
  self.anneal_strategy = opts.anneal_strategy or "cos"
  if self.anneal_strategy ~= "cos" and self.anneal_strategy ~= "linear" then throw(who .. ": anneal_strategy must be 'cos' or 'linear'") end
  if opts.three_phase then
    self.phases = { { pct * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum" },
                    { 2 * pct * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum" },
                    { total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum" } }
  else
    self.phases = { { pct * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum" },
                    { total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum" } }
  end
  local div, final_div = number(who, opts, "div_factor", 25, positive), number(who, opts, "final_div_factor", 1e4, positive)
  self.cycle_momentum = opts.cycle_momentum ~= false
  local base_m, max_m = number(who, opts, "base_momentum", 0.85), number(who, opts, "max_momentum", 0.95)
  for i, g in ipairs(optimizer.param_groups) do
    local max_lr = type(opts.max_lr) == "table" and opts.max_lr[i] or opts.max_lr
    if type(max_lr) ~= "number" then throw(who .. ": max_lr must be a number or one number per group") end
    g.initial_lr, g.max_lr = max_lr / div, max_lr
    g.min_lr = g.initial_lr / final_div
    if self.cycle_momentum then
      if g.betas == nil and g.momentum == nil then throw(who .. ": cycle_momentum needs an optimizer with momentum or betas") end
      self.use_beta1 = g.betas ~= nil
      g.max_momentum, g.base_momentum = max_m, base_m
      if self.use_beta1 then g.betas[1] = max_m else g.momentum = max_m end
    end
  end
  self:setup(optimizer, opts.last_epoch)
end
function OneCycleLR:get_lr()
  local t = self.last_epoch
  if t > self.total_steps then
    throw(("OneCycleLR: stepped %d times, but total_steps is %d"):format(t, self.total_steps))
  end
  return map_lrs(self, function(i)
    local g = self.optimizer.param_groups[i]
    local start = 0
    for k, ph in ipairs(self.phases) do
      if t <= ph[1] or k == #self.phases then
        local pct = (t - start) / (ph[1] - start)
        if self.cycle_momentum then
          local m = anneal(self.anneal_strategy, g[ph[4]], g[ph[5]], pct)
          if self.use_beta1 then g.betas[1] = m else g.momentum = m end
        end
        return anneal(self.anneal_strategy, g[ph[2]], g[ph[3]], pct)
      end
      start = ph[1]
    end
  end)
end

-- ---- on plateau ----------------------------------------------------------------------------

-- step(metric): lr *= factor (not below min_lr) once the metric has not
-- improved by more than threshold for patience steps; then waits cooldown.
local ReduceLROnPlateau = LRScheduler:extend("ReduceLROnPlateau")
M.ReduceLROnPlateau = ReduceLROnPlateau
function ReduceLROnPlateau:init(optimizer, opts)
  local who = "ReduceLROnPlateau"
  opts = opts_of(who, opts)
  check_optimizer(who, optimizer)
  self.optimizer = optimizer
  self.mode = opts.mode or "min"
  self.threshold_mode = opts.threshold_mode or "rel"
  if self.mode ~= "min" and self.mode ~= "max" then throw(who .. ": mode must be 'min' or 'max'") end
  if self.threshold_mode ~= "rel" and self.threshold_mode ~= "abs" then throw(who .. ": threshold_mode must be 'rel' or 'abs'") end
  self.factor = number(who, opts, "factor", 0.1, function(v) return v >= 0 and v < 1 end)
  self.patience = number(who, opts, "patience", 10, function(v) return v >= 0 end)
  self.threshold = number(who, opts, "threshold", 1e-4)
  self.cooldown = number(who, opts, "cooldown", 0, function(v) return v >= 0 end)
  self.eps = number(who, opts, "eps", 1e-8)
  self.min_lrs = {}
  for i in ipairs(optimizer.param_groups) do
    local m = type(opts.min_lr) == "table" and opts.min_lr[i] or opts.min_lr or 0
    if type(m) ~= "number" then throw(who .. ": min_lr must be a number or one number per group") end
    self.min_lrs[i] = m
  end
  self.best = self.mode == "min" and math.huge or -math.huge
  self.num_bad_epochs, self.cooldown_counter, self.last_epoch = 0, 0, 0
  self._last_lr = lrs_of(optimizer)
end

function ReduceLROnPlateau:is_better(a, best)
  local th = self.threshold
  if self.mode == "min" then
    return self.threshold_mode == "rel" and a < best * (1 - th) or (self.threshold_mode == "abs" and a < best - th)
  end
  return self.threshold_mode == "rel" and a > best * (th + 1) or (self.threshold_mode == "abs" and a > best + th)
end

-- metric: a number, or a one-element tensor (read back: this waits for the device)
function ReduceLROnPlateau:step(metric)
  if tensor.is_tensor(metric) then metric = metric:item() end
  if type(metric) ~= "number" then throw("ReduceLROnPlateau:step(metric): metric must be a number, got " .. type(metric)) end
  self.last_epoch = self.last_epoch + 1
  if self:is_better(metric, self.best) then
    self.best, self.num_bad_epochs = metric, 0
  else
    self.num_bad_epochs = self.num_bad_epochs + 1
  end
  if self.cooldown_counter > 0 then
    self.cooldown_counter = self.cooldown_counter - 1
    self.num_bad_epochs = 0
  end
  if self.num_bad_epochs > self.patience then
    for i, g in ipairs(self.optimizer.param_groups) do
      local new = math.max(g.lr * self.factor, self.min_lrs[i])
      if g.lr - new > self.eps then g.lr = new end
    end
    self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
  end
  self._last_lr = lrs_of(self.optimizer)
end

-- ---- composition ---------------------------------------------------------------------------

-- Steps every scheduler each step (their factors multiply: chainable forms).
local ChainedScheduler = LRScheduler:extend("ChainedScheduler")
M.ChainedScheduler = ChainedScheduler
function ChainedScheduler:init(schedulers)
  if type(schedulers) ~= "table" or #schedulers == 0 then throw("ChainedScheduler: expected a list of schedulers") end
  self.schedulers = { unpack(schedulers) }
  self.optimizer = schedulers[1].optimizer
  for i, s in ipairs(schedulers) do
    if s.optimizer ~= self.optimizer then throw(("ChainedScheduler: scheduler %d drives another optimizer"):format(i)) end
  end
  self._last_lr = lrs_of(self.optimizer)
end
function ChainedScheduler:step()
  for _, s in ipairs(self.schedulers) do s:step() end
  self._last_lr = lrs_of(self.optimizer)
end

-- schedulers[k] drives the epochs from milestones[k-1] on, restarted at 0
local SequentialLR = LRScheduler:extend("SequentialLR")
M.SequentialLR = SequentialLR
function SequentialLR:init(optimizer, opts)
  local who = "SequentialLR"
  opts = opts_of(who, opts)
  local list, ms = opts.schedulers, opts.milestones
  if type(list) ~= "table" or #list == 0 then throw(who .. ": schedulers must be a non-empty list") end
  if type(ms) ~= "table" or #ms ~= #list - 1 then
    throw(("%s: %d schedulers need %d milestones, got %s"):format(who, #list, #list - 1, type(ms) == "table" and #ms or type(ms)))
  end
  for i, s in ipairs(list) do
    if s.optimizer ~= optimizer then throw(("%s: scheduler %d drives another optimizer"):format(who, i)) end
  end
  self.optimizer, self.schedulers, self.milestones = optimizer, { unpack(list) }, { unpack(ms) }
  self.last_epoch = (opts.last_epoch or -1) + 1
  -- undo the initial steps the schedulers made, then start the first one
  for _, g in ipairs(optimizer.param_groups) do g.lr = g.initial_lr end
  for _, s in ipairs(list) do s.last_epoch = s.last_epoch - 1 end
  list[1]._step_count = 0
  list[1]:step()
  self._last_lr = list[1]:get_last_lr()
end
function SequentialLR:step()
  self.last_epoch = self.last_epoch + 1
  local idx = 1
  while idx <= #self.milestones and self.milestones[idx] <= self.last_epoch do idx = idx + 1 end
  local s = self.schedulers[idx]
  if idx > 1 and self.milestones[idx - 1] == self.last_epoch then s:step(0) else s:step() end
  self._last_lr = s:get_last_lr()
end

return M
