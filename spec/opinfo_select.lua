-- spec/opinfo_select.lua — cases for where, the logical ops, the finiteness
-- tests and nan_to_num, fmod, atan2,
-- softplus with parameters, softmax and log_softmax.
return function(M)
  local R, P, T, U, case = M.R, M.P, M.T, M.U, M.case
  local function mask(env, shape, seed)
    M.netcl.manual_seed(seed)
    return M.netcl.rand(shape, { device = env.device }):gt(0.5)
  end
  case({ op = "where", inputs = { R(3, 4), R(4) }, fn = function(a, b, env) return M.netcl.where(mask(env, { 3, 4 }, 5), a, b) end })
  case({ op = "where", inputs = { T(3, 4) }, fn = function(a, env) return M.netcl.where(mask(env, { 1, 4 }, 6), a, -1.5) end })
  case({ op = "where", inputs = { R(2, 1, 3) }, fn = function(b, env) return M.netcl.where(mask(env, { 4, 1 }, 7), 2, b) end })
  for _, n in ipairs({ "logical_and", "logical_or", "logical_xor" }) do
    case({ op = n, grad = false, inputs = { U(-1, 1, 3, 4), U(-1, 1, 4) },
           fn = function(a, b) return a:round()[n](a:round(), b:round()) end })
  end
  -- a with NaN, +inf and -inf in its last row (bool results as float for the comparison)
  local function specials(a, env)
    local s = env.tensor({ 0 / 0, math.huge, -math.huge, 1.5 }, env.dtype)
    return M.netcl.cat({ a, s:view(1, 4) }, 1)
  end
  for _, n in ipairs({ "isnan", "isinf", "isfinite" }) do
    case({ op = n, grad = false, inputs = { R(3, 4) }, fn = function(a, env) local x = specials(a, env); return x[n](x):float() end })
  end
  case({ op = "nan_to_num", grad = false, inputs = { R(3, 4) },
         fn = function(a, env) local x = specials(a, env); return x:nan_to_num(0.5, 9, -9) end })
  case({ op = "nan_to_num", inputs = { R(3, 4) }, fn = function(a) return a:nan_to_num() * a end, label = "nan_to_num_grad" })
  case({ op = "lerp", inputs = { R(3, 4), R(4), U(0, 1, 3, 1) }, fn = function(a, b, w) return a:lerp(b, w) end })
  case({ op = "lerp", inputs = { T(3, 4), R(3, 4) }, fn = function(a, b) return a:lerp(b, 0.3) end })
  case({ op = "fmod", inputs = { U(-5, 5, 3, 4), U(1, 2, 4) }, fn = function(a, b) return a:fmod(b) end })
  case({ op = "fmod", inputs = { U(-5, 5, 3, 4) }, fn = function(a) return a:fmod(1.5) end })
  case({ op = "atan2", inputs = { R(3, 4), T(3, 4) }, fn = function(a, b) return a:atan2(b) end })
  case({ op = "atan2", inputs = { R(5) }, fn = function(a) return a:atan2(0.7) end })
  case({ op = "softplus", inputs = { U(-15, 15, 4, 5) }, fn = function(a) return a:softplus(2, 10) end,
         label = "softplus_beta" })
  for _, n in ipairs({ "softmax", "log_softmax" }) do
    case({ op = n, inputs = { R(4, 7) }, fn = function(a) return a[n](a) end })
    case({ op = n, inputs = { T(5, 3) }, fn = function(a) return a[n](a, 1) end })
    case({ op = n, inputs = { R(2, 3, 4) }, fn = function(a) return a[n](a, 2) end })
    case({ op = n, inputs = { R(3, 1) }, fn = function(a) return a[n](a, 2) end })
    case({ op = n, inputs = { R(3, 100) }, fn = function(a) return a[n](a, 2) end, grad = false, label = n .. "_long" })
  end
end
