-- netcl/trainer/progress.lua — the trainer's progress line. On a terminal
-- it redraws in place (at most 10 times a second): epoch, a bar, batches
-- done, images/s, ETA and the running loss. When the output is not a
-- terminal it stays silent during the epoch (the trainer prints one line
-- per epoch), so logs hold no control characters.
local ffi = require("ffi")
pcall(ffi.cdef, "int isatty(int fd);")
-- a private name for clock_gettime: a script may have declared it with its own struct
pcall(ffi.cdef, [[struct netcl_progress_ts { long tv_sec; long tv_nsec; };
  int netcl_progress_clock_gettime(int, struct netcl_progress_ts *) __asm__("clock_gettime");]])

local M = {}
local ts = ffi.new("struct netcl_progress_ts")
function M.now()
  ffi.C.netcl_progress_clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- the default: redraw when stdout is a terminal (NETCL_PROGRESS=0/1 overrides)
function M.is_terminal()
  local env = os.getenv("NETCL_PROGRESS")
  if env == "0" then return false elseif env == "1" then return true end
  return ffi.C.isatty(1) == 1
end

local function clock(s)
  if s ~= s or s == math.huge then return "--:--" end
  s = math.floor(s + 0.5)
  if s >= 3600 then return ("%d:%02d:%02d"):format(s / 3600, (s % 3600) / 60, s % 60) end
  return ("%02d:%02d"):format(s / 60, s % 60)
end
M.clock = clock

local Bar = {}
Bar.__index = Bar

-- new{epoch=, epochs=, total=, out=io.stdout, live=is_terminal()}
function M.new(o)
  return setmetatable({ epoch = o.epoch, epochs = o.epochs, total = o.total, out = o.out or io.stdout,
                        live = o.live == nil and M.is_terminal() or o.live, t0 = M.now(), last = 0, done = 0, seen = 0 },
    Bar)
end

-- the line for `done` batches, `seen` samples; loss_fn() reads the running loss
function Bar:line(loss)
  local el = M.now() - self.t0
  local frac = self.total > 0 and self.done / self.total or 0
  local width = 24
  local fill = math.floor(frac * width + 0.5)
  local eta = frac > 0 and el * (1 - frac) / frac or 0 / 0
  return ("epoch %d/%d [%s%s] %d/%d  %.0f img/s  %s<%s%s"):format(self.epoch, self.epochs, ("="):rep(fill),
    (" "):rep(width - fill), self.done, self.total, el > 0 and self.seen / el or 0, clock(el), clock(eta),
    loss and ("  loss %.4f"):format(loss) or "")
end

-- one batch more; redraws when live and 0.1 s have passed (loss_fn is
-- called only then: reading the loss waits for the device)
function Bar:step(samples, loss_fn)
  self.done, self.seen = self.done + 1, self.seen + samples
  if not self.live then return end
  local t = M.now()
  if t - self.last < 0.1 and self.done < self.total then return end
  self.last = t
  self.out:write("\r", self:line(loss_fn and loss_fn()), "\27[K")
  self.out:flush()
end

-- clears the live line (the trainer prints the epoch's summary next)
function Bar:finish()
  if self.live then
    self.out:write("\r\27[K")
    self.out:flush()
  end
end

return M
