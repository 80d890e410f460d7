-- netcl/optim/clip.lua — gradient clipping. Given an optimizer, these work
-- on its flat gradient buffers (a few kernels per buffer, whatever the
-- number of parameters); given a Module, a tensor or a list of tensors, on
-- each .grad. clip_grad_norm_device keeps the norm and the scale on the
-- device (no synchronisation); clip_grad_norm returns the norm as a number.
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local module = require("netcl.nn.module")
local core = require("netcl.core")
local throw, is_tensor = lib.throw, tensor.is_tensor

local M = {}

-- the gradients to clip: an optimizer's flat buffers, or each .grad
local function grads_of(who, params)
  if type(params) == "table" and params.flat_grads then return params:flat_grads() end
  if module.is_module(params) then params = params:parameters() end
  if is_tensor(params) then params = { params } end
  if type(params) ~= "table" then throw(who .. ": expected an optimizer, a Module, a tensor or a list of tensors, got " .. type(params)) end
  local out = {}
  for i, p in ipairs(params) do
    if not is_tensor(p) then throw(("%s: entry %d is a %s, not a tensor"):format(who, i, type(p))) end
    local g = p.grad
    if g then out[#out + 1] = g end
  end
  return out
end

local function check_norm_type(who, norm_type)
  norm_type = norm_type or 2
  if norm_type == "inf" then norm_type = math.huge end
  if type(norm_type) ~= "number" or norm_type <= 0 then throw(who .. ": norm_type must be a positive number or math.huge, got " .. tostring(norm_type)) end
  return norm_type
end

-- total p-norm of all gradients as a 0-dim tensor on the first one's device
local function total_norm(grads, p)
  local dev, total = grads[1].device, nil
  for _, g in ipairs(grads) do
    local part
    if p == math.huge then part = g:abs():max()
    elseif p == 2 then part = g:square():sum()
    elseif p == 1 then part = g:abs():sum()
    else part = (g:abs() ^ p):sum() end
    part = part:to(dev)
    if total == nil then total = part
    elseif p == math.huge then total = total:maximum(part)
    else total = total + part end
  end
  if p == 2 then return total:sqrt() end
  if p ~= 1 and p ~= math.huge then return total ^ (1 / p) end
  return total
end

local function clip(who, params, max_norm, norm_type, before_scaling)
  if type(max_norm) ~= "number" or not (max_norm >= 0) then throw(who .. ": max_norm must be a non-negative number, got " .. tostring(max_norm)) end
  local p = check_norm_type(who, norm_type)
  local grads = grads_of(who, params)
  if #grads == 0 then return core.zeros({}) end
  return core.no_grad(function()
    local norm = total_norm(grads, p)
    if before_scaling then before_scaling(norm) end
    local coef = ((norm + 1e-6):reciprocal() * max_norm):clamp(nil, 1)
    for _, g in ipairs(grads) do g:mul_(g.device == coef.device and coef or coef:to(g.device)) end
    return norm
  end)
end

-- Scales all gradients so that their total norm is at most max_norm;
-- returns that norm (before clipping) as a 0-dim device tensor.
function M.clip_grad_norm_device(params, max_norm, norm_type)
  return clip("clip_grad_norm_device", params, max_norm, norm_type)
end

-- As clip_grad_norm_device, returning the norm as a number (this waits for
-- the device). error_if_nonfinite: raise, before scaling anything, when the
-- norm is NaN or infinite.
function M.clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite)
  local value
  clip("clip_grad_norm", params, max_norm, norm_type, function(norm)
    value = norm:item()
    if error_if_nonfinite and (value ~= value or value == math.huge) then
      throw(("clip_grad_norm: the total gradient norm is %s (error_if_nonfinite is set); nothing was scaled"):format(tostring(value)))
    end
  end)
  return value or 0
end

-- Clamps every gradient element into [-clip_value, clip_value] in place.
function M.clip_grad_value(params, clip_value)
  if type(clip_value) ~= "number" or clip_value < 0 then throw("clip_grad_value: clip_value must be a non-negative number, got " .. tostring(clip_value)) end
  core.no_grad(function()
    for _, g in ipairs(grads_of("clip_grad_value", params)) do g:clamp_(-clip_value, clip_value) end
  end)
end

return M
