-- netcl/kernel.lua — netcl.kernel: a program's own OpenCL C kernels,
-- compiled and cached like netcl's (docs/custom-ops.md). Each tensor
-- argument reaches the kernel as two parameters, its buffer and its offset
-- in elements (long); scalars are written {int = n}, {long = n},
-- {float = x} or {double = x}. With autograd.Function a kernel pair
-- becomes an op with a gradient.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local core = require("netcl.core")
local C, throw = lib.C, lib.throw

local M = {}
local Kernel = {}
Kernel.__index = Kernel
Kernel.__tostring = function(k) return ("netcl.kernel %s on %s"):format(k.name, k.device) end

local SCALARS = { int = C.NETCL_ARG_INT, long = C.NETCL_ARG_LONG, float = C.NETCL_ARG_FLOAT, double = C.NETCL_ARG_DOUBLE }

-- kernel(source, name, {device=default, options=""}) -> a kernel; compiling
-- happens here, so a build error (with the compiler's log) shows at once
function M.kernel(source, name, opts)
  lib.typed("netcl.kernel", "source", source, "string")
  lib.typed("netcl.kernel", "name", name, "string")
  opts = opts or {}
  if type(opts) ~= "table" then throw("netcl.kernel: options must be a table, got " .. type(opts), 2) end
  for k in pairs(opts) do
    if k ~= "device" and k ~= "options" then throw(("netcl.kernel: unknown option '%s' (device, options)"):format(tostring(k)), 2) end
  end
  local dev = core.device(opts.device)
  local out = ffi.new("netcl_kernel *[1]")
  local st = C.netcl_kernel_create(out, dev.handle, source, name, opts.options or "")
  if st ~= 0 then throw(ffi.string(C.netcl_last_error()), 2) end
  return setmetatable({ h = ffi.gc(out[0], C.netcl_kernel_release), name = name, device = dev.name }, Kernel)
end

-- k:launch(global, args...) or k:launch({global = {x, y}, local_size = {..}}, args...)
function Kernel:launch(size, ...)
  local global, loc = size, nil
  if type(size) == "table" and (size.global or size.local_size) then global, loc = size.global, size.local_size end
  if type(global) == "number" then global = { global } end
  if type(global) ~= "table" or #global < 1 or #global > 3 then
    throw(("kernel %s: the launch size must be a number or a list of 1 to 3 numbers"):format(self.name), 2)
  end
  local n = select("#", ...)
  local kinds, ts, vals = ffi.new("netcl_kernel_arg[?]", math.max(n, 1)), ffi.new("netcl_tensor *[?]", math.max(n, 1)),
    ffi.new("double[?]", math.max(n, 1))
  local keep = {}
  for i = 1, n do
    local a = select(i, ...)
    if tensor.is_tensor(a) then
      kinds[i - 1], ts[i - 1] = C.NETCL_ARG_TENSOR, tensor.handle(a)
      keep[#keep + 1] = a
    elseif type(a) == "table" then
      local kind, v = next(a)
      if not SCALARS[kind] or type(v) ~= "number" or next(a, kind) ~= nil then
        throw(("kernel %s: argument %d must be a tensor or one of {int = n}, {long = n}, {float = x}, {double = x}"):format(self.name, i), 2)
      end
      kinds[i - 1], vals[i - 1] = SCALARS[kind], v
    else
      throw(("kernel %s: argument %d is a %s; scalars are written {int = n}, {float = x}, ..."):format(self.name, i, type(a)), 2)
    end
  end
  local g = ffi.new("int64_t[3]")
  for d = 1, #global do g[d - 1] = global[d] end
  local l
  if loc then
    l = ffi.new("int64_t[3]")
    for d = 1, #global do l[d - 1] = loc[d] or 1 end
  end
  local st = C.netcl_kernel_launch(self.h, n, kinds, ts, vals, #global, g, l)
  if st ~= 0 then throw(ffi.string(C.netcl_last_error()), 2) end
  return keep[1]
end
Kernel.__call = Kernel.launch

return M
