-- spec/nn_module_spec.lua — nn.Module on the device under test: classes
-- and registration by assignment, traversal order, tied parameters,
-- train/eval, apply, zero_grad, moves and casts, state_dict and
-- load_state_dict (strict and non-strict reports), hooks, the printed
-- tree, and the containers.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local nn = netcl.nn
local dev = H.device

local function lin(i, o, opts)
  opts = opts or {}
  opts.device = opts.device or dev
  return nn.Linear(i, o, opts)
end

-- a small custom module: a parameter, a buffer, a non-persistent buffer, a child
local Net = nn.Module:extend("Net")
function Net:__init(hidden)
  self.fc = lin(3, hidden)
  self.scale = nn.Parameter(netcl.ones(1, { device = dev }))
  self:register_buffer("steps", netcl.zeros(1, { device = dev, dtype = "int64" }))
  self:register_buffer("cache", netcl.zeros(2, { device = dev }), false)
  self.act = nn.Tanh()
  self.note = "plain field"
end
function Net:forward(x) return self.act(self.fc(x)) * self.scale end

TestModule = {}

function TestModule:test_registration_and_order()
  local m = Net(4)
  local names = {}
  for name, p in m:named_parameters() do names[#names + 1] = name; lu.assertTrue(p.requires_grad) end
  lu.assertEquals(names, { "scale", "fc.weight", "fc.bias" })
  lu.assertEquals(#m:parameters(), 3)
  lu.assertEquals(#m:buffers(), 2)
  lu.assertEquals(m.note, "plain field")
  lu.assertEquals(#m:children(), 2)
  local mods = {}
  for name, sub in m:named_modules() do mods[#mods + 1] = name .. "=" .. sub.__name end
  lu.assertEquals(mods, { "=Net", "fc=Linear", "act=Tanh" })
  lu.assertEquals(m:count_parameters(), 4 * 3 + 4 + 1)
  lu.assertTrue(nn.is_module(m) and nn.is_parameter(m.scale))
  lu.assertEquals(m(netcl.randn(2, 3, { device = dev })):size(), { 2, 4 })
  -- assigning nil unregisters; a plain tensor is a plain field
  m.act = nil
  lu.assertEquals(#m:children(), 1)
  m.tmp = netcl.zeros(2)
  lu.assertEquals(#m:parameters(), 3)
end

function TestModule:test_tied_parameters_counted_once()
  local a = lin(3, 3)
  local b = lin(3, 3)
  b.weight = a.weight
  local s = nn.Sequential(a, b)
  lu.assertEquals(#s:parameters(), 3)
  local sd = s:state_dict()
  lu.assertNotNil(sd["1.weight"]); lu.assertNotNil(sd["2.weight"])   -- state_dict names both
end

function TestModule:test_train_eval_apply_requires_grad()
  local m = Net(2)
  lu.assertTrue(m.training and m.fc.training)
  m:eval()
  lu.assertFalse(m.training or m.fc.training or m.act.training)
  m:train()
  lu.assertTrue(m.act.training)
  local seen = {}
  m:apply(function(mod) seen[#seen + 1] = mod.__name end)
  lu.assertEquals(seen, { "Linear", "Tanh", "Net" })
  m:requires_grad_(false)
  lu.assertFalse(m.fc.weight.requires_grad)
end

function TestModule:test_zero_grad_keeps_gradient_tensors()
  local m = lin(3, 2)
  m(netcl.randn(4, 3, { device = dev })):sum():backward()
  local g = m.weight.grad
  m:zero_grad()
  lu.assertEquals(m.weight.grad:abs():sum():item(), 0)
  lu.assertTrue(netcl.C.netcl_tensor_same_storage(g.h, m.weight.grad.h) ~= 0)
  m:zero_grad(true)
  lu.assertNil(m.weight.grad)
end

function TestModule:test_to_device_keeps_identity_and_dtype_casts()
  local m = Net(3)
  local w = m.fc.weight
  m(netcl.randn(2, 3, { device = dev })):sum():backward()
  m:to("cpu")
  lu.assertEquals(w.device, "cpu")
  lu.assertTrue(rawequal(w, m.fc.weight))     -- same tensor object, moved
  lu.assertEquals(w.grad.device, "cpu")
  lu.assertEquals(m.steps.device, "cpu")
  m:to(dev)
  lu.assertEquals(m.fc.bias.device, dev)
  if H.device_info().fp64 then
    m:double()
    lu.assertEquals(m.fc.weight.dtype, "float64")
    lu.assertEquals(m.steps.dtype, "int64")    -- integer buffers keep their dtype
    lu.assertTrue(nn.is_parameter(m.fc.weight) and m.fc.weight.requires_grad)
    lu.assertEquals(m(netcl.randn(2, 3, { device = dev, dtype = "float64" })).dtype, "float64")
  end
  H.assert_error(function() m:to("int32") end, "float dtypes only")
end

function TestModule:test_state_dict_round_trip()
  netcl.manual_seed(3)
  local a, b = Net(4), Net(4)
  local sd = a:state_dict()
  local keys = {}
  for k in pairs(sd) do keys[#keys + 1] = k end
  table.sort(keys)
  lu.assertEquals(keys, { "fc.bias", "fc.weight", "scale", "steps" })   -- "cache" is not persistent
  local report = b:load_state_dict(sd)
  lu.assertEquals(#report.missing_keys + #report.unexpected_keys, 0)
  local x = netcl.randn(5, 3, { device = dev })
  H.assert_close(b(x), a(x), 0, 0)
  -- the state shares storage with the module (as PyTorch's)
  netcl.no_grad(function() a.scale:fill_(2) end)
  lu.assertEquals(sd.scale:item(), 2)
  -- loading from cpu tensors into device modules
  local cpu_sd = {}
  for k, v in pairs(a:state_dict()) do cpu_sd[k] = v:cpu() end
  b:load_state_dict(cpu_sd)
  lu.assertEquals(b.scale:item(), 2)
end

function TestModule:test_load_state_dict_reports()
  local m = Net(4)
  local sd = m:state_dict()
  sd["fc.bias"] = nil
  sd["extra.weight"] = netcl.zeros(1)
  local err = H.assert_error(function() m:load_state_dict(sd) end, "missing keys (1): fc.bias",
                             "unexpected keys (1): extra.weight", "nothing was copied", "load_state_dict(sd, false)")
  lu.assertNil(err:find("shape mismatches", 1, true))
  netcl.no_grad(function() sd.scale:fill_(7) end)
  local r = m:load_state_dict(sd, false)
  lu.assertEquals(r.missing_keys, { "fc.bias" })
  lu.assertEquals(r.unexpected_keys, { "extra.weight" })
  lu.assertEquals(m.scale:item(), 7)
  sd["fc.weight"] = netcl.zeros(2, 3)
  H.assert_error(function() m:load_state_dict(sd, false) end, "shape mismatches (1): fc.weight: checkpoint [2, 3], model [4, 3]")
  H.assert_error(function() m:load_state_dict(42) end, "expected a table")
end

function TestModule:test_forward_hooks()
  local m = lin(3, 2)
  local calls = {}
  local h1 = m:register_forward_pre_hook(function(mod, inputs) calls[#calls + 1] = "pre " .. inputs[1]:size(1) end)
  local h2 = m:register_forward_hook(function(mod, inputs, out) calls[#calls + 1] = "post"; return out * 0 end)
  local y = m(netcl.randn(4, 3, { device = dev }))
  lu.assertEquals(calls, { "pre 4", "post" })
  lu.assertEquals(y:abs():sum():item(), 0)
  h2.remove()
  local h3 = m:register_forward_pre_hook(function(_, inputs) return { inputs[1] * 0 } end)
  lu.assertEquals((m(netcl.ones(1, 3, { device = dev })) - m.bias):abs():sum():item(), 0)
  h1.remove(); h3.remove()
  lu.assertEquals(#calls, 3)
  H.assert_error(function() m:register_forward_hook(5) end, "hook must be a function")
end

function TestModule:test_tostring_tree()
  local s = nn.Sequential(lin(784, 256), nn.ReLU(), lin(256, 10))
  local text = tostring(s)
  lu.assertStrContains(text, "Sequential(  # 203,530 params")
  lu.assertStrContains(text, "(1): Linear(in_features=784, out_features=256, bias=true)  # 200,960 params")
  lu.assertStrContains(text, "(2): ReLU()\n")
  lu.assertEquals(tostring(nn.Linear), "nn.Linear")
end

function TestModule:test_module_errors()
  local m = Net(2)
  H.assert_error(function() m:register_buffer("a.b", netcl.zeros(1)) end, "without '.'")
  H.assert_error(function() m:register_parameter("w", 3) end, "must be a tensor")
  H.assert_error(function() nn.Module()() end, "forward is not implemented")
  H.assert_error(function() nn.Parameter(3) end, "expected a tensor")
end

TestContainers = {}

function TestContainers:test_sequential()
  local s = nn.Sequential(lin(3, 4), nn.ReLU())
  s:add(lin(4, 2))
  lu.assertEquals(s:len(), 3)
  lu.assertEquals(s[3].out_features, 2)
  lu.assertEquals(s:get(-1).out_features, 2)
  lu.assertEquals(s(netcl.randn(5, 3, { device = dev })):size(), { 5, 2 })
  s:insert(1, nn.Identity())
  lu.assertEquals(s[1].__name, "Identity")
  lu.assertEquals(s[2].__name, "Linear")
  lu.assertEquals(s:remove(1).__name, "Identity")
  local names = {}
  for k in pairs(s:state_dict()) do names[#names + 1] = k end
  table.sort(names)
  lu.assertEquals(names, { "1.bias", "1.weight", "3.bias", "3.weight" })
  local s2 = nn.Sequential({ nn.ReLU(), nn.Tanh() })
  lu.assertEquals(s2:len(), 2)
  H.assert_error(function() nn.Sequential(nn.ReLU(), 5) end, "entry 2 is not an nn.Module")
  H.assert_error(function() s:get(9) end, "index 9 out of range")
end

function TestContainers:test_module_list_and_dict()
  local l = nn.ModuleList({ lin(2, 2), lin(2, 2) })
  l:append(nn.ReLU())
  l:extend({ nn.Tanh() })
  lu.assertEquals(l:len(), 4)
  local n = 0
  for i, m in l:ipairs() do n = n + 1; lu.assertEquals(m, l[i]) end
  lu.assertEquals(n, 4)
  lu.assertEquals(#l:parameters(), 4)
  H.assert_error(function() l(netcl.zeros(1)) end, "ModuleList has no forward")
  local d = nn.ModuleDict({ b = nn.ReLU(), a = lin(2, 3) })
  lu.assertEquals(d:keys(), { "a", "b" })
  d:set("c", nn.Tanh())
  lu.assertTrue(d:contains("c"))
  lu.assertEquals(d.a.out_features, 3)
  lu.assertEquals(d:get("b").__name, "ReLU")
  lu.assertEquals(d:pop("b").__name, "ReLU")
  local keys = {}
  for k in d:items() do keys[#keys + 1] = k end
  lu.assertEquals(keys, { "a", "c" })
end
