-- netcl/optim/optimizer.lua — the Optimizer base: parameter groups with
-- per-group options, and Torch7-style flat buffers. Each group's trainable
-- parameters are split by (device, dtype) into buckets; a bucket owns one
-- contiguous parameter buffer, one gradient buffer and flat state buffers,
-- every parameter is rebound into its slice with t:set_() and its .grad is a
-- view of the gradient buffer (backward adds into it in place). A step is
-- then one fused kernel per bucket (netcl_optim_step), zero_grad one fill.
-- Invariants checked before each step, host-side only (no device sync): a
-- parameter still lives at its slice (else the group is flattened anew, e.g.
-- after Module:to), and its .grad is still the slice view (else the foreign
-- gradient is copied in, or the slice zeroed when .grad was cleared).
-- float16 and bfloat16 buckets keep float32 master weights (state
-- "master", saved with the rest): the kernel updates them with float32
-- copies of the gradients and float32 states, and the parameters take
-- their rounding after each step.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local module = require("netcl.nn.module")
local core = require("netcl.core")
local autograd = require("netcl.autograd")
local C, throw, check, is_tensor, H = lib.C, lib.throw, lib.check, tensor.is_tensor, tensor.handle

local M = {}
local ALIGN = 16   -- elements: each slice starts 64-byte aligned for float32

local Optimizer = {}
Optimizer.__index = Optimizer
Optimizer.__name = "Optimizer"
M.Optimizer = Optimizer

local function deep_copy(v)
  if type(v) ~= "table" or is_tensor(v) then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = deep_copy(x) end
  return out
end
M.deep_copy = deep_copy

local FLOAT = { float32 = true, float16 = true, bfloat16 = true, float64 = true }
local HALF = { float16 = true, bfloat16 = true }   -- buckets updated through float32 master weights

-- ---- flat buckets -------------------------------------------------------------------

local function align(n) return math.ceil(n / ALIGN) * ALIGN end

-- The slice of flat buffer `flat` that holds parameter i of bucket b, viewed in its shape.
local function slot(b, flat, i)
  return flat:narrow(1, b.offsets[i] + 1, b.numels[i]):view(b.shapes[i])
end

-- Copies each parameter (and any gradient it has) into fresh flat buffers
-- and rebinds it there.
local function flatten(b)
  local off = 0
  b.offsets, b.numels, b.shapes = {}, {}, {}
  for i, p in ipairs(b.params) do
    b.offsets[i], b.numels[i], b.shapes[i] = off, p:numel(), p:size()
    off = off + align(p:numel())
  end
  local opts = { device = b.device, dtype = b.dtype }
  b.n = off
  b.flat, b.grad = core.zeros(off, opts), core.zeros(off, opts)
  b.flat_h, b.grad_h = H(b.flat), H(b.grad)
  b.state, b.state_h, b.live = {}, {}, {}
  core.no_grad(function()
    for i, p in ipairs(b.params) do
      local ps, gs = slot(b, b.flat, i), slot(b, b.grad, i)
      ps:copy_(p)
      local g = p.grad
      if g then gs:copy_(g) end
      p:set_(ps)
      p.grad = gs
    end
  end)
  b.kflat_h, b.kgrad_h = b.flat_h, b.grad_h
  if HALF[b.dtype] then   -- float32 master weights: the kernel updates them, the parameters get their rounding
    b.master_grad = core.zeros(off, { device = b.device, dtype = "float32" })
    b.state.master = core.no_grad(function() return b.flat:float() end)
    b.state_h.master = H(b.state.master)
    C.netcl_tensor_set_memory_owner(b.state_h.master, C.NETCL_MEM_OPTIMIZER)
    C.netcl_tensor_set_memory_owner(H(b.master_grad), C.NETCL_MEM_OPTIMIZER)
    b.live.master = true
    b.kflat_h, b.kgrad_h = b.state_h.master, H(b.master_grad)
    b.master_version = C.netcl_tensor_version(b.flat_h)
  end
end

-- Before a half bucket's update: the master takes parameters written since
-- the last step (a load, an in-place edit), the float32 gradient buffer the
-- gradients; after it the parameters take the master's rounding.
local function master_in(b)
  if C.netcl_tensor_version(b.flat_h) ~= b.master_version then b.state.master:copy_(b.flat) end
  b.master_grad:copy_(b.grad)
