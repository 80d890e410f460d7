-- netcl/data/workers.lua — the loader's pool of forked worker processes.
-- Each worker owns a task pipe (parent -> worker) and a result pipe
-- (worker -> parent). Batch b of an epoch goes to the next worker in turn;
-- each worker answers its tasks in order, so the parent reads batch b from
-- the worker it sent b to and batches come back in order. Invariants: at
-- most `prefetch` batches in flight; with a ring, each in-flight batch owns
-- one slot until the parent has copied it out; a worker never touches
-- OpenCL (the engine refuses in a forked child) and leaves with _exit.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local util = require("netcl.data.util")
local ring_mod = require("netcl.data.ring")
local C, throw = lib.C, lib.throw
local libc = util.libc

local M = {}
local Pool = {}
Pool.__index = Pool

local TASK, BATCH, ERROR, STOP, EOF, NONE = C.NETCL_WIRE_TASK, C.NETCL_WIRE_BATCH, C.NETCL_WIRE_ERROR, C.NETCL_WIRE_STOP,
                                            C.NETCL_WIRE_EOF, C.NETCL_WIRE_NONE
local WNOHANG, SIGKILL = 1, 9
local kind_b, batch_b, a_b, b_b = ffi.new("netcl_wire_kind[1]"), ffi.new("int64_t[1]"), ffi.new("int64_t[1]"), ffi.new("int64_t[1]")
local status_b = ffi.new("int[1]")
local text_buf = ffi.new("char[?]", 65536)
local recv_fields = ffi.new("netcl_tensor *[?]", 16)

local function last_error() return ffi.string(C.netcl_last_error()) end

local function describe_status(st)
  local sig = bit.band(st, 0x7f)
  if sig == 0 then return ("exited with status %d"):format(bit.rshift(bit.band(st, 0xff00), 8)) end
  local names = { [2] = "SIGINT", [6] = "SIGABRT", [9] = "SIGKILL", [11] = "SIGSEGV", [13] = "SIGPIPE", [15] = "SIGTERM" }
  return ("killed by signal %d%s"):format(sig, names[sig] and (" (" .. names[sig] .. ")") or "")
end

-- The body of a worker process: answer tasks until STOP or the parent is gone.
local function worker_loop(pool, w, make)
  local me = pool.workers[w]
  local ring = pool.ring
  while true do
    if C.netcl_wire_recv(me.task_r, -1, kind_b, batch_b, a_b, b_b) ~= 0 or kind_b[0] ~= TASK then return end
    local b, epoch, slot = tonumber(batch_b[0]), tonumber(a_b[0]), tonumber(b_b[0])
    local ok, fields = xpcall(make, debug.traceback, epoch, b)
    local st
    if ok then
      local n, h = ring_mod.to_handles(fields, "DataLoader")
      local sent = -1
      if slot >= 0 and C.netcl_ring_bytes_needed(n, h) <= ring.slot_bytes then
        if C.netcl_ring_put(ring.h, slot, b, n, h) ~= 0 then ok, fields = false, "shared-memory ring: " .. last_error()
        else sent = slot end
      end
      if ok then st = C.netcl_wire_send_batch(me.result_w, b, sent, n, h) end
      for i = 1, n do fields[i]:free() end   -- batches are big: do not wait for the GC
    end
    if not ok then st = C.netcl_wire_send_error(me.result_w, b, tostring(fields)) end
    if st ~= 0 then return end   -- the parent is gone
  end
end

