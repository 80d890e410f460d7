-- netcl/trainer/init.lua — netcl.Trainer, the fit loop users call directly
-- (docs/trainer.md): steps with optional mixed precision, a compiled
-- (replayed) step, gradient accumulation and clipping; a progress line;
-- per-epoch metrics in a JSON-lines log and a PNG of the curves; a
-- checkpoint each epoch that fit resumes from; callbacks and early
-- stopping. The state that decides the next epoch (model, optimizer,
-- scheduler, scaler, the global generator, the epoch, the history) is in
-- the checkpoint, so a run killed and started again ends with the
-- parameters of one that was never stopped.
local ffi = require("ffi")
local lib = require("netcl.lib")
local core = require("netcl.core")
local tensor = require("netcl.tensor")
local nn = require("netcl.nn")
local optim = require("netcl.optim")
local amp = require("netcl.amp")
local io_ = require("netcl.io")
local json = require("netcl.json")
local progress = require("netcl.trainer.progress")
local plot = require("netcl.trainer.plot")
local C, throw = lib.C, lib.throw

local M = {}
local Trainer = {}
Trainer.__index = Trainer
Trainer.__name = "Trainer"

local OPTIONS = {
  model = "table", optimizer = "table", loss = "any", scheduler = "table", scheduler_interval = "string",
  metrics = "table", device = "any", amp = "any", compile = "boolean", grad_clip = "number", accumulate = "number",
  checkpoint_dir = "string", callbacks = "table", log = "string", plot = "string", progress = "boolean", out = "any",
}
local METRICS = { accuracy = true, loss = true }

-- the device of the model's first parameter: batches go there by default
local function model_device(m)
  local p = m:parameters()[1]
  return p and p.device or nil
end

-- Trainer{model=, optimizer=, loss=, ...}: see docs/trainer.md
function M.Trainer(o)
  if type(o) ~= "table" then throw("Trainer: expected a table of options, got " .. type(o), 2) end
  for k, v in pairs(o) do
    local want = OPTIONS[k]
    if not want then throw(("Trainer: unknown option '%s'"):format(tostring(k)), 2) end
    if want ~= "any" and type(v) ~= want then throw(("Trainer: option %s must be a %s, got %s"):format(k, want, type(v)), 2) end
  end
  if not nn.is_module(o.model) then throw("Trainer: model must be an nn.Module", 2) end
  if type(o.optimizer) ~= "table" or type(o.optimizer.step) ~= "function" then throw("Trainer: optimizer is required (netcl.optim)", 2) end
  if type(o.loss) ~= "function" and not (type(o.loss) == "table" and getmetatable(o.loss) and getmetatable(o.loss).__call) then
    throw("Trainer: loss must be callable (an nn loss module or a function(output, target))", 2)
  end
  for _, m in ipairs(o.metrics or {}) do
    if not METRICS[m] then throw(("Trainer: unknown metric '%s' (accuracy, loss)"):format(tostring(m)), 2) end
  end
  local interval = o.scheduler_interval or "epoch"
  if interval ~= "epoch" and interval ~= "batch" then throw("Trainer: scheduler_interval must be 'epoch' or 'batch'", 2) end
  local accumulate = lib.integer("Trainer", "accumulate", o.accumulate or 1, 1)
  local amp_dtype = o.amp == true and "float16" or o.amp
  if amp_dtype ~= nil and amp_dtype ~= false and amp_dtype ~= "float16" and amp_dtype ~= "bfloat16" then
    throw("Trainer: amp must be true, false, 'float16' or 'bfloat16', got " .. tostring(o.amp), 2)
  end
  if amp_dtype and o.compile then
    throw("Trainer: amp with compile: the GradScaler reads its overflow flag on the host, which a compiled step cannot do", 2)
  end
  if o.compile and accumulate > 1 then throw("Trainer: compile with accumulate > 1 is not supported: the compiled step is one whole optimizer step", 2) end
  if o.grad_clip then lib.finite("Trainer", "grad_clip", o.grad_clip) end
  for k, cb in pairs(o.callbacks or {}) do
    if type(cb) ~= "function" then throw(("Trainer: callback %s must be a function, got %s"):format(tostring(k), type(cb)), 2) end
  end
  local self = setmetatable({
    model = o.model, optimizer = o.optimizer, loss_fn = o.loss, scheduler = o.scheduler, interval = interval,
    metrics = o.metrics or { "loss" }, device = o.device and core.device(o.device).name or model_device(o.model),
    amp_dtype = amp_dtype or nil,
    compile = o.compile == true, grad_clip = o.grad_clip, accumulate = accumulate, dir = o.checkpoint_dir,
    callbacks = o.callbacks or {}, out = o.out or io.stdout, progress = o.progress, history = {}, epoch = 0,
  }, Trainer)
  self.log_path = o.log or (self.dir and self.dir .. "/log.jsonl")
  self.plot_path = o.plot or (self.dir and self.dir .. "/curves.png")
  self.scaler = amp.GradScaler({ enabled = amp_dtype ~= nil and amp_dtype ~= false })
  if self.dir then os.execute(("mkdir -p '%s'"):format(self.dir:gsub("'", "'\\''"))) end
  return self