end

local function master_out(b)
  b.flat:copy_(b.state.master)
  b.master_version = C.netcl_tensor_version(b.flat_h)
end

-- Buckets of a group's trainable parameters, keyed by device and dtype.
local function build_buckets(params)
  local list, by_key = {}, {}
  for i, p in ipairs(params) do
    if p.requires_grad then
      local key = p.device .. "/" .. p.dtype
      local b = by_key[key]
      if not b then
        b = { device = p.device, dtype = p.dtype, params = {}, index = {} }
        by_key[key] = b
        list[#list + 1] = b
      end
      b.params[#b.params + 1] = p
      b.index[#b.index + 1] = i
    end
  end
  for _, b in ipairs(list) do flatten(b) end
  return list
end

-- Puts parameter i's gradient view back (copying a foreign gradient in,
-- or zeroing the slice when there is none, if copy_foreign).
local function reattach(b, i, copy_foreign)
  local p = b.params[i]
  core.no_grad(function()
    local gs, cur = slot(b, b.grad, i), p.grad
    if copy_foreign then
      if cur then gs:copy_(cur) else gs:zero_() end
    end
    p.grad = gs
  end)
end

-- Host-side check of every parameter of a bucket (see the header). Returns
-- false when a parameter left its slice. (No closure in this loop: it runs
-- every step and must stay JIT-compiled.)
local function attach(b, copy_foreign)
  local fh, gh = b.flat_h, b.grad_h
  local params, offsets = b.params, b.offsets
  for i = 1, #params do
    local ph = H(params[i])
    local off = offsets[i]
    if C.netcl_tensor_same_storage(ph, fh) == 0 or tonumber(C.netcl_tensor_offset(ph)) ~= off then return false end
    local g = C.netcl_tensor_grad(ph)
    local ok = g ~= nil and C.netcl_tensor_same_storage(g, gh) ~= 0 and tonumber(C.netcl_tensor_offset(g)) == off
    if g ~= nil then C.netcl_tensor_release(g) end
    if not ok then reattach(b, i, copy_foreign) end
  end
  return true
end

-- ---- construction --------------------------------------------------------------------

-- Optimizer:extend(name) -> a class; Class(params, opts) builds one. A class
-- sets DEFAULTS, STATES (its per-parameter state names), validate(group)
-- and update(group, bucket, step).
function Optimizer:extend(name)
  local cls = setmetatable({}, { __index = self, __call = function(c, ...) return c.new(c, ...) end })
  cls.__index = cls
  cls.__name = name
  cls.__tostring = self.__tostring
  return cls
end

-- params: a Module, a list of tensors, one tensor, or a list of groups
-- {{params = {...}, lr = ...}, ...}
local function normalize(who, params)
  if module.is_module(params) then return { { params = params:parameters() } } end
  if is_tensor(params) then return { { params = { params } } } end
  if type(params) ~= "table" then throw(who .. ": params must be a Module, a list of tensors or a list of groups, got " .. type(params)) end
  if params[1] == nil then throw(who .. ": got an empty parameter list") end
  if is_tensor(params[1]) then return { { params = params } } end
  return params
end

function Optimizer.new(cls, params, opts)
  local who = cls.__name
  if opts ~= nil and type(opts) ~= "table" then throw(who .. ": options must be a table, got " .. type(opts)) end
  opts = opts or {}
  local self = setmetatable({ defaults = {}, param_groups = {}, _groups = {}, _seen = {} }, cls)
  for k in pairs(opts) do
    if cls.DEFAULTS[k] == nil then
      local names = {}
      for n in pairs(cls.DEFAULTS) do names[#names + 1] = n end
      table.sort(names)
      throw(("%s: unknown option '%s' (options: %s)"):format(who, tostring(k), table.concat(names, ", ")))
    end
  end
  for k, v in pairs(cls.DEFAULTS) do
    if opts[k] ~= nil then v = opts[k] end
    self.defaults[k] = deep_copy(v)
  end
  for _, g in ipairs(normalize(who, params)) do self:add_param_group(g) end
  return self
end

function Optimizer:add_param_group(group)
  local who = self.__name
  if type(group) ~= "table" or is_tensor(group) then throw(who .. ": a parameter group must be a table {params = ...}") end
  local ps = group.params
  if module.is_module(ps) then ps = ps:parameters() end
  if is_tensor(ps) then ps = { ps } end
  if type(ps) ~= "table" then throw(who .. ": a parameter group needs params (a list of tensors)") end
  local g = { params = {} }
  for i, p in ipairs(ps) do
    if not is_tensor(p) then throw(("%s: parameter %d of group %d is a %s, not a tensor"):format(who, i, #self.param_groups + 1, type(p))) end
    if not FLOAT[p.dtype] or not p.is_leaf then
      throw(("%s: parameter %d of group %d must be a float leaf tensor, got %s%s"):format(
        who, i, #self.param_groups + 1, p.dtype, p.is_leaf and "" or " (not a leaf)"))
    end
    local key = module.key_of(p)
    if self._seen[key] then throw(("%s: parameter %d of group %d appears more than once in the optimizer"):format(who, i, #self.param_groups + 1)) end
    self._seen[key] = true
    g.params[i] = p
  end
  for k, v in pairs(group) do if k ~= "params" then g[k] = deep_copy(v) end end
  for k, v in pairs(self.defaults) do if g[k] == nil then g[k] = deep_copy(v) end end
  -- every numeric option is finite (an lr of NaN or inf trains nothing, silently)
  for k, v in pairs(g) do
    if type(v) == "number" and (v ~= v or v == math.huge or v == -math.huge) then
      throw(("%s: option %s must be a finite number, got %s"):format(who, tostring(k), tostring(v)))
    end
  end
  self:validate(g)
  self.param_groups[#self.param_groups + 1] = g
  self._groups[#self._groups + 1] = { step = 0, buckets = build_buckets(g.params) }
end

function Optimizer:validate() end

-- ---- per-step work ---------------------------------------------------------------------

-- Per-parameter state of group gi as {[position] = {step =, name = view}}.
local function export_group(self, gi)
  local gs, out = self._groups[gi], {}
  if gs.step == 0 then return out end
  for _, b in ipairs(gs.buckets) do
    for i, pos in ipairs(b.index) do
      local st = { step = gs.step }
      for name, flat in pairs(b.state) do
        if b.live[name] then st[name] = slot(b, flat, i):detach() end
      end
      out[pos] = st
    end
  end
  return out
end

local function state_buffer(b, name, fill)
  local t = b.state[name]
  if not t then
    t = core.full({ b.n }, fill or 0, { device = b.device, dtype = HALF[b.dtype] and "float32" or b.dtype })
    b.state[name], b.state_h[name] = t, H(t)
    C.netcl_tensor_set_memory_owner(b.state_h[name], C.NETCL_MEM_OPTIMIZER)
  end
  return t
end
M.state_buffer = state_buffer

-- Writes exported per-parameter state back into the buckets (any device/dtype).
local function import_group(self, gi, states, step)
  local gs = self._groups[gi]
  gs.step = step
  core.no_grad(function()
    for _, b in ipairs(gs.buckets) do
      for i, pos in ipairs(b.index) do
        for name, t in pairs(states[pos] or {}) do
          if name ~= "step" then
            slot(b, state_buffer(b, name, self.STATE_FILL and self.STATE_FILL[name]), i):copy_(t)
            b.live[name] = true
          end
        end
      end
    end
  end)
end

-- Makes group gi's buckets current: re-flattens when a parameter moved
-- (its state travels along), re-attaches replaced gradients.
local function sync(self, gi, copy_foreign)
  local gs = self._groups[gi]
  for _, b in ipairs(gs.buckets) do
    if not attach(b, copy_foreign) then
      local saved = export_group(self, gi)
      gs.buckets = build_buckets(self.param_groups[gi].params)
      import_group(self, gi, saved, gs.step)
      for _, nb in ipairs(gs.buckets) do attach(nb, copy_foreign) end
      return
    end
  end
end

-- Runs closure (with grad mode on) first when given; returns its result.
function Optimizer:step(closure)
  local loss
  if M.recorder then M.recorder(function() self:step() end) end   -- a capture notes the host work to redo (netcl/jit.lua)
  if closure ~= nil and type(closure) ~= "function" then
    throw(("%s:step: the closure must be a function returning the loss, got %s"):format(self.__name, type(closure)))
  end
  if closure ~= nil then loss = autograd.with_grad_mode(true, closure) end
  for gi, group in ipairs(self.param_groups) do
    sync(self, gi, true)
    local gs = self._groups[gi]
    gs.step = gs.step + 1
    for _, b in ipairs(gs.buckets) do
      if b.n > 0 then
        -- (a replay's redo only collects launches: the copies are in the program)
        if b.master_grad and not M.collector then core.no_grad(master_in, b) end
        self:update(group, b, gs.step)
        if b.master_grad and not M.collector then core.no_grad(master_out, b) end
      end
    end
  end
  return loss
end

-- One fill per flat gradient buffer; every .grad stays a view into it.
function Optimizer:zero_grad()
  for gi in ipairs(self.param_groups) do
    sync(self, gi, false)
    for _, b in ipairs(self._groups[gi].buckets) do b.grad:zero_() end
  end
end

-- field `key` of every bucket, after syncing each group
local function bucket_buffers(self, key)
  local out = {}
  for gi in ipairs(self.param_groups) do
    sync(self, gi, true)
    for _, b in ipairs(self._groups[gi].buckets) do out[#out + 1] = b[key] end
  end
  return out
end

-- The flat gradient buffers (current), for clipping and all-reduce.
function Optimizer:flat_grads() return bucket_buffers(self, "grad") end

-- The flat parameter buffers (current).
function Optimizer:flat_params() return bucket_buffers(self, "flat") end

-- The state buffer `name` of bucket b, set to `fill` the first time a step
-- uses it (and after a load that did not provide it).
function M.live_state(b, name, fill)
  local t = state_buffer(b, name, fill)
  if not b.live[name] then
    t:fill_(fill or 0)
    b.live[name] = true
  end
  return t
end

-- the kernel's kinds and flags by name (netcl_optim_kind, netcl_optim_flag:
-- kinds sgd, adam, rmsprop, adagrad; flags nesterov, amsgrad, centered,
-- maximize, first_step, added together)
M.KIND = lib.enum("netcl_optim_kind", "NETCL_OPTIM_", { "kind_end" })
M.FLAG = lib.enum("netcl_optim_flag", "NETCL_OPTIM_")

-- Calls the fused kernel: states s1..s3 by name (nil when absent).
local NHYPER = C.NETCL_OPTIM_NHYPER
local LR, WD, BETA1, BETA2 = C.NETCL_OPTIM_LR, C.NETCL_OPTIM_WEIGHT_DECAY, C.NETCL_OPTIM_BETA1, C.NETCL_OPTIM_BETA2
local EPS, BC2, SCALE = C.NETCL_OPTIM_EPS, C.NETCL_OPTIM_BC2_SQRT, C.NETCL_OPTIM_PARAM_SCALE
local hyper = ffi.new("double[?]", NHYPER)
-- With M.collector set (a replay of a captured step, netcl/jit.lua), a
-- launch only appends its hyper-parameters to it.
function M.launch(kind, flags, b, lr, wd, beta1, beta2, eps, bc2, scale, s1, s2, s3)
  hyper[LR], hyper[WD], hyper[BETA1], hyper[BETA2], hyper[EPS], hyper[BC2], hyper[SCALE] = lr, wd, beta1, beta2, eps, bc2, scale
  if M.collector then
    local h = ffi.new("double[?]", NHYPER)
    ffi.copy(h, hyper, ffi.sizeof(h))
    M.collector[#M.collector + 1] = h
    return
  end
  local sh = b.state_h
  check(C.netcl_optim_step(kind, flags, b.kflat_h, b.kgrad_h, s1 and sh[s1] or nil, s2 and sh[s2] or nil,
                           s3 and sh[s3] or nil, hyper, NHYPER))
end

-- ---- state ---------------------------------------------------------------------------

-- PyTorch's layout: {state = {[i] = {step =, <name> = tensor}}, param_groups =
-- {{<options>, params = {i, ...}}}} with i numbering all parameters from 1.
-- State tensors are views of the live flat buffers: save (or clone) them
-- before the next step.
function Optimizer:state_dict()
  local state, groups, index = {}, {}, 0
  for gi, group in ipairs(self.param_groups) do
    sync(self, gi, true)
    local per = export_group(self, gi)
    local g = { params = {} }
    for k, v in pairs(group) do if k ~= "params" then g[k] = deep_copy(v) end end
    for pos in ipairs(group.params) do
      index = index + 1
      g.params[pos] = index
      if per[pos] then state[index] = per[pos] end
    end
    groups[gi] = g
  end
  return { state = state, param_groups = groups }
end

local function shape_str(t) return "[" .. table.concat(t:size(), ", ") .. "]" end

-- Checks a loaded state against group gi; returns {[position] = state}.
local function check_group_state(self, gi, lg, state)
  local who, group = self.__name .. ":load_state_dict", self.param_groups[gi]
  if type(lg) ~= "table" or type(lg.params) ~= "table" then throw(("%s: param_groups[%d] has no params list"):format(who, gi)) end
  if #lg.params ~= #group.params then
    throw(("%s: param_groups[%d] holds %d parameters, this optimizer's group %d holds %d"):format(who, gi, #lg.params, gi, #group.params))
  end
  local known, out = {}, {}
  for _, n in ipairs(self.STATES) do known[n] = true end
  for pos, idx in ipairs(lg.params) do
    local st = state[idx] or state[tostring(idx)]
    if st ~= nil then
      if type(st) ~= "table" then throw(("%s: state of parameter %s is a %s, not a table"):format(who, tostring(idx), type(st))) end
      local p = group.params[pos]
      local names = {}
      for name in pairs(st) do names[#names + 1] = tostring(name) end
      table.sort(names)   -- the first problem reported is the same every run
      for _, name in ipairs(names) do
        local t = st[name]
        if name == "step" then
          if not (type(t) == "number" or is_tensor(t)) then throw(("%s: step of parameter %s must be a number"):format(who, tostring(idx))) end
        elseif not known[name] then
          throw(("%s: '%s' (parameter %s) is not a state of %s (its states: %s)"):format(
            who, tostring(name), tostring(idx), self.__name, table.concat(self.STATES, ", ")))
        elseif not is_tensor(t) or t:numel() ~= p:numel() then
          throw(("%s: %s of parameter %s is %s, the parameter is %s"):format(
            who, name, tostring(idx), is_tensor(t) and shape_str(t) or type(t), shape_str(p)))
        end
      end
      out[pos] = st
    end
  end
  return out
end

-- Restores options and state from state_dict() output (also after
-- netcl.save/netcl.load): every group's hyper-parameters, step counts and
-- state buffers. Checked completely before anything changes.
function Optimizer:load_state_dict(sd)
  local who = self.__name .. ":load_state_dict"
  if type(sd) ~= "table" or type(sd.param_groups) ~= "table" then throw(who .. ": expected {state =, param_groups =}") end
  local state = sd.state or {}
  if #sd.param_groups ~= #self.param_groups then
    throw(("%s: the state has %d parameter groups, this optimizer has %d"):format(who, #sd.param_groups, #self.param_groups))
  end
  local checked = {}
  for gi, lg in ipairs(sd.param_groups) do checked[gi] = check_group_state(self, gi, lg, state) end
  for gi, lg in ipairs(sd.param_groups) do
    local group = self.param_groups[gi]
    for k, v in pairs(lg) do if k ~= "params" then group[k] = deep_copy(v) end end
    sync(self, gi, true)
    local step = 0
    for _, st in pairs(checked[gi]) do
      local s = is_tensor(st.step) and st.step:item() or st.step or 0
      if s > step then step = s end
    end
    for _, b in ipairs(self._groups[gi].buckets) do b.live = {} end
    import_group(self, gi, checked[gi], step)
  end
end

function Optimizer:__tostring()
  local lines, nparams, nbuf = {}, 0, 0
  for gi, group in ipairs(self.param_groups) do
    local opts = {}
    for k, v in pairs(group) do
      if k ~= "params" then
        opts[#opts + 1] = k .. "=" .. (type(v) == "table" and ("{" .. table.concat(v, ", ") .. "}") or tostring(v))
      end
    end
    table.sort(opts)
    for _, p in ipairs(group.params) do nparams = nparams + p:numel() end
    nbuf = nbuf + #self._groups[gi].buckets
    lines[#lines + 1] = ("  group %d: %d tensors, %s"):format(gi, #group.params, table.concat(opts, ", "))
  end
  return ("%s (%d parameters, %d flat buffers)\n%s"):format(self.__name, nparams, nbuf, table.concat(lines, "\n"))
end

return M
