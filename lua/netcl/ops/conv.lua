-- netcl/ops/conv.lua — unfold/fold, convolutions and 2-D pooling with
-- PyTorch's arguments in an options table: sizes are a number or an
-- {h, w} pair. conv2d and the pools also take an unbatched [C, H, W] input.
local ffi = require("ffi")
local tensor = require("netcl.tensor")
local lib = require("netcl.lib")
local C, throw = lib.C, lib.throw
local H, call1, is_tensor, wrap = tensor.handle, tensor.call1, tensor.is_tensor, tensor.wrap

local bufs = {}
for i = 1, 5 do bufs[i] = ffi.new("int64_t[2]") end
local outp, outp2 = ffi.new("netcl_tensor *[1]"), ffi.new("netcl_tensor *[1]")

-- a number or {h, w} into bufs[slot]
local function pair(v, default, what, op, slot)
  if v == nil then v = default end
  local b = bufs[slot]
  if type(v) == "number" then b[0], b[1] = v, v
  elseif type(v) == "table" and #v == 2 and type(v[1]) == "number" and type(v[2]) == "number" then b[0], b[1] = v[1], v[2]
  else throw(("%s: %s must be a number or an {h, w} pair, got %s"):format(op, what, tostring(v))) end
  -- sizes are whole numbers: 1.5 would be truncated on the way to C
  for _, x in ipairs(type(v) == "table" and v or { v }) do
    if x ~= math.floor(x) or x ~= x or math.abs(x) >= 2 ^ 31 then
      throw(("%s: %s must hold integers, got %s"):format(op, what, type(v) == "table" and ("{%s, %s}"):format(tostring(v[1]), tostring(v[2])) or tostring(v)))
    end
  end
  return b
end

local KNOWN = { stride = true, padding = true, dilation = true, groups = true, act = true, slope = true,
                output_padding = true, ceil_mode = true, return_indices = true, count_include_pad = true,
                divisor_override = true }
local function opts_of(o, op)
  if o ~= nil and type(o) ~= "table" then throw(op .. ": options must be a table, got " .. type(o)) end
  for k in pairs(o or {}) do
    if not KNOWN[k] then throw(("%s: unknown option '%s'"):format(op, tostring(k))) end
  end
  return o or {}
end

-- runs f on a 4-D view of x (adding the batch dim of a 3-D input)
local function batched(x, op, f)
  if not tensor.is_tensor(x) then throw(("%s: the input must be a tensor, got %s"):format(op, type(x))) end
  local nd = x:dim()
  if nd == 3 then return f(x:unsqueeze(1)):squeeze(1) end
  if nd ~= 4 then throw(("%s: expects a [N, C, H, W] or [C, H, W] input, got %d dims"):format(op, nd)) end
  return f(x)
end

