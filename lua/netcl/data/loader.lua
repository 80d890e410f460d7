-- netcl/data/loader.lua — DataLoader: batches of a dataset in a seeded
-- order, made by forked worker processes (or inline), delivered in order,
-- optionally through the shared-memory ring and uploaded one batch ahead.
-- Determinism rule: batch b of epoch e depends only on (seed, e, b): the
-- order is a Philox permutation keyed by (seed, e); the global generator is
-- set to a per-sample stream before each get(i) and to a per-batch stream
-- before the transforms, whichever process makes the batch.
local ffi = require("ffi")
local lib = require("netcl.lib")
local util = require("netcl.data.util")
local workers = require("netcl.data.workers")
local ring_mod = require("netcl.data.ring")
local core = require("netcl.core")
local C, throw = lib.C, lib.throw

local M = {}
local Loader = {}

local OPTIONS = { batch_size = "number", shuffle = "boolean", drop_last = "boolean", num_workers = "number",
                  prefetch = "number", seed = "number", transforms = "any", use_shared_mem = "boolean",
                  device = "any", timeout = "number", sampler = "table" }
local U64 = ffi.typeof("uint64_t")
local STREAM = 4294967296ULL              -- counters per sample or batch stream
local BATCH_STREAMS = 0x8000000000000000ULL

local function count(v, name, min) return lib.integer("DataLoader", name, v, min) end

-- DataLoader(dataset, opts): see docs/data.md for the options.
function M.DataLoader(dataset, opts)
  opts = opts or {}
  if type(opts) ~= "table" then throw("DataLoader: options must be a table, got " .. type(opts)) end
  for k, v in pairs(opts) do
    local want = OPTIONS[k]
    if not want then throw(("DataLoader: unknown option '%s'"):format(tostring(k))) end
    if want ~= "any" and type(v) ~= want then throw(("DataLoader: option %s must be a %s, got %s"):format(k, want, type(v))) end
  end
  local n = util.dataset_len(dataset, "DataLoader")
  if opts.sampler ~= nil then
    if type(opts.sampler.indices) ~= "function" or type(opts.sampler.len) ~= "function" then
      throw("DataLoader: sampler must have :len() and :indices(epoch) (netcl.data.DistributedSampler, ...)")
    end
    if opts.shuffle then throw("DataLoader: shuffle and sampler exclude each other (the sampler decides the order)") end
  end
  local nw = count(opts.num_workers == nil and 4 or opts.num_workers, "num_workers", 0)
  local self = {
    dataset = dataset, batch_size = count(opts.batch_size or 32, "batch_size", 1),
    shuffle = opts.shuffle ~= false, drop_last = opts.drop_last == true, num_workers = nw,
    prefetch = count(opts.prefetch or math.max(2 * nw, 1), "prefetch", 1), transforms = opts.transforms,
    use_shared_mem = opts.use_shared_mem == true, timeout = opts.timeout, epoch = 0, n = n,
    sampler = opts.sampler,
  }
  if self.transforms ~= nil and type(self.transforms) ~= "function" and type(self.transforms) ~= "table" then
    throw("DataLoader: transforms must be a function or a list of functions, got " .. type(self.transforms))
  end
  if opts.device ~= nil then self.device = core.device(opts.device).name end
  if self.device == "cpu" then self.device = nil end
  -- no seed: one draw from the global generator (netcl.manual_seed fixes it)
  if opts.seed ~= nil then count(opts.seed, "seed", 0) end
  self.seed = opts.seed or core.randint(0, 2 ^ 52, { 1 }, { device = "cpu" }):item()
  return (util.object(Loader, self))
end

Loader.__len = function(self) return self:num_batches() end
Loader.__gc = function(self) self:close() end
Loader.__tostring = function(self)
  return ("DataLoader(%d samples, batch_size %d, %d batches, %d workers%s)"):format(self.n, self.batch_size,
    self:num_batches(), self.num_workers, self.use_shared_mem and ", shared memory" or "")
end

function Loader:num_batches()
  local n = self.sampler and self.sampler:len() or util.dataset_len(self.dataset, "DataLoader")
  if self.drop_last then return math.floor(n / self.batch_size) end
  return math.ceil(n / self.batch_size)
end

-- The next iteration runs epoch e (1-based); by default epochs count up.
function Loader:set_epoch(e) self.epoch = count(e, "epoch", 1) - 1 end

