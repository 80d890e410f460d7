-- spec/opinfo_reduce.lua — cases for reductions over several dims, var, std,
-- norm, logsumexp, any/all, and the matrix-product composites.
return function(M)
  local R, P, T, U, case = M.R, M.P, M.T, M.U, M.case
  case({ op = "reduce_dims", inputs = { R(2, 3, 4) }, fn = function(x) return x:sum({ 1, 3 }) end })
  case({ op = "reduce_dims", inputs = { T(3, 4) }, fn = function(x) return x:mean({ 2, 1 }, true) end })
  case({ op = "reduce_dims", inputs = { R(2, 3, 4) }, fn = function(x) return x:amax({ 2, 3 }) end })
  case({ op = "reduce_dims", inputs = { P(2, 2, 3) }, fn = function(x) return x:prod({ 1, 2 }) end })
  for _, n in ipairs({ "var", "std" }) do
    case({ op = n, inputs = { R(4, 5) }, fn = function(x) return x[n](x, 2) end })
    case({ op = n, inputs = { T(3, 4) }, fn = function(x) return x[n](x, 1, false, true) end })
    case({ op = n, inputs = { R(2, 3, 4) }, fn = function(x) return x[n](x, { 1, 3 }) end })
    case({ op = n, inputs = { R(6) }, fn = function(x) return x[n](x) end })
  end
  case({ op = "norm", inputs = { R(3, 4) }, fn = function(x) return x:norm() end })
  case({ op = "norm", inputs = { R(3, 4) }, fn = function(x) return x:norm(1, 2) end })
  case({ op = "norm", inputs = { T(3, 4) }, fn = function(x) return x:norm(math.huge, 1, true) end })
  case({ op = "norm", inputs = { R(2, 5) }, fn = function(x) return x:norm(3, 2) end })
  case({ op = "logsumexp", inputs = { R(4, 6) }, fn = function(x) return x:logsumexp(2) end })
  case({ op = "logsumexp", inputs = { R(2, 3, 4) }, fn = function(x) return x:logsumexp({ 1, 3 }, true) end })
  case({ op = "logsumexp", inputs = { U(50, 60, 3, 2) }, fn = function(x) return x:logsumexp(1) end })
  for _, n in ipairs({ "any", "all" }) do
    case({ op = n, grad = false, inputs = { U(-1, 1, 4, 5) }, fn = function(x) return x:round()[n](x:round(), 2) end })
    case({ op = n, grad = false, inputs = { U(0, 3, 3, 4) }, fn = function(x) return x:floor()[n](x:floor()) end })
  end
  case({ op = "mm", inputs = { R(3, 4), T(4, 2) }, fn = function(a, b) return a:mm(b) end })
  case({ op = "bmm", inputs = { R(2, 3, 4), R(2, 4, 5) }, fn = function(a, b) return a:bmm(b) end })
  case({ op = "addmm", inputs = { R(3), R(2, 4), R(4, 3) },
         fn = function(c, a, b) return c:addmm(a, b, { beta = 0.5, alpha = 2 }) end })
  case({ op = "linear", inputs = { R(5, 4), R(3, 4), R(3) }, fn = function(x, w, b) return M.netcl.linear(x, w, b) end })
  case({ op = "linear", inputs = { R(2, 5, 4), T(3, 4) }, fn = function(x, w) return M.netcl.linear(x, w) end })
  case({ op = "gemm", inputs = { R(3, 4), T(4, 5), R(3, 5), R(5) },
         fn = function(a, b, c, bias) return M.netcl.gemm(a, b, { c = c, bias = bias, alpha = 0.5, beta = 2, act = "tanh" }) end })
  case({ op = "gemm", inputs = { R(2, 3, 4), R(4, 2), R(2) },
         fn = function(a, b, bias) return M.netcl.gemm(a, b, { bias = bias, act = "silu" }) end })
  case({ op = "outer", inputs = { R(4), R(3) }, fn = function(a, b) return a:outer(b) end })
  case({ op = "dot", inputs = { R(7), R(7) }, fn = function(a, b) return a:dot(b) end })
end
