-- spec/dist/collectives.lua — run by spec/distributed_spec.lua on every
-- rank of a job (netcl --nproc N, or mpirun): each collective, dtype and
-- op on sizes from 1 element up, checked against the result computed
-- locally from every rank's (known) input, and checked bitwise equal on
-- every rank. Prints "ok <rank> <checks>"; any mismatch raises.
-- arg[1]: "all" (the matrix), "device <name>", "die", "stuck", "async",
-- "ring <name>" (more all_reduces in flight than the exchange ring holds)
local netcl = require("netcl")
local dist = netcl.distributed
local mode = arg[1] or "all"
dist.init({ timeout = tonumber(os.getenv("DIST_TEST_TIMEOUT") or "60") })
local R, W = dist.rank(), dist.world_size()
local checks = 0

local function fail(msg) error(("rank %d: %s"):format(R, msg), 2) end

-- rank r's input of n elements: small values so products stay exact
local function input(r, n, dtype, device)
  local a = netcl.arange(0, n, 1, { dtype = "float64" })
  local t = a - (a / 3):floor() * 3 + (r % 2) + 1
  if dtype == "bool" then
    local b = a + r
    t = (b - (b / 2):floor() * 2):eq(0)
  end
  return t:to(dtype):to(device or "cpu")
end

local combine = {
  sum = function(a, b) return a + b end, avg = function(a, b) return a + b end,
  max = function(a, b) return netcl.maximum(a, b) end, min = function(a, b) return netcl.minimum(a, b) end,
  product = function(a, b) return a * b end,
}

local function expected(n, dtype, op)
  local acc
  local bool = dtype == "bool"
  for r = 0, W - 1 do
    local x = input(r, n, dtype):to("float64")
    if not acc then acc = x
    elseif bool and (op == "sum" or op == "max") then acc = netcl.maximum(acc, x)
    elseif bool then acc = netcl.minimum(acc, x)
    else acc = combine[op](acc, x) end
  end
  if op == "avg" then acc = acc / W end
  return acc
end

local function same(got, want, tol, what)
  checks = checks + 1
  local g = got:to("cpu"):to("float64")
  local d = (g - want):abs():max():item()
  if not (d <= tol) then fail(("%s: max difference %g"):format(what, d)) end
end

-- every rank holds bitwise the same tensor
local function identical(t, what)
  local bytes = t:to("cpu"):contiguous()
  local g = netcl.empty({ W, bytes:numel() }, { dtype = bytes.dtype })
  dist.all_gather(g, bytes)
  for r = 1, W - 1 do
    -- NaN-free data: equal values are equal bits
    local row, first = g:select(1, r + 1):to("float64"), g:select(1, 1):to("float64")
    if (row - first):abs():max():item() ~= 0 then fail(what .. ": ranks disagree") end
  end
  checks = checks + 1
end

local DTYPES = { "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool" }
local OPS = { "sum", "avg", "max", "min", "product" }
local function is_float(dt) return dt:find("float") ~= nil end

local function all_reduce_case(n, dtype, op, device)
  local t = input(R, n, dtype, device)
  dist.all_reduce(t, op)
  local tol = (dtype == "float16" or dtype == "bfloat16") and 0.02 * W * 4 or 0
  if op == "avg" and dtype == "bfloat16" then tol = 0.05 end
  if op == "avg" and dtype == "float32" then tol = 1e-6 end   -- a division rounds in float32
  same(t, expected(n, dtype, op), tol, ("all_reduce %s %s n=%d"):format(op, dtype, n))
  identical(t, ("all_reduce %s %s n=%d"):format(op, dtype, n))
end

local function others(n, dtype)
  -- broadcast from the last rank
  local b = input(R, n, dtype)
  dist.broadcast(b, W - 1)
  same(b, input(W - 1, n, dtype):to("float64"), 0, ("broadcast %s n=%d"):format(dtype, n))
  -- all_gather and gather
  local g = netcl.zeros({ W * n }, { dtype = dtype })
  dist.all_gather(g, input(R, n, dtype))
  for r = 0, W - 1 do same(g:narrow(1, r * n + 1, n), input(r, n, dtype):to("float64"), 0, "all_gather " .. dtype) end
  local root = W > 1 and 1 or 0
  local gg = R == root and netcl.zeros({ W * n }, { dtype = dtype }) or nil
  dist.gather(input(R, n, dtype), gg, root)
  if gg then for r = 0, W - 1 do same(gg:narrow(1, r * n + 1, n), input(r, n, dtype):to("float64"), 0, "gather " .. dtype) end end
  -- scatter: slice k of root's input is input(k)
  local s = netcl.zeros({ n }, { dtype = dtype })
  local src
  if R == 0 then
    local parts = {}
    for r = 0, W - 1 do parts[r + 1] = input(r, n, dtype) end
    src = parts
  end
  dist.scatter(s, src, 0)
  same(s, input(R, n, dtype):to("float64"), 0, "scatter " .. dtype)
  -- reduce_scatter: rank r's input is W copies of input(r); slice k reduced
  local big = netcl.zeros({ W * n }, { dtype = dtype })
  for k = 0, W - 1 do big:narrow(1, k * n + 1, n):copy_(input(R, n, dtype)) end
  local o = netcl.zeros({ n }, { dtype = dtype })
  if dtype ~= "bool" then
    dist.reduce_scatter(o, big, "sum")
    same(o, expected(n, dtype, "sum"), is_float(dtype) and not dtype:find("^float[36]") and 0.1 * W or 0, "reduce_scatter " .. dtype)
  end
