-- netcl/nn/init.lua — the nn package: nn.Module and nn.Parameter, the
-- layers, containers and loss modules, nn.init (initialisers),
-- nn.models (the model zoo) and nn.functional (the functional forms).
-- Everything is composed from autograd ops; no module writes a backward pass.
local module = require("netcl.nn.module")

local nn = {}
nn.Module = module.Module
nn.Parameter = module.Parameter
nn.is_parameter = module.is_parameter
nn.is_module = module.is_module
-- release_intermediates(on): whether a module call releases the tensors it
-- made but neither returned nor stored when it returns (default on;
-- netcl.lifetime, docs/nn.md). Returns the previous setting.
function nn.release_intermediates(on)
  local lifetime = require("netcl.lifetime")
  local was = lifetime.enabled
  if on ~= nil then lifetime.enabled = on and true or false end
  return was
end

for _, classes in ipairs({ require("netcl.nn.containers"), require("netcl.nn.layers.linear"),
                           require("netcl.nn.layers.activation"), require("netcl.nn.layers.dropout"),
                           require("netcl.nn.layers.loss"), require("netcl.nn.layers.conv"), require("netcl.nn.layers.norm"),
                           require("netcl.nn.layers.pool"), require("netcl.nn.layers.embedding") }) do
  for name, v in pairs(classes) do
    if type(v) == "table" and v.__is_module and name:sub(1, 1) ~= "_" then nn[name] = v end
  end
end

nn.init = require("netcl.nn.init_fns")
nn.models = require("netcl.nn.models")
nn.BasicBlock, nn.Bottleneck = nn.models.BasicBlock, nn.models.Bottleneck
nn.functional = require("netcl.nn.functional")

return nn
