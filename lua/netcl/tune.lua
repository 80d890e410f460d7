-- netcl/tune.lua — GEMM tuning from Lua: netcl.tune (measure candidate
-- kernel configurations and cache the winners per device), the
-- configuration a problem would use, forcing one, and the cache file;
-- and the convolution strategy the planner picks for a layer.
-- The work is in C (src/backend/cl/gemm_tune.c); this is the table-shaped front.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local C, throw = lib.C, lib.throw
local dtype_code = tensor.dtype_code

return function(netcl, resolve)
  local check = tensor.check

  -- The standard problems `netcl --tune` measures: per dtype, square
  -- products in the layouts training uses (a @ w, x @ w^T, a^T @ g).
  local function standard_shapes(dev)
    local gpu = dev.type == "opencl_gpu"
    local sizes = gpu and { 1024, 4096 } or { 256, 1024 }
    local shapes = {}
    for _, s in ipairs(sizes) do
      shapes[#shapes + 1] = { s, s, s }
      shapes[#shapes + 1] = { s, s, s, trans_b = true }
      if not gpu or s > 1024 then shapes[#shapes + 1] = { s, s, s, trans_a = true } end
    end
    return shapes
  end

  local function device_info(name)
    for _, d in ipairs(netcl.devices()) do if d.name == name then return d end end
  end

  -- netcl.tune{device=, shapes={{m, n, k, trans_a=, trans_b=}, ...}, dtypes={...},
  --            max_candidates=, quiet=} -> list of {shape, dtype, config}
  function netcl.tune(opts)
    opts = opts or {}
    if type(opts) ~= "table" then throw("tune: expects a table of options, got " .. type(opts)) end
    local dev = resolve(opts.device)
    local info = device_info(dev.name)
    local dtypes = opts.dtypes
    if not dtypes then
      dtypes = { "float32" }
      local tc = info and info.tensor_cores or ""
      if tc:find("f16", 1, true) then dtypes[#dtypes + 1] = "float16" end
      if tc:find("bf16", 1, true) then dtypes[#dtypes + 1] = "bfloat16" end
    end
    local report = ffi.new("char[?]", 65536)
    local results = {}
    for _, dt in ipairs(dtypes) do
      for _, s in ipairs(opts.shapes or standard_shapes(info or {})) do
        local m, n, k = s[1], s[2] or s[1], s[3] or s[1]
        check(C.netcl_tune_gemm(dev.handle, dtype_code(dt), m, n, k, s.trans_a and 1 or 0, s.trans_b and 1 or 0,
          opts.max_candidates or 0, report, 65536))
        local text = ffi.string(report)
        if not opts.quiet then io.write(text) end
        results[#results + 1] = { shape = { m, n, k, trans_a = s.trans_a, trans_b = s.trans_b }, dtype = dt,
          config = netcl.gemm_config(m, n, k, { device = dev, dtype = dt, trans_a = s.trans_a, trans_b = s.trans_b }),
          report = text }
      end
    end
    return results
  end

  -- The configuration a GEMM of that problem uses on the device, and why.
  function netcl.gemm_config(m, n, k, opts)
    opts = opts or {}
    local dev = resolve(opts.device)
    local buf = ffi.new("char[512]")
    check(C.netcl_gemm_config(dev.handle, dtype_code(opts.dtype or "float32"), m, n, k, opts.trans_a and 1 or 0,
      opts.trans_b and 1 or 0, buf, 512))
    return ffi.string(buf)
  end

  -- The strategies a convolution of input sizes x [N, C, H, W] and weight
  -- sizes w [O, C/groups, kh, kw] runs on the device: forward,
  -- backward-data, backward-weight (opts: device, dtype, stride, padding,
  -- dilation, groups as F.conv2d's).
  function netcl.conv2d_strategy(x, w, opts)
    opts = opts or {}
    if type(x) ~= "table" or #x ~= 4 or type(w) ~= "table" or #w ~= 4 then
      throw("conv2d_strategy: expects the sizes of x {N, C, H, W} and of w {O, C/groups, kh, kw}")
    end
    local function pair(v, d)
      v = v == nil and d or v
      if type(v) == "number" then return ffi.new("int64_t[2]", v, v) end
      return ffi.new("int64_t[2]", v[1], v[2])
    end
    local dev = resolve(opts.device)
    local xs, ws = ffi.new("int64_t[4]", x), ffi.new("int64_t[4]", w)
    local st, pd, dl = pair(opts.stride, 1), pair(opts.padding, 0), pair(opts.dilation, 1)
    local buf, names = ffi.new("char[64]"), {}
    for pass = 0, 2 do
      check(C.netcl_conv2d_strategy(dev.handle, dtype_code(opts.dtype or "float32"), xs, ws, st, pd, dl, opts.groups or 1,
        pass, buf, 64))
      names[pass + 1] = ffi.string(buf)
    end
    return names[1], names[2], names[3]
  end

  -- Forces a convolution strategy by name wherever it applies (nil or
  -- "auto": the planner again); takes precedence over NETCL_CONV_ALGO.
  function netcl.set_conv_algo(name)
    if name ~= nil and type(name) ~= "string" then throw("set_conv_algo: expects a strategy name or nil") end
    check(C.netcl_set_conv_algo(name))
  end

  -- Forces a configuration on the device (nil: automatic again).
  function netcl.gemm_set_config(config, device)
    check(C.netcl_gemm_set_config(resolve(device).handle, config))
  end

  function netcl.tune_cache_path(device) return ffi.string(C.netcl_tune_cache_path(resolve(device).handle)) end
  -- Reads the cache file again; returns why it was ignored, or nil.
  function netcl.tune_cache_reload(device)
    local note = ffi.string(C.netcl_tune_cache_reload(resolve(device).handle))
    return note ~= "" and note or nil
  end

  -- netcl.backends.fp32_precision: how float32 GEMMs and the convolutions
  -- built on them multiply, like torch.backends.cuda.matmul.fp32_precision:
  -- "ieee" (default), "tf32x3" (tensor cores, near-float32 accuracy) or
  -- "tf32". netcl.backends.allow_tf32 = true/false is "tf32"/"ieee" (like
  -- torch.backends.cuda.matmul.allow_tf32).
  -- netcl.backends.conv_workspace_limit: the most bytes of scratch a
  -- convolution strategy may take for one pass (nil: an eighth of the
  -- device's memory); past it the planner takes implicit GEMM.
  netcl.backends = setmetatable({}, {
    __index = function(_, key)
      if key == "allow_tf32" then return C.netcl_get_allow_tf32() ~= 0 end
      if key == "fp32_precision" then return ffi.string(C.netcl_get_fp32_precision()) end
      if key == "conv_workspace_limit" then
        local l = tonumber(C.netcl_conv_workspace_limit())
        return l >= 0 and l or nil
      end
    end,
    __newindex = function(_, key, value)
      if key == "conv_workspace_limit" then
        if value ~= nil and (type(value) ~= "number" or value < 0 or value ~= math.floor(value)) then
          throw("netcl.backends.conv_workspace_limit: expected a whole number of bytes >= 0 or nil, got " .. tostring(value))
        end
        C.netcl_set_conv_workspace_limit(value or -1)
      elseif key == "allow_tf32" then
        C.netcl_set_allow_tf32(value and 1 or 0)
      elseif key == "fp32_precision" then
        if type(value) ~= "string" or C.netcl_set_fp32_precision(value) ~= 0 then
          throw("netcl.backends.fp32_precision: expected \"ieee\", \"tf32x3\" or \"tf32\", got " .. tostring(value))
        end
      else
        throw("netcl.backends has no setting " .. tostring(key))
      end
    end,
  })
end
