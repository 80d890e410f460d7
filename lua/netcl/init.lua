-- netcl/init.lua — the public netcl table, the top of the Lua layers
-- (docs/architecture.md): the core API (lua/netcl/core.lua: devices,
-- creation functions, tensor ops, statistics, RNG, autograd switches) and
-- the packages built on it: autograd, nn, optim, save/load (io.lua), and
-- data and image, which load on first use. No module below this one
-- requires "netcl"; they require what they use (netcl.core, netcl.tensor, ...).
local core = require("netcl.core")

local netcl = {}
for k, v in pairs(core) do netcl[k] = v end

netcl.autograd = require("netcl.autograd")
netcl.nn = require("netcl.nn")         -- nn.Module, layers, init, losses; netcl.nn.functional as before

-- ---- optimizers and checkpoints (lua/netcl/optim, lua/netcl/io.lua) ------------------
netcl.optim = require("netcl.optim")
netcl.save = require("netcl.io").save
netcl.load = require("netcl.io").load
netcl.inspect = require("netcl.printing").inspect   -- tables as text with their contents
netcl.kernel = require("netcl.kernel").kernel        -- a program's own OpenCL kernels (docs/custom-ops.md)
-- messages about a bad argument name the function, however it was reached
require("netcl.tensor").name_functions(netcl)
require("netcl.tensor").name_functions(require("netcl.tensor").methods)

-- ---- mixed precision (lua/netcl/amp.lua) -----------------------------------------------
netcl.amp = require("netcl.amp")

-- ---- capture and replay (lua/netcl/jit.lua) --------------------------------------------
netcl.compile = require("netcl.jit").compile
netcl.jit = require("netcl.jit").jit

-- netcl.data, netcl.image and netcl.distributed load on first use
-- (lua/netcl/data/, image.lua, distributed.lua)
local LAZY = {
  data = function() return require("netcl.data") end,
  distributed = function() return require("netcl.distributed") end,
  Trainer = function() return require("netcl.trainer").Trainer end,
  trainer = function() return require("netcl.trainer") end,
  image = function() return require("netcl.image") end,
}
setmetatable(netcl, { __index = function(t, k)
  local load = LAZY[k]
  if load then
    local m = load()
    rawset(t, k, m)
    return m
  end
end })

return netcl
