-- spec/run.lua — the test runner: every spec file on every device (cpu and
-- each OpenCL device), each file in its own process so a crash is a counted
-- failure, not a lost run. Lists every skipped test with its reason (the
-- same reason on one device once, with its tests or their count per file)
-- and ends with exactly one line "N passed, N failed, N skipped".
--   luajit spec/run.lua [pattern]     NETCL_TEST_DEVICES=cpu,opencl:0 to choose
--   NETCL_TEST_OPENCL=0 skips OpenCL devices (used under ASan).
--   NETCL_TEST_JOBS=N runs N files at once (default: the host's cores).
local root = arg[0]:match("^(.*)/spec/run%.lua$") or "."
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = root .. "/build/?.so;" .. package.cpath

local pattern = arg[1]

local function list_specs()
  local files = {}
  local p = io.popen('ls "' .. root .. '/spec"/*_spec.lua 2>/dev/null')
  for f in p:lines() do
    if not pattern or f:find(pattern, 1, true) then files[#files + 1] = f end
  end
  p:close()
  table.sort(files)
  return files
end

-- The device list comes from a child process, so this runner never
-- initialises OpenCL itself.
local function list_devices()
  if os.getenv("NETCL_TEST_DEVICES") then
    local out = {}
    for d in os.getenv("NETCL_TEST_DEVICES"):gmatch("[^,%s]+") do out[#out + 1] = d end
    return out
  end
  local env = os.getenv("NETCL_TEST_OPENCL") == "0" and "NETCL_NO_OPENCL=1 " or ""
  local cmd = env .. 'luajit -e "package.path=\'' .. root .. '/lua/?.lua;' .. root .. '/lua/?/init.lua;\'..package.path; ' ..
              'package.cpath=\'' .. root .. '/build/?.so;\'..package.cpath; ' ..
              'for _, d in ipairs(require(\'netcl\').devices()) do print(d.name) end"'
  local p = io.popen(cmd)
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  local ok = p:close()
  if #out == 0 or not ok then
    io.stderr:write("run.lua: could not list devices (is the library built? run make)\n")
    os.exit(2)
  end
  return out
end

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Op-table coverage, on full runs only: every op needs a cpu-vs-device
-- test (when an OpenCL device is present) and, if differentiable, a gradcheck.
-- The gradchecks run on the cpu device, so a run whose NETCL_TEST_DEVICES
-- leaves it out (the GPU machine's opencl:0-only runs) skips the check and
-- says so, instead of failing every differentiable op.
local devices = list_devices()
local has_cpu, has_opencl = false, false
for _, d in ipairs(devices) do
  if d == "cpu" then has_cpu = true else has_opencl = true end
end
local coverage_file = not pattern and has_cpu and os.tmpname() or nil
local function op_table()
  local cmd = 'luajit -e "package.path=\'' .. root .. '/lua/?.lua;' .. root .. '/lua/?/init.lua;\'..package.path; ' ..
              'package.cpath=\'' .. root .. '/build/?.so;\'..package.cpath; NETCL_NO_OPENCL=1; ' ..
              'local n = require(\'netcl\'); local ffi = require(\'ffi\'); local d = ffi.new(\'int[1]\'); ' ..
              'for i = 0, n.C.netcl_op_table_size() - 1 do ' ..
              'print(ffi.string(n.C.netcl_op_table_entry(i, d)) .. \' \' .. d[0]) end"'
  local p = io.popen("NETCL_NO_OPENCL=1 " .. cmd)
  local ops = {}
  for l in p:lines() do
    local name, fwd, bwd, k, diff = l:match("^(%S+) (%S+) (%S+) (%S+) (%d)$")
    if name then ops[#ops + 1] = { name = name, diff = diff == "1" } end
  end
  p:close()
  return ops
end

-- Files run NETCL_TEST_JOBS at a time (default: the host's cores): most
-- of a cold run is PoCL compiling kernels, one core per process, so a
-- 2-core CI machine runs the suite in little more than half the time. Each
-- job writes its output (and its op coverage) to files of its own; results
-- print in the order of a serial run.
local function core_count()
  local p = io.popen("nproc 2>/dev/null")
  local n = p and tonumber(p:read("*l") or "")
  if p then p:close() end
  return n or 1
end
local jobs = math.max(1, tonumber(os.getenv("NETCL_TEST_JOBS") or "") or core_count())

local tasks = {}
for _, dev in ipairs(devices) do
  for _, file in ipairs(list_specs()) do tasks[#tasks + 1] = { dev = dev, file = file } end
end
local scratch = os.tmpname()
os.remove(scratch)
os.execute("mkdir -p " .. shell_quote(scratch))

local function start(i, task)
  task.out = scratch .. "/" .. i .. ".out"
  task.cov = coverage_file and (scratch .. "/" .. i .. ".cov")
  local no_cl = os.getenv("NETCL_TEST_OPENCL") == "0" and "NETCL_NO_OPENCL=1 " or ""
  local cov = task.cov and ("NETCL_COVERAGE_FILE=" .. shell_quote(task.cov) .. " ") or ""
  local cmd = cov .. no_cl .. "NETCL_TEST_DEVICE=" .. task.dev .. " luajit " .. shell_quote(root .. "/spec/run_one.lua") ..
              " " .. shell_quote(task.file) .. " > " .. shell_quote(task.out) .. " 2>&1 < /dev/null"
  -- the marker is written after the output is complete
  os.execute("( " .. cmd .. "; : > " .. shell_quote(task.out .. ".done") .. " ) &")
  task.started = os.time()
end

local function finished(task)
  local f = io.open(task.out .. ".done")
  if f then f:close() end
  return f ~= nil
end

local function read_file(path)
  local f = io.open(path)
  if not f then return "" end
  local s = f:read("*a")
  f:close()
  return s
end

local passed, failed, skipped = 0, 0, 0
local compiled, loaded = 0, 0
local failures = {}
-- skips grouped by device and reason, in the order of a serial run
local skip_groups, skip_group_of = {}, {}
local t0 = os.time()
local cov_out = coverage_file and io.open(coverage_file, "a")

local function report(task)
  local name = task.file:match("([^/]+)_spec%.lua$")
  local out = read_file(task.out)
  if cov_out and task.cov then cov_out:write(read_file(task.cov)) end
  local c, l = out:match("netcl%-stats compiled=(%d+) loaded=(%d+)")
  compiled, loaded = compiled + (tonumber(c) or 0), loaded + (tonumber(l) or 0)
  -- run_one.lua prints "netcl-skip NAME<tab>REASON" per skipped test, then
  -- "N passed, N failed, N skipped"
  local np, nf, ns = out:match("(%d+) passed, (%d+) failed, (%d+) skipped%s*$")
  if not np then
    failed = failed + 1
    failures[#failures + 1] = ("%s on %s: did not finish\n%s"):format(name, task.dev, out:sub(-3000))
    print(("%-24s %-10s CRASHED"):format(name, task.dev))
  else
    np, nf, ns = tonumber(np), tonumber(nf), tonumber(ns)
    local listed = 0
    for test, why in out:gmatch("netcl%-skip ([^\t\n]+)\t([^\n]*)") do
      listed = listed + 1
      local key = task.dev .. "\0" .. why
      local g = skip_group_of[key]
      if not g then
        g = { dev = task.dev, why = why, tests = {}, files = {}, per_file = {} }
        skip_group_of[key] = g
        skip_groups[#skip_groups + 1] = g
      end
      g.tests[#g.tests + 1] = name .. " " .. test
      if not g.per_file[name] then g.files[#g.files + 1] = name end
      g.per_file[name] = (g.per_file[name] or 0) + 1
    end
    if listed ~= ns then   -- a skip whose reason did not come through is not a quiet skip
      nf = nf + 1
      out = out .. ("\nrun.lua: %d skipped, but %d netcl-skip lines with a reason\n"):format(ns, listed)
    end
    passed, failed, skipped = passed + np, failed + nf, skipped + ns
    if nf > 0 then failures[#failures + 1] = ("%s on %s:\n%s"):format(name, task.dev, out:sub(-6000)) end
    print(("%-24s %-10s %4d passed %4d failed %4d skipped"):format(name, task.dev, np, nf, ns))
  end
  io.stdout:flush()
end

-- a minute without a line: say what is still running, and for how long
local HEARTBEAT = tonumber(os.getenv("NETCL_TEST_HEARTBEAT") or "") or 60
local last_line = os.time()
local function heartbeat()
  local now = os.time()
  if now - last_line < HEARTBEAT then return end
  local busy = {}
  for _, task in ipairs(tasks) do
    if task.started and not task.done then
      busy[#busy + 1] = ("%s on %s (%d s)"):format(task.file:match("([^/]+)_spec%.lua$"), task.dev, now - task.started)
    end
  end
  if #busy > 0 then
    print(("  ... still running after %d s: %s"):format(now - t0, table.concat(busy, ", ")))
    io.stdout:flush()
  end
  last_line = now
end

local next_start, next_report, running = 1, 1, 0
while next_report <= #tasks do
  while running < jobs and next_start <= #tasks do
    start(next_start, tasks[next_start])
    next_start, running = next_start + 1, running + 1
  end
  local progressed = false
  for i = next_report, next_start - 1 do
    local task = tasks[i]
    if not task.done and finished(task) then task.done, running, progressed = true, running - 1, true end
  end
  while next_report < next_start and tasks[next_report].done do
    report(tasks[next_report])
    next_report = next_report + 1
    last_line = os.time()
  end
  heartbeat()
  if not progressed then os.execute("sleep 0.2") end
end
if cov_out then cov_out:close() end
os.execute("rm -rf " .. shell_quote(scratch))
if coverage_file then
  local seen = { grad = {}, device = {} }
  local f = io.open(coverage_file)
  if f then
    for l in f:lines() do
      local kind, name = l:match("^(%S+) (%S+)$")
      if kind and seen[kind] then seen[kind][name] = true end
    end
    f:close()
  end
  os.remove(coverage_file)
  local missing = {}
  for _, op in ipairs(op_table()) do
    if op.diff and not seen.grad[op.name] then missing[#missing + 1] = op.name .. " (no gradcheck)" end
    if has_opencl and not seen.device[op.name] then missing[#missing + 1] = op.name .. " (no cpu-vs-device test)" end
  end
  if #missing > 0 then
    failed = failed + #missing
    failures[#failures + 1] = "op table coverage: " .. #missing .. " missing:\n  " .. table.concat(missing, "\n  ")
  end
  print(("%-24s %-10s %4d missing"):format("op-table coverage", "all", #missing))
end
if not pattern and not coverage_file then
  print(("%-24s %-10s skipped (the gradchecks run on the cpu device, which NETCL_TEST_DEVICES leaves out)"):format(
    "op-table coverage", "all"))
end
-- every skip with its reason: a group of up to 5 tests lists them, a larger
-- one the count per file
if #skip_groups > 0 then
  print(("\nskipped: %d test%s, by device and reason"):format(skipped, skipped == 1 and "" or "s"))
  for _, g in ipairs(skip_groups) do
    print(("  %s: %s"):format(g.dev, g.why))
    if #g.tests <= 5 then
      for _, t in ipairs(g.tests) do print("      " .. t) end
    else
      local parts = {}
      for _, f in ipairs(g.files) do parts[#parts + 1] = f .. " " .. g.per_file[f] end
      print(("      %d tests: %s"):format(#g.tests, table.concat(parts, ", ")))
    end
  end
end
for _, f in ipairs(failures) do print("\n==== " .. f) end
print(("(%d s; OpenCL programs: %d compiled from source, %d loaded from the disk cache)"):format(
  os.time() - t0, compiled, loaded))
print(("%d passed, %d failed, %d skipped"):format(passed, failed, skipped))
os.exit(failed == 0 and 0 or 1)
