-- netcl/data/ring.lua — the Lua face of the shared-memory batch ring
-- (src/data/ring.c) and of the pipe wire format (src/data/wire.c). A ring
-- is created before the workers fork; each process then uses its own copy
-- of the handle. Slots hold whole batches: lists of cpu tensors.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local util = require("netcl.data.util")
local C, check, throw = lib.C, lib.check, lib.throw

local M = {}
local MAX_FIELDS = 16
local fields_buf = ffi.new("netcl_tensor *[?]", MAX_FIELDS)
local nfields_buf = ffi.new("int[1]")

local function to_handles(fields, who)
  local n = fields.n or #fields
  if n > MAX_FIELDS then throw(("%s: %d fields, at most %d"):format(who, n, MAX_FIELDS)) end
  for i = 1, n do fields_buf[i - 1] = tensor.handle(fields[i]) end
  return n, fields_buf
end
M.to_handles = to_handles

local function from_handles(n)
  local out = { n = n }
  for i = 1, n do out[i] = tensor.wrap(fields_buf[i - 1]) end
  return out
end
M.from_handles = from_handles

local Ring = {}
Ring.__index = Ring
Ring.__len = function(r) return r.nslots end
Ring.__gc = function(r) r:close() end
Ring.STATES = select(2, lib.enum("netcl_ring_state", "NETCL_RING_"))   -- free, assigned, ... by netcl_ring_state

-- SharedBatchRingBuffer(nslots, slot_bytes): the seed's name for the ring.
function M.SharedBatchRingBuffer(nslots, slot_bytes)
  if type(nslots) ~= "number" or type(slot_bytes) ~= "number" then
    throw("SharedBatchRingBuffer(nslots, slot_bytes): both must be numbers")
  end
  local box = ffi.new("netcl_ring *[1]")
  check(C.netcl_ring_create(box, nslots, slot_bytes))
  local obj = util.object(Ring, { h = box[0], nslots = nslots, slot_bytes = tonumber(C.netcl_ring_slot_bytes(box[0])),
                                  owner = util.libc.getpid() })
  return obj
end

function Ring:handle()
  if self.h == nil then throw("SharedBatchRingBuffer: the ring is closed") end
  return self.h
end

-- "free", "assigned", ... for a 1-based slot
function Ring:state(slot) return Ring.STATES[tonumber(C.netcl_ring_state_of(self:handle(), slot - 1))] end

-- Parent: reserve slot (1-based) for batch.
function Ring:assign(slot, batch) check(C.netcl_ring_assign(self:handle(), slot - 1, batch)) end

-- Worker: copy a batch (list of tensors) into its assigned slot; false when
-- it does not fit (then it travels through the pipe).
function Ring:put(slot, batch, fields)
  local n, h = to_handles(fields, "SharedBatchRingBuffer:put")
  if C.netcl_ring_bytes_needed(n, h) > self.slot_bytes then return false end
  check(C.netcl_ring_put(self:handle(), slot - 1, batch, n, h))
  return true
end
M.worker_write_to_shm = function(ring, slot, batch, fields) return ring:put(slot, batch, fields) end

-- Parent: copy the batch out (fresh cpu tensors) and free the slot.
function Ring:take(slot, batch)
  check(C.netcl_ring_take(self:handle(), slot - 1, batch, fields_buf, MAX_FIELDS, nfields_buf))
  return from_handles(nfields_buf[0])
end

function Ring:release(slot, force) check(C.netcl_ring_release(self:handle(), slot - 1, force and 1 or 0)) end

-- Unmaps the ring (idempotent). A forked copy unmaps only its own view.
function Ring:close()
  if self.h ~= nil then
    local h = self.h
    self.h = nil
    C.netcl_ring_destroy(h)
  end
end

return M
