-- netcl/nn/module.lua — nn.Module, the base of every layer: classes
-- (Module:extend), registration of parameters, buffers and submodules by
-- assignment (PyTorch's rules: a module or an nn.Parameter assigned to a
-- field is registered, in order), traversal, train/eval, moves and casts,
-- state_dict/load_state_dict, forward hooks and the printed tree.
-- Invariants: registered things live in the instance's registries, never as
-- raw fields, so every assignment goes through __newindex; names are strings.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local core = require("netcl.core")
local lifetime = require("netcl.lifetime")
local throw, is_tensor, C = lib.throw, tensor.is_tensor, lib.C

local M = {}

-- Tensors marked by nn.Parameter (weak: a mark dies with its tensor).
local param_marks = setmetatable({}, { __mode = "k" })

-- nn.Parameter(t, requires_grad=true): marks t so that assigning it to a
-- module field registers a parameter; t must be a leaf (detach() first).
function M.Parameter(t, requires_grad)
  if not is_tensor(t) then throw("nn.Parameter: expected a tensor, got " .. type(t)) end
  if not t.is_leaf then t = t:detach() end
  if requires_grad ~= false then t:requires_grad_(true) end
  param_marks[t] = true
  return t
end
function M.is_parameter(t) return param_marks[t] == true end

-- identity of a tensor's C handle (two Lua boxes may hold one handle)
local function key_of(t) return tonumber(ffi.cast("uintptr_t", tensor.handle(t))) end
M.key_of = key_of

local Module = { __name = "Module", __is_module = true }
M.Module = Module

local function is_module(v) return type(v) == "table" and getmetatable(v) ~= nil and getmetatable(v).__is_module == true end
M.is_module = is_module