-- Forks `n` workers running make(epoch, b) -> fields. ring may be nil.
function M.start(n, make, ring, prefetch, timeout, dataset)
  C.netcl_device_count()            -- discovery happens here, in the parent: a child is then refused OpenCL
  C.netcl_worker_ignore_sigpipe()
  local pool = setmetatable({ workers = {}, ring = ring, prefetch = prefetch, timeout = timeout, dataset = dataset,
                              owner = libc.getpid(), inflight = {}, rr = 0, next_send = 1, next_recv = 1, nb = 0 }, Pool)
  local fds = ffi.new("int[2]")
  local all = {}
  for w = 1, n do
    local me = {}
    lib.check(C.netcl_wire_pipe(fds)); me.task_r, me.task_w = fds[0], fds[1]
    lib.check(C.netcl_wire_pipe(fds)); me.result_r, me.result_w = fds[0], fds[1]
    pool.workers[w] = me
    for _, fd in ipairs({ me.task_r, me.task_w, me.result_r, me.result_w }) do all[#all + 1] = fd end
  end
  local pid = ffi.new("int[1]")
  for w = 1, n do
    local me = pool.workers[w]
    local close = {}
    for _, fd in ipairs(all) do if fd ~= me.task_r and fd ~= me.result_w then close[#close + 1] = fd end end
    local st = C.netcl_worker_fork(pid, ffi.new("int[?]", #close, close), #close)
    if st ~= 0 then pool:close(); throw("DataLoader: " .. last_error()) end
    if pid[0] == 0 then
      local ok = pcall(worker_loop, pool, w, make)
      libc._exit(ok and 0 or 1)
    end
    me.pid = pid[0]
  end
  for _, me in ipairs(pool.workers) do
    libc.close(me.task_r); libc.close(me.result_w)
    me.task_r, me.result_w = nil, nil
  end
  return pool
end

-- Kills the pool: every worker stopped and reaped, every fd closed, the ring
-- unmapped. Idempotent; a no-op in any process but the one that made it.
function Pool:close()
  if self.closed or libc.getpid() ~= self.owner then return end
  self.closed = true
  for _, me in ipairs(self.workers) do
    -- closing our read end first unblocks a worker stuck writing a batch (EPIPE)
    if me.result_r then libc.close(me.result_r); me.result_r = nil end
    if me.task_w then C.netcl_wire_send(me.task_w, STOP, 0, 0, 0); libc.close(me.task_w); me.task_w = nil end
    -- the child's ends are still ours only when a fork failed part way
    if me.task_r then libc.close(me.task_r); me.task_r = nil end
    if me.result_w then libc.close(me.result_w); me.result_w = nil end
  end
  for _ = 1, 100 do
    local alive = false
    for _, me in ipairs(self.workers) do
      if me.pid and not me.reaped then
        if libc.waitpid(me.pid, status_b, WNOHANG) == me.pid then me.reaped = true else alive = true end
      end
    end
    if not alive then break end
    libc.usleep(10000)
  end
  for _, me in ipairs(self.workers) do
    if me.pid and not me.reaped then libc.kill(me.pid, SIGKILL); libc.waitpid(me.pid, status_b, 0); me.reaped = true end
  end
  if self.ring then self.ring:close() end
end

function Pool:fail(msg)
  self:close()
  throw(msg)
end

-- A dead worker anywhere is an error now (within one poll tick), naming
-- the batch it was making (its earliest in flight) and the one the loader
-- waited for.
function Pool:check_alive(b)
  for w, me in ipairs(self.workers) do
    if libc.waitpid(me.pid, status_b, WNOHANG) == me.pid then
      me.reaped = true
      local making
      for bb, rec in pairs(self.inflight) do
        if rec.w == w and (not making or bb < making) then making = bb end
      end
      local what = making and ("while making batch %d of epoch %d"):format(making, self.epoch) or
        ("with no batch in hand, in epoch %d"):format(self.epoch)
      self:fail(("DataLoader: worker %d (pid %d) %s %s (the loader waited for batch %d)")
        :format(w, me.pid, describe_status(status_b[0]), what, b))
    end
  end
end

local function free_slot(self)
  for s = 1, self.ring.nslots do
    if not self.slot_busy[s] then self.slot_busy[s] = true; return s end
  end
  error("DataLoader: no free ring slot (internal error)")
end

function Pool:dispatch(b)
  local w = self.rr % #self.workers + 1
  self.rr = self.rr + 1
  local slot = -1
  if self.ring then
    slot = free_slot(self)
    self.ring:assign(slot, b)
  end
  self.inflight[b] = { w = w, slot = slot }
  if C.netcl_wire_send(self.workers[w].task_w, TASK, b, self.epoch, slot >= 0 and slot - 1 or -1) ~= 0 then
    self:check_alive(b)
    self:fail(("DataLoader: cannot send batch %d to worker %d: %s"):format(b, w, last_error()))
  end
end

function Pool:fill()
  while self.next_send <= self.nb and self.next_send - self.next_recv < self.prefetch do
    self:dispatch(self.next_send)
    self.next_send = self.next_send + 1
  end
end

-- Starts epoch `epoch` of nb batches at batch `first` (earlier ones the parent made).
function Pool:start_epoch(epoch, nb, first)
  self.epoch, self.nb, self.next_send, self.next_recv = epoch, nb, first, first
  self.slot_busy = {}
  self:fill()
end

-- Reads and drops the batches still in flight from an abandoned epoch.
function Pool:drain()
  while self.next_recv < self.next_send do
    self:receive(self.next_recv)
    self.next_recv = self.next_recv + 1
  end
end

local now = util.monotonic

-- Waits for batch b from its worker; returns its fields (cpu tensors).
function Pool:receive(b)
  local rec = self.inflight[b]
  local me = self.workers[rec.w]
  local t0 = self.timeout and now()
  while true do
    local st = C.netcl_wire_recv(me.result_r, 100, kind_b, batch_b, a_b, b_b)
    if st ~= 0 then self:fail("DataLoader: " .. last_error()) end
    local kind = tonumber(kind_b[0])
    if kind == NONE then
      self:check_alive(b)
      if t0 and now() - t0 > self.timeout then
        self:fail(("DataLoader: batch %d of epoch %d took more than %g s (worker %d, pid %d)"):format(
          b, self.epoch, self.timeout, rec.w, me.pid))
      end
    elseif kind == EOF then
      libc.waitpid(me.pid, status_b, 0)
      me.reaped = true
      self:fail(("DataLoader: worker %d (pid %d) %s while making batch %d of epoch %d"):format(
        rec.w, me.pid, describe_status(status_b[0]), b, self.epoch))
    elseif kind == ERROR then
      C.netcl_wire_recv_text(me.result_r, a_b[0], text_buf, 65536)
      self:fail(("DataLoader: worker %d (pid %d) failed on batch %d of epoch %d:\n%s"):format(
        rec.w, me.pid, tonumber(batch_b[0]), self.epoch, ffi.string(text_buf)))
    elseif kind == BATCH then
      if tonumber(batch_b[0]) ~= b then
        self:fail(("DataLoader: worker %d sent batch %d, expected %d (internal error)"):format(rec.w, tonumber(batch_b[0]), b))
      end
      local n, slot, fields = tonumber(a_b[0]), tonumber(b_b[0]), nil
      if slot >= 0 then
        fields = self.ring:take(slot + 1, b)
      else
        if C.netcl_wire_recv_fields(me.result_r, n, recv_fields) ~= 0 then self:fail("DataLoader: " .. last_error()) end
        fields = { n = n }
        for i = 1, n do fields[i] = tensor.wrap(recv_fields[i - 1]) end
        if rec.slot >= 0 then self.ring:release(rec.slot) end
      end
      if rec.slot >= 0 then self.slot_busy[rec.slot] = nil end
      self.inflight[b] = nil
      return fields
    end
  end
end

-- Batch b (the next one in order): received, then the window refilled.
function Pool:get(b)
  self:fill()
  local fields = self:receive(b)
  self.next_recv = b + 1
  self:fill()
  return fields
end

return M