end
M.__call = M.Trainer

local function has(list, name)
  for _, v in ipairs(list) do if v == name then return true end end
  return false
end

local function to_device(self, v)
  if self.device and tensor.is_tensor(v) and v.device ~= self.device then return v:to(self.device) end
  return v
end

-- the batches of one epoch: a DataLoader, a function returning an iterator, or a list of {x, y}
local function field(v, k)
  if type(v) ~= "table" and type(v) ~= "userdata" then return nil end
  local ok, f = pcall(function() return v[k] end)
  return ok and f or nil
end

local function batches(loader, epoch)
  if field(loader, "iter") then
    if epoch and field(loader, "set_epoch") then loader:set_epoch(epoch) end
    return loader:iter()
  elseif type(loader) == "function" then
    return loader()
  elseif type(loader) == "table" then
    local i = 0
    return function()
      i = i + 1
      local b = loader[i]
      if b then return b[1], b[2] end
    end
  end
  throw("Trainer: a loader must be a DataLoader, a list of {input, target} or a function returning an iterator", 3)
end

local function count_of(loader)
  if field(loader, "num_batches") then return loader:num_batches() end
  if type(loader) == "table" then return #loader end
  return 0
end

local function call_back(self, name, ...)
  local cb = self.callbacks[name]
  if cb then return cb(self, ...) end
end

function Trainer:_forward(x, y)
  return amp.autocast(function()
    local out = self.model(x)
    return out, self.loss_fn(out, y)
  end, { enabled = self.amp_dtype ~= nil, dtype = self.amp_dtype })
end

