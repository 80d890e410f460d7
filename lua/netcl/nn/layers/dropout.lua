-- netcl/nn/layers/dropout.lua — Dropout and Dropout2d over nn.functional's
-- dropout ops. In training mode each element (Dropout) or each whole
-- channel (Dropout2d) is zeroed with probability p and the rest scaled by
-- 1/(1-p); in eval mode (or p = 0) the input itself is returned, as in PyTorch.
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local F = require("netcl.nn.functional")
local Module, throw = module.Module, lib.throw

local M = {}

local function check_p(who, p)
  p = p == nil and 0.5 or p
  if type(p) ~= "number" or not (p >= 0 and p <= 1) then throw(("%s: p must be a probability in [0, 1], got %s"):format(who, tostring(p))) end
  return p
end

local Dropout = Module:extend("Dropout")
M.Dropout = Dropout
function Dropout:__init(p) self.p = check_p("Dropout", p) end
function Dropout:forward(x)
  if not self.training or self.p == 0 then return x end
  return F.dropout(x, self.p, true)
end
function Dropout:extra_repr() return "p=" .. self.p end

-- channels of [N, C, H, W] (or unbatched [C, H, W]) dropped whole
local Dropout2d = Module:extend("Dropout2d")
M.Dropout2d = Dropout2d
function Dropout2d:__init(p) self.p = check_p("Dropout2d", p) end
function Dropout2d:forward(x)
  local d = x:dim()
  if d ~= 3 and d ~= 4 then throw(("Dropout2d: expected a 3-D or 4-D input, got shape [%s]"):format(table.concat(x:size(), ", "))) end
  if not self.training or self.p == 0 then return x end
  if d == 3 then return F.dropout2d(x:unsqueeze(1), self.p, true):squeeze(1) end
  return F.dropout2d(x, self.p, true)
end
function Dropout2d:extra_repr() return "p=" .. self.p end

return M
