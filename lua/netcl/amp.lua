-- netcl/amp.lua — mixed precision (docs/amp.md): autocast regions (the
-- policy lives in C, src/autograd/autocast.c, per thread), the GradScaler
-- (loss scaling with one fused unscale-and-check kernel per gradient
-- buffer and one host read per step), and the seed's helpers
-- (supports_fp16, maybe_cast_tensor, master_param). The optimizers keep
-- float32 master weights for float16/bfloat16 parameters on their own
-- (netcl/optim/optimizer.lua).
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local core = require("netcl.core")
local C, throw = lib.C, lib.throw
local H, is_tensor = tensor.handle, tensor.is_tensor
local DTYPE = tensor.DTYPE

local M = {}

local function check(st, what)
  if st ~= 0 then throw(what .. ": " .. ffi.string(C.netcl_last_error()), 3) end
end

local function options(who, opts, allowed) return lib.options(who, opts, allowed, 4) end

-- ---- devices ------------------------------------------------------------------------

-- True where 16-bit floats make training faster: an OpenCL GPU with
-- cl_khr_fp16 (the products run on its tensor cores). CPUs (the cpu
-- backend, PoCL) compute 16-bit floats correctly but only through
-- conversions. Never raises: an unknown device answers false.
function M.supports_fp16(device)
  local ok, answer = pcall(function()
    local name = core.device(device).name
    for _, d in ipairs(core.devices()) do
      if d.name == name then return d.type == "opencl_gpu" and d.fp16 == true end
    end
    return false
  end)
  return ok and answer or false
end

-- ---- autocast -------------------------------------------------------------------------

local HALF = { float16 = true, bfloat16 = true }
local AUTOCAST_OPTS = { enabled = true, dtype = true, device = true }

-- opts: enabled (default: supports_fp16(device)), dtype ("float16" or
-- "bfloat16"), device (default: the default device)
local function begin(who, opts)
  opts = options(who, opts, AUTOCAST_OPTS)
  local dtype = opts.dtype or "float16"
  if not HALF[dtype] then throw(("%s: dtype must be float16 or bfloat16, got %s"):format(who, tostring(dtype)), 3) end
  local enabled = opts.enabled
  if enabled == nil then enabled = M.supports_fp16(opts.device) end
  check(C.netcl_autocast_begin(enabled and 1 or 0, DTYPE[dtype]), who)
end

local function pack(...) return { n = select("#", ...), ... } end

-- Runs fn() in an autocast region and returns its results; the region ends
-- however fn ends (an error inside closes every region it opened too).
function M.autocast(fn, opts)
  if type(fn) ~= "function" then throw("autocast: expected a function, got " .. type(fn), 2) end
  local depth = C.netcl_autocast_depth()
  begin("autocast", opts)
  local r = pack(pcall(fn))
  while C.netcl_autocast_depth() > depth do C.netcl_autocast_end() end
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

function M.autocast_begin(opts) begin("autocast_begin", opts) end
function M.autocast_end() check(C.netcl_autocast_end(), "autocast_end") end
function M.is_autocast_enabled() return C.netcl_autocast_enabled() ~= 0 end
-- the dtype products take in the innermost enabled region (nil outside one)
function M.autocast_dtype()
  if C.netcl_autocast_enabled() == 0 then return nil end
  return C.netcl_autocast_dtype() == DTYPE.bfloat16 and "bfloat16" or "float16"
end

-- t cast to the region's dtype when autocast is on and t is float32; else t.
function M.maybe_cast_tensor(t)
  if not is_tensor(t) then throw("maybe_cast_tensor: expected a tensor, got " .. type(t), 2) end
  local dt = M.autocast_dtype()
  if dt and t.dtype == "float32" then return t:to(dt) end
  return t
end

