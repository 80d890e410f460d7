-- netcl/launch.lua — `netcl --nproc N script.lua args...`: starts N
-- processes of the script on this host for the shm backend of
-- netcl.distributed (docs/distributed.md). Each gets NETCL_RANK,
-- NETCL_WORLD_SIZE, NETCL_LOCAL_RANK (and RANK, WORLD_SIZE, LOCAL_RANK),
-- NETCL_DIST_BACKEND=shm and a job name for the shared segment. When a
-- rank fails the others are given NETCL_LAUNCH_GRACE seconds (default 30)
-- to fail on their own, with their own message, then stopped. The exit
-- status is the first failing rank's (128 + signal when killed).
local ffi = require("ffi")

for _, decl in ipairs({ "int fork(void);", "int execvp(const char *file, char *const argv[]);",
                        "int setenv(const char *name, const char *value, int overwrite);",
                        "int waitpid(int pid, int *status, int options);", "int kill(int pid, int sig);",
                        "void _exit(int status);", "int getpid(void);", "int usleep(unsigned int usec);",
                        "int shm_unlink(const char *name);", "char *strerror(int errnum);" }) do
  pcall(ffi.cdef, decl)
end
local C = ffi.C
local WNOHANG, SIGTERM, SIGKILL = 1, 15, 9

local M = {}

local function exit_code(status)
  local sig = bit.band(status, 0x7f)
  if sig ~= 0 then return 128 + sig end
  return bit.rshift(bit.band(status, 0xff00), 8)
end

-- run(n, argv): argv is the command each rank executes (argv[1] the program)
function M.run(n, argv)
  local name = ("netcl-%d-%d"):format(C.getpid(), os.time())
  local cargv = ffi.new("char *[?]", #argv + 1)
  local keep = {}
  for i, a in ipairs(argv) do
    keep[i] = ffi.new("char[?]", #a + 1, a)
    cargv[i - 1] = keep[i]
  end
  cargv[#argv] = nil
  io.stdout:flush()
  io.stderr:flush()
  local pids = {}
  for rank = 0, n - 1 do
    local pid = C.fork()
    if pid < 0 then
      io.stderr:write("netcl --nproc: fork failed for rank ", rank, "\n")
      for _, p in pairs(pids) do C.kill(p, SIGTERM) end
      return 1
    end
    if pid == 0 then
      local env = { NETCL_RANK = rank, NETCL_WORLD_SIZE = n, NETCL_LOCAL_RANK = rank, RANK = rank, WORLD_SIZE = n,
                    LOCAL_RANK = rank, NETCL_DIST_BACKEND = "shm", NETCL_DIST_NAME = name }
      for k, v in pairs(env) do C.setenv(k, tostring(v), 1) end
      C.execvp(cargv[0], cargv)
      io.stderr:write("netcl --nproc: cannot run ", argv[1], ": ", ffi.string(C.strerror(ffi.errno())), "\n")
      C._exit(127)
    end
    pids[rank] = pid
  end
  local status, left, first_bad, deadline = ffi.new("int[1]"), n, nil, nil
  local grace = tonumber(os.getenv("NETCL_LAUNCH_GRACE") or "") or 30
  local killed = false
  while left > 0 do
    local got = C.waitpid(-1, status, WNOHANG)
    if got > 0 then
      for rank, p in pairs(pids) do
        if p == got then
          pids[rank] = nil
          left = left - 1
          local code = exit_code(status[0])
          if code ~= 0 and not first_bad then
            first_bad = code
            deadline = os.time() + grace
            io.stderr:write(("netcl --nproc: rank %d exited with status %d\n"):format(rank, code))
          end
        end
      end
    else
      if deadline and os.time() >= deadline then
        for _, p in pairs(pids) do C.kill(p, killed and SIGKILL or SIGTERM) end
        deadline = os.time() + 5
        killed = true
      end
      C.usleep(20000)
    end
  end
  C.shm_unlink("/" .. name)   -- in case rank 0 died before it unlinked the segment
  return first_bad or 0
end

return M