end

if mode == "all" then
  local sizes = { 1, 7, 1000, 262147 }   -- 262147: odd, several chunks of a 0.25 MiB slot
  for _, n in ipairs(sizes) do
    for _, dt in ipairs(DTYPES) do
      for _, op in ipairs(OPS) do
        if op ~= "avg" or is_float(dt) then all_reduce_case(n, dt, op) end
      end
      if n <= 1000 or dt == "float32" then others(n, dt) end
    end
  end
  -- 64 MB of float32 in place
  local big = netcl.full({ 16 * 2 ^ 20 }, R + 1)
  dist.all_reduce(big)
  checks = checks + 1
  if big:min():item() ~= W * (W + 1) / 2 or big:max():item() ~= W * (W + 1) / 2 then fail("all_reduce 64 MB") end
  -- errors name the op and the problem
  local ok, err = pcall(dist.all_reduce, netcl.ones({ 3 }, { dtype = "int32" }), "avg")
  if ok or not tostring(err):find("avg needs a float tensor") then fail("avg on int32 should be refused: " .. tostring(err)) end
  ok, err = pcall(dist.broadcast, netcl.ones({ 3 }), W)
  if ok or not tostring(err):find("root " .. W .. " is not a rank") then fail("bad root should be refused: " .. tostring(err)) end
  ok, err = pcall(dist.all_gather, netcl.ones({ 5 }), netcl.ones({ 2 }))
  if ok or not tostring(err):find("must hold world size") then fail("bad all_gather size should be refused: " .. tostring(err)) end
  dist.barrier()
elseif mode == "device" then
  local dev = arg[2]
  for _, dt in ipairs({ "float32", "float16", "int32" }) do
    for _, n in ipairs({ 5, 100003 }) do all_reduce_case(n, dt, "sum", dev) end
  end
  for _, op in ipairs(OPS) do all_reduce_case(100003, "float32", op, dev) end
  all_reduce_case(4099, "float64", "avg", dev)
  local t = input(R, 1000, "float32", dev):narrow(1, 11, 500)   -- a view: staged, written back in place
  dist.all_reduce(t, "max")
  same(t, expected(1000, "float32", "max"):narrow(1, 11, 500), 0, "all_reduce of a device view")
elseif mode == "async" then
  local hs, ts = {}, {}
  for k = 1, 6 do
    ts[k] = netcl.full({ 1000 * k + 1 }, R + k)
    hs[k] = dist.all_reduce(ts[k], "sum", { async = true })
  end
  for k = 6, 1, -1 do
    hs[k]:wait()
    checks = checks + 1
    if ts[k]:max():item() ~= W * (W + 1) / 2 + W * (k - 1) then fail("async all_reduce " .. k) end
    if not hs[k]:is_completed() then fail("handle not completed after wait") end
  end
elseif mode == "ring" then
  -- 12 x 400 KB in flight through a 1 MB ring: later ones wait for room
  local dev, hs, ts = arg[2], {}, {}
  for k = 1, 12 do
    ts[k] = netcl.full({ 100000 + k }, R + k, { device = dev })
    hs[k] = dist.all_reduce(ts[k], "sum", { async = true })
  end
  for k = 1, 12 do
    hs[k]:wait()
    same(ts[k], netcl.full({ 100000 + k }, W * (W + 1) / 2 + W * (k - 1), { dtype = "float64", device = "cpu" }), 0,
      "ring all_reduce " .. k)
  end
  identical(ts[12], "ring all_reduce")
elseif mode == "die" then
  if R == W - 1 then os.exit(3) end
  dist.all_reduce(netcl.ones({ 10 }))
elseif mode == "stuck" then
  if R == W - 1 then os.execute("sleep 4") end
  dist.all_reduce(netcl.ones({ 10 }))
end
print(("ok %d %d"):format(R, checks))
dist.finalize()
