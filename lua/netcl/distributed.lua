-- netcl/distributed.lua — collectives and data-parallel training
-- (docs/distributed.md). init joins the job the launcher started
-- (`netcl --nproc N` for shared memory on one host, `mpirun` for MPI);
-- the collectives run in C (src/dist/) on tensors of any device and dtype,
-- in place; DistributedDataParallel all-reduces gradients in buckets while
-- backward is still running. Ranks count from 0, as in MPI.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local core = require("netcl.core")
local nn = require("netcl.nn")
local sampler = require("netcl.data.sampler")
local C, throw = lib.C, lib.throw
local H, is_tensor = tensor.handle, tensor.is_tensor

pcall(ffi.cdef, "int getpid(void);")

local M = {}
local OPS = lib.enum("netcl_dist_op", "NETCL_DIST_")
local state = { comm = nil }

local function check(st)
  if st ~= 0 then error(ffi.string(C.netcl_last_error()), 3) end
end

local function comm(what)
  if not state.comm then throw(("distributed.%s: call distributed.init first"):format(what), 3) end
  return state.comm
end

local function env_int(name)
  local v = os.getenv(name)
  return v and tonumber(v)
end

-- The launcher's environment: netcl --nproc sets NETCL_*, mpirun OMPI_*.
local function from_env()
  if os.getenv("NETCL_RANK") then
    return { backend = os.getenv("NETCL_DIST_BACKEND") or "shm", rank = env_int("NETCL_RANK"),
             world = env_int("NETCL_WORLD_SIZE"), local_rank = env_int("NETCL_LOCAL_RANK"), name = os.getenv("NETCL_DIST_NAME") }
  elseif os.getenv("OMPI_COMM_WORLD_RANK") or os.getenv("PMIX_RANK") then
    return { backend = "mpi" }
  end
  return { backend = "shm", rank = 0, world = 1 }
end