-- A float32 master copy of a 16-bit parameter (detached; requires_grad as
-- p), or p itself when it is not float16/bfloat16. The optimizers keep
-- their own masters: this is for hand-written updates.
function M.master_param(p)
  if not is_tensor(p) then throw("master_param: expected a tensor, got " .. type(p), 2) end
  if not HALF[p.dtype] then return p end
  local m = core.no_grad(function() return p:detach():float() end)
  if p.requires_grad then m:requires_grad_() end
  return m
end

-- ---- GradScaler -------------------------------------------------------------------------

local GradScaler = {}
GradScaler.__index = GradScaler
GradScaler.__name = "GradScaler"
M.GradScaler = GradScaler

local SCALER_OPTS = { init_scale = true, growth_factor = true, backoff_factor = true, growth_interval = true, enabled = true }

local function positive(who, name, v, above_one)
  if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge or (above_one == true and v <= 1)
     or (above_one == false and v >= 1) then
    throw(("%s: %s must be a finite number %s, got %s"):format(who, name,
      above_one == true and "above 1" or above_one == false and "in (0, 1)" or "above 0", tostring(v)), 4)
  end
  return v
end

-- GradScaler{init_scale = 2^16, growth_factor = 2, backoff_factor = 0.5,
-- growth_interval = 2000, enabled = true}
setmetatable(GradScaler, { __call = function(cls, opts)
  opts = options("GradScaler", opts, SCALER_OPTS)
  local s = setmetatable({}, cls)
  s._scale = positive("GradScaler", "init_scale", opts.init_scale or 65536)
  s._growth_factor = positive("GradScaler", "growth_factor", opts.growth_factor or 2, true)
  s._backoff_factor = positive("GradScaler", "backoff_factor", opts.backoff_factor or 0.5, false)
  local gi = opts.growth_interval or 2000
  if type(gi) ~= "number" or gi < 1 or gi % 1 ~= 0 then
    throw("GradScaler: growth_interval must be a positive integer, got " .. tostring(gi), 2)
  end
  s._growth_interval = gi
  s._enabled = opts.enabled ~= false
  s._growth_tracker = 0
  s._stepped = setmetatable({}, { __mode = "k" })   -- optimizer -> {found = bool} since the last update
  return s
end })

function GradScaler:is_enabled() return self._enabled end
function GradScaler:get_scale() return self._enabled and self._scale or 1.0 end

-- loss * scale, a new tensor (the loss is untouched); the loss itself when disabled
function GradScaler:scale_loss(loss)
  if not is_tensor(loss) then throw("GradScaler:scale_loss: expected a tensor, got " .. type(loss), 2) end
  if not self._enabled then return loss end
  return loss * self._scale
end
GradScaler.scale = GradScaler.scale_loss   -- PyTorch's name