-- A ReLU fused into the module before it (Sequential, ResNet's blocks): a
-- class whose forward(x, "relu") ends in a ReLU names that forward as
-- `_relu_forward`; nn.ReLU names its own as `_plain_relu_forward`. Both
-- modules must still run those forwards (a subclass that replaced one does
-- not fuse) and have no hooks, so nothing can see the tensor in between.
local function unhooked(m) return not rawget(m, "_forward_hooks")[1] and not rawget(m, "_forward_pre_hooks")[1] end
function M.fuses_relu(m) return m._relu_forward ~= nil and m.forward == m._relu_forward and unhooked(m) end
function M.is_plain_relu(m) return m._plain_relu_forward ~= nil and m.forward == m._plain_relu_forward and unhooked(m) end

-- ---- registries -----------------------------------------------------------------

local function registry_remove(self, which, name)
  local reg, order = rawget(self, which), rawget(self, which .. "_order")
  if reg[name] == nil then return end
  reg[name] = nil
  for i = 1, #order do if order[i] == name then table.remove(order, i) break end end
end

local function registry_set(self, which, name, v)
  local reg, order = rawget(self, which), rawget(self, which .. "_order")
  if reg[name] == nil then order[#order + 1] = name end
  reg[name] = v
end

local function check_name(self, name, what)
  if type(name) == "number" then name = tostring(name) end
  if type(name) ~= "string" or name == "" or name:find(".", 1, true) then
    throw(("%s: %s name must be a non-empty string without '.', got %s"):format(self.__name, what, tostring(name)))
  end
  return name
end

function Module:register_parameter(name, t)
  name = check_name(self, name, "parameter")
  if t ~= nil and not is_tensor(t) then throw(("%s: parameter '%s' must be a tensor, got %s"):format(self.__name, name, type(t))) end
  registry_remove(self, "_buffers", name); registry_remove(self, "_modules", name)
  if t == nil then registry_remove(self, "_parameters", name) return end
  if not param_marks[t] then t = M.Parameter(t) end
  registry_set(self, "_parameters", name, t)
end

-- persistent=false keeps the buffer out of state_dict
function Module:register_buffer(name, t, persistent)
  name = check_name(self, name, "buffer")
  if t ~= nil and not is_tensor(t) then throw(("%s: buffer '%s' must be a tensor, got %s"):format(self.__name, name, type(t))) end
  registry_remove(self, "_parameters", name); registry_remove(self, "_modules", name)
  rawget(self, "_non_persistent")[name] = persistent == false or nil
  if t == nil then registry_remove(self, "_buffers", name) return end
  registry_set(self, "_buffers", name, t)
end

function Module:add_module(name, m)
  name = check_name(self, name, "module")
  if m ~= nil and not is_module(m) then throw(("%s: submodule '%s' must be an nn.Module, got %s"):format(self.__name, name, type(m))) end
  registry_remove(self, "_parameters", name); registry_remove(self, "_buffers", name)
  if m == nil then registry_remove(self, "_modules", name) return end
  registry_set(self, "_modules", name, m)
end
Module.register_module = Module.add_module

-- ---- class machinery ----------------------------------------------------------------

-- Fields: the class chain first (methods win, as in PyTorch), then the registries.
local function instance_index(self, k)
  local v = getmetatable(self)[k]
  if v ~= nil then return v end
  if type(k) == "number" then k = tostring(k) end
  v = rawget(self, "_parameters")[k]
  if v ~= nil then return v end
  v = rawget(self, "_buffers")[k]
  if v ~= nil then return v end
  return rawget(self, "_modules")[k]
end

local function instance_newindex(self, k, v)
  if is_module(v) then return self:add_module(k, v) end
  if type(k) == "string" then
    if rawget(self, "_buffers")[k] ~= nil then
      if v ~= nil and not is_tensor(v) then throw(("%s: buffer '%s' must be a tensor, got %s"):format(self.__name, k, type(v))) end
      return self:register_buffer(k, v, not rawget(self, "_non_persistent")[k])
    end
    if is_tensor(v) and (param_marks[v] or rawget(self, "_parameters")[k] ~= nil) then return self:register_parameter(k, v) end
    if v == nil and (rawget(self, "_parameters")[k] ~= nil or rawget(self, "_modules")[k] ~= nil) then
      registry_remove(self, "_parameters", k); registry_remove(self, "_modules", k)
      return
    end
  end
  rawset(self, k, v)
end

local function new_instance(cls, ...)
  local self = {
    _parameters = {}, _parameters_order = {}, _buffers = {}, _buffers_order = {}, _modules = {}, _modules_order = {},
    _non_persistent = {}, _forward_hooks = {}, _forward_pre_hooks = {}, training = true,
  }
  setmetatable(self, cls)
  self:__init(...)
  return self
end

local function class_tostring(cls) return "nn." .. cls.__name end
Module.__index = instance_index
Module.__newindex = instance_newindex
setmetatable(Module, { __call = new_instance, __tostring = class_tostring })

-- Parent:extend(name) -> a new class; Class(...) builds an instance and runs
-- its __init(...). Methods are looked up along the chain of classes.
function Module:extend(name)
  if type(name) ~= "string" then throw("Module:extend(name): the class needs a name") end
  local cls = {}
  for _, k in ipairs({ "__index", "__newindex", "__call", "__tostring", "__is_module" }) do cls[k] = rawget(Module, k) end
  -- metamethods are not inherited through __index: copy the parent's own
  for _, k in ipairs({ "__tostring", "__call" }) do if rawget(self, k) then cls[k] = rawget(self, k) end end
  cls.__name = name
  cls.__super = self
  return setmetatable(cls, { __index = self, __call = new_instance, __tostring = class_tostring })
end

function Module:__init() end

function Module:forward()
  throw(("%s: forward is not implemented (define %s:forward)"):format(self.__name, self.__name))
end

-- ---- calling and hooks ----------------------------------------------------------------

local function hook_handle(list, fn)
  if type(fn) ~= "function" then throw("a hook must be a function, got " .. type(fn)) end
  local entry = { fn = fn }
  list[#list + 1] = entry
  return { remove = function()
    for i = 1, #list do if list[i] == entry then table.remove(list, i) return end end
  end }
end

-- hook(module, inputs): may return a table of new arguments
function Module:register_forward_pre_hook(fn) return hook_handle(rawget(self, "_forward_pre_hooks"), fn) end
-- hook(module, inputs, output): may return a replacement output
function Module:register_forward_hook(fn) return hook_handle(rawget(self, "_forward_hooks"), fn) end

-- what a hook saw may be kept by it (features collected by a forward hook)
local function hooked_keep(inputs, out)
  lifetime.keep_within(inputs, 2)
  lifetime.keep_within(out, 2)
end

local function call_hooked(self, ...)
  local inputs = { n = select("#", ...), ... }
  for _, h in ipairs(rawget(self, "_forward_pre_hooks")) do
    local r = h.fn(self, inputs)
    if r ~= nil then
      if type(r) ~= "table" or is_tensor(r) then throw(self.__name .. ": a forward pre-hook must return nil or a table of arguments") end
      inputs = r
      inputs.n = inputs.n or table.maxn(r)
    end
  end
  local out = { self:forward(unpack(inputs, 1, inputs.n)) }
  for _, h in ipairs(rawget(self, "_forward_hooks")) do
    hooked_keep(inputs, out[1])
    local r = h.fn(self, inputs, out[1])
    if r ~= nil then out[1] = r end
  end
  return unpack(out, 1, math.max(1, table.maxn(out)))
end

local function run(self, ...)
  if rawget(self, "_forward_hooks")[1] or rawget(self, "_forward_pre_hooks")[1] then return call_hooked(self, ...) end
  return self:forward(...)
end

-- A call releases its intermediates when it returns (netcl.lifetime); the
-- outermost call also closes every scope when the forward fails.
local enter, leave, reset = lifetime.enter, lifetime.leave, lifetime.reset
local function nested_done(self, mark, ...)
  leave(mark, self, ...)
  return ...
end
local function outer_done(self, mark, ok, ...)
  if not ok then reset(); error((...), 0) end
  leave(mark, self, ...)
  return ...
end

Module.__call = function(self, ...)
  if not lifetime.enabled then return run(self, ...) end
  if lifetime.active() then return nested_done(self, enter(), run(self, ...)) end
  return outer_done(self, enter(), pcall(run, self, ...))
end

-- ---- traversal ------------------------------------------------------------------------

-- stateful iterator over a list of {name, value} pairs
local function pairs_iter(list)
  local i = 0
  return function()
    i = i + 1
    local e = list[i]
    if e then return e[1], e[2] end
  end
end

local function join(prefix, name) return prefix == "" and name or prefix .. "." .. name end

-- {{name, module}, ...} of self and every descendant, depth first, each module once
local function collect_modules(self, prefix, out, seen)
  if seen[self] then return out end
  seen[self] = true
  out[#out + 1] = { prefix, self }
  for _, name in ipairs(rawget(self, "_modules_order")) do
    collect_modules(rawget(self, "_modules")[name], join(prefix, name), out, seen)
  end
  return out
end

local function named(self, which, prefix, recurse, dedup)
  local out, seen = {}, {}
  local mods = recurse == false and { { prefix or "", self } } or collect_modules(self, prefix or "", {}, {})
  for _, e in ipairs(mods) do
    local m = e[2]
    for _, name in ipairs(rawget(m, which .. "_order")) do
      local t = rawget(m, which)[name]
      local key = dedup and key_of(t)
      if not (key and seen[key]) then
        if key then seen[key] = true end
        out[#out + 1] = { join(e[1], name), t }
      end
    end
  end
  return out
end

-- for name, p in m:named_parameters() do ... end (each tensor once, in registration order)
function Module:named_parameters(prefix, recurse) return pairs_iter(named(self, "_parameters", prefix, recurse, true)) end
function Module:named_buffers(prefix, recurse) return pairs_iter(named(self, "_buffers", prefix, recurse, true)) end

local function values_of(list)
  local out = {}
  for i, e in ipairs(list) do out[i] = e[2] end
  return out
end
function Module:parameters(recurse) return values_of(named(self, "_parameters", "", recurse, true)) end
function Module:buffers(recurse) return values_of(named(self, "_buffers", "", recurse, true)) end

function Module:named_children()
  local out = {}
  for _, name in ipairs(rawget(self, "_modules_order")) do out[#out + 1] = { name, rawget(self, "_modules")[name] } end
  return pairs_iter(out)
end
function Module:children()
  local out = {}
  for _, name in ipairs(rawget(self, "_modules_order")) do out[#out + 1] = rawget(self, "_modules")[name] end
  return out
end
function Module:named_modules(prefix) return pairs_iter(collect_modules(self, prefix or "", {}, {})) end
function Module:modules() return values_of(collect_modules(self, "", {}, {})) end

-- number of parameter elements (trainable_only: those that require grad)
function Module:count_parameters(trainable_only)
  local n = 0
  for _, p in ipairs(self:parameters()) do
    if not trainable_only or p.requires_grad then n = n + p:numel() end
  end
  return n
end

-- fn(module) on every submodule (children first), then on self
function Module:apply(fn)
  if type(fn) ~= "function" then throw("apply: expected a function, got " .. type(fn)) end
  for _, child in ipairs(self:children()) do child:apply(fn) end
  fn(self)
  return self
end

function Module:train(mode)
  mode = mode ~= false
  for _, m in ipairs(self:modules()) do rawset(m, "training", mode) end
  return self
end
function Module:eval() return self:train(false) end

function Module:requires_grad_(flag)
  for _, p in ipairs(self:parameters()) do p:requires_grad_(flag ~= false) end
  return self
end

-- Zeroes every parameter's gradient in place (keeps an optimizer's flat
-- gradient views attached); set_to_none = true drops the gradients instead.
function Module:zero_grad(set_to_none)
  for _, p in ipairs(self:parameters()) do
    if set_to_none then p.grad = nil
    else
      local g = p.grad
      if g then core.no_grad(g.zero_, g) end
    end
  end
  return self
end

-- ---- moves and casts ------------------------------------------------------------------

local FLOAT = { float32 = true, float16 = true, bfloat16 = true, float64 = true }

-- (device name | device object | dtype name | {device=, dtype=}) -> device name, dtype name
local function parse_target(a, b)
  local dev, dt
  if type(a) == "table" and not a.handle then dev, dt = a.device, a.dtype
  elseif type(a) == "string" and C.netcl_dtype_from_name(a) ~= C.NETCL_DTYPE_COUNT then dt = a
  elseif a ~= nil then dev = a end
  if type(b) == "string" then dt = b end
  if dev ~= nil then dev = core.device(dev).name end
  if dt ~= nil then
    local code = C.netcl_dtype_from_name(tostring(dt))
    if code == C.NETCL_DTYPE_COUNT then throw("Module:to: unknown dtype '" .. tostring(dt) .. "'") end
    dt = tensor.DTYPES[tonumber(code)]
    if not FLOAT[dt] then throw("Module:to: modules cast to float dtypes only (float32, float16, bfloat16, float64), got " .. dt) end
  end
  return dev, dt
end

-- A device move keeps each tensor's identity (t:set_ rebinds its storage,
-- so optimizers and other holders see the moved data); a dtype cast makes
-- new tensors (create optimizers after casting). Integer buffers keep their dtype.
local function move(m, which, dev, dt, cast_cache)
  local reg = rawget(m, which)
  for _, name in ipairs(rawget(m, which .. "_order")) do
    local t = reg[name]
    if dev and t.device ~= dev then
      local g = t.grad
      t:set_(t:detach():to(dev))
      if g then t.grad = g:to(dev) end
    end
    if dt and FLOAT[t.dtype] and t.dtype ~= dt then
      local k = key_of(t)
      local nt = cast_cache[k]
      if not nt then
        nt = t:detach():to(dt)
        if which == "_parameters" then nt = M.Parameter(nt, t.requires_grad) end
        local g = t.grad
        if g then nt.grad = g:to(dt) end
        cast_cache[k] = nt
      end
      reg[name] = nt
    end
  end
end

-- to(device) / to(dtype) / to({device=, dtype=}) / to(device, dtype); returns self
function Module:to(a, b)
  local dev, dt = parse_target(a, b)
  local cache = {}
  core.no_grad(function()
    for _, m in ipairs(self:modules()) do
      move(m, "_parameters", dev, dt, cache)
      move(m, "_buffers", dev, dt, cache)
    end
  end)
  return self
end
function Module:cpu() return self:to("cpu") end
function Module:float() return self:to("float32") end
function Module:double() return self:to("float64") end
function Module:half() return self:to("float16") end

-- ---- state ---------------------------------------------------------------------------

-- name -> tensor for parameters and persistent buffers (a shared submodule
-- appears under each of its names, as in PyTorch)
local function state_into(m, prefix, out, detach)
  local params, bufs, np = rawget(m, "_parameters"), rawget(m, "_buffers"), rawget(m, "_non_persistent")
  for _, name in ipairs(rawget(m, "_parameters_order")) do
    out[prefix .. name] = detach and params[name]:detach() or params[name]
  end
  for _, name in ipairs(rawget(m, "_buffers_order")) do
    if not np[name] then out[prefix .. name] = detach and bufs[name]:detach() or bufs[name] end
  end
  for _, name in ipairs(rawget(m, "_modules_order")) do
    state_into(rawget(m, "_modules")[name], prefix .. name .. ".", out, detach)
  end
  return out
end

-- name -> tensor (detached, sharing storage with the module: clone to keep a snapshot)
function Module:state_dict(prefix) return state_into(self, prefix or "", {}, true) end

local function shape_str(t) return "[" .. table.concat(t:size(), ", ") .. "]" end
local function same_shape(a, b)
  local sa, sb = a:size(), b:size()
  if #sa ~= #sb then return false end
  for i = 1, #sa do if sa[i] ~= sb[i] then return false end end
  return true
end

local function list_line(what, list)
  if #list == 0 then return nil end
  return ("  %s (%d): %s"):format(what, #list, table.concat(list, ", "))
end

-- Copies sd's entries into the parameters and buffers (any device and
-- dtype; shapes must match). strict (default): missing or unexpected keys
-- are an error too. Nothing is copied when it raises. Returns
-- {missing_keys =, unexpected_keys =, mismatched_keys =}.
function Module:load_state_dict(sd, strict)
  if type(sd) ~= "table" or is_tensor(sd) then throw("load_state_dict: expected a table name -> tensor, got " .. type(sd)) end
  strict = strict ~= false
  local own = state_into(self, "", {}, false)
  local missing, unexpected, mismatched = {}, {}, {}
  for name, t in pairs(own) do
    local v = sd[name]
    if v == nil then missing[#missing + 1] = name
    elseif not is_tensor(v) then mismatched[#mismatched + 1] = ("%s: a %s where a tensor %s was expected"):format(name, type(v), shape_str(t))
    elseif not same_shape(t, v) then
      mismatched[#mismatched + 1] = ("%s: checkpoint %s, model %s"):format(name, shape_str(v), shape_str(t))
    end
  end
  for name in pairs(sd) do if own[name] == nil then unexpected[#unexpected + 1] = tostring(name) end end
  table.sort(missing); table.sort(unexpected); table.sort(mismatched)
  local report = { missing_keys = missing, unexpected_keys = unexpected, mismatched_keys = mismatched }
  if #mismatched > 0 or (strict and (#missing > 0 or #unexpected > 0)) then
    local lines = { "load_state_dict: cannot load the state into " .. self.__name .. " (nothing was copied):" }
    for _, l in ipairs({ list_line("missing keys", missing), list_line("unexpected keys", unexpected),
                         list_line("shape mismatches", mismatched) }) do lines[#lines + 1] = l end
    if #mismatched == 0 then lines[#lines + 1] = "  (load_state_dict(sd, false) loads the matching entries and returns this report)" end
    throw(table.concat(lines, "\n"))
  end
  core.no_grad(function()
    for name, t in pairs(own) do
      local v = sd[name]
      if v ~= nil then t:copy_(v) end
    end
  end)
  return report
end

-- ---- printing ---------------------------------------------------------------------------

function Module:extra_repr() return "" end

local function count_str(n)
  local s = tostring(n)
  while true do
    local r, k = s:gsub("^(%d+)(%d%d%d)", "%1,%2")
    s = r
    if k == 0 then return s end
  end
end

local function tree(m, indent)
  local n = Module.count_parameters(m)
  local note = n > 0 and ("  # " .. count_str(n) .. " params") or ""
  local head = m.__name .. "(" .. m:extra_repr()
  local kids = rawget(m, "_modules_order")
  if #kids == 0 then return head .. ")" .. note end
  local lines = { head .. note }
  for _, name in ipairs(kids) do
    lines[#lines + 1] = indent .. "  (" .. name .. "): " .. tree(rawget(m, "_modules")[name], indent .. "  ")
  end
  lines[#lines + 1] = indent .. ")"
  return table.concat(lines, "\n")
end

Module.__tostring = function(self) return tree(self, "") end

return M
