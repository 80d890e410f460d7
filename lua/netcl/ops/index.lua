-- netcl/ops/index.lua — indexing, shape, sort, scan and random ops: cat,
-- stack, split, chunk, repeat, flip, pad (constant/reflect/replicate/
-- circular), gather, scatter(_add), index_select, index_add, masked_fill,
-- masked_select, nonzero, one_hot, embedding, sort, topk, cumsum, cumprod,
-- bernoulli, randperm, multinomial. Dims and indices are 1-based (Lua); the
-- C calls get 0-based dims and index_base = 1, and the indices they return
-- (0-based) get 1 added here.
local ffi = require("ffi")
local tensor = require("netcl.tensor")
local lib = require("netcl.lib")
local C, throw, check, fail = lib.C, lib.throw, lib.check, lib.fail
local H, call1, cdim, is_tensor, wrap = tensor.handle, tensor.call1, tensor.cdim, tensor.is_tensor, tensor.wrap
local binary, dtype_code, parse_sizes = tensor.binary, tensor.dtype_code, tensor.parse_sizes
local OP = tensor.OP
local type, floor = type, math.floor

local outp = ffi.new("netcl_tensor *[1]")
local outp2 = ffi.new("netcl_tensor *[1]")
local pads_buf = ffi.new("int64_t[16]")
local dims_buf = ffi.new("int[8]")
local no_dims = ffi.new("int64_t[1]")   -- the sizes of a 0-dim tensor (never NULL)
local PAD_MODES = lib.enum("netcl_pad_mode", "NETCL_PAD_")

local function integer(v, what)
  if type(v) ~= "number" or v ~= floor(v) then throw(what .. " must be an integer, got " .. tostring(v)) end
  return v
end

local function ndim(t) return C.netcl_tensor_ndim(H(t)) end
local function plus1(t) return binary(t, 1, OP.add) end
local function describe(t) local b = ffi.new("char[256]"); C.netcl_tensor_describe(H(t), b, 256); return ffi.string(b) end

-- dim of t (1-based, negative from the end; default `default`) -> 0-based
local function dim_of(t, d, default, op)
  local nd = ndim(t)
  if d == nil then d = default end
  if nd == 0 and (d == 1 or d == -1) then return 0 end
  return cdim(t, d, nd, op)
end