-- init{backend="shm"|"mpi", timeout=seconds, device_per_rank=true}: joins
-- the job. Without a launcher it is a world of one. Returns the module.
function M.init(opts)
  opts = opts or {}
  if type(opts) ~= "table" then throw("distributed.init: options must be a table, got " .. type(opts), 2) end
  for k in pairs(opts) do
    if k ~= "backend" and k ~= "timeout" and k ~= "device_per_rank" and k ~= "name" then
      throw(("distributed.init: unknown option '%s' (backend, timeout, device_per_rank, name)"):format(tostring(k)), 2)
    end
  end
  if state.comm then throw("distributed.init: already initialised (call distributed.finalize first)", 2) end
  local env = from_env()
  local backend = opts.backend or env.backend
  if backend ~= "shm" and backend ~= "mpi" then
    throw(("distributed.init: backend must be 'shm' or 'mpi', got %s"):format(tostring(backend)), 2)
  end
  local timeout = opts.timeout or env_int("NETCL_DIST_TIMEOUT") or 300
  lib.finite("distributed.init", "timeout", timeout)
  local name = opts.name or env.name or ("netcl-" .. ffi.C.getpid())
  local out = ffi.new("netcl_comm *[1]")
  check(C.netcl_comm_init(out, backend == "mpi" and C.NETCL_DIST_MPI or C.NETCL_DIST_SHM, name, env.rank or 0,
    env.world or 1, timeout))
  state.comm = ffi.gc(out[0], C.netcl_comm_release)
  state.backend = backend
  -- one GPU per rank: ranks of a host share its GPUs round robin
  if opts.device_per_rank ~= false then
    local gpus = {}
    for _, d in ipairs(core.devices()) do if d.type == "opencl_gpu" then gpus[#gpus + 1] = d.name end end
    if #gpus > 1 then core.set_default_device(gpus[M.local_rank() % #gpus + 1]) end
  end
  return M
end

function M.is_initialized() return state.comm ~= nil end
function M.backend() return state.backend end
function M.rank() return state.comm and C.netcl_comm_rank(state.comm) or 0 end
function M.world_size() return state.comm and C.netcl_comm_size(state.comm) or 1 end
function M.local_rank() return state.comm and C.netcl_comm_local_rank(state.comm) or 0 end

-- Finishes queued work and leaves the job (MPI: MPI_Finalize). Idempotent.
function M.finalize()
  if state.comm then
    local c = ffi.gc(state.comm, nil)
    state.comm = nil
    C.netcl_comm_release(c)
  end
end

-- ---- handles ---------------------------------------------------------------

local Work = {}
Work.__index = Work

-- Waits for the collective; the outputs hold the result afterwards.
function Work:wait()
  if self.h ~= nil then
    local h = self.h
    self.h = nil
    check(C.netcl_dist_wait(ffi.gc(h, nil)))
    if self.after then self.after() end
  end
  return self.result
end
function Work:is_completed() return self.h == nil or C.netcl_dist_done(self.h) ~= 0 end

-- a dropped handle still finishes (its tensors stay alive until then)
local function finish_dropped(h) C.netcl_dist_wait(h) end

local function run(opts, start, result, after)
  local async = type(opts) == "table" and opts.async
  if async then
    local out = ffi.new("netcl_dist_work *[1]")
    check(start(out))
    return setmetatable({ h = ffi.gc(out[0], finish_dropped), result = result, after = after }, Work)
  end
  check(start(nil))
  if after then after() end
  return result
end

local function op_code(op, what)
  op = op or "sum"
  local code = OPS[op]
  if not code then
    throw(("distributed.%s: op must be one of sum, avg, max, min, product, got %s"):format(what, tostring(op)), 3)
  end
  return code
end

local function need(t, what, name)
  if not is_tensor(t) then throw(("distributed.%s: %s must be a tensor, got %s"):format(what, name, type(t)), 3) end
  return t
end

local function root_of(root, what)
  root = root or 0
  return lib.integer("distributed." .. what, "root", root, 0)
end

-- a list of world tensors becomes one flat tensor (and back, `after`)
local function flat_of(list, what, name, like)
  if is_tensor(list) then return list, nil end
  if type(list) ~= "table" or #list ~= M.world_size() then
    throw(("distributed.%s: %s must be a tensor or a list of world_size (%d) tensors"):format(what, name, M.world_size()), 3)
  end
  local n = like:numel()
  local flat = core.empty({ n * #list }, { dtype = like.dtype, device = like.device })
  local function view(i) return flat:narrow(1, (i - 1) * n + 1, n):view(list[i]:size()) end
  return flat, function(copy_in)
    for i, t in ipairs(list) do
      need(t, what, name .. "[" .. i .. "]")
      if t:numel() ~= n then
        throw(("distributed.%s: %s[%d] has %d elements, the tensor %d"):format(what, name, i, t:numel(), n), 4)
      end
      if copy_in then view(i):copy_(t) else t:copy_(view(i)) end
    end
  end
end

-- all_reduce(t, op="sum", {async=true}) in place on every rank
function M.all_reduce(t, op, opts)
  need(t, "all_reduce", "the tensor")
  local code, c = op_code(op, "all_reduce"), comm("all_reduce")
  return run(opts, function(w) return C.netcl_dist_all_reduce(c, H(t), code, w) end, t)
end

-- broadcast(t, root=0): root's values into t on every rank
function M.broadcast(t, root, opts)
  need(t, "broadcast", "the tensor")
  local r, c = root_of(root, "broadcast"), comm("broadcast")
  return run(opts, function(w) return C.netcl_dist_broadcast(c, H(t), r, w) end, t)
end

-- all_gather(out, t): out (a tensor of world*numel(t) elements, or a list
-- of world tensors) gets every rank's t in rank order
function M.all_gather(out, t, opts)
  need(t, "all_gather", "the tensor")
  local c = comm("all_gather")
  local flat, unpack = flat_of(out, "all_gather", "out", t)
  return run(opts, function(w) return C.netcl_dist_all_gather(c, H(flat), H(t), w) end, out,
    unpack and function() unpack(false) end)
end

-- gather(t, out, root=0): as all_gather, on root only (out nil elsewhere)
function M.gather(t, out, root, opts)
  need(t, "gather", "the tensor")
  local r, c = root_of(root, "gather"), comm("gather")
  local flat, unpack
  if M.rank() == r then flat, unpack = flat_of(out, "gather", "out", t) end
  return run(opts, function(w) return C.netcl_dist_gather(c, flat and H(flat) or nil, H(t), r, w) end, out,
    unpack and function() unpack(false) end)
end

-- scatter(t, input, root=0): t of rank k gets slice k of root's input (a
-- tensor of world*numel(t) elements, or a list of world tensors)
function M.scatter(t, input, root, opts)
  need(t, "scatter", "the tensor")
  local r, c = root_of(root, "scatter"), comm("scatter")
  local flat
  if M.rank() == r then
    local fill
    flat, fill = flat_of(input, "scatter", "input", t)
    if fill then fill(true) end
  end
  return run(opts, function(w) return C.netcl_dist_scatter(c, H(t), flat and H(flat) or nil, r, w) end, t)
end

-- reduce_scatter(out, input, op="sum"): out of rank k = the reduction over
-- ranks of slice k of input (world*numel(out) elements, or a list)
function M.reduce_scatter(out, input, op, opts)
  need(out, "reduce_scatter", "out")
  local code, c = op_code(op, "reduce_scatter"), comm("reduce_scatter")
  local flat, fill = flat_of(input, "reduce_scatter", "input", out)
  if fill then fill(true) end
  return run(opts, function(w) return C.netcl_dist_reduce_scatter(c, H(out), H(flat), code, w) end, out)
end

function M.barrier()
  check(C.netcl_dist_barrier(comm("barrier")))
end

-- ---- gradients and parameters ------------------------------------------------------

local function param_list(p, what)
  if nn.is_module(p) then return p:parameters() end
  if type(p) ~= "table" then throw(("distributed.%s: expected a module or a list of tensors, got %s"):format(what, type(p)), 3) end
  return p
end

-- groups of tensors sharing a device and dtype, in order
local function groups_of(list)
  local groups, by = {}, {}
  for _, t in ipairs(list) do
    local key = t.device .. "/" .. t.dtype
    if not by[key] then
      by[key] = { device = t.device, dtype = t.dtype }
      groups[#groups + 1] = by[key]
    end
    table.insert(by[key], t)
  end
  return groups
end

-- flattens the tensors of a list (values from get(t, i)) into one buffer of
-- the list's device and dtype
local function flatten(list, device, dtype, get)
  local n = 0
  for _, t in ipairs(list) do n = n + t:numel() end
  local flat = core.empty({ math.max(n, 1) }, { dtype = dtype, device = device })
  local off = 0
  for i, t in ipairs(list) do
    local k = t:numel()
    if k > 0 then flat:narrow(1, off + 1, k):copy_(get(t, i):reshape({ k })) end
    off = off + k
  end
  return flat
end

local function slice_of(flat, off, t) return flat:narrow(1, off + 1, t:numel()):view(t:size()) end

-- ---- replicas: several devices in one process (the seed's sync_grads(replicas)) ----

-- replicate(build, devices) -> a list of models, one per device: build()
-- makes each (the same architecture), moved to its device, and every copy
-- gets the first one's parameters and buffers
function M.replicate(build, devices)
  if type(build) ~= "function" then throw("distributed.replicate: build must be a function returning a module", 2) end
  if type(devices) ~= "table" or #devices == 0 then throw("distributed.replicate: devices must be a list of device names", 2) end
  local out = {}
  for i, d in ipairs(devices) do
    local m = build()
    if not nn.is_module(m) then throw("distributed.replicate: build() returned " .. type(m) .. ", not a module", 2) end
    out[i] = m:to(d)
  end
  local sd = out[1]:state_dict()
  for i = 2, #out do out[i]:load_state_dict(sd) end
  return out
end

local function is_replica_list(x)
  return type(x) == "table" and not nn.is_module(x) and nn.is_module(x[1])
end

-- averages the gradients of replicas (models of one architecture on
-- several devices of this process), then over the ranks when a job is
-- initialised; every replica ends with the same averaged .grad
local function sync_replicas(replicas, op)
  local lists = {}
  for r, m in ipairs(replicas) do lists[r] = m:parameters() end
  local n = #lists[1]
  for r = 2, #lists do
    if #lists[r] ~= n then throw(("distributed.sync_grads: replica %d has %d parameters, replica 1 has %d"):format(r, #lists[r], n), 3) end
  end
  core.no_grad(function()
    for i = 1, n do
      local p1 = lists[1][i]
      if p1.requires_grad then
        local total = (p1.grad or core.zeros(p1:size(), { dtype = p1.dtype, device = p1.device })):clone()
        for r = 2, #lists do
          local g = lists[r][i].grad
          if g then total:add_(g:to(p1.device)) end
        end
        if op == "avg" then total:mul_(1 / #lists) end
        if state.comm then check(C.netcl_dist_all_reduce(state.comm, H(total), op == "avg" and C.NETCL_DIST_AVG or C.NETCL_DIST_SUM, nil)) end
        for r = 1, #lists do
          local q = lists[r][i]
          q.grad = r == 1 and total or total:to(q.device)
        end
      end
    end
  end)
end

-- sync_grads(params or module, {op="avg"}): all-reduces every parameter's
-- .grad (a missing grad counts as zeros and is set), one flat buffer per
-- device and dtype. For loops that do not use DistributedDataParallel.
-- sync_grads(replicas) (a list of models from replicate): averages over the
-- replicas, then over the ranks.
function M.sync_grads(params, opts)
  if is_replica_list(params) then
    local op = opts and opts.op or "avg"
    if op ~= "avg" and op ~= "sum" then throw("distributed.sync_grads: replicas take op 'avg' or 'sum'", 2) end
    return sync_replicas(params, op)
  end
  local list = {}
  for _, p in ipairs(param_list(params, "sync_grads")) do if p.requires_grad then list[#list + 1] = p end end
  local op = op_code(opts and opts.op or "avg", "sync_grads")
  local c = comm("sync_grads")
  core.no_grad(function()
    for _, g in ipairs(groups_of(list)) do
      local flat = flatten(g, g.device, g.dtype,
        function(p) return p.grad or core.zeros(p:size(), { dtype = p.dtype, device = p.device }) end)
      check(C.netcl_dist_all_reduce(c, H(flat), op, nil))
      local off = 0
      for _, p in ipairs(g) do
        p.grad = slice_of(flat, off, p):clone()
        off = off + p:numel()
      end
    end
  end)
end

-- broadcast_parameters(module or list, root=0): root's parameters and
-- buffers to every rank (what DistributedDataParallel does at the start,
-- and what loading a checkpoint on rank 0 needs afterwards)
function M.broadcast_parameters(m, root)
  local r = root_of(root, "broadcast_parameters")
  local list = {}
  for _, t in ipairs(param_list(m, "broadcast_parameters")) do list[#list + 1] = t end
  if nn.is_module(m) then for _, b in ipairs(m:buffers()) do list[#list + 1] = b end end
  local c = comm("broadcast_parameters")
  core.no_grad(function()
    for _, g in ipairs(groups_of(list)) do
      local flat = flatten(g, g.device, g.dtype, function(t) return t:detach() end)
      check(C.netcl_dist_broadcast(c, H(flat), r, nil))
      local off = 0
      for _, t in ipairs(g) do
        t:detach():copy_(slice_of(flat, off, t))
        off = off + t:numel()
      end
    end
  end)
end

-- save(obj, path): rank 0 writes (netcl.save), every rank waits for it
function M.save(obj, path)
  if M.rank() == 0 then require("netcl.io").save(obj, path) end
  if state.comm then M.barrier() end
end

-- load_into(module, path, root=0): root reads the checkpoint into the
-- module, then broadcasts it: other ranks need not see the file
function M.load_into(m, path, root)
  local r = root_of(root, "load_into")
  if M.rank() == r then m:load_state_dict(require("netcl.io").load(path)) end
  if state.comm then M.broadcast_parameters(m, r) end
  return m
end

-- ---- DistributedDataParallel ----------------------------------------------------------

local DDP = nn.Module:extend("DistributedDataParallel")
M.DistributedDataParallel = DDP

-- Buckets of about bucket_mb, one device and dtype each, in the order
-- backward finishes them: the reverse of the parameters'. The bucket of
-- the first parameters, the last to get its gradients, holds at most
-- 1 MB, so little is left to move once backward ends.
local function make_buckets(params, bucket_bytes)
  local buckets, cur = {}, nil
  local first = math.min(bucket_bytes, 2 ^ 20)
  for i = 1, #params do
    local p = params[i]
    local bytes = p:numel() * C.netcl_dtype_size(tensor.dtype_code(p.dtype))
    local cap = #buckets == 1 and first or bucket_bytes
    if not cur or cur.device ~= p.device or cur.dtype ~= p.dtype or (cur.bytes > 0 and cur.bytes + bytes > cap) then
      cur = { device = p.device, dtype = p.dtype, bytes = 0, params = {} }
      buckets[#buckets + 1] = cur
    end
    table.insert(cur.params, p)
    cur.bytes = cur.bytes + bytes
  end
  local order = {}
  for i = #buckets, 1, -1 do order[#order + 1] = buckets[i] end
  return order
end

-- DistributedDataParallel(model, {bucket_mb=25, broadcast=true}): calls
-- the model; each backward averages the gradients over the ranks, a
-- bucket's all-reduce starting as soon as its gradients are in .grad.
function DDP:__init(model, opts)
  opts = opts or {}
  if not nn.is_module(model) then throw("DistributedDataParallel: expected a module, got " .. type(model), 3) end
  for k in pairs(opts) do
    if k ~= "bucket_mb" and k ~= "broadcast" then
      throw(("DistributedDataParallel: unknown option '%s' (bucket_mb, broadcast)"):format(tostring(k)), 3)
    end
  end
  comm("DistributedDataParallel")
  local mb = opts.bucket_mb or 25
  lib.finite("DistributedDataParallel", "bucket_mb", mb)
  self.module = model
  if opts.broadcast ~= false then M.broadcast_parameters(model, 0) end
  local params = {}
  for _, p in ipairs(model:parameters()) do if p.requires_grad then params[#params + 1] = p end end
  local ddp = {
    params = params, buckets = make_buckets(params, mb * 2 ^ 20), syncing = true, ready = 0,
    where = {}, names = {},
  }
  rawset(self, "_ddp", ddp)
  for name, p in model:named_parameters() do ddp.names[p] = name end
  for b, bucket in ipairs(ddp.buckets) do
    for i, p in ipairs(bucket.params) do
      ddp.where[p] = { bucket = b, index = i }
      p:register_post_accumulate_grad_hook(function() self:_on_ready(p) end)
    end
  end
  self:_reset()
end

function DDP:_reset()
  local ddp = rawget(self, "_ddp")
  ddp.ready = 0
  for _, b in ipairs(ddp.buckets) do b.pending, b.got, b.work, b.flat = #b.params, {}, nil, nil end
end

-- The one view over the bucket's gradients where they lie in one storage,
-- in order, contiguous, at most ALIGN - 1 elements apart (an optimizer's
-- flat gradient buffer, whose padding stays zero): reduced in place.
local GAP = 15
local function grad_region(bucket)
  local first = bucket.params[1].grad
  if not first then return nil end
  local fh = H(first)
  local start = tonumber(C.netcl_tensor_offset(fh))
  local stop = start
  for _, p in ipairs(bucket.params) do
    local g = p.grad
    if not g or not g:is_contiguous() or g.dtype ~= first.dtype or C.netcl_tensor_same_storage(H(g), fh) == 0 then return nil end
    local off = tonumber(C.netcl_tensor_offset(H(g)))
    if off < stop or off - stop > GAP then return nil end
    stop = off + g:numel()
  end
  local out = ffi.new("netcl_tensor *[1]")
  check(C.netcl_tensor_storage_range(out, fh, start, stop - start))
  return tensor.wrap(out[0])
end

local function launch(bucket)
  local flat = grad_region(bucket)
  bucket.copied = flat == nil
  if not flat then flat = flatten(bucket.params, bucket.device, bucket.dtype, function(p) return p.grad end) end
  bucket.flat = flat
  local out = ffi.new("netcl_dist_work *[1]")
  check(C.netcl_dist_all_reduce(state.comm, H(flat), C.NETCL_DIST_AVG, out))
  bucket.work = out[0]
end

-- the post-accumulate hook of parameter p: its .grad holds this backward's gradient
function DDP:_on_ready(p)
  local ddp = rawget(self, "_ddp")
  if not ddp.syncing then return end
  local at = ddp.where[p]
  local bucket = ddp.buckets[at.bucket]
  if bucket.got[at.index] then
    throw(("DistributedDataParallel: parameter %s received a second gradient in one backward (a parameter used "
      .. "twice); sync with distributed.sync_grads instead"):format(ddp.names[p] or "?"))
  end
  bucket.got[at.index] = true
  bucket.pending = bucket.pending - 1
  ddp.ready = ddp.ready + 1
  if bucket.pending == 0 then core.no_grad(launch, bucket) end
  if ddp.ready < #ddp.params then
    C.netcl_dist_progress(state.comm)   -- buckets the peers have finished start moving now
    return
  end
  -- the last gradient of the step: finish every bucket, in launch order
  core.no_grad(function()
    for _, b in ipairs(ddp.buckets) do
      if b.work ~= nil then
        local w = b.work
        b.work = nil
        check(C.netcl_dist_wait(w))
      end
      if b.copied then
        local off = 0
        for _, q in ipairs(b.params) do
          q.grad:copy_(slice_of(b.flat, off, q))
          off = off + q:numel()
        end
      end
    end
  end)
  self:_reset()
end

function DDP:forward(...)
  local ddp = rawget(self, "_ddp")
  if ddp.ready > 0 then
    local missing = {}
    for _, p in ipairs(ddp.params) do
      local at = ddp.where[p]
      if not ddp.buckets[at.bucket].got[at.index] then missing[#missing + 1] = ddp.names[p] or "?" end
    end
    self:_reset()
    throw(("DistributedDataParallel: the last backward gave no gradient to %d parameter(s) (%s), so the gradients "
      .. "were not synchronised; freeze them (requires_grad=false) or sync with distributed.sync_grads"):format(#missing,
      table.concat(missing, ", ", 1, math.min(#missing, 5))), 2)
  end
  return self.module(...)
end

-- no_sync(fn, ...): backward passes inside fn accumulate locally (gradient
-- accumulation); the next synchronised backward averages the sum
function DDP:no_sync(fn, ...)
  local ddp = rawget(self, "_ddp")
  ddp.syncing = false
  local ok, a, b, c = pcall(fn, ...)
  ddp.syncing = true
  if not ok then error(a, 0) end
  return a, b, c
end

-- ---- the seed's helpers ---------------------------------------------------------------

-- data_parallel_step(model, loss_fn, optimizer, input, target): one step of
-- the rank's share of a batch with gradients averaged over the ranks (a
-- model wrapped in DistributedDataParallel syncs during backward, any
-- other model through sync_grads). Returns the loss averaged over ranks.
function M.data_parallel_step(model, loss_fn, optimizer, input, target)
  optimizer:zero_grad()
  local loss = loss_fn(model(input), target)
  loss:backward()
  if getmetatable(model) ~= DDP then M.sync_grads(model) end
  optimizer:step()
  local l = loss:detach():to("cpu"):float()
  if state.comm then M.all_reduce(l, "avg") end
  return l:item()
end

M.DistributedSampler = sampler.DistributedSampler
return M