-- 1-based dataset indices of batch b of epoch e
function Loader:indices(e, b)
  local n = self.n
  if self.sampler then
    if self.perm_epoch ~= e then self.perm, self.perm_epoch = self.sampler:indices(e), e end
    local out, first = {}, (b - 1) * self.batch_size
    for k = first + 1, math.min(first + self.batch_size, #self.perm) do out[#out + 1] = self.perm[k] end
    return out
  end
  if self.perm_epoch ~= e then
    self.perm = self.perm_n == n and self.perm or ffi.new("int64_t[?]", math.max(n, 1))
    self.perm_n, self.perm_epoch = n, e
    if self.shuffle then
      lib.check(C.netcl_data_permutation(self.perm, n, C.netcl_data_mix(self.seed, e, 1), 0))
    else
      for i = 0, n - 1 do self.perm[i] = i end
    end
  end
  local out, first = {}, (b - 1) * self.batch_size
  for k = first, math.min(first + self.batch_size, n) - 1 do out[#out + 1] = tonumber(self.perm[k]) + 1 end
  return out
end

local function check_fields(fields, b)
  for i = 1, fields.n do
    if not require("netcl.tensor").is_tensor(fields[i]) then
      throw(("DataLoader: batch %d field %d is a %s after the transforms; batches hold tensors"):format(b, i, type(fields[i])))
    end
  end
end

-- Makes batch b of epoch e in this process -> fields, structure. Leaves the
-- global generator as it found it.
function Loader:make(e, b)
  local idx = self:indices(e, b)
  local seed0, off0 = C.netcl_rng_get_seed(), C.netcl_rng_get_offset()
  C.netcl_rng_seed(C.netcl_data_mix(self.seed, e, 0))
  local ds, fields, st = self.dataset, nil, nil
  if util.method(ds, "get_batch") then
    C.netcl_rng_set_offset(U64(idx[1]) * STREAM)
    local values = util.pack(ds:get_batch(idx))
    st = util.structure_of(values)
    fields = util.fields_of(values, st)
  else
    local get, samples = util.getter(ds), {}
    for s = 1, #idx do
      C.netcl_rng_set_offset(U64(idx[s]) * STREAM)
      samples[s] = util.pack(get(idx[s]))
    end
    fields, st = util.collate(samples, "DataLoader")
  end
  if self.transforms then
    C.netcl_rng_set_offset(BATCH_STREAMS + U64(b) * STREAM)
    local values = util.pack(require("netcl.data.filters").apply_filters(self.transforms, util.unfields(fields, st)))
    st = util.structure_of(values)
    fields = util.fields_of(values, st)
  end
  check_fields(fields, b)
  C.netcl_rng_seed(seed0)
  C.netcl_rng_set_offset(off0)
  return fields, st
end

-- Starts the worker pool, making batch `b` of epoch e here first: it gives
-- the batch structure and the ring's slot size.
function Loader:start_pool(e, b)
  local fields, st = self:make(e, b)
  self.structure = st
  local ring
  if self.use_shared_mem then
    local n, h = ring_mod.to_handles(fields, "DataLoader")
    local bytes = tonumber(C.netcl_ring_bytes_needed(n, h))
    ring = ring_mod.SharedBatchRingBuffer(self.prefetch, math.ceil(bytes * 1.25) + 4096)
  end
  local make = function(e2, b2) return (self:make(e2, b2)) end
  self.pool = workers.start(self.num_workers, make, ring, self.prefetch, self.timeout, self.dataset)
  return fields
end

function Loader:begin_epoch()
  self.epoch = self.epoch + 1
  self.n = util.dataset_len(self.dataset, "DataLoader")
  self.nb, self.next_b, self.ahead, self.first = self:num_batches(), 1, nil, nil
  if self.num_workers == 0 or self.nb == 0 then return end
  local pool = self.pool
  if pool and (pool.closed or pool.dataset ~= self.dataset) then pool:close(); pool = nil; self.pool = nil end
  if pool and not pcall(pool.drain, pool) then pool:close(); pool = nil; self.pool = nil end
  if not pool then
    self.first = self:start_pool(self.epoch, 1)
    self.pool:start_epoch(self.epoch, self.nb, 2)
  else
    self.pool:start_epoch(self.epoch, self.nb, 1)
  end
end

-- fields of batch b, on the cpu
function Loader:fetch(b)
  if self.num_workers == 0 then
    local fields, st = self:make(self.epoch, b)
    self.structure = st
    return fields
  end
  if b == 1 and self.first then
    local f = self.first
    self.first = nil
    return f
  end
  local fields = self.pool:get(b)
  if fields.n ~= self.structure.n then
    throw(("DataLoader: batch %d has %d fields, batch 1 had %d"):format(b, fields.n, self.structure.n))
  end
  return fields
end

-- The fields of a batch copied into pinned staging (two sets, used in
-- turn: a set is refilled only two batches later, long after its upload)
-- and uploaded from there on the device's transfer queue, which overlaps the
-- kernels already queued for the previous batch (docs/data.md).
local function same_shape(a, b)
  if a.dtype ~= b.dtype or a:dim() ~= b:dim() then return false end
  for d = 1, a:dim() do if a:size(d) ~= b:size(d) then return false end end
  return true
end

local function upload(self, fields)
  local device = self.device
  if not device then return fields end
  self.stage_i = (self.stage_i or 0) % 2 + 1
  self.stages = self.stages or { {}, {} }
  local stage = self.stages[self.stage_i]
  for i = 1, fields.n do
    local f = fields[i]
    local s = stage[i]
    if not s or not same_shape(s, f) then
      s = core.empty_pinned(f:size(), { device = device, dtype = f.dtype })
      stage[i] = s
    end
    s:copy_(f)                 -- waits (on the host) only if this set's last upload were still running
    fields[i] = s:to(device)
  end
  return fields
end

-- The next batch of the running epoch, or nothing at its end.
function Loader:next_batch()
  local b = self.next_b
  if not b or b > self.nb then self.next_b = nil; return nil end
  local fields = self.ahead or upload(self, self:fetch(b))
  self.ahead = nil
  self.next_b = b + 1
  if self.device and b < self.nb then
    -- batch b+1's copy is queued now, ahead of the compute the caller queues on batch b
    self.ahead = upload(self, self:fetch(b + 1))
  end
  return util.unfields(fields, self.structure)
end

-- for x, y in loader:iter() do ... end (a new epoch each time)
function Loader:iter()
  self:begin_epoch()
  return function() return self:next_batch() end
end

-- for x, y in loader do ... end: a new epoch starts on each new loop
Loader.__call = function(self, _, prev)
  if prev == nil then self:begin_epoch() end
  return self:next_batch()
end

-- Stops the workers and unmaps the ring (idempotent); iterating again starts a new pool.
function Loader:close()
  if self.pool then self.pool:close(); self.pool = nil end
  self.ahead, self.first = nil, nil
end

return M
