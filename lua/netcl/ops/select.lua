-- netcl/ops/select.lua — where, the logical ops, softplus with beta and
-- threshold, softmax and log_softmax (kernels in kernels/where.cl and softmax.cl).
-- Dims are 1-based (negative counts from the end); the default softmax dim
-- is the last one.
local tensor = require("netcl.tensor")
local lib = require("netcl.lib")
local C, throw = lib.C, lib.throw
local H, call1, cdim, is_tensor = tensor.handle, tensor.call1, tensor.cdim, tensor.is_tensor
local OP = tensor.OP

return function(netcl, methods)
  -- where(cond, a, b): a and b are tensors or numbers
  function netcl.where(cond, a, b)
    if not is_tensor(cond) then throw("where: cond must be a tensor, got " .. type(cond)) end
    local ta, tb = is_tensor(a), is_tensor(b)
    if not ta and type(a) ~= "number" then throw("where: a must be a tensor or a number, got " .. type(a)) end
    if not tb and type(b) ~= "number" then throw("where: b must be a tensor or a number, got " .. type(b)) end
    return call1(C.netcl_where, H(cond), ta and H(a) or nil, tb and H(b) or nil, ta and 0 or a, tb and 0 or b)
  end
  -- x:where(cond, y) == where(cond, x, y)
  function methods.where(x, cond, y) return netcl.where(cond, x, y) end

  function methods.logical_not(x) return x:eq(0) end

  -- finiteness (bool results) and nan_to_num(nan = 0, posinf, neginf): an
  -- omitted posinf / neginf is the dtype's largest / lowest finite value
  function methods.isnan(x) return call1(C.netcl_isnan, H(x)) end
  function methods.isinf(x) return call1(C.netcl_isinf, H(x)) end
  function methods.isfinite(x) return call1(C.netcl_isfinite, H(x)) end
  function methods.nan_to_num(x, nan, posinf, neginf)
    for k, v in pairs({ nan = nan, posinf = posinf, neginf = neginf }) do
      if v ~= nil and type(v) ~= "number" then throw(("nan_to_num: %s must be a number, got %s"):format(k, type(v))) end
    end
    return call1(C.netcl_nan_to_num, H(x), nan or 0, posinf or math.huge, neginf or -math.huge)
  end

  -- a:lerp(b, w): a + w (b - a); w a tensor or a number
  function methods.lerp(a, b, w)
    if is_tensor(w) then return call1(C.netcl_lerp, H(a), H(b), H(w), 0) end
    if type(w) ~= "number" then throw("lerp: weight must be a tensor or a number, got " .. type(w)) end
    return call1(C.netcl_lerp, H(a), H(b), nil, w)
  end

  -- softplus(beta = 1, threshold = 20): log(1 + exp(beta x)) / beta, x above the threshold
  function methods.softplus(x, beta, threshold)
    return call1(C.netcl_unary, OP.softplus, H(x), beta or 1, threshold or 20)
  end

  local function softmax(x, dim, log, op)
    local h = H(x)
    local nd = C.netcl_tensor_ndim(h)
    local c = nd == 0 and 0 or cdim(x, dim or -1, nd, op)
    return call1(C.netcl_softmax, h, c, log)
  end
  function methods.softmax(x, dim) return softmax(x, dim, 0, "softmax") end
  function methods.log_softmax(x, dim) return softmax(x, dim, 1, "log_softmax") end

  for _, name in ipairs({ "isnan", "isinf", "isfinite", "nan_to_num", "lerp", "logical_not", "logical_and", "logical_or",
                          "logical_xor", "fmod", "atan2", "softmax",
                          "log_softmax", "softplus" }) do
    netcl[name] = methods[name]
  end
end
