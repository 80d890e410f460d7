-- spec/reliability_spec.lua — defects that once crashed the process, each
-- run in a child so a regression is a failed test, not a lost run
-- (docs/reliability.md), and silent wrong results once found, each with
-- the rule it now follows.
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."
local netcl = H.netcl

TestReliability = {}

-- An out-of-memory error retries once after a full collection; an input
-- that is an unreferenced temporary (its Lua box garbage) must survive the
-- collection: the retry holds a reference to every argument.
function TestReliability:test_oom_retry_keeps_temporary_inputs()
  local dev = H.device
  local big = "2^40"   -- 4 TiB of float32: more than any device holds
  local cases = {
    ("netcl.ones(1, {device = %q}):expand(%s):contiguous()"):format(dev, big),
    ("netcl.ones(1, {device = %q}):expand(%s):exp()"):format(dev, big),
    ("netcl.ones(1, 1, {device = %q}):expand(2^20, %s / 2^20):add(1)"):format(dev, big),
    ("netcl.ones(2, {device = %q})['repeat'](netcl.ones(2, {device = %q}), %s)"):format(dev, dev, big),
    ("netcl.nn.functional.pad(netcl.ones(1, 1, 1, 1, {device = %q}):expand(1, 1, 2^20, %s / 2^20), {1, 1, 1, 1})")
      :format(dev, big),
  }
  for _, expr in ipairs(cases) do
    local code = ("local netcl = require('netcl'); local ok, err = pcall(function() return %s end); "
      .. "io.write(ok and 'no error' or tostring(err))"):format(expr)
    local out, exit = H.run_lua(code)
    lu.assertEquals(exit, 0, expr .. ": the child died: " .. out)
    lu.assertStrContains(out, "out of memory", false, expr)
  end
end