-- one optimizer step's worth of work for batch (x, y); `last` closes an
-- accumulation group. Returns the loss and the batch's correct count
-- (device scalars).
function Trainer:_train_batch(x, y, first, last)
  if first then self.optimizer:zero_grad() end
  local out, loss = self:_forward(x, y)
  local scaled = self.accumulate > 1 and loss / self.accumulate or loss
  self.scaler:scale_loss(scaled):backward()
  if last then
    if self.grad_clip then
      if self.scaler:is_enabled() then self.scaler:unscale_grads(self.optimizer) end
      local ps = {}
      for _, g in ipairs(self.optimizer.param_groups) do for _, q in ipairs(g.params) do ps[#ps + 1] = q end end
      optim.clip_grad_norm_device(ps, self.grad_clip)
    end
    self.scaler:step(self.optimizer)
    self.scaler:update()
    if self.scheduler and self.interval == "batch" then self.scheduler:step() end
  end
  local hits = has(self.metrics, "accuracy") and core.no_grad(function() return out:argmax(2):eq(y):sum() end) or nil
  return loss:detach(), hits
end

-- With compile the first batch runs eagerly (the optimizer makes its
-- state) and the second is captured; later batches of the captured shapes
-- replay it, others (a last, short batch) run eagerly.
function Trainer:_step_fn()
  local step = function(x, y, first, last) return self:_train_batch(x, y, first, last) end
  if not self.compile then return step end
  local whole = function(x, y) return step(x, y, true, true) end   -- one batch, one optimizer step
  local eager, captured = 0, nil
  local function shapes(x, y) return table.concat(x:size(), ",") .. "|" .. table.concat(y:size(), ",") end
  return function(x, y)
    if eager < 1 then eager = eager + 1; return whole(x, y) end
    if not self.compiled then
      self.compiled = require("netcl.jit").compile(whole, x, y, { compile_options = true, warmup = 0 })
      captured = shapes(x, y)
      self.out:write(("compiled the training step: %d kernels a step, %d before fusion\n"):format(self.compiled.kernels,
        self.compiled.captured_kernels))
      return self.compiled.results[1], self.compiled.results[2]
    end
    if shapes(x, y) ~= captured then return whole(x, y) end
    return self.compiled(x, y)
  end
end

-- ---- checkpoints --------------------------------------------------------------------------

local function u64_string(v) return tostring(v):gsub("ULL$", "") end
local function u64_parse(s)
  local v = ffi.new("uint64_t", 0)
  for d in s:gmatch("%d") do v = v * 10 + tonumber(d) end
  return v
end

function Trainer:_checkpoint_path() return self.dir and self.dir .. "/last.safetensors" end

function Trainer:_save(epoch, extra)
  local path = self:_checkpoint_path()
  if not path then return end
  local state = {
    model = self.model, optimizer = self.optimizer, scaler = self.scaler:state_dict(), epoch = epoch,
    rng = { seed = u64_string(C.netcl_rng_get_seed()), offset = u64_string(C.netcl_rng_get_offset()) },
    history = self.history, stopping = extra,
  }
  if self.scheduler then state.scheduler = self.scheduler end
  io_.save(state, path)
end

-- restores the latest checkpoint; returns the epoch it ended or 0
function Trainer:_resume()
  local path = self:_checkpoint_path()
  local f = path and io.open(path, "rb")
  if not f then return 0 end
  f:close()
  local ck = io_.load(path, { device = self.device })
  self.model:load_state_dict(ck.model)
  self.optimizer:load_state_dict(ck.optimizer)
  if self.scheduler and ck.scheduler then self.scheduler:load_state_dict(ck.scheduler) end
  if ck.scaler then self.scaler:load_state_dict(ck.scaler) end
  C.netcl_rng_seed(u64_parse(ck.rng.seed))
  C.netcl_rng_set_offset(u64_parse(ck.rng.offset))
  self.history = ck.history or {}
  self.stopping = ck.stopping
  return ck.epoch or 0
end

-- ---- logs and pictures ----------------------------------------------------------------------

function Trainer:_record(row)
  self.history[#self.history + 1] = row
  if self.log_path then
    local f = io.open(self.log_path, "a")
    if f then f:write(json.encode(row), "\n"); f:close() end
  end
  if self.plot_path then plot.curves(self.history, self.plot_path) end
end

local function summary(row)
  local parts = { ("epoch %d/%d:"):format(row.epoch, row.epochs) }
  for _, k in ipairs({ "train_loss", "train_accuracy", "val_loss", "val_accuracy" }) do
    local v = row[k]
    if v then
      if k:find("accuracy") then parts[#parts + 1] = ("%s %.2f%%"):format(k:gsub("_", " "), 100 * v)
      else parts[#parts + 1] = ("%s %.4f"):format(k:gsub("_", " "), v) end
    end
  end
  parts[#parts + 1] = ("%.0f img/s  (%.1f s)"):format(row.images_per_s, row.seconds)
  return table.concat(parts, "  ")
end

-- ---- early stopping ----------------------------------------------------------------------

local function stopper(opts, has_val)
  if not opts then return nil end
  if type(opts) ~= "table" then throw("fit: early_stopping must be a table {patience=, metric=, mode=}", 3) end
  local metric = opts.metric or (has_val and "val_loss" or "train_loss")
  local mode = opts.mode or (metric:find("loss") and "min" or "max")
  if mode ~= "min" and mode ~= "max" then throw("fit: early_stopping.mode must be 'min' or 'max'", 3) end
  return { patience = lib.integer("fit", "early_stopping.patience", opts.patience or 3, 0), metric = metric, mode = mode,
           min_delta = opts.min_delta or 0 }
end

-- ---- fit, evaluate, predict ------------------------------------------------------------------

-- fit(train_loader, {epochs=, val=, early_stopping={patience=, metric=, mode=}})
-- -> the history (a list of per-epoch metric tables)
function Trainer:fit(train_loader, opts)
  opts = opts or {}
  if type(opts) ~= "table" then throw("fit: options must be a table, got " .. type(opts), 2) end
  for k in pairs(opts) do
    if k ~= "epochs" and k ~= "val" and k ~= "early_stopping" then
      throw(("fit: unknown option '%s' (epochs, val, early_stopping)"):format(tostring(k)), 2)
    end
  end
  local epochs = lib.integer("fit", "epochs", opts.epochs or 1, 1)
  local stop = stopper(opts.early_stopping, opts.val ~= nil)
  local start = self:_resume() + 1
  if start > 1 then self.out:write(("resuming after epoch %d from %s\n"):format(start - 1, self:_checkpoint_path())) end
  local st = self.stopping or { best = nil, bad = 0, stopped = false }
  if st.stopped then return self.history end
  call_back(self, "on_fit_start")
  local step = self:_step_fn()
  for epoch = start, epochs do
    self.epoch = epoch
    self.model:train()
    local bar = progress.new({ epoch = epoch, epochs = epochs, total = count_of(train_loader), out = self.out,
                               live = self.progress })
    local loss_sum, correct, seen, nb = nil, nil, 0, 0
    local t0 = progress.now()
    local it = batches(train_loader, epoch)
    local b = 0
    while true do
      local x, y = it()
      if x == nil then break end
      x, y = to_device(self, x), to_device(self, y)
      b = b + 1
      local k = (b - 1) % self.accumulate
      local loss, hits = step(x, y, k == 0, k == self.accumulate - 1)
      core.no_grad(function()
        loss_sum = loss_sum and loss_sum + loss or loss:clone()
        if hits then correct = correct and correct + hits or hits:clone() end
      end)
      local n = y:size(1)
      seen, nb = seen + n, nb + 1
      bar:step(n, function() return loss_sum:item() / nb end)
      if call_back(self, "on_batch_end", { epoch = epoch, batch = b, loss = loss, size = n }) == "stop" then break end
    end
    if self.accumulate > 1 and b % self.accumulate ~= 0 then   -- a partial group still steps
      self.scaler:step(self.optimizer)
      self.scaler:update()
    end
    bar:finish()
    if nb == 0 then throw(("fit: epoch %d had no batches"):format(epoch), 2) end
    local secs = progress.now() - t0
    local row = { epoch = epoch, epochs = epochs, train_loss = loss_sum:item() / nb, seconds = secs,
                  images_per_s = seen / math.max(secs, 1e-9), lr = self.optimizer.param_groups and self.optimizer.param_groups[1].lr }
    if correct then row.train_accuracy = correct:item() / seen end
    if opts.val then
      local v = self:evaluate(opts.val)
      row.val_loss, row.val_accuracy = v.loss, v.accuracy
    end
    if self.scheduler and self.interval == "epoch" then
      if self.scheduler.__name == "ReduceLROnPlateau" then self.scheduler:step(row.val_loss or row.train_loss)
      else self.scheduler:step() end
    end
    if stop then
      local v = row[stop.metric]
      if v == nil then throw(("fit: early_stopping metric '%s' is not measured (train_loss, val_loss, ...)"):format(stop.metric), 2) end
      local better = st.best == nil or (stop.mode == "min" and v < st.best - stop.min_delta) or (stop.mode == "max" and v > st.best + stop.min_delta)
      if better then st.best, st.bad = v, 0 else st.bad = st.bad + 1 end
      if st.bad > stop.patience then st.stopped = true end
    end
    self.out:write(summary(row), "\n")
    self.out:flush()
    self:_record(row)
    self:_save(epoch, st)
    local verdict = call_back(self, "on_epoch_end", epoch, row)
    if st.stopped then
      self.out:write(("early stopping: %s did not improve for %d epochs\n"):format(stop.metric, st.bad))
      break
    end
    if verdict == "stop" then break end
  end
  call_back(self, "on_fit_end", self.history)
  return self.history
end

-- evaluate(loader) -> {loss=, accuracy=} in eval mode, without gradients
function Trainer:evaluate(loader)
  local was = self.model.training
  self.model:eval()
  local loss_sum, correct, seen, nb = nil, nil, 0, 0
  core.no_grad(function()
    for x, y in batches(loader) do
      x, y = to_device(self, x), to_device(self, y)
      local out, loss = self:_forward(x, y)
      local n = y:size(1)
      loss_sum = loss_sum and loss_sum + loss * n or loss * n
      local c = out:argmax(2):eq(y):sum()
      correct = correct and correct + c or c
      seen, nb = seen + n, nb + 1
    end
  end)
  self.model:train(was ~= false)
  if seen == 0 then throw("evaluate: the loader gave no batches", 2) end
  local r = { loss = loss_sum:item() / seen }
  if has(self.metrics, "accuracy") then r.accuracy = correct:item() / seen end
  return r
end

-- predict(loader) -> the model's outputs for every batch, concatenated
-- along dim 1 (batches are inputs, or {input, target} pairs)
function Trainer:predict(loader)
  local was = self.model.training
  self.model:eval()
  local outs = {}
  core.no_grad(function()
    for x in batches(loader) do
      outs[#outs + 1] = amp.autocast(function() return self.model(to_device(self, x)) end,
        { enabled = self.amp_dtype ~= nil, dtype = self.amp_dtype })
    end
  end)
  self.model:train(was ~= false)
  if #outs == 0 then throw("predict: the loader gave no batches", 2) end
  return core.cat(outs, 1)
end

return setmetatable(M, M)
