-- examples/bench/bench_time.lua — what benchmarks share: a product's
-- median seconds over 5 rounds of 10 calls, after 20 that warm the clocks
-- (gemm_shapes.lua, gemm_linear.lua); a step's median seconds over rounds
-- of n calls (models.lua, jit.lua); the clock; and a peer's figures.
local netcl = require("netcl")
local ffi = require("ffi")

pcall(ffi.cdef, [[ struct timespec { long tv_sec; long tv_nsec; }; int clock_gettime(int clk, struct timespec *ts); ]])
local ts = ffi.new("struct timespec")
local function now() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end

local M = {}
M.now = now

-- median seconds per call of fn over `rounds` rounds of n calls, after 3
-- warm-up calls; the device is synchronised around every round
function M.per_call(fn, n, rounds, devname)
  for _ = 1, 3 do fn() end
  netcl.synchronize(devname)
  local t = {}
  for r = 1, rounds do
    local t0 = now()
    for _ = 1, n do fn() end
    netcl.synchronize(devname)
    t[r] = (now() - t0) / n
  end
  table.sort(t)
  return t[math.ceil(#t / 2)]
end

-- fn() returns a tensor, freed at once so the pool reuses its memory
function M.median(fn, devname)
  for _ = 1, 20 do fn():free() end
  netcl.synchronize(devname)
  local t = {}
  for i = 1, 5 do
    local t0 = now()
    for _ = 1, 10 do fn():free() end
    netcl.synchronize(devname)
    t[i] = (now() - t0) / 10
  end
  table.sort(t)
  return t[3]
end

-- Runs a peer script's command line; returns its "name value" lines as a
-- table and the device it names on its "device ..." line (nil where
-- PyTorch is missing: the script prints nothing)
function M.peer(cmd)
  local peer, dev = {}, nil
  local p = io.popen(cmd .. " 2>/dev/null")
  for line in p:lines() do
    dev = dev or line:match("^device (.*)$")
    local name, v = line:match("^(%S+) ([%d%.e%-+]+)$")
    if name then peer[name] = tonumber(v) end
  end
  p:close()
  return peer, dev
end

-- One plain training step on a fixed batch: zero_grad, forward, the loss,
-- backward, the optimizer's step.
function M.train_step(model, opt, loss_fn, x, y)
  return function()
    opt:zero_grad()
    local loss = loss_fn(model(x), y)
    loss:backward()
    opt:step()
  end
end

-- The command line as options: "--key value" for the keys of defaults
-- (numbers where they read as one) and for device and only, "--flag" for
-- the keys of flags (true); anything else is an error.
function M.options(defaults, flags)
  local opts, i = defaults, 1
  while arg and arg[i] do
    local key = arg[i]:match("^%-%-(.+)$")
    if key and flags[key] then opts[key] = true; i = i + 1
    elseif key and (opts[key] ~= nil or key == "device" or key == "only") then opts[key] = tonumber(arg[i + 1]) or arg[i + 1]; i = i + 2
    else error("unknown argument " .. tostring(arg[i])) end
  end
  return opts
end

-- Runs a PyTorch peer's command line where `import torch` works: each line
-- goes to take(line) (true when it was a result), "device ..." names the
-- peer's device; returns that name, or nil and why (the lines it did not
-- understand, or PyTorch missing).
function M.torch_peer(cmd, take)
  local ok = os.execute("python3 -c 'import torch' >/dev/null 2>&1")
  if ok ~= 0 and ok ~= true then return nil, "PyTorch not installed" end
  local p = io.popen(cmd .. " 2>&1")
  local pdev, other = nil, {}
  for line in p:lines() do
    if not take(line) then
      if line:match("^device ") then pdev = line:match("^device (.*)$") else other[#other + 1] = line end
    end
  end
  p:close()
  if not pdev then return nil, table.concat(other, "\n") end
  return pdev
end

return M
