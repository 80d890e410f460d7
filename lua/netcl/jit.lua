-- netcl/jit.lua — capture and replay from Lua (src/jit/, docs/jit.md).
--   netcl.compile(step, ...) captures a whole training step run with the
--     example arguments and returns a function that replays it: tensor
--     arguments are copied into the captured inputs, optimizers' steps take
--     their next hyper-parameters, and the step's results (the captured
--     tensors) hold the new values; each call overwrites the last call's.
--   netcl.jit(fn) traces fn once per signature (the arguments' dtypes,
--     shapes, strides and devices, and every other argument's value) and
--     replays the fused program after that, returning fresh results.
-- A step that reads device values on the host, uploads host data or
-- augments data inside cannot be replayed: capturing it raises the reason.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local core = require("netcl.core")
local optim_base = require("netcl.optim.optimizer")
local C, throw = lib.C, lib.throw
local H, is_tensor = tensor.handle, tensor.is_tensor

local M = {}

local function check(st, what)
  if st ~= 0 then throw(what .. ": " .. ffi.string(C.netcl_last_error()), 3) end
end

local function pack(...) return { n = select("#", ...), ... } end

-- the device a step runs on: opts.device, else its first tensor argument's
local function step_device(args, opts)
  if opts.device then return core.device(opts.device) end
  for i = 1, args.n do
    if is_tensor(args[i]) then return core.device(args[i].device) end
  end
  return core.default_device()
end

-- Runs fn(args) under a capture on dev; returns the program, the results
-- and the host work of its optimizer and scheduler steps (in order). fuse = false keeps every
-- kernel as it ran.
local function capture(what, fn, args, dev, fuse)
  if C.netcl_capturing() ~= 0 then throw(what .. ": a capture is already running (captures do not nest)", 3) end
  collectgarbage("collect")
  check(C.netcl_capture_begin(dev.handle), what)
  local stepped = {}
  optim_base.recorder = function(redo) stepped[#stepped + 1] = redo end
  local ok, results = pcall(function() return pack(fn(unpack(args, 1, args.n))) end)
  optim_base.recorder = nil
  -- temporaries the step dropped are freed, so the fusion pass sees that
  -- nothing else holds their buffers
  collectgarbage("collect")
  collectgarbage("collect")
  local box = ffi.new("netcl_program *[1]")
  local st = C.netcl_capture_end(box, fuse == false and 0 or 1)
  if not ok then
    if st == 0 then C.netcl_program_release(box[0]) end
    error(results, 0)
  end
  check(st, what)
  return ffi.gc(box[0], C.netcl_program_release), results, stepped
end

-- The hyper-parameters of the optimizers' next steps, for the program's
-- optimizer steps in order: the step's optimizer and scheduler steps are
-- redone in their order, the optimizers' launches only collected (step
-- counts and learning rates move on as in eager training).
local function next_hyper(prog, stepped)
  if #stepped == 0 then return end
  local collected = {}
  optim_base.collector = collected
  local ok, err = pcall(function()
    for _, redo in ipairs(stepped) do redo() end
  end)
  optim_base.collector = nil
  if not ok then error(err, 0) end
  local want = C.netcl_program_optim_steps(prog)
  if #collected ~= want then
    throw(("compiled step: the optimizers now make %d updates a step, the capture made %d (compile again)")
      :format(#collected, want), 3)
  end
  for k, h in ipairs(collected) do check(C.netcl_program_set_optim_hyper(prog, k - 1, h, C.NETCL_OPTIM_NHYPER), "compiled step") end
end

-- The tensors a capture runs on, put in their places in args: copies of
-- the arguments (one copy for an argument passed twice), except that with
-- `own` an argument that is the whole of its storage is used as it is (a
-- binding then points later calls at theirs). Arguments that need
-- gradients are refused: a program's gradients flow to the tensors the
-- step closes over (parameters), never to its arguments.
local function capture_inputs(what, args, own)
  local inputs = {}
  for i = 1, args.n do
    local a = args[i]
    if is_tensor(a) then
      if a.requires_grad then
        throw(("%s: argument %d (%s %s) requires grad; pass data as arguments and keep parameters in the step's upvalues")
          :format(what, i, a.dtype, table.concat(a:size(), "x")), 4)
      end
      for j = 1, i - 1 do
        if rawequal(a, args[j]) and inputs[j] then inputs[i] = inputs[j] end
      end
      if not inputs[i] then
        inputs[i] = (own and C.netcl_tensor_is_whole(H(a)) ~= 0) and a or a:clone()
      end
    end
  end
  for i, t in pairs(inputs) do args[i] = t end
  return inputs
end

-- A compiled training step: see the header. opts: device, fuse (default
-- true), warmup (eager runs before the capture, default 1: lazily made
-- state such as optimizer buffers must exist before it).
function M.compile(step, ...)
  if type(step) ~= "function" then throw("compile: expected a function, got " .. type(step), 2) end
  local args, opts = pack(...), {}
  if args.n > 0 and type(args[args.n]) == "table" and not is_tensor(args[args.n]) and args[args.n].compile_options then
    opts = args[args.n]
    args.n = args.n - 1
  end
  local dev = step_device(args, opts)
  for _ = 1, opts.warmup or 1 do step(unpack(args, 1, args.n)) end
  -- private copies of the tensor arguments: later calls copy theirs in
  local inputs = capture_inputs("compile", args, false)
  local prog, results, stepped = capture("compile", step, args, dev, opts.fuse)
  local compiled = { program = prog, captured_kernels = C.netcl_program_captured_steps(prog),
                     kernels = C.netcl_program_steps(prog), describe = M.describe, results = results }
  return setmetatable(compiled, {
    __call = function(_, ...)
      local now = pack(...)
      for i, t in pairs(inputs) do
        local a = now[i]
        if not is_tensor(a) then throw(("compiled step: argument %d must be a tensor, got %s"):format(i, type(a)), 2) end
        if a ~= t then t:copy_(a) end
      end
      next_hyper(prog, stepped)
      check(C.netcl_program_run(prog), "compiled step")
      return unpack(results, 1, results.n)
    end,
  })
end

-- The kernels a replay of a compiled step (or of a program) launches, one per line.
function M.describe(compiled)
  local prog = type(compiled) == "table" and compiled.program or compiled
  local n = C.netcl_program_describe(prog, nil, 0)
  local buf = ffi.new("char[?]", n)
  C.netcl_program_describe(prog, buf, n)
  return ffi.string(buf)
end

-- ---- netcl.jit -------------------------------------------------------------------

local function signature(args)
  local parts = {}
  for i = 1, args.n do
    local a = args[i]
    if is_tensor(a) then
      local s = a:size()
      local st = {}
      for d = 1, #s do st[d] = a:stride(d) end
      -- arguments sharing storage trace apart from distinct ones
      local alias = 0
      for j = 1, i - 1 do
        if alias == 0 and is_tensor(args[j]) and a:shares_storage(args[j]) then alias = j end
      end
      parts[i] = ("T%s:%s:%s:%s:%d"):format(a.dtype, table.concat(s, ","), table.concat(st, ","), a.device, alias)
    else
      parts[i] = type(a) .. ":" .. tostring(a)
    end
  end
  return table.concat(parts, "|")
end

-- Bindings of a trace: an input is read where the caller's tensor lies
-- (no copy); a result the capture made and nothing else holds is written
-- into a fresh tensor each call, any other result is copied out after the
-- run (a parameter, a gradient or a view). nil when a result views an
-- input: the function then runs eagerly for this signature.
local function bind(prog, t, result)
  local id = ffi.new("int[1]")
  if C.netcl_program_bind(prog, H(t), result and 1 or 0, id) ~= 0 then return nil end
  return id[0]
end

local function trace_bindings(prog, inputs, results)
  -- results: the captured tensors, or for bound ones their shape (the caller may free the tensor)
  local tr = { program = prog, input_id = {}, copy_in = {}, results = { n = results.n }, result_id = {}, same = {} }
  for j = 1, results.n do tr.results[j] = results[j] end
  for j = 1, results.n do
    local r = results[j]
    if is_tensor(r) then
      for i, t in pairs(inputs) do
        if rawequal(r, t) then tr.same[j] = -i
        elseif r:shares_storage(t) then return nil end
      end
      for k = 1, j - 1 do
        if not tr.same[j] and rawequal(r, results[k]) then tr.same[j] = k end
      end
      if not tr.same[j] then
        tr.result_id[j] = bind(prog, r, true)
        if tr.result_id[j] then tr.results[j] = { size = r:size(), dtype = r.dtype, device = r.device } end
      end
    end
  end
  for i, t in pairs(inputs) do
    tr.input_id[i] = bind(prog, t, false)
    if not tr.input_id[i] then tr.copy_in[i] = t end   -- a clone of a view: later arguments are copied in
  end
  return tr
end

local function replay(tr, args)
  local prog = tr.program
  for i, id in pairs(tr.input_id) do check(C.netcl_program_rebind(prog, id, H(args[i])), "jit") end
  for i, t in pairs(tr.copy_in) do t:copy_(args[i]) end
  local out = {}
  for j, id in pairs(tr.result_id) do
    local r = tr.results[j]
    out[j] = core.empty(r.size, { dtype = r.dtype, device = r.device })
    check(C.netcl_program_rebind(prog, id, H(out[j])), "jit")
  end
  check(C.netcl_program_run(prog), "jit")
  for j = 1, tr.results.n do
    local r, same = tr.results[j], tr.same[j]
    if same then out[j] = same < 0 and args[-same] or out[same]
    elseif not tr.result_id[j] then out[j] = is_tensor(r) and r:clone() or r end
  end
  return unpack(out, 1, tr.results.n)
end

-- A traced function: see the header. opts: fuse (default true).
function M.jit(fn, opts)
  if type(fn) ~= "function" then throw("jit: expected a function, got " .. type(fn), 2) end
  opts = opts or {}
  local traces = {}
  local function call(...)
    local args = pack(...)
    local key = signature(args)
    local tr = traces[key]
    if tr == "eager" then return fn(...) end
    if tr then return replay(tr, args) end
    -- the first call of this signature runs under a capture
    local inputs = capture_inputs("jit", args, true)
    local prog, results = capture("jit", fn, args, step_device(args, opts), opts.fuse)
    local tr = trace_bindings(prog, inputs, results)
    traces[key] = tr or "eager"
    -- results the replays copy out stay the program's: the caller gets copies
    for j = 1, results.n do
      if tr and is_tensor(results[j]) and not tr.same[j] and not tr.result_id[j] then results[j] = results[j]:clone() end
    end
    return unpack(results, 1, results.n)
  end
  return call
end

return M
