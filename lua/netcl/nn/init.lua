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

for _, file in ipairs({ "netcl.nn.containers", "netcl.nn.layers.linear", "netcl.nn.layers.activation",
                        "netcl.nn.layers.dropout", "netcl.nn.layers.loss", "netcl.nn.layers.conv",
                        "netcl.nn.layers.norm", "netcl.nn.layers.pool", "netcl.nn.layers.embedding" }) do
  for name, v in pairs(require(file)) do
    if type(v) == "table" and v.__is_module and name:sub(1, 1) ~= "_" then nn[name] = v end
  end
end

nn.init = require("netcl.nn.init_fns")
nn.models = require("netcl.nn.models")
nn.BasicBlock, nn.Bottleneck = nn.models.BasicBlock, nn.models.Bottleneck
nn.functional = require("netcl.nn.functional")

return nn
