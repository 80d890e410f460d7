-- netcl/nn/layers/dropout.lua — Dropout and Dropout2d. In training mode
-- each element (Dropout) or each whole channel (Dropout2d) is zeroed with
-- probability p and the rest scaled by 1/(1-p); in eval mode the input
-- passes through. They use F.dropout/F.dropout2d when nn.functional has
-- them (the kernel forms), else a composite of rand, compare and multiply.
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local F = require("netcl.nn.functional")
local Module, throw = module.Module, lib.throw

local netcl_
local function netcl() netcl_ = netcl_ or require("netcl"); return netcl_ end

local M = {}

local function check_p(who, p)
  p = p == nil and 0.5 or p
  if type(p) ~= "number" or p < 0 or p > 1 then throw(("%s: p must be a probability in [0, 1], got %s"):format(who, tostring(p))) end
  return p
end

-- x * mask / (1 - p), mask of `shape` (broadcast over x) kept with probability 1 - p
local function masked(x, p, shape)
  if p == 1 then return x * 0 end
  local keep = netcl().rand(shape, { device = x.device }):ge(p):cast(x.dtype)
  return x * (keep / (1 - p))
end

function M.dropout(x, p, training)
  if F.dropout then return F.dropout(x, p, training) end
  if not training or p == 0 then return x end
  return masked(x, p, x:size())
end

-- channels of [N, C, H, W] (or unbatched [C, H, W]) dropped whole
function M.dropout2d(x, p, training)
  local d = x:dim()
  if d ~= 3 and d ~= 4 then throw(("Dropout2d: expected a 3-D or 4-D input, got shape [%s]"):format(table.concat(x:size(), ", "))) end
  if F.dropout2d then return F.dropout2d(x, p, training) end
  if not training or p == 0 then return x end
  local shape = x:size()
  for i = (d == 4 and 3 or 2), d do shape[i] = 1 end
  return masked(x, p, shape)
end

local Dropout = Module:extend("Dropout")
M.Dropout = Dropout
function Dropout:__init(p) self.p = check_p("Dropout", p) end
function Dropout:forward(x) return M.dropout(x, self.p, self.training) end
function Dropout:extra_repr() return "p=" .. self.p end

local Dropout2d = Module:extend("Dropout2d")
M.Dropout2d = Dropout2d
function Dropout2d:__init(p) self.p = check_p("Dropout2d", p) end
function Dropout2d:forward(x) return M.dropout2d(x, self.p, self.training) end
function Dropout2d:extra_repr() return "p=" .. self.p end

return M