-- the gradients of an optimizer (its flat buffers) or of a list of parameters
local function gradients(who, what)
  if type(what) == "table" and type(what.flat_grads) == "function" then return what:flat_grads() end
  if type(what) == "table" and getmetatable(what) and type(what.parameters) == "function" then what = what:parameters() end
  if type(what) ~= "table" then throw(who .. ": expected an optimizer, a module or a list of parameters, got " .. type(what), 3) end
  local out = {}
  for i, p in ipairs(what) do
    if not is_tensor(p) then throw(("%s: parameter %d is a %s, not a tensor"):format(who, i, type(p)), 3) end
    if p.grad then out[#out + 1] = p.grad end
  end
  return out
end

-- Divides every gradient by the scale in place and reports whether any was
-- inf or NaN: one kernel per gradient buffer and one host read per device.
function GradScaler:unscale_grads(what)
  if not self._enabled then return false end
  local rec = type(what) == "table" and what.flat_grads and self._stepped[what]
  if rec and rec.unscaled then throw("GradScaler:unscale_grads: already called for this optimizer since the last update()", 2) end
  local per = {}   -- device -> {inv, found}
  for _, g in ipairs(gradients("GradScaler:unscale_grads", what)) do
    local d = per[g.device]
    if not d then
      d = { inv = core.full({}, 1 / self._scale, { device = g.device }), found = core.zeros({}, { device = g.device }) }
      per[g.device] = d
    end
    if g:is_contiguous() then
      check(C.netcl_amp_unscale_(H(g), H(d.inv), H(d.found)), "GradScaler:unscale_grads")
    else   -- a strided gradient: the same through ops
      core.no_grad(function()
        d.found:copy_(d.found:maximum(g:isfinite():logical_not():any():float()))
        g:mul_(1 / self._scale)
      end)
    end
  end
  local found = false
  for _, d in pairs(per) do found = found or d.found:item() ~= 0 end
  if type(what) == "table" and what.flat_grads then self._stepped[what] = { unscaled = true, found = found } end
  return found
end

-- Unscales the optimizer's gradients (unless unscale_grads did) and steps
-- it when they were all finite; skips the step otherwise. Returns the
-- optimizer step's result (nil when skipped).
function GradScaler:step(optimizer, ...)
  if type(optimizer) ~= "table" or type(optimizer.step) ~= "function" or type(optimizer.flat_grads) ~= "function" then
    throw("GradScaler:step: expected an optimizer, got " .. type(optimizer), 2)
  end
  if not self._enabled then return optimizer:step(...) end
  local rec = self._stepped[optimizer]
  if rec and rec.stepped then throw("GradScaler:step: already called for this optimizer since the last update()", 2) end
  if not (rec and rec.unscaled) then
    self:unscale_grads(optimizer)
    rec = self._stepped[optimizer]
  end
  rec.stepped = true
  if rec.found then return nil end
  return optimizer:step(...)
end

-- After each iteration's steps: backs the scale off when a step since the
-- last update found inf/NaN gradients, grows it after growth_interval
-- clean iterations; new_scale (a number) sets it outright.
function GradScaler:update(new_scale)
  if not self._enabled then return end
  if new_scale ~= nil then
    self._scale = positive("GradScaler:update", "new_scale", new_scale)
  else
    local found, any = false, false
    for _, rec in pairs(self._stepped) do
      any = true
      found = found or rec.found
    end
    if not any then throw("GradScaler:update: no step() or unscale_grads() since the last update()", 2) end
    if found then
      self._scale = self._scale * self._backoff_factor
      self._growth_tracker = 0
    else
      self._growth_tracker = self._growth_tracker + 1
      if self._growth_tracker == self._growth_interval then
        self._scale = self._scale * self._growth_factor
        self._growth_tracker = 0
      end
    end
  end
  self._stepped = setmetatable({}, { __mode = "k" })
end

function GradScaler:state_dict()
  if not self._enabled then return {} end
  return { scale = self._scale, growth_factor = self._growth_factor, backoff_factor = self._backoff_factor,
           growth_interval = self._growth_interval, _growth_tracker = self._growth_tracker }
end

function GradScaler:load_state_dict(sd)
  if type(sd) ~= "table" then throw("GradScaler:load_state_dict: expected a table, got " .. type(sd), 2) end
  if not self._enabled then return end
  if sd.scale == nil then throw("GradScaler:load_state_dict: the state has no scale (saved from a disabled scaler?)", 2) end
  self._scale = positive("GradScaler:load_state_dict", "scale", sd.scale)
  self._growth_factor = positive("GradScaler:load_state_dict", "growth_factor", sd.growth_factor or self._growth_factor, true)
  self._backoff_factor = positive("GradScaler:load_state_dict", "backoff_factor", sd.backoff_factor or self._backoff_factor, false)
  self._growth_interval = sd.growth_interval or self._growth_interval
  self._growth_tracker = sd._growth_tracker or 0
end

GradScaler.__tostring = function(s)
  return ("GradScaler(scale=%g, growth_tracker=%d, enabled=%s)"):format(s:get_scale(), s._growth_tracker, tostring(s._enabled))
end

return M
