-- netcl/ops/reductions.lua — reductions over several dims and the
-- composite ones: var, std, norm, logsumexp, any, all. A dim argument is a
-- 1-based number, a table of them, or nil for every dim.
local ffi = require("ffi")
local tensor = require("netcl.tensor")
local lib = require("netcl.lib")
local C, throw = lib.C, lib.throw
local H, call1, cdim, is_tensor = tensor.handle, tensor.call1, tensor.cdim, tensor.is_tensor
local OP = tensor.OP

local dims_buf = ffi.new("int[8]")

-- (t, dim spec) -> ndims, dims_buf (0-based); nil -> 0 (every dim)
local function dim_list(t, dims, op)
  if dims == nil then return 0, dims_buf end
  if type(dims) == "number" then dims = { dims } end
  if type(dims) ~= "table" then throw(op .. ": dim must be a number or a table of numbers, got " .. type(dims)) end
  local nd = C.netcl_tensor_ndim(H(t))
  if #dims > 8 then throw(op .. ": too many dims") end
  for i = 1, #dims do dims_buf[i - 1] = cdim(t, dims[i], nd, op) end
  return #dims, dims_buf
end

return function(netcl, methods)
  -- sum/mean/prod/max/min keep their single-dim forms; a table of dims
  -- reduces them all at once (max/min then give values only)
  for _, name in ipairs({ "sum", "mean", "prod", "max", "min" }) do
    local single = methods[name]
    methods[name] = function(t, dim, keepdim)
      if type(dim) ~= "table" then return single(t, dim, keepdim) end
      local n, d = dim_list(t, dim, name)
      return call1(C.netcl_reduce_dims, OP[name], H(t), n, d, keepdim and 1 or 0)
    end
    netcl[name] = methods[name]
  end
  methods.amax = function(t, dim, keepdim)
    local n, d = dim_list(t, dim, "amax")
    return call1(C.netcl_reduce_dims, OP.max, H(t), n, d, keepdim and 1 or 0)
  end
  methods.amin = function(t, dim, keepdim)
    local n, d = dim_list(t, dim, "amin")
    return call1(C.netcl_reduce_dims, OP.min, H(t), n, d, keepdim and 1 or 0)
  end

  -- var(dim, unbiased = true, keepdim = false), as PyTorch (and Torch7's
  -- flag); unbiased may also be an options table {unbiased =, keepdim =}
  local function moment(f, op)
    return function(t, dim, unbiased, keepdim)
      if type(unbiased) == "table" then
        local o = unbiased
        for k in pairs(o) do
          if k ~= "unbiased" and k ~= "keepdim" then throw(("%s: unknown option '%s'"):format(op, tostring(k))) end
        end
        unbiased, keepdim = o.unbiased, o.keepdim
      end
      if unbiased ~= nil and type(unbiased) ~= "boolean" then
        throw(("%s: unbiased must be a boolean, got %s"):format(op, type(unbiased)))
      end
      local n, d = dim_list(t, dim, op)
      return call1(f, H(t), n, d, unbiased == false and 0 or 1, keepdim and 1 or 0)
    end
  end
  methods.var = moment(C.netcl_var, "var")
  methods.std = moment(C.netcl_std, "std")

  -- norm(p = 2, dim = all, keepdim): p a number, math.huge or "inf"/"fro"
  function methods.norm(t, p, dim, keepdim)
    if p == nil or p == "fro" then p = 2 elseif p == "inf" then p = math.huge elseif p == "-inf" then p = -math.huge end
    if type(p) ~= "number" then throw("norm: p must be a number, 'fro' or 'inf', got " .. tostring(p)) end
    local n, d = dim_list(t, dim, "norm")
    return call1(C.netcl_norm, H(t), p, n, d, keepdim and 1 or 0)
  end

  function methods.logsumexp(t, dim, keepdim)
    local n, d = dim_list(t, dim, "logsumexp")
    return call1(C.netcl_logsumexp, H(t), n, d, keepdim and 1 or 0)
  end
  function methods.any(t, dim, keepdim)
    local n, d = dim_list(t, dim, "any")
    return call1(C.netcl_any, H(t), n, d, keepdim and 1 or 0)
  end
  function methods.all(t, dim, keepdim)
    local n, d = dim_list(t, dim, "all")
    return call1(C.netcl_all, H(t), n, d, keepdim and 1 or 0)
  end

  -- ---- matrix products --------------------------------------------------------
  local function two(f) return function(a, b) return call1(f, H(a), H(b)) end end
  methods.mm, methods.bmm = two(C.netcl_mm), two(C.netcl_bmm)
  methods.outer, methods.dot = two(C.netcl_outer), two(C.netcl_dot)
  -- c:addmm(a, b, {beta = 1, alpha = 1}) = beta c + alpha a@b
  function methods.addmm(c, a, b, opts)
    opts = opts or {}
    return call1(C.netcl_addmm, H(c), H(a), H(b), opts.beta or 1, opts.alpha or 1)
  end
  function netcl.addmm(c, a, b, opts) return methods.addmm(c, a, b, opts) end
  -- gemm(a, b, {c=, bias=, alpha=1, beta=1, act=}): act(alpha a@b + beta c + bias)
  -- in one kernel (act: "relu", "sigmoid", "tanh", "silu", "gelu",
  -- "gelu_tanh", "relu6", "leaky_relu" with slope=)
  function netcl.gemm(a, b, opts)
    opts = opts or {}
    local act = lib.fused_act(opts, "gemm")
    return call1(C.netcl_gemm, H(a), H(b), opts.c and H(opts.c) or nil, opts.bias and H(opts.bias) or nil,
      opts.alpha or 1, opts.beta or (opts.c and 1 or 0), act, opts.slope or 0.01)
  end
  -- linear(x, w, b): x @ w^T + b
  function netcl.linear(x, w, b)
    if b ~= nil and not is_tensor(b) then throw("linear: bias must be a tensor or nil, got " .. type(b)) end
    return call1(C.netcl_linear, H(x), H(w), b and H(b) or nil)
  end

  for _, name in ipairs({ "amax", "amin", "var", "std", "norm", "logsumexp", "any", "all", "mm", "bmm", "outer", "dot" }) do
    netcl[name] = methods[name]
  end
end