-- a list of tensors (or the tensors as varargs, an optional trailing dim) -> list, dim
local function tensor_list(op, first, ...)
  local list, dim
  if is_tensor(first) then
    list = { first, ... }
    if type(list[#list]) == "number" then dim = table.remove(list) end
  else
    list, dim = first, ...
  end
  if type(list) ~= "table" or #list == 0 then throw(op .. ": expected a non-empty list of tensors") end
  local arr = ffi.new("netcl_tensor *[?]", #list)
  for i = 1, #list do
    if not is_tensor(list[i]) then throw(("%s: entry %d is a %s, not a tensor"):format(op, i, type(list[i]))) end
    arr[i - 1] = H(list[i])
  end
  return list, arr, dim
end

-- the shape-defining tensor of a cat (1-D empty tensors are skipped)
local function cat_ref(list)
  for _, t in ipairs(list) do
    if not (ndim(t) == 1 and t:numel() == 0) then return t end
  end
  return list[1]
end

-- Installs the family into the core module `netcl` (lua/netcl/core.lua) and the Tensor methods.
return function(netcl, methods)
  -- an index argument: an integer tensor, or a Lua table / number of 1-based
  -- indices (made an int64 tensor on t's device)
  local function as_index(t, idx, op)
    if is_tensor(idx) then return idx end
    if type(idx) == "number" then idx = { idx } end
    if type(idx) ~= "table" then throw(op .. ": the index must be a tensor or a table of integers, got " .. type(idx)) end
    return netcl.tensor(idx, { dtype = "int64", device = t.device })
  end

  -- ---- joining and splitting ----------------------------------------------------------

  -- cat({a, b, ...}, dim = 1) or cat(a, b, ..., dim)
  function netcl.cat(...)
    local list, arr, dim = tensor_list("cat", ...)
    local c = dim_of(cat_ref(list), dim, 1, "cat")
    return call1(C.netcl_cat, #list, arr, c)
  end
  function methods.cat(t, other, dim)
    if is_tensor(other) then return netcl.cat({ t, other }, dim) end
    local list = { t }
    for i = 1, #other do list[i + 1] = other[i] end
    return netcl.cat(list, dim)
  end

  -- stack({a, b, ...}, dim = 1): a new dim (1..ndim+1, negative from the end)
  function netcl.stack(...)
    local list, arr, dim = tensor_list("stack", ...)
    local nd = ndim(list[1])
    dim = dim or 1
    integer(dim, "stack: dim")
    local c = dim < 0 and nd + 1 + dim or dim - 1
    if c < 0 or c > nd then throw(("stack: dim %d out of range for %d-dim tensors (valid 1..%d)"):format(dim, nd, nd + 1)) end
    return call1(C.netcl_stack, #list, arr, c)
  end

  -- split(size, dim = 1): pieces of `size` (the last may be smaller);
  -- split({s1, s2, ...}, dim): pieces of those sizes. Views (narrow).
  function methods.split(t, sizes, dim)
    local d = dim or 1
    local c = dim_of(t, d, 1, "split")
    local n = t:size(c + 1)
    local out, pos = {}, 1
    if type(sizes) == "number" then
      integer(sizes, "split: size")
      if sizes < 1 and n > 0 then throw("split: size must be positive, got " .. sizes) end
      repeat
        local len = math.min(sizes, n - pos + 1)
        out[#out + 1] = t:narrow(c + 1, pos, len)
        pos = pos + len
      until pos > n
      return out
    end
    if type(sizes) ~= "table" then throw("split: sizes must be a number or a table of numbers, got " .. type(sizes)) end
    local total = 0
    for i = 1, #sizes do total = total + integer(sizes[i], "split: sizes[" .. i .. "]") end
    if total ~= n then
      throw(("split: sizes add up to %d but dim %d of %s has %d"):format(total, d, describe(t), n))
    end
    for i = 1, #sizes do
      out[i] = t:narrow(c + 1, pos, sizes[i])
      pos = pos + sizes[i]
    end
    return out
  end

  -- chunk(n, dim = 1): at most n pieces of ceil(size / n)
  function methods.chunk(t, n, dim)
    integer(n, "chunk: n")
    if n < 1 then throw("chunk: n must be positive, got " .. n) end
    local c = dim_of(t, dim, 1, "chunk")
    local size = t:size(c + 1)
    return methods.split(t, math.max(1, math.ceil(size / n)), c + 1)
  end

  -- repeat_tensor(r1, r2, ...) (also t["repeat"], Torch7's repeatTensor):
  -- tile along each dim; more counts than dims add leading dims
  function methods.repeat_tensor(t, ...)
    local n, s = tensor.parse_sizes_for("repeat", ...)
    return call1(C.netcl_repeat, H(t), n, s)
  end
  methods["repeat"] = methods.repeat_tensor
  methods.repeatTensor = methods.repeat_tensor

  -- flip(d1, d2, ...) or flip({d1, ...}): reverse along those dims (a copy)
  function methods.flip(t, ...)
    local list = type((...)) == "table" and (...) or { ... }
    if #list == 0 then throw("flip: give at least one dim") end
    if #list > 8 then throw("flip: at most 8 dims") end
    local nd = ndim(t)
    for i = 1, #list do dims_buf[i - 1] = cdim(t, list[i], nd, "flip") end
    return call1(C.netcl_flip, H(t), #list, dims_buf)
  end

  -- pad(pads, value) or pad(pads, {mode = "constant"|"reflect"|"replicate"|"circular", value = 0}):
  -- pads = {left, right, top, bottom, ...} for the last dims, last dim first
  -- (PyTorch's F.pad order); negative pads crop (constant mode only)
  function methods.pad(t, pads, opts)
    if type(pads) ~= "table" or #pads % 2 ~= 0 or #pads == 0 then
      throw("pad: pads must be a table of (before, after) pairs, last dim first, got " .. tostring(pads))
    end
    if #pads > 16 then throw("pad: at most 8 dims can be padded, got " .. #pads / 2) end
    for i = 1, #pads do pads_buf[i - 1] = integer(pads[i], "pad: pads[" .. i .. "]") end
    local mode, value = "constant", 0
    if type(opts) == "number" then value = opts
    elseif type(opts) == "table" then mode, value = opts.mode or "constant", opts.value or 0
    elseif opts ~= nil then throw("pad: the third argument must be a value or {mode=, value=}, got " .. type(opts)) end
    local code = PAD_MODES[mode]
    if not code then throw("pad: mode must be constant, reflect, replicate or circular, got " .. tostring(mode)) end
    if type(value) ~= "number" then throw("pad: value must be a number, got " .. type(value)) end
    return call1(C.netcl_pad_with, H(t), #pads, pads_buf, code, value)
  end

  -- ---- gather / scatter / index ------------------------------------------------------------

  function methods.gather(t, dim, idx)
    return call1(C.netcl_gather, H(t), dim_of(t, dim, nil, "gather"), H(as_index(t, idx, "gather")), 1)
  end

  -- a number source becomes a 0-dim tensor of t's dtype expanded to the index's shape
  local function source(t, idx, src, op)
    if is_tensor(src) then return src end
    if type(src) ~= "number" then throw(op .. ": the source must be a tensor or a number, got " .. type(src)) end
    local v = call1(C.netcl_tensor_full, C.netcl_tensor_device(H(t)), C.netcl_tensor_dtype(H(t)), 0, no_dims, src)
    return v:expand(idx:size())
  end

  local function scatter(t, dim, idx, src, acc, op)
    local c = dim_of(t, dim, nil, op)
    idx = as_index(t, idx, op)
    return call1(C.netcl_scatter, H(t), c, H(idx), H(source(t, idx, src, op)), acc, 1)
  end
  local function scatter_(t, dim, idx, src, acc, op)
    local c = dim_of(t, dim, nil, op)
    idx = as_index(t, idx, op)
    check(C.netcl_scatter_(H(t), c, H(idx), H(source(t, idx, src, op)), acc, 1))
    return t
  end
  -- scatter(dim, idx, src_or_value): duplicate indices: the last wins on cpu, any one on OpenCL
  function methods.scatter(t, dim, idx, src) return scatter(t, dim, idx, src, 0, "scatter") end
  function methods.scatter_(t, dim, idx, src) return scatter_(t, dim, idx, src, 0, "scatter_") end
  function methods.scatter_add(t, dim, idx, src) return scatter(t, dim, idx, src, 1, "scatter_add") end
  function methods.scatter_add_(t, dim, idx, src) return scatter_(t, dim, idx, src, 1, "scatter_add_") end

  function methods.index_select(t, dim, idx)
    return call1(C.netcl_index_select, H(t), dim_of(t, dim, nil, "index_select"), H(as_index(t, idx, "index_select")), 1)
  end
  function methods.index_add(t, dim, idx, src)
    return call1(C.netcl_index_add, H(t), dim_of(t, dim, nil, "index_add"), H(as_index(t, idx, "index_add")), H(src), 1)
  end
  function methods.index_add_(t, dim, idx, src)
    check(C.netcl_index_add_(H(t), dim_of(t, dim, nil, "index_add_"), H(as_index(t, idx, "index_add_")), H(src), 1))
    return t
  end

  local function mask_value(v, op)
    if type(v) == "boolean" then return v and 1 or 0 end
    if type(v) ~= "number" then throw(op .. ": the value must be a number, got " .. type(v)) end
    return v
  end
  function methods.masked_fill(t, mask, v)
    return call1(C.netcl_masked_fill, H(t), H(mask), mask_value(v, "masked_fill"))
  end
  function methods.masked_fill_(t, mask, v)
    check(C.netcl_masked_fill_(H(t), H(mask), mask_value(v, "masked_fill_")))
    return t
  end
  function methods.masked_select(t, mask) return call1(C.netcl_masked_select, H(t), H(mask)) end
  -- nonzero(): int64 [n, ndim] of 1-based coordinates
  function methods.nonzero(t) return plus1(call1(C.netcl_nonzero, H(t))) end

  -- one_hot(idx, num_classes, dtype = "int64"): 1-based labels; num_classes
  -- defaults to the largest label (which reads idx: synchronises)
  function netcl.one_hot(idx, num_classes, dtype)
    if not is_tensor(idx) then throw("one_hot: the labels must be a tensor, got " .. type(idx)) end
    if num_classes == nil then num_classes = idx:numel() > 0 and idx:max():item() or 0 end
    integer(num_classes, "one_hot: num_classes")
    return call1(C.netcl_one_hot, H(idx), num_classes, dtype_code(dtype or "int64"), 1)
  end

  -- embedding(idx, weight): rows of weight [num, dim] at the 1-based idx
  function netcl.embedding(idx, weight)
    if not is_tensor(idx) then throw("embedding: the indices must be a tensor, got " .. type(idx)) end
    return call1(C.netcl_embedding, H(idx), H(weight), 1)
  end

  -- ---- sort / topk / scans -------------------------------------------------------------------

  local function two(f, ...)
    local st = f(outp, outp2, ...)
    if st ~= 0 then fail(st, f, outp, outp2, ...) end
    return wrap(outp[0]), wrap(outp2[0])
  end

  -- sort(dim = -1, descending = false) -> values, 1-based int64 indices (stable)
  function methods.sort(t, dim, descending)
    if type(dim) == "boolean" then dim, descending = nil, dim end
    local v, i = two(C.netcl_sort, H(t), dim_of(t, dim, -1, "sort"), descending and 1 or 0)
    return v, plus1(i)
  end

  -- topk(k, dim = -1, largest = true, sorted = true) -> values, 1-based indices (always sorted)
  function methods.topk(t, k, dim, largest)
    integer(k, "topk: k")
    if largest == nil then largest = true end
    local v, i = two(C.netcl_topk, H(t), k, dim_of(t, dim, -1, "topk"), largest and 1 or 0)
    return v, plus1(i)
  end

  -- cumsum(dim = 1), cumprod(dim = 1); integer inputs give int64
  function methods.cumsum(t, dim) return call1(C.netcl_cumsum, H(t), dim_of(t, dim, 1, "cumsum")) end
  function methods.cumprod(t, dim) return call1(C.netcl_cumprod, H(t), dim_of(t, dim, 1, "cumprod")) end

  -- ---- random ------------------------------------------------------------------------------------

  -- bernoulli(p_tensor) (p's shape and dtype) or bernoulli(p_number, size, opts)
  function netcl.bernoulli(p, size, opts)
    if is_tensor(p) then return call1(C.netcl_bernoulli, H(p)) end
    if type(p) ~= "number" then throw("bernoulli: p must be a tensor or a number, got " .. type(p)) end
    if not (p >= 0 and p <= 1) then throw(("bernoulli: p must lie in [0, 1], got %s"):format(tostring(p))) end
    if size == nil then throw("bernoulli: a size is needed with a number p") end
    opts = opts or {}
    local u = netcl.rand(size, { device = opts.device, dtype = opts.dtype == "float64" and "float64" or "float32" })
    return u:lt(p):to(opts.dtype or "float32")
  end
  function methods.bernoulli(t) return netcl.bernoulli(t) end

  -- randperm(n, opts): a permutation of 1..n (int64 unless opts.dtype)
  function netcl.randperm(n, opts)
    integer(n, "randperm: n")
    local dev = netcl.device(opts and opts.device).handle
    return plus1(call1(C.netcl_randperm, dev, n, dtype_code((opts and opts.dtype) or "int64")))
  end

  -- multinomial(probs, n, replacement = false): 1-based category indices
  function netcl.multinomial(probs, n, replacement)
    integer(n, "multinomial: n")
    return plus1(call1(C.netcl_multinomial, H(probs), n, replacement and 1 or 0))
  end
  function methods.multinomial(t, n, replacement) return netcl.multinomial(t, n, replacement) end

  for _, name in ipairs({ "split", "chunk", "flip", "pad", "gather", "scatter", "scatter_add", "index_select",
                          "index_add", "masked_fill", "masked_select", "nonzero", "sort", "topk", "cumsum", "cumprod" }) do
    netcl[name] = methods[name]
  end
  netcl.repeat_tensor = methods.repeat_tensor
end