-- silent wrong results: clamp with the lower bound above the upper is the
-- upper everywhere (PyTorch's max-then-min), NaN passes, integers alike
function TestReliability:test_clamp_bounds_crossed()
  local x = netcl.tensor({ 1, 5, 9, 0 / 0 }, { device = H.device })
  local y = x:clamp(8, 2):totable()
  lu.assertEquals({ y[1], y[2], y[3] }, { 2, 2, 2 })
  lu.assertTrue(y[4] ~= y[4], "NaN stays NaN")
  lu.assertEquals(netcl.tensor({ 1, 5, 9 }, { device = H.device, dtype = "int32" }):clamp(8, 2):totable(), { 2, 2, 2 })
  lu.assertEquals(x:clamp(2, 8):totable()[2], 5)
end

-- silent wrong results, now right: an options table to std/var, seeds that
-- name their own streams (negative ones too), randint ranges a dtype holds
function TestReliability:test_arguments_once_misread()
  local x = netcl.randn({ 3, 4 }, { device = H.device })
  lu.assertEquals((x:std(2, { unbiased = false }) - x:std(2, false)):abs():max():item(), 0)
  lu.assertEquals((x:var(2, { unbiased = false, keepdim = true }) - x:var(2, false, true)):abs():max():item(), 0)
  lu.assertTrue((x:std(2, { unbiased = false }) - x:std(2)):abs():max():item() > 0)
  local seen = {}
  for _, s in ipairs({ 0, 1, -1, -12345, 2 ^ 63, 2 ^ 64 - 2 ^ 12 }) do
    netcl.manual_seed(s)
    local v = netcl.rand(1):item()
    lu.assertNil(seen[v], "seed " .. tostring(s) .. " repeats another seed's stream")
    seen[v] = true
  end
  lu.assertEquals(netcl.randint(0, 256, { 64 }, { dtype = "uint8", device = H.device }):max():item() <= 255, true)
end

-- bad input gets a clear error naming the function and the argument
function TestReliability:test_bad_arguments_are_named()
  local cases = {
    { function() netcl.manual_seed(0 / 0) end, "manual_seed: the seed must be an integer, got nan" },
    { function() netcl.manual_seed(2 ^ 70) end, "manual_seed: the seed must be in [-2^63, 2^64)" },
    { function() netcl.manual_seed(1.5) end, "manual_seed: the seed must be an integer" },
    { function() netcl.randint(0, 1000, { 4 }, { dtype = "uint8" }) end, "randint: the range [0, 1000) does not fit uint8" },
    { function() netcl.linspace(0, 1, 2.5) end, "linspace: steps must be an integer, got 2.5" },
    { function() netcl.linspace(0, 1, "5") end, "linspace: steps must be an integer, got \"5\"" },
    { function() netcl.eye(3, -2) end, "eye: m must be >= 0, got -2" },
    { function() netcl.nn.functional.layer_norm(netcl.randn(2, 6), { 5 }) end,
      "layer_norm: normalized_shape [5] is not the trailing sizes of the input [2, 6]" },
    { function() netcl.nn.functional.conv2d(nil, netcl.randn(1, 1, 3, 3)) end, "conv2d: the input must be a tensor, got nil" },
    { function() netcl.zeros_like(nil) end, "zeros_like: expected a tensor, got nil" },
    { function() netcl.no_grad(5) end, "no_grad: the argument must be a function, got number" },
    { function() netcl.randn(3):std(1, { unbaised = false }) end, "std: unknown option 'unbaised'" },
    { function() return netcl.randn(2, 3) + netcl.randn(4) end, "(dim 2: 3 vs 4)" },   -- dims of a shape count from 1
    { function() return netcl.randn(2, 3):expand(2, 5) end, "(dim 2: 3 vs 5)" },
    { function() netcl.data.DataLoader(netcl.data.TensorDataset(netcl.randn(5, 2)), { batch_size = math.huge }) end,
      "DataLoader: batch_size must be an integer, got inf" },
    { function() netcl.data.random_split(netcl.data.TensorDataset(netcl.randn(5, 2)), { -1, 6 }) end,
      "random_split: length 1 must be a non-negative number, got -1" },
    { function() netcl.nn.functional.conv2d(netcl.ones(1, 1, 4, 4), netcl.ones(1, 1, 3, 3), nil, { padding = 1.5 }) end,
      "conv2d: padding must hold integers, got 1.5" },
    { function() netcl.nn.functional.max_pool2d(netcl.ones(1, 1, 4, 4), { 2, 2.5 }) end,
      "max_pool2d: kernel_size must hold integers, got {2, 2.5}" },
    { function() netcl.optim.SGD(netcl.nn.Linear(2, 2), { lr = 0.1 }):step(5) end,
      "SGD:step: the closure must be a function returning the loss, got number" },
    { function() netcl.zeros(2 ^ 70) end, "sizes must be below 2^62" },
  }
  for _, c in ipairs(cases) do
    local ok, err = pcall(c[1])
    lu.assertFalse(ok, c[2])
    lu.assertStrContains(tostring(err), c[2])
  end
end

-- a gradient on another device than its output is refused (it used to
-- become a cpu leaf's .grad on that device)
function TestReliability:test_backward_gradient_on_another_device()
  local other
  for _, d in ipairs(netcl.devices()) do
    if d.name ~= H.device then other = d.name end
  end
  if not other then lu.skip("needs a second device") end
  local w = netcl.randn({ 3 }, { device = H.device }):requires_grad_()
  H.assert_error(function() (w * 2):backward(netcl.ones({ 3 }, { device = other })) end, "backward: gradient",
    "is on another device than output")
  H.assert_error(function() w:backward(netcl.ones({ 3 }, { device = other })) end, "is on another device")
  lu.assertNil(w.grad)
end

-- a checkpoint error says netcl.load once, with the path and the cause
function TestReliability:test_load_names_path_once()
  local ok, err = pcall(netcl.load, "/tmp")
  lu.assertFalse(ok)
  lu.assertStrContains(tostring(err), "netcl.load: '/tmp': read failed")
  local _, n = tostring(err):gsub("netcl%.load", "")
  lu.assertEquals(n, 1, tostring(err))
end

-- a save killed mid-write leaves PATH.tmp.<pid>.<n>: the next save to the
-- path removes those of dead writers and leaves a living writer's alone
function TestReliability:test_save_removes_dead_writers_temporaries()
  if not H.is_cpu then lu.skip("host files: cpu pass only") end
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local path = dir .. "/ck.safetensors"
  local function touch(p) local f = assert(io.open(p, "w")); f:write("partial"); f:close() end
  touch(path .. ".tmp.4194321.1")   -- above Linux's largest pid: no such process
  touch(path .. ".tmp.1.3")         -- init: alive
  touch(dir .. "/other.safetensors.tmp.4194321.1")   -- another path's: not this save's business
  netcl.save({ x = netcl.ones(2) }, path)
  local function exists(p) local f = io.open(p); if f then f:close() end; return f ~= nil end
  lu.assertFalse(exists(path .. ".tmp.4194321.1"), "a dead writer's temporary is removed")
  lu.assertTrue(exists(path .. ".tmp.1.3"), "a living writer's temporary stays")
  lu.assertTrue(exists(dir .. "/other.safetensors.tmp.4194321.1"))
  lu.assertEquals(netcl.load(path).x:totable(), { 1, 1 })
  os.execute("rm -rf " .. dir)
end

-- copies between overlapping views of one storage read everything before
-- writing (t:copy_(t:t()) gave 0,2,2,3); writes into an expanded view,
-- whose elements share one location, are refused
function TestReliability:test_overlapping_and_expanded_writes()
  local t = netcl.tensor({ { 0, 1 }, { 2, 3 } }, { device = H.device })
  t:copy_(t:t())
  lu.assertEquals(t:totable(), { { 0, 2 }, { 1, 3 } })
  local x = netcl.arange(0, 6, 1, { device = H.device }):view(2, 3)
  x:narrow(2, 1, 2):copy_(x:narrow(2, 2, 2))
  lu.assertEquals(x:totable(), { { 1, 2, 2 }, { 4, 5, 5 } })
  local e = netcl.zeros(1, { device = H.device }):expand(3)
  H.assert_error(function() e:add_(1) end, "add_", "several elements in one memory location", "dim 1")
  H.assert_error(function() e:copy_(netcl.ones(3, { device = H.device })) end, "copy_", "several elements in one memory location")
  H.assert_error(function() e:mul_(e) end, "mul_", "several elements")
end

-- the on-disk program cache written by several processes at once: every
-- process computes the right answer, no temporary is left, and a later
-- process loads every entry whole (compiles nothing); a damaged entry is
-- compiled again instead of being used
function TestReliability:test_program_cache_under_concurrent_writers()
  if H.is_cpu then lu.skip("the program cache belongs to OpenCL devices: the OpenCL passes run this") end
  local dir = (H.run("mktemp -d")):match("%S+")
  local code = ("local x = netcl.arange(0, 1000, 1, {device = %q}); local r = ((x * 2 + 1):sqrt():sum()):item(); " ..
                "local st = netcl.runtime_stats(); print(('result %%.3f compiled %%d loaded %%d'):format(r, st.programs_compiled, st.programs_loaded))")
                :format(H.device)
  local cmd = ("NETCL_CACHE_DIR=%s %s/build/netcl -e %q"):format(dir, root, code)
  local out = H.run(("for i in 1 2 3; do (%s > %s/out.$i 2>&1; echo $? >> %s/out.$i) & done; wait"):format(cmd, dir, dir))
  local want
  for i = 1, 3 do
    local o = H.read_file(("%s/out.%d"):format(dir, i))
    lu.assertStrContains(o, "\n0\n", false)
    local r = o:match("result (%S+)")
    lu.assertNotNil(r, o)
    want = want or r
    lu.assertEquals(r, want)
  end
  local leftovers = H.run("ls " .. dir .. " | grep -c '\\.tmp$' || true")
  lu.assertEquals(tonumber(leftovers:match("%d+")), 0, "temporary files left in the cache")
  out = H.run(cmd)
  lu.assertStrContains(out, "result " .. want .. " compiled 0 loaded")
  -- a damaged entry: cut every cache file in half; the answer stays right
  for f in H.run("ls " .. dir .. "/*.bin 2>/dev/null"):gmatch("%S+") do os.execute(("truncate -s %%50 %s"):format(f)) end
  out = H.run(cmd)
  lu.assertStrContains(out, "result " .. want)
  os.execute("rm -rf " .. dir)
end

-- the GEMM tuning cache written by several tuners at once: the file
-- always parses and keeps every process's entries (each process stores its
-- winners under a lock, re-reading the file first)
function TestReliability:test_tuning_cache_under_concurrent_tuners()
  if H.is_cpu then lu.skip("the tuning cache belongs to OpenCL devices: the OpenCL passes run this") end
  local dir = (H.run("mktemp -d")):match("%S+")
  local function tune_cmd(sizes)
    local shapes = {}
    for _, s in ipairs(sizes) do shapes[#shapes + 1] = ("{%d,%d,%d}"):format(s[1], s[2], s[3]) end
    return ("NETCL_CACHE_DIR=%s %s/build/netcl -e %q"):format(dir, root,
      ("netcl.tune{device=%q, shapes={%s}, max_candidates=1, quiet=true}"):format(H.device, table.concat(shapes, ",")))
  end
  -- compile the kernels once, so the concurrent tuners race on the file only
  H.run(tune_cmd({ { 16, 16, 16 } }))
  local procs, want = {}, { "16:16:16" }
  for i = 1, 4 do
    local b = 16 * 2 ^ i
    local sizes = { { b, 16, 16 }, { 16, b, 16 }, { 16, 16, b } }
    for _, s in ipairs(sizes) do want[#want + 1] = ("%d:%d:%d"):format(s[1], s[2], s[3]) end
    procs[#procs + 1] = ("(%s > %s/out.%d 2>&1; echo rc=$? >> %s/out.%d) &"):format(tune_cmd(sizes), dir, i, dir, i)
  end
  H.run(table.concat(procs, " ") .. " wait")
  for i = 1, 4 do lu.assertStrContains(H.read_file(("%s/out.%d"):format(dir, i)), "rc=0") end
  local file = H.run("cat " .. dir .. "/gemm-*.tune")
  for _, key in ipairs(want) do lu.assertStrContains(file, "float32 nn " .. key .. " |", false) end
  lu.assertEquals(tonumber(H.run("ls " .. dir .. " | grep -c '\\.tmp$' || true"):match("%d+")), 0, "temporary files left")
  -- a later process reads it whole: no warning about the file
  local out = H.run(("NETCL_CACHE_DIR=%s %s/build/netcl -e %q 2>&1"):format(dir, root,
    ("print(netcl.gemm_config(32, 16, 16, {device=%q}))"):format(H.device)))
  lu.assertNotStrContains(out, "ignoring")
  lu.assertStrContains(out, "tuned")
  os.execute("rm -rf " .. dir)
end

-- found by `make fuzz`: a gzip IDX file whose header claims 12 GB, with
-- gzip's recorded size (modulo 2^32) agreeing, allocated the 12 GB before
-- reading; a claim past what the packed bytes can expand to is refused
function TestReliability:test_idx_gzip_claim_past_its_packed_size()
  if not H.is_cpu then lu.skip("a file reader: cpu pass only") end
  H.assert_error(function() netcl.read_idx(root .. "/spec/fuzz/corpus/idx/regress-gzip-size-mod-2-32.idx.gz") end,
    "read_idx", "[196608,256,256]", "more than a gzip file of 27 bytes can hold")
end

-- found by `make fuzz`: an IDX header with a zero dim and two huge ones
-- overflowed the stride and element-count products (UBSan, under make
-- check); the counts saturate now and the file reads as an empty tensor
function TestReliability:test_idx_zero_dim_with_huge_sizes()
  if not H.is_cpu then lu.skip("a file reader: cpu pass only") end
  local t = netcl.read_idx(root .. "/spec/fuzz/corpus/idx/regress-zero-dim-huge-sizes.idx")
  lu.assertEquals(t:numel(), 0)
  lu.assertEquals(t:size(), { 0, 4278190079, 4294967295 })
end

-- huge geometry: paddings, dilations, strides, windows and batch sizes near
-- 2^30 give clear errors (or the right small result), never an overflow;
-- make check runs this under UBSan
function TestReliability:test_huge_geometry_is_named_not_overflowed()
  local F = netcl.nn.functional
  local function x(n) return netcl.ones(n or 1, 1, 4, 4, { device = H.device }) end
  local w = netcl.ones(1, 1, 3, 3, { device = H.device })
  H.assert_error(function() F.conv2d(x(), w, nil, { padding = 2 ^ 30 }) end, "conv2d", "too large")
  H.assert_error(function() F.conv2d(x(), w, nil, { dilation = 2 ^ 30 }) end, "conv2d", "does not fit")
  lu.assertEquals(F.conv2d(x(), w, nil, { stride = 2 ^ 30 }):size(), { 1, 1, 1, 1 })
  H.assert_error(function() F.max_pool2d(x(), 2, { padding = 2 ^ 30 }) end, "max_pool2d", "at most half the kernel")
  H.assert_error(function() F.avg_pool2d(x(), 2 ^ 30) end, "avg_pool2d", "does not fit")
  H.assert_error(function() F.conv2d(x(), w, nil, { padding = -5 }) end, "conv2d", "non-negative")
  lu.assertEquals(netcl.zeros(2 ^ 31, 2 ^ 31, 0, { device = H.device }):sum():item(), 0)
end
