-- spec/nn_helper.lua — helpers shared by the nn layer specs: float64 cpu
-- inputs, a Jacobian check through a module (finite differences vs backward
-- for every input and every parameter), and a save/load round trip that
-- must reproduce a module's outputs exactly.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl

local N = {}

-- randn of the given sizes, float64 on the cpu, requiring grad
function N.f64(...) return netcl.randn({ ... }, { dtype = "float64", device = "cpu", requires_grad = true }) end

-- gradcheck of m(inputs..., fixed) with respect to the inputs and m's
-- parameters (fixed: an optional last argument that is not differentiated)
function N.gradcheck(m, inputs, opts, fixed)
  m:to("cpu")   -- built on the default device, which is a GPU where one is present
  if netcl.is_tensor(fixed) then fixed = fixed:to("cpu") end
  local all = { unpack(inputs) }
  for _, p in ipairs(m:parameters()) do all[#all + 1] = p end
  local n = #inputs
  local ok, err = netcl.autograd.gradcheck(function(...)
    local args = { ... }
    if fixed ~= nil then
      args[n + 1] = fixed
      return (m(unpack(args, 1, n + 1)))
    end
    return (m(unpack(args, 1, n)))
  end, all, opts)
  lu.assertTrue(ok, m.__name .. ": " .. tostring(err))
end

-- saves a (built by make(device)) with netcl.save, loads the file into a
-- fresh make(device) built from another seed and checks that fwd gives
-- bit-identical outputs in eval mode (prepare(a), if given, runs first:
-- e.g. a training forward that moves batch-norm statistics); returns the
-- loaded module
function N.roundtrip(make, input, fwd, prepare)
  fwd = fwd or function(m, x) return m(x) end
  local path = os.tmpname()
  netcl.manual_seed(101)
  local a = make()
  if prepare then prepare(a) end
  a:eval()
  netcl.save(a, path)
  netcl.manual_seed(202)
  local b = make()
  b:eval()
  b:load_state_dict(netcl.load(path, { device = H.device }))
  os.remove(path)
  H.assert_close(fwd(b, input), fwd(a, input), 0, 0, a.__name .. " after save/load")
  return b
end

return N