return function(netcl, methods)
  function netcl.unfold(x, kernel, o)
    o = opts_of(o, "unfold")
    return call1(C.netcl_unfold, H(x), pair(kernel, nil, "kernel_size", "unfold", 1), pair(o.dilation, 1, "dilation", "unfold", 2),
                 pair(o.padding, 0, "padding", "unfold", 3), pair(o.stride, 1, "stride", "unfold", 4))
  end
  function netcl.fold(cols, size, kernel, o)
    o = opts_of(o, "fold")
    return call1(C.netcl_fold, H(cols), pair(size, nil, "output_size", "fold", 5), pair(kernel, nil, "kernel_size", "fold", 1),
                 pair(o.dilation, 1, "dilation", "fold", 2), pair(o.padding, 0, "padding", "fold", 3),
                 pair(o.stride, 1, "stride", "fold", 4))
  end

  local function bias(b, op)
    if b ~= nil and not is_tensor(b) then throw(op .. ": bias must be a tensor or nil, got " .. type(b)) end
    return b and H(b) or nil
  end

  -- conv2d(x, w, b, {stride = 1, padding = 0, dilation = 1, groups = 1, act = nil, slope = 0.01}):
  -- act ("relu", "sigmoid", "tanh", "silu", "gelu", "gelu_tanh", "relu6",
  -- "leaky_relu" with slope) is fused into the convolution's kernels when
  -- nothing records a gradient
  function netcl.conv2d(x, w, b, o)
    o = opts_of(o, "conv2d")
    if not is_tensor(x) then throw("conv2d: the input must be a tensor, got " .. type(x)) end
    if not is_tensor(w) then throw("conv2d: the weight must be a tensor, got " .. type(w)) end
    local bh, act = bias(b, "conv2d"), lib.fused_act(o, "conv2d")
    return batched(x, "conv2d", function(x4)
      return call1(C.netcl_conv2d_act, H(x4), H(w), bh, pair(o.stride, 1, "stride", "conv2d", 1),
                   pair(o.padding, 0, "padding", "conv2d", 2), pair(o.dilation, 1, "dilation", "conv2d", 3),
                   lib.integer("conv2d", "groups", o.groups or 1, 1),
                   act, o.slope or 0.01)
    end)
  end
  function netcl.conv1d(x, w, b, o)
    o = opts_of(o, "conv1d")
    local function int(v, d, what) return lib.integer("conv1d", what, v == nil and d or v, 0) end
    return call1(C.netcl_conv1d, H(x), H(w), bias(b, "conv1d"), int(o.stride, 1, "stride"), int(o.padding, 0, "padding"),
                 int(o.dilation, 1, "dilation"), int(o.groups, 1, "groups"))
  end
  -- conv_transpose2d(x, w, b, {stride, padding, output_padding, dilation, groups, act, slope})
  function netcl.conv_transpose2d(x, w, b, o)
    o = opts_of(o, "conv_transpose2d")
    local bh, op = bias(b, "conv_transpose2d"), "conv_transpose2d"
    local act = lib.fused_act(o, op)
    return batched(x, op, function(x4)
      return call1(C.netcl_conv_transpose2d_act, H(x4), H(w), bh, pair(o.stride, 1, "stride", op, 1),
                   pair(o.padding, 0, "padding", op, 2), pair(o.output_padding, 0, "output_padding", op, 3),
                   pair(o.dilation, 1, "dilation", op, 4), o.groups or 1, act, o.slope or 0.01)
    end)
  end

  -- max_pool2d(x, kernel, {stride = kernel, padding = 0, dilation = 1, ceil_mode, return_indices})
  -- indices are 1-based positions h*W + w + 1 within each plane
  function netcl.max_pool2d(x, kernel, o)
    o = opts_of(o, "max_pool2d")
    local idx
    local out = batched(x, "max_pool2d", function(x4)
      local k = pair(kernel, nil, "kernel_size", "max_pool2d", 1)
      local f, args = C.netcl_max_pool2d, { H(x4), k, pair(o.stride, kernel, "stride", "max_pool2d", 2),
        pair(o.padding, 0, "padding", "max_pool2d", 3), pair(o.dilation, 1, "dilation", "max_pool2d", 4), o.ceil_mode and 1 or 0 }
      -- indices only when asked for: a wrapped index tensor nobody reads
      -- holds its buffer until the next collection (a fresh driver
      -- allocation per call until then)
      local st = f(outp, o.return_indices and outp2 or nil, unpack(args))
      if st ~= 0 then lib.fail(st, nil) end
      local v = wrap(outp[0])
      if o.return_indices then
        local i = wrap(outp2[0])
        idx = (x:dim() == 3) and i:squeeze(1) or i
      end
      return v
    end)
    if o.return_indices then return out, idx + 1 end
    return out
  end

  -- avg_pool2d(x, kernel, {stride = kernel, padding = 0, ceil_mode, count_include_pad = true, divisor_override})
  function netcl.avg_pool2d(x, kernel, o)
    o = opts_of(o, "avg_pool2d")
    return batched(x, "avg_pool2d", function(x4)
      return call1(C.netcl_avg_pool2d, H(x4), pair(kernel, nil, "kernel_size", "avg_pool2d", 1),
                   pair(o.stride, kernel, "stride", "avg_pool2d", 2), pair(o.padding, 0, "padding", "avg_pool2d", 3),
                   o.ceil_mode and 1 or 0, o.count_include_pad == false and 0 or 1, o.divisor_override or 0)
    end)
  end

  function netcl.adaptive_avg_pool2d(x, size)
    return batched(x, "adaptive_avg_pool2d", function(x4)
      return call1(C.netcl_adaptive_avg_pool2d, H(x4), pair(size, nil, "output_size", "adaptive_avg_pool2d", 1))
    end)
  end

  for _, name in ipairs({ "unfold", "conv2d", "conv1d", "conv_transpose2d", "max_pool2d", "avg_pool2d",
                          "adaptive_avg_pool2d" }) do
    local f = netcl[name]
    methods[name] = function(x, ...) return f(x, ...) end
  end
end
