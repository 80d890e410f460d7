-- spec/gemm_spec.lua — the GEMM kernels against the cpu reference on every
-- device: every transpose combination through strided views (and a layout
-- with neither dim contiguous), batched and broadcast batches, odd sizes
-- from 1 up, large K, float16/bfloat16 storage (rtol 1e-2), float64, the
-- fused epilogue (alpha, beta * c, bias, each activation) against the same
-- result built from separate ops, explicit kernel configurations forced one
-- by one, the tuner and its cache file, and the tensor-core path where the
-- device's probe enabled it (skipped elsewhere, saying so).
local lu = require("luaunit")
local H = require("spec.helper")
local netcl = H.netcl
local ffi = require("ffi")

-- a [m, k] @ b [k, n], with a / b stored transposed when ta / tb
local function operands(dev, m, k, n, ta, tb, dtype, seed)
  netcl.manual_seed(seed or 7)
  local o = { device = dev, dtype = dtype or "float32" }
  local a = ta and netcl.randn(k, m, o):t() or netcl.randn(m, k, o)
  local b = tb and netcl.randn(n, k, o):t() or netcl.randn(k, n, o)
  return a, b
end

-- float32 results: sums of K products differ from the cpu's order by
-- rounding only; the bound scales with sqrt(K) (values ~ N(0, K))
local function tol(k) return 1e-4, 1e-5 * math.sqrt(k) end

-- The largest error of a float32 product in each fp32_precision mode,
-- relative to the largest entry of the float64 result, for both layouts of
-- b; and the configuration "tf32x3" ran.
local function fp32_errors(shape)
  local m, k, n = shape[1], shape[2], shape[3]
  local res = {}
  for _, tb in ipairs({ false, true }) do
    local a64, b64 = operands("cpu", m, k, n, false, tb, "float64", 11)
    local ref = a64:matmul(b64)
    local scale = ref:abs():max():item()
    for _, mode in ipairs({ "ieee", "tf32x3", "tf32" }) do
      netcl.backends.fp32_precision = mode
      local ok, got = pcall(function()
        local a, b = a64:float():to(H.device), b64:float():to(H.device)
        if mode == "tf32x3" then res.cfg = netcl.gemm_config(m, n, k, { device = H.device, dtype = "float32", trans_b = tb }) end
        return (a:matmul(b):double():to("cpu") - ref):abs():max():item() / scale
      end)
      netcl.backends.fp32_precision = "ieee"
      if not ok then error(got, 0) end
      res[mode] = math.max(res[mode] or 0, got)
    end
  end
  -- float32 FMAs give ~1e-7 here; 3xTF32 drops terms below 2^-21 of each product
  lu.assertTrue(res.tf32x3 < math.max(4 * res.ieee, 2e-6),
    string.format("tf32x3 error %.3g against ieee %.3g (%s)", res.tf32x3, res.ieee, res.cfg))
  return res
end

TestGemm = {}

function TestGemm:test_layouts_and_odd_sizes()
  local shapes = { { 1, 1, 1 }, { 3, 5, 7 }, { 17, 63, 65 }, { 129, 33, 1 }, { 1, 64, 130 }, { 65, 17, 3 } }
  for _, s in ipairs(shapes) do
    for _, ta in ipairs({ false, true }) do
      for _, tb in ipairs({ false, true }) do
        local rtol, atol = tol(s[2])
        H.device_check("matmul", function(dev)
          local a, b = operands(dev, s[1], s[2], s[3], ta, tb)
          return a:matmul(b)
        end, rtol, atol)
      end
    end
  end
end

-- The grid against a reference built without any GEMM: float64 products
-- summed by broadcasting, (a[m, k, 1] * b[1, k, n]):sum(2), on the cpu.
-- Every other test compares a device with the cpu backend, so this one
-- checks the cpu backend itself (through its BLAS, and in a child process
-- with NETCL_BLAS=0 through its built-in kernel) as well as every device.
-- The chunk returns the worst error over the grid as a multiple of its
-- tolerance (float32: 1e-4 relative + 1e-5 sqrt(K); float64: 1e-10), and
-- where it was.
local GRID_WORST = [[
  local netcl, dev = ...
  local worst, where = 0, "none"
  local shapes = { {1, 1, 1}, {3, 5, 7}, {17, 63, 65}, {129, 33, 1}, {1, 64, 130}, {65, 17, 3}, {19, 2049, 33} }
  for _, s in ipairs(shapes) do
    local m, k, n = s[1], s[2], s[3]
    for _, batch in ipairs({ 0, 3 }) do
      netcl.manual_seed(m * 7 + n)
      local o = { device = "cpu", dtype = "float64" }
      local function randn(r, c) return batch > 0 and netcl.randn(batch, r, c, o) or netcl.randn(r, c, o) end
      local a64, b64, at64, bt64 = randn(m, k), randn(k, n), randn(k, m), randn(n, k)
      for _, dt in ipairs({ "float32", "float64" }) do
        for lay = 0, 3 do
          local ta, tb = lay % 2 == 1, lay >= 2
          local a = ta and at64:transpose(-1, -2) or a64
          local b = tb and bt64:transpose(-1, -2) or b64
          local ref = (a:unsqueeze(-1) * b:unsqueeze(-3)):sum(-2)
          local da = (ta and at64 or a64):to(dt):to(dev)
          local db = (tb and bt64 or b64):to(dt):to(dev)
          if ta then da = da:transpose(-1, -2) end
          if tb then db = db:transpose(-1, -2) end
          local got = da:matmul(db):double():to("cpu")
          local err = (got - ref):abs():max():item()
          local allowed = dt == "float64" and 1e-10 * (1 + ref:abs():max():item())
                          or 1e-4 * ref:abs():max():item() + 1e-5 * math.sqrt(k)
          if err / allowed > worst then
            worst, where = err / allowed, ("%s %dx%dx%d batch %d ta=%s tb=%s"):format(dt, m, k, n, batch, tostring(ta), tostring(tb))
          end
        end
      end
    end
  end
  return worst, where
]]

function TestGemm:test_grid_against_broadcast_sums()
  local worst, where = assert(load(GRID_WORST))(netcl, H.device)
  lu.assertTrue(worst <= 1, ("worst error %.3g times the tolerance at %s"):format(worst, where))
end

function TestGemm:test_grid_on_the_cpu_builtin_kernel()
  lu.skipIf(not H.is_cpu, "NETCL_BLAS=0 selects the cpu backend's built-in kernel (the cpu pass runs it)")
  local file = os.tmpname()
  local f = assert(io.open(file, "w"))
  f:write(GRID_WORST)
  f:close()
  local code = "local worst, where = assert(loadfile(os.getenv('GRID_FILE')))(require('netcl'), 'cpu') io.write(worst, ' ', where)"
  local out = H.run_lua(code, "GRID_FILE=" .. file .. " NETCL_BLAS=0")
  os.remove(file)
  local w = tonumber(out:match("^(%S+)"))
  lu.assertNotNil(w, out)
  lu.assertTrue(w <= 1, "built-in kernel (NETCL_BLAS=0): " .. out)
end

function TestGemm:test_large_k()
  for _, tb in ipairs({ false, true }) do
    H.against_cpu(function(dev)
      local a, b = operands(dev, 19, 2049, 33, false, tb)
      return a:matmul(b)
    end, tol(2049))
  end
end

function TestGemm:test_split_k()
  -- few output tiles and a long K: OpenCL devices split K into slices
  -- (src/ops/linalg.c split_product) with a tail when K does not divide;
  -- transposed operands and a [1, K] x [K, 1] product take the same path
  for _, s in ipairs({ { 8, 5003, 20, false, false }, { 6, 8192, 25, true, false }, { 64, 4099, 9, false, true },
                       { 1, 6000, 1, true, true } }) do
    H.against_cpu(function(dev)
      local a, b = operands(dev, s[1], s[2], s[3], s[4], s[5])
      return a:matmul(b)
    end, tol(s[2]))
  end
end

-- NETCL_GEMM_SPLIT=S forces S slices of K wherever the device splits
-- (OpenCL, float32; src/ops/linalg.c): the partial products' sum then applies
-- the epilogue too (gemm_slices), over rows of odd, even and 4-multiple
-- widths; gemm_config names the slices
local function with_split(s, fn)
  ffi.C.setenv("NETCL_GEMM_SPLIT", s, 1)
  local ok, err = pcall(fn)
  ffi.C.unsetenv("NETCL_GEMM_SPLIT")
  if not ok then error(err, 0) end
end

function TestGemm:test_split_k_forced_with_epilogues()
  with_split("3", function()
    -- K = 77: three slices of 24 and a rest of 5
    for _, s in ipairs({ { 37, 77, 21, false, true }, { 16, 77, 64, true, false }, { 9, 77, 10, false, false } }) do
      H.device_check("gemm", function(dev)
        local a, b = operands(dev, s[1], s[2], s[3], s[4], s[5])
        netcl.manual_seed(12)
        local c = netcl.randn(s[1], s[3], { device = dev })
        local crow = netcl.randn(s[3], { device = dev })
        local bias = netcl.randn(s[3], { device = dev })
        return a:matmul(b), netcl.gemm(a, b, { c = c, bias = bias, alpha = 0.75, beta = 1.25, act = "gelu" }),
          netcl.gemm(a, b, { c = crow, beta = -1, act = "leaky_relu", slope = 0.1 }),
          netcl.linear(a, b:t(), bias)
      end, 1e-4, 1e-4)
    end
    lu.assertStrContains(netcl.gemm_config(37, 21, 77, { device = H.device, trans_b = true }),
      "; K in 3 slices of 24 and the rest, summed")
  end)
  with_split("1", function()
    lu.assertNotStrContains(netcl.gemm_config(8, 20, 8192, { device = H.device }), "slices")
  end)
end

function TestGemm:test_no_contiguous_dim()
  -- every other element of a wider tensor in both dims: neither stride is 1
  H.against_cpu(function(dev)
    netcl.manual_seed(3)
    local a = netcl.randn(26, 34, { device = dev }):slice({ 1, 25 }, { 1, 33 })   -- padded rows
    local b = netcl.randn(20, 34, { device = dev }):slice({}, { 1, 33 }):t()      -- padded columns
    local as = netcl.randn(2 * 13, 2 * 17, { device = dev })
    local strided = as:view(13, 2, 17, 2):select(2, 1):select(3, 1)   -- [13, 17], strides (68, 2)
    return a:matmul(b), strided:matmul(netcl.randn(17, 5, { device = dev })), b:t():slice({}, { 1, 13 }):matmul(strided)
  end, tol(33))
end

function TestGemm:test_batched_and_broadcast()
  H.against_cpu(function(dev)
    netcl.manual_seed(5)
    local o = { device = dev }
    local a, b = netcl.randn(3, 17, 9, o), netcl.randn(3, 9, 13, o)
    local w = netcl.randn(9, 13, o)                        -- broadcast over the batch (stride 0)
    local bt = netcl.randn(3, 13, 9, o):transpose(2, 3)    -- a transposed batch
    local c = netcl.randn(2, 1, 5, 9, o)
    local d = netcl.randn(4, 9, 6, o)                      -- [2,1] x [4] batch dims broadcast
    return a:matmul(b), a:matmul(w), a:matmul(bt), c:matmul(d), netcl.randn(1, 4, 9, o):expand(3, 4, 9):matmul(b)
  end, tol(9))
end

function TestGemm:test_half_and_bfloat16_storage()
  for _, dt in ipairs({ "float16", "bfloat16" }) do
    for _, tb in ipairs({ false, true }) do
      H.against_cpu(function(dev)
        local a, b = operands(dev, 33, 70, 18, false, tb, dt)
        return a:matmul(b)
      end, 1e-2, 1e-2)
    end
  end
end

function TestGemm:test_float64()
  H.skip_without_fp64()
  H.against_cpu(function(dev)
    local a, b = operands(dev, 21, 40, 35, true, false, "float64")
    return a:matmul(b)
  end, 1e-12, 1e-12)
end

-- ---- the fused epilogue ---------------------------------------------------------
local ACTS = { "relu", "sigmoid", "tanh", "silu", "gelu", "gelu_tanh", "relu6", "leaky_relu" }

function TestGemm:test_epilogue_against_separate_ops()
  local dev = H.device
  local a, b = operands(dev, 13, 20, 11, false, true)
  local c = netcl.randn(13, 11, { device = dev })
  local crow = netcl.randn(11, { device = dev })   -- c broadcast along rows
  local bias = netcl.randn(11, { device = dev })
  local p = a:matmul(b)
  H.assert_close(netcl.gemm(a, b, { alpha = 2.5 }), p * 2.5, tol(20))
  H.assert_close(netcl.gemm(a, b, { c = c, beta = -0.5 }), p + c * -0.5, tol(20))
  H.assert_close(netcl.gemm(a, b, { c = crow, alpha = 0.5, beta = 2 }), p * 0.5 + crow * 2, tol(20))
  H.assert_close(netcl.gemm(a, b, { bias = bias }), p + bias, tol(20))
  for _, act in ipairs(ACTS) do
    local want = p * 1.5 + c + bias
    want = act == "leaky_relu" and want:leaky_relu(0.2) or want[act](want)
    H.assert_close(netcl.gemm(a, b, { c = c, bias = bias, alpha = 1.5, act = act, slope = 0.2 }), want, 1e-4, 1e-4, act)
  end
end

-- the cpu adds a float32 bias (and ReLU) in float on each block the BLAS
-- finishes; the bits must be those of the separate ops (the sum rounded once)
function TestGemm:test_cpu_bias_epilogue_bits_match_separate_ops()
  lu.skipIf(not H.is_cpu, "checks the cpu backend's float32 epilogue: cpu only")
  netcl.manual_seed(7)
  local a, b = netcl.randn(200, 64), netcl.randn(64, 300)
  local bias = netcl.randn(300)
  bias:narrow(1, 1, 3):fill_(0)
  local p = a:matmul(b)
  lu.assertEquals(netcl.gemm(a, b, { bias = bias }):totable(), (p + bias):totable(), "bias")
  lu.assertEquals(netcl.gemm(a, b, { bias = bias, act = "relu" }):totable(), (p + bias):relu():totable(), "bias, relu")
  -- a convolution's bias runs along the output channels
  local x, w, cb = netcl.randn(8, 5, 12, 12), netcl.randn(16, 5, 3, 3), netcl.randn(16)
  local F = netcl.nn.functional
  lu.assertEquals(F.conv2d(x, w, cb, { padding = 1 }):totable(),
                  (F.conv2d(x, w, nil, { padding = 1 }) + cb:view(1, 16, 1, 1)):totable(), "conv2d bias")
end

function TestGemm:test_epilogue_against_cpu()
  H.device_check("gemm", function(dev)
    local a, b = operands(dev, 37, 29, 21, true, false)
    netcl.manual_seed(11)
    local c = netcl.randn(2, 37, 21, { device = dev })
    local bias = netcl.randn(21, { device = dev })
    local ab = netcl.randn(2, 37, 29, { device = dev })
    return netcl.gemm(a, b, { c = c[1], bias = bias, alpha = 0.75, beta = 1.25, act = "gelu" }),
      netcl.gemm(ab, b, { c = c, beta = 1, act = "relu" }),
      netcl.gemm(a:half(), b:half(), { bias = bias:half(), act = "silu" }):float()
  end, 1e-2, 1e-3)
end

function TestGemm:test_addmm_linear_fused_and_recorded_agree()
  local dev = H.device
  local x = netcl.randn(2, 7, 12, { device = dev })
  local w, b = netcl.randn(5, 12, { device = dev }), netcl.randn(5, { device = dev })
  local fused = netcl.linear(x, w, b)                       -- nothing requires grad: one gemm
  local wg = w:clone():requires_grad_()
  local recorded = netcl.linear(x, wg, b)                   -- recorded as matmul + add
  H.assert_close(fused, recorded:detach(), tol(12))
  recorded:sum():backward()
  H.assert_close(wg.grad, x:reshape(14, 12):sum(1):expand(5, 12), 1e-4, 1e-4)
  local c, m1, m2 = netcl.randn(3, 4, { device = dev }), netcl.randn(3, 6, { device = dev }), netcl.randn(6, 4, { device = dev })
  H.assert_close(c:addmm(m1, m2, { beta = 0.5, alpha = 2 }), c * 0.5 + m1:matmul(m2) * 2, tol(6))
  -- beta = 0 ignores c, NaNs included (PyTorch's rule)
  H.assert_close(netcl.full({ 3, 4 }, 0 / 0, { device = dev }):addmm(m1, m2, { beta = 0 }), m1:matmul(m2), tol(6))
end

function TestGemm:test_bad_epilogues()
  local a = netcl.randn(3, 4, { device = H.device })
  H.assert_error(function() netcl.gemm(a, a:t(), { act = "softplus" }) end, "gemm", "softplus")
  H.assert_error(function() netcl.gemm(a, a:t(), { bias = netcl.randn(4, { device = H.device }) }) end, "gemm", "bias")
  H.assert_error(function() netcl.gemm(a, a:t(), { c = netcl.randn(3, 3, { device = H.device, dtype = "float64" }) }) end,
    "gemm", "dtype")
end

-- ---- forced configurations: each one must compute the same products ---------------
-- Each configuration x layout is its own program (a few seconds to compile
-- on PoCL), so the set is small but covers both kernels, vector widths 1 to
-- 8, uneven thread shapes, padding, K chunks and cmr that divides nothing.
local CONFIGS = {
  "tiled mwg=64 nwg=32 kwg=16 mdimc=8 ndimc=8 vwm=4 vwn=2 vw=4 pad=4",
  "tiled mwg=32 nwg=64 kwg=8 mdimc=4 ndimc=16 vwm=2 vwn=4 vw=8 pad=1",
  "direct cmr=5 cnr=8 vw=8 kwg=32 mdimc=2 ndimc=4",
}

function TestGemm:test_forced_configurations()
  lu.skipIf(H.is_cpu, "forces OpenCL kernel configurations: the cpu backend has one kernel (or BLAS)")
  -- sizes with vector loads (64 x 32 x 64) in two layouts, odd ones in a third
  local cases = { { 64, 32, 64, false, false }, { 64, 32, 64, true, true }, { 37, 45, 29, false, true },
                  { 1, 9, 70, false, true } }
  for _, cfg in ipairs(CONFIGS) do
    netcl.gemm_set_config(cfg, H.device)
    lu.assertStrContains(netcl.gemm_config(8, 8, 8, { device = H.device }), "(forced)")
    for _, s in ipairs(cases) do
      local a, b = operands(H.device, s[1], s[2], s[3], s[4], s[5])
      H.assert_close(a:matmul(b):to("cpu"), a:to("cpu"):matmul(b:to("cpu")), 1e-4, 1e-4, cfg)
    end
    local a, b = operands(H.device, 64, 32, 64, false, false)
    local bias = netcl.randn(64, { device = H.device })
    H.assert_close(netcl.gemm(a, b, { bias = bias, act = "relu" }), (a:matmul(b) + bias):relu(), 1e-4, 1e-4, cfg)
  end
  netcl.gemm_set_config(nil, H.device)
  lu.assertNotStrContains(netcl.gemm_config(8, 8, 8, { device = H.device }), "(forced)")
  H.assert_error(function() netcl.gemm_set_config("tiled mwg=7 nonsense=1", H.device) end, "cannot parse")
end

-- ---- the tuner and its cache ----------------------------------------------------------
ffi.cdef [[ int setenv(const char *name, const char *value, int overwrite); int unsetenv(const char *name); ]]

local function with_cache_dir(fn)
  local old = os.getenv("NETCL_CACHE_DIR")
  local dir = os.tmpname()
  os.remove(dir)
  ffi.C.setenv("NETCL_CACHE_DIR", dir, 1)
  local ok, err = pcall(fn, dir)
  if old then ffi.C.setenv("NETCL_CACHE_DIR", old, 1) else ffi.C.unsetenv("NETCL_CACHE_DIR") end
  os.execute("rm -rf '" .. dir .. "'")
  netcl.tune_cache_reload(H.device)
  if not ok then error(err, 0) end
end

local function read_file(p)
  local f = assert(io.open(p, "r"))
  local s = f:read("*a")
  f:close()
  return s
end
local function write_file(p, s)
  local f = assert(io.open(p, "w"))
  f:write(s)
  f:close()
end

function TestGemm:test_tuner_cache()
  if H.is_cpu then
    local r = netcl.tune({ device = "cpu", shapes = { { 8, 8, 8 } }, quiet = true })
    lu.assertStrContains(r[1].report, "nothing to tune")
    return
  end
  with_cache_dir(function(dir)
    lu.assertNil(netcl.tune_cache_reload(H.device))
    lu.assertStrContains(netcl.gemm_config(40, 24, 16, { device = H.device }), "(default)")
    local r = netcl.tune({ device = H.device, shapes = { { 40, 24, 16 } }, max_candidates = 2, quiet = true })
    lu.assertStrContains(r[1].report, "winner:")
    lu.assertStrContains(r[1].config, "(tuned)")
    local path = netcl.tune_cache_path(H.device)
    lu.assertEquals(path:sub(1, #dir), dir)
    lu.assertStrMatches(path, ".*/gemm%-%x+%.tune")
    local text = read_file(path)
    lu.assertStrContains(text, "float32 nn 64:32:16 | ")
    lu.assertStrContains(text, "# device: " .. H.device_info().hw_name)
    -- a second problem of the same class shares the entry; another class does not
    lu.assertStrContains(netcl.gemm_config(33, 20, 9, { device = H.device }), "(tuned)")
    lu.assertStrContains(netcl.gemm_config(40, 24, 16, { device = H.device, trans_a = true }), "(default)")
    -- reloaded from disk: the same choice
    lu.assertNil(netcl.tune_cache_reload(H.device))
    lu.assertStrContains(netcl.gemm_config(40, 24, 16, { device = H.device }), "(tuned)")
    -- a second tuning adds its line and keeps the first
    netcl.tune({ device = H.device, shapes = { { 40, 24, 16, trans_b = true } }, max_candidates = 1, quiet = true })
    text = read_file(path)
    lu.assertStrContains(text, "float32 nn 64:32:16 | ")
    lu.assertStrContains(text, "float32 nt 64:32:16 | ")
    -- a corrupted file is ignored with a warning, and products stay right
    write_file(path, text .. "float32 nn 16:16:16 | tiled mwg=banana\n")
    lu.assertStrContains(netcl.tune_cache_reload(H.device), "does not parse")
    lu.assertStrContains(netcl.gemm_config(40, 24, 16, { device = H.device }), "(default)")
    local a, b = operands(H.device, 40, 16, 24)
    H.assert_close(a:matmul(b):to("cpu"), a:to("cpu"):matmul(b:to("cpu")), tol(16))
    -- a file written for another device is ignored too
    write_file(path, (text:gsub("# device: [^|]*|", "# device: some other GPU |")))
    lu.assertStrContains(netcl.tune_cache_reload(H.device), "another device")
  end)
end

-- GPUs' float32 default: 128x128 blocks (or the ffma kernel) from K = 512
-- when they fill the device, 64x64 below (docs/gemm.md); tuned entries kept
-- out by a fresh cache
function TestGemm:test_gpu_default_blocks_follow_k()
  lu.skipIf(H.device_info().type ~= "opencl_gpu", "the GPUs' default blocks: " .. H.device .. " is not a GPU (" .. H.device_info().type .. ")")
  with_cache_dir(function()
    netcl.tune_cache_reload(H.device)
    local short = netcl.gemm_config(4096, 4096, 128, { device = H.device })
    local long = netcl.gemm_config(4096, 4096, 1024, { device = H.device })
    lu.skipIf(short:find("^mma"), "float32 products on " .. H.device .. " run on tensor cores (tf32 allowed): " .. short)
    lu.assertStrContains(short, "mwg=64 nwg=64")
    lu.assertStrContains(short, "(default)")
    -- K >= 512: the ffma kernel where it serves (NVIDIA sm_80+; this large
    -- row-major product with a copied m-contiguous first), else 128x128 tiles
    lu.assertStrContains(long, long:find("^ffma") and "ffma mwg=128 nwg=64" or "mwg=128 nwg=128")
    lu.assertStrContains(long, long:find("^ffma") and "(default; a copied m-contiguous first)" or "(default)")
  end)
end

-- ---- tensor cores ------------------------------------------------------------------------
function TestGemm:test_tensor_core_status()
  local tc = H.device_info().tensor_cores
  lu.assertEquals(type(tc), "string")
  lu.assertTrue(tc:match("^none") ~= nil or tc:match("^[%a%d,]+$") ~= nil or tc:match("^[%a%d,]+ %(emulated%)$") ~= nil, tc)
  if H.device_info().compute_capability < 80 then lu.assertStrContains(tc, "none") end
end

function TestGemm:test_tensor_core_products()
  local tc = H.device_info().tensor_cores
  lu.skipIf(not tc:find("f16", 1, true) and not tc:find("tf32", 1, true),
    "tensor cores not enabled on " .. H.device .. ": " .. tc)
  -- float16/bfloat16 inputs, float32 accumulation: rtol 1e-2 like every half-precision result
  for _, dt in ipairs({ "float16", "bfloat16" }) do
    if tc:find(dt == "float16" and "f16" or "bf16", 1, true) then
      -- the last shape runs 128x128 blocks (the loop that loads fragments a
      -- step ahead), K = 168 of 5.25 k-tiles: its inner blocks run the
      -- unchecked phase of the loop, then the checked one with a partial tile
      for _, s in ipairs({ { 256, 128, 192 }, { 77, 100, 33 }, { 2048, 168, 2056 } }) do
        for _, tb in ipairs({ false, true }) do
          H.against_cpu(function(dev) local a, b = operands(dev, s[1], s[2], s[3], false, tb, dt); return a:matmul(b) end,
            1e-2, 1e-2)
        end
      end
      lu.assertStrContains(netcl.gemm_config(2048, 2056, 168, { device = H.device, dtype = dt }), "mwg=128 nwg=128")
    end
  end
  if tc:find("tf32", 1, true) then
    -- TF32 keeps 10 mantissa bits: relative errors near 1e-3, so rtol 1e-2 and atol 1e-2 * sqrt(K)
    netcl.backends.allow_tf32 = true
    local ok, err = pcall(H.against_cpu, function(dev) local a, b = operands(dev, 200, 256, 136, true, false); return a:matmul(b) end,
      1e-2, 1e-2 * 16)
    netcl.backends.allow_tf32 = false
    if not ok then error(err, 0) end
    -- 3xTF32 runs on the tensor cores at float32's accuracy, in small
    -- blocks and in the large ones that load fragments a step ahead
    lu.assertStrContains(fp32_errors({ 300, 1024, 200 }).cfg, "mma ")
    local e = fp32_errors({ 2048, 168, 2056 })
    lu.assertStrContains(e.cfg, "mwg=128 nwg=128")
    lu.assertTrue(e.tf32 < 5e-3, "tf32 in 128x128 blocks: " .. e.tf32)
  end
end

function TestGemm:test_fp32_precision_modes()
  lu.assertEquals(netcl.backends.fp32_precision, "ieee")
  lu.assertFalse(netcl.backends.allow_tf32)
  netcl.backends.allow_tf32 = true
  lu.assertEquals(netcl.backends.fp32_precision, "tf32")
  netcl.backends.fp32_precision = "tf32x3"
  lu.assertFalse(netcl.backends.allow_tf32)
  netcl.backends.allow_tf32 = false
  lu.assertEquals(netcl.backends.fp32_precision, "ieee")
  local ok, err = pcall(function() netcl.backends.fp32_precision = "highest" end)
  lu.assertFalse(ok)
  lu.assertStrContains(tostring(err), "fp32_precision")
  lu.assertStrContains(tostring(err), "tf32x3")
  lu.assertEquals(netcl.backends.fp32_precision, "ieee")
  -- on every device: tf32x3 as accurate as float32 (where there are no
  -- tensor cores it is float32)
  local e = fp32_errors({ 70, 136, 40 })
  if not H.device_info().tensor_cores:find("tf32", 1, true) then lu.assertTrue(e.tf32 < 1e-5, tostring(e.tf32)) end
end

-- TF32 rounds both operands to the nearest tf32, as cuBLAS does (checked on
-- an H100: PyTorch's TF32 matmul gives 1 + 2^-10 here, in both operands):
-- x = 1 + 2^-11 + 2^-12 has 13 significant bits, so every sum below is
-- exact and the result tells rounding (1 + 2^-10), truncation (1) and
-- float32 (x) apart. Where there are no tensor cores tf32 is float32.
local TF32_X = 1 + 2 ^ -11 + 2 ^ -12
-- the min and max of a [M, K] @ w [K, N], TF32_X on one operand and 1 / K
-- on the other; w k-contiguous where w_t
local function tf32_probe(M, N, K, low_on_a, w_t)
  local o, x = { device = H.device }, TF32_X
  local a = netcl.full({ M, K }, low_on_a and x or 1 / K, o)
  local wv = low_on_a and 1 / K or x
  local c = a:matmul(w_t and netcl.full({ N, K }, wv, o):t() or netcl.full({ K, N }, wv, o))
  return c:min():item(), c:max():item()
end

function TestGemm:test_tf32_rounds_to_nearest()
  local x, K = TF32_X, 256
  local tc = H.device_info().tensor_cores
  local want = tc:find("tf32", 1, true) and 1 + 2 ^ -10 or x
  local function product(low_on_a, cfg)
    netcl.gemm_set_config(cfg, H.device)
    -- w k-contiguous, as every tf32 path takes
    local ok, lo, hi = pcall(tf32_probe, 256, 256, K, low_on_a, true)
    netcl.gemm_set_config(nil, H.device)
    if not ok then error(lo, 0) end
    return lo, hi, netcl.gemm_config(256, 256, K, { device = H.device, trans_b = true })
  end
  local configs = { false }
  if tc:find("wgmma", 1, true) then configs[2] = "wgmma mwg=128 nwg=128 kwg=16 mdimc=4 ndimc=1 stages=3 gm=8" end
  netcl.backends.allow_tf32 = true
  local ok, err = pcall(function()
    for _, cfg in ipairs(configs) do
      for _, low_on_a in ipairs({ true, false }) do
        local lo, hi, used = product(low_on_a, cfg or nil)
        lu.assertEquals(lo, want, ("tf32 min %.9g, want %.9g (%s, low bits on %s)"):format(lo, want, used, low_on_a and "a" or "w"))
        lu.assertEquals(hi, want, ("tf32 max %.9g (%s)"):format(hi, used))
      end
    end
  end)
  netcl.backends.allow_tf32 = false
  if not ok then error(err, 0) end
  local lo, hi = product(true)
  lu.assertEquals(lo, x)
  lu.assertEquals(hi, x)
end

-- Large tf32 products where wgmma serves (src/backend/cl/gemm_tf32.c) round both
-- operands to tf32 first: into float16 scaled per row of a and column of
-- w where K (and N, for an n-contiguous w) is a multiple of 8, else into
-- float32 workspaces. w both ways and a transposed a against the cpu at
-- tf32's tolerance; rows and columns at scales 2^-60 .. 2^60; Inf and NaN
-- passed through; the exact rounding of both operands.
function TestGemm:test_tf32_rounded_first()
  local tc = H.device_info().tensor_cores
  lu.skipIf(not tc:find("wgmma", 1, true), "wgmma not enabled on " .. H.device .. ": " .. tc)
  local M, N = 4096, 4096
  netcl.backends.allow_tf32 = true
  local ok, err = pcall(function()
    for _, l in ipairs({ { false, false, 1024, "scaled into float16" }, { false, true, 1024, "scaled into float16" },
                         { true, true, 1024, "scaled into float16" }, { false, true, 1028, "rounded to tf32 first" } }) do
      local K = l[3]
      local cfg = netcl.gemm_config(M, N, K, { device = H.device, dtype = "float32", trans_a = l[1], trans_b = l[2] })
      lu.assertStrContains(cfg, l[4])
      H.against_cpu(function(dev) local a, b = operands(dev, M, K, N, l[1], l[2]); return a:matmul(b) end, 1e-2, 1e-2 * 32)
    end
    -- the fused epilogue (c and bias float32 while the operands are float16)
    H.against_cpu(function(dev)
      local a, b = operands(dev, M, 1024, N, false, true)
      netcl.manual_seed(12)
      local c, bias = netcl.randn(M, N, { device = dev }), netcl.randn(N, { device = dev })
      return netcl.gemm(a, b, { c = c, bias = bias, alpha = 0.75, beta = 1.25, act = "gelu" })
    end, 1e-2, 1e-2 * 32)
    -- badly scaled rows and columns: each output relative to its own scale
    netcl.manual_seed(11)
    local K = 1024
    local cpu = { device = "cpu" }
    local rs = netcl.randint(-60, 60, { M, 1 }, cpu):to("float32"):mul(math.log(2)):exp()
    local cs = netcl.randint(-60, 60, { 1, N }, cpu):to("float32"):mul(math.log(2)):exp()
    local a, w = netcl.randn(M, K, cpu) * rs, netcl.randn(K, N, cpu) * cs
    local scale = rs * cs
    local got = (a:to(H.device):matmul(w:to(H.device)):to("cpu") / scale)
    local ref = a:matmul(w) / scale
    local rel = (got - ref):abs():max():item() / ref:abs():max():item()
    lu.assertTrue(rel < 2e-3, ("scaled rows: relative error %.3g"):format(rel))
    -- Inf and NaN: the outputs of their rows are what float32 gives
    local ai = netcl.randn(M, K, cpu)
    ai[{ 3, 5 }] = math.huge
    ai[{ 7, 9 }] = 0 / 0
    local ci = ai:to(H.device):matmul(w:to(H.device)):to("cpu")
    local ri = ai:matmul(w)
    for j = 1, 64 do
      local x, y, z = ci[{ 3, j }]:item(), ri[{ 3, j }]:item(), ci[{ 7, j }]:item()
      lu.assertEquals(x, y)
      lu.assertTrue(z ~= z, "NaN row: " .. z)
    end
    for _, low_on_a in ipairs({ true, false }) do
      local lo, hi = tf32_probe(M, N, K, low_on_a, false)
      lu.assertEquals(lo, 1 + 2 ^ -10)
      lu.assertEquals(hi, 1 + 2 ^ -10)
    end
  end)
  netcl.backends.allow_tf32 = false
  if not ok then error(err, 0) end
end

-- Hopper's wgmma (sm_90a through patched PTX, docs/gemm.md): every dtype
-- in forced configurations (one and two warpgroups, one or two 64-row
-- slabs a warpgroup, n of 64 to 256, rows of 32, 64 and 128 bytes and so
-- all three swizzles), edges in m, n and K,
-- the fused epilogue, and the untuned choice for a large tf32 x @ w^T.
local wgmma_configs = {
  float32 = { "wgmma mwg=64 nwg=64 kwg=8 mdimc=4 ndimc=1 stages=4 gm=8",
              "wgmma mwg=128 nwg=128 kwg=16 mdimc=8 ndimc=1 stages=3 gm=8",
              "wgmma mwg=64 nwg=256 kwg=16 mdimc=4 ndimc=1 stages=2 gm=8",
              "wgmma mwg=64 nwg=128 kwg=32 mdimc=4 ndimc=1 stages=2 gm=8" },
  float16 = { "wgmma mwg=64 nwg=64 kwg=16 mdimc=4 ndimc=1 stages=4 gm=8",
              "wgmma mwg=128 nwg=128 kwg=32 mdimc=8 ndimc=1 stages=3 gm=8",
              "wgmma mwg=128 nwg=256 kwg=16 mdimc=8 ndimc=1 stages=4 gm=8",
              "wgmma mwg=64 nwg=128 kwg=64 mdimc=4 ndimc=1 stages=2 gm=8",
              "wgmma mwg=128 nwg=128 kwg=32 mdimc=4 ndimc=1 stages=3 gm=8" },
}
wgmma_configs.bfloat16 = wgmma_configs.float16

-- configs: per dtype, the forced configurations (wgmma_configs or
-- mma_configs); every_layout: float32 in all four layouts too (mma.sync;
-- wgmma reads tf32 operands k-contiguous only)
local function check_forced_tc(configs, dtypes, shapes, every_layout)
  netcl.backends.allow_tf32 = true
  local ok, err = pcall(function()
    for _, dt in ipairs(dtypes) do
      local rt, at = 1e-2, 1e-2 * 16   -- tf32 / 16-bit inputs, float32 sums
      for _, cfg in ipairs(configs[dt]) do
        netcl.gemm_set_config(cfg, H.device)
        -- a and w k-contiguous (x @ w^T), and for 16-bit types a
        -- m-contiguous and w n-contiguous too (read transposed)
        local layouts = dt == "float32" and not every_layout and { { false, true } }
          or { { false, true }, { false, false }, { true, false }, { true, true } }
        for _, l in ipairs(layouts) do
          local ta, tb = l[1], l[2]
          for _, s in ipairs(shapes) do
            local a, b = operands(H.device, s[1], s[2], s[3], ta, tb, dt)
            lu.assertStrContains(netcl.gemm_config(s[1], s[3], s[2], { device = H.device, dtype = dt, trans_a = ta, trans_b = tb }), cfg)
            H.assert_close(a:matmul(b):to("cpu"):to("float32"), a:to("cpu"):to("float32"):matmul(b:to("cpu"):to("float32")),
              rt, at, ("%s %s %dx%dx%d trans_a=%s trans_b=%s"):format(dt, cfg, s[1], s[2], s[3], ta, tb))
          end
        end
        if dt ~= "float32" or every_layout then   -- a batch of a^T @ b: every batch's operands read transposed
          netcl.manual_seed(9)
          local a = netcl.randn(3, 200, 136, { device = H.device, dtype = dt }):transpose(2, 3)
          local b = netcl.randn(3, 200, 72, { device = H.device, dtype = dt })
          H.assert_close(a:matmul(b):to("cpu"):to("float32"), a:to("cpu"):to("float32"):matmul(b:to("cpu"):to("float32")),
            rt, at, dt .. " batched tn " .. cfg)
        end
        local a, b = operands(H.device, 100, 200, 72, false, true, dt)
        local bias = netcl.randn(72, { device = H.device, dtype = dt })
        H.assert_close(netcl.gemm(a, b, { bias = bias, act = "relu" }):to("cpu"):to("float32"),
          (a:to("cpu"):to("float32"):matmul(b:to("cpu"):to("float32")) + bias:to("cpu"):to("float32")):relu(), rt, at,
          dt .. " epilogue " .. cfg)
        -- c, alpha and beta through interior blocks of every configuration
        -- (16-bit outputs leave those through local memory)
        a, b = operands(H.device, 256, 200, 136, false, true, dt)
        local c, bias2 = netcl.randn(256, 136, { device = H.device, dtype = dt }), netcl.randn(136, { device = H.device, dtype = dt })
        local f = function(x) return x:to("cpu"):to("float32") end
        H.assert_close(f(netcl.gemm(a, b, { c = c, alpha = 0.5, beta = 2, bias = bias2 })),
          f(a):matmul(f(b)) * 0.5 + f(c) * 2 + f(bias2), rt, at, dt .. " c, alpha, beta " .. cfg)
        if dt == "float32" and cfg == wgmma_configs.float32[1] then
          -- operands rounded to the nearest tf32, not truncated as wgmma
          -- would read them: on uniform [0, 1) operands truncation's bias
          -- shows as a relative error near 6e-4
          netcl.manual_seed(5)
          local x, y = netcl.rand(128, 1024, { device = H.device }), netcl.rand(64, 1024, { device = H.device }):t()
          local ref = x:to("cpu"):matmul(y:to("cpu"))
          local e = (x:matmul(y):to("cpu") - ref):abs():max():item() / ref:abs():max():item()
          lu.assertTrue(e < 1e-4, "wgmma tf32 rounding: relative error " .. e)
        end
      end
      netcl.gemm_set_config(nil, H.device)
    end
  end)
  netcl.gemm_set_config(nil, H.device)
  netcl.backends.allow_tf32 = false
  if not ok then error(err, 0) end
end

function TestGemm:test_wgmma_products()
  local tc = H.device_info().tensor_cores
  lu.skipIf(not tc:find("wgmma", 1, true), "wgmma not enabled on " .. H.device .. ": " .. tc)
  -- 1000 x 1064 x 520: inner blocks run the loop's unchecked phase
  check_forced_tc(wgmma_configs, { "float32", "float16", "bfloat16" },
    { { 100, 200, 72 }, { 256, 512, 256 }, { 1000, 1064, 520 }, { 64, 32, 256 } })
  with_cache_dir(function()
    netcl.tune_cache_reload(H.device)
    -- untuned: 16-bit products of a round of 128x128 blocks or more, in
    -- every layout; tf32 keeps mma.sync (rounding its operands in local
    -- memory costs more than wgmma gains; from 4096 x 4096 outputs they
    -- are rounded first: test_tf32_rounded_first)
    local cu = H.device_info().compute_units
    local default = "wgmma mwg=128 nwg=128 kwg=32 mdimc=4 ndimc=1 stages=3"
    local o = { device = H.device, dtype = "float16", trans_b = true }
    lu.assertStrContains(netcl.gemm_config(128 * cu, 128, 1024, o), default)
    lu.assertStrContains(netcl.gemm_config(128 * cu, 128, 1024, { device = H.device, dtype = "bfloat16" }), default)
    lu.assertStrContains(netcl.gemm_config(128 * cu - 128, 128, 1024, o), "mma mwg=")
    lu.assertNotStrContains(netcl.gemm_config(128 * cu - 128, 128, 1024, o), "wgmma")
    lu.assertStrContains(netcl.gemm_config(128 * cu, 128, 1024, { device = H.device, dtype = "float16", trans_a = true }),
      default)
    lu.assertStrContains(netcl.gemm_config(128 * cu, 128, 1024, { device = H.device, dtype = "bfloat16", trans_a = true,
      trans_b = true }), default)
    netcl.backends.allow_tf32 = true
    local tf32 = netcl.gemm_config(128 * cu, 128, 1024, { device = H.device, trans_b = true })
    netcl.backends.allow_tf32 = false
    lu.assertStrContains(tf32, "mma mwg=")
    lu.assertNotStrContains(tf32, "wgmma")
  end)
end

-- The mma.sync kernel (sm_80+) in forced configurations as wgmma's:
-- blocks of 64 to 256 along m and n, 2 x 2 to 4 x 2 warps, k-tiles of 8
-- to 32, two to four stages; every layout (tf32 too), a batch read
-- transposed, the fused epilogue, c, alpha and beta.
local mma_configs = {
  float32 = { "mma mwg=64 nwg=64 kwg=16 mdimc=2 ndimc=2 stages=4 gm=8",
              "mma mwg=128 nwg=128 kwg=8 mdimc=2 ndimc=2 stages=4 gm=8",
              "mma mwg=256 nwg=128 kwg=8 mdimc=4 ndimc=2 stages=4 gm=8",
              "mma mwg=64 nwg=128 kwg=16 mdimc=2 ndimc=2 stages=4 gm=8" },
  float16 = { "mma mwg=64 nwg=64 kwg=32 mdimc=2 ndimc=2 stages=4 gm=8",
              "mma mwg=128 nwg=128 kwg=32 mdimc=2 ndimc=2 stages=3 gm=8",
              "mma mwg=128 nwg=256 kwg=16 mdimc=2 ndimc=4 stages=4 gm=8",
              "mma mwg=128 nwg=64 kwg=32 mdimc=2 ndimc=2 stages=2 gm=8" },
}
mma_configs.bfloat16 = mma_configs.float16

function TestGemm:test_mma_forced_configs()
  local tc = H.device_info().tensor_cores
  lu.skipIf(not tc:find("tf32,f16,bf16", 1, true) or tc:find("emulated", 1, true),
    "mma.sync not enabled on " .. H.device .. ": " .. tc)
  check_forced_tc(mma_configs, { "float32", "float16", "bfloat16" },
    { { 100, 200, 72 }, { 256, 512, 256 }, { 1000, 1064, 520 }, { 64, 32, 256 } }, true)
end

-- The tensor-core kernel with plain-OpenCL stand-ins for its PTX
-- (NETCL_MMA_EMULATE, docs/gemm.md): its indexing, pipeline and edges on a
-- device that cannot run PTX. Slow to compile on PoCL, so opt-in:
-- NETCL_TEST_MMA_EMULATE=1 luajit spec/run.lua gemm_spec
function TestGemm:test_mma_emulated()
  lu.skipIf(os.getenv("NETCL_TEST_MMA_EMULATE") ~= "1", "set NETCL_TEST_MMA_EMULATE=1 to run the emulated tensor-core kernel")
  lu.skipIf(H.is_cpu or H.device_info().vendor:find("NVIDIA"), "the PTX stand-ins are for OpenCL devices that cannot run PTX: not " .. H.device)
  ffi.C.setenv("NETCL_MMA_EMULATE", "1", 1)
  local ok, err = pcall(function()
    local e = fp32_errors({ 100, 72, 48 })
    lu.assertStrContains(e.cfg, "mma ")
    lu.assertTrue(e.tf32 > 1e-4, "emulated tf32 rounds: " .. e.tf32)
    netcl.backends.allow_tf32 = true
    for _, dt in ipairs({ "float32", "float16", "bfloat16" }) do
      for _, tb in ipairs({ false, true }) do
        -- 100 x 72 x 200: one inner 64x64 block runs the loop's unchecked phase
        local cfg = netcl.gemm_config(100, 72, 200, { device = H.device, dtype = dt, trans_b = tb })
        lu.assertStrContains(cfg, "mma ")
        H.against_cpu(function(dev) local a, b = operands(dev, 100, 200, 72, false, tb, dt); return a:matmul(b) end,
          1e-2, 1e-2 * 15)
      end
    end
    lu.assertStrContains(H.device_info().tensor_cores, "tf32,f16,bf16 (emulated)")
  end)
  netcl.backends.allow_tf32 = false
  ffi.C.unsetenv("NETCL_MMA_EMULATE")
  if not ok then error(err, 0) end
end

-- The wgmma kernel emulated (NETCL_WGMMA_EMULATE with NETCL_MMA_EMULATE):
-- the descriptors decoded and the hardware's swizzles applied in plain
-- OpenCL, so the layouts are checked on PoCL. Opt-in as the one above (a
-- configuration takes minutes to compile on PoCL).
function TestGemm:test_wgmma_emulated()
  lu.skipIf(os.getenv("NETCL_TEST_MMA_EMULATE") ~= "1", "set NETCL_TEST_MMA_EMULATE=1 to run the emulated wgmma kernel")
  lu.skipIf(H.is_cpu or H.device_info().vendor:find("NVIDIA"), "the PTX stand-ins are for OpenCL devices that cannot run PTX: not " .. H.device)
  ffi.C.setenv("NETCL_MMA_EMULATE", "1", 1)
  ffi.C.setenv("NETCL_WGMMA_EMULATE", "1", 1)
  local saved = wgmma_configs
  wgmma_configs = { float32 = { saved.float32[1] }, float16 = { saved.float16[1] } }
  local ok, err = pcall(check_forced_tc, wgmma_configs, { "float32", "float16" }, { { 100, 200, 72 } })
  wgmma_configs = saved
  ffi.C.unsetenv("NETCL_WGMMA_EMULATE")
  ffi.C.unsetenv("NETCL_MMA_EMULATE")
  if not ok then error(err, 0) end
end

-- ---- float32 FMAs fed by cp.async (the "ffma" kernel, docs/gemm.md) -------------------
-- Every layout (each operand with k contiguous or not) in forced
-- configurations, with edges in m, n and K (K = 200 is 12.5 k-tiles of 16;
-- 65 x 96 x 67 an interior block whose rows of 67 take scalar stores),
-- the fused epilogue, a batch with a broadcast operand, and the untuned
-- choice: the ffma kernel where an operand is transposed and 64x64 blocks
-- fill the device. Runs with a fresh tuning cache (no tuned entry may stand
-- in for the default) and leaves no configuration forced, whatever fails.
local function check_ffma(configs, shapes)
  with_cache_dir(function()
    netcl.tune_cache_reload(H.device)
    lu.assertStrContains(netcl.gemm_config(1024, 1024, 200, { device = H.device, trans_a = true }), "ffma ")
    lu.assertStrContains(netcl.gemm_config(1024, 1024, 200, { device = H.device, trans_b = true }), "ffma ")
    for _, cfg in ipairs(configs) do
      netcl.gemm_set_config(cfg, H.device)
      local ok, err = pcall(function()
        for _, s in ipairs(shapes) do
          for _, l in ipairs({ { false, false }, { false, true }, { true, false }, { true, true } }) do
            local a, b = operands(H.device, s[1], s[2], s[3], l[1], l[2])
            local rt, at = tol(s[2])
            H.assert_close(a:matmul(b):to("cpu"), a:to("cpu"):matmul(b:to("cpu")), rt, at,
              ("%s %dx%dx%d ta=%s tb=%s"):format(cfg, s[1], s[2], s[3], l[1], l[2]))
          end
        end
        -- the epilogue on both ways out of an interior block: float4 runs
        -- straight from the registers (w n-contiguous) or through local
        -- memory (w k-contiguous, small blocks)
        local bias = netcl.randn(72, { device = H.device })
        for _, tb in ipairs({ false, true }) do
          local a, b = operands(H.device, 100, 200, 72, false, tb)
          H.assert_close(netcl.gemm(a, b, { bias = bias, act = "relu" }), (a:matmul(b) + bias):relu(), tol(200))
        end
        local x, w = netcl.randn(3, 36, 20, { device = H.device }), netcl.randn(20, 44, { device = H.device })
        H.assert_close(x:matmul(w):to("cpu"), x:to("cpu"):matmul(w:to("cpu")), tol(20))
      end)
      netcl.gemm_set_config(nil, H.device)
      if not ok then error(err, 0) end
    end
  end)
end

local function ffma_serves()
  local cfg
  with_cache_dir(function()
    netcl.tune_cache_reload(H.device)
    cfg = netcl.gemm_config(1024, 1024, 200, { device = H.device, trans_a = true })
  end)
  return cfg:find("^ffma") ~= nil, cfg
end

function TestGemm:test_ffma_products()
  local serves, cfg = ffma_serves()
  lu.skipIf(not serves, "the ffma kernel does not serve " .. H.device .. ": " .. cfg)
  -- the last shape has inner blocks that run the loop's unchecked phase;
  -- the 64x64 blocks load their operands a step ahead (FFMA_PIPE) and do
  -- their FMAs row by row, the others load in the tile's own order and do
  -- their FMAs column by column (FFMA_COLUMNS)
  check_ffma({ "ffma mwg=64 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=3 gm=8",
               "ffma mwg=64 nwg=64 kwg=32 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=3 gm=8",
               "ffma mwg=64 nwg=64 kwg=8 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=4 gm=8",
               "ffma mwg=128 nwg=64 kwg=32 mdimc=2 ndimc=1 vwm=8 vwn=16 stages=2 gm=8",
               "ffma mwg=128 nwg=128 kwg=8 mdimc=2 ndimc=4 vwm=8 vwn=8 stages=4 gm=8",
               "ffma mwg=64 nwg=32 kwg=16 mdimc=2 ndimc=1 vwm=4 vwn=8 stages=4 gm=8",
               "ffma mwg=64 nwg=32 kwg=32 mdimc=2 ndimc=1 vwm=4 vwn=8 stages=2 gm=8" },
    { { 100, 200, 72 }, { 36, 12, 20 }, { 1024, 1028, 520 }, { 65, 96, 67 } })
  -- long products with both operands row-major take it too (K >= 512);
  -- tn's blocks of two warps serve where there are three a multiprocessor
  with_cache_dir(function()
    netcl.tune_cache_reload(H.device)
    lu.assertStrContains(netcl.gemm_config(1024, 1024, 1024, { device = H.device }), "ffma ")
    local cu, tn = H.device_info().compute_units, { device = H.device, trans_a = true }
    lu.assertStrContains(netcl.gemm_config(192 * cu, 128, 256, tn), "ffma mwg=128 nwg=64 kwg=16 mdimc=2 ndimc=1 vwm=8 vwn=16")
    lu.assertStrContains(netcl.gemm_config(1024 * cu, 128, 256, tn), "ffma mwg=128 nwg=64 kwg=16 mdimc=2 ndimc=1 vwm=8 vwn=16")
    -- one to three rounds of them (four a multiprocessor) with the last one
    -- under 85% full: the four-warp 128x64 blocks where their own last round
    -- is fuller (6 a multiprocessor: three full rounds of two), else the
    -- small blocks (5: 2.5 rounds of two)
    lu.assertStrContains(netcl.gemm_config(384 * cu, 128, 256, tn), "ffma mwg=128 nwg=64 kwg=32 mdimc=2 ndimc=2 vwm=8 vwn=8")
    lu.assertStrContains(netcl.gemm_config(320 * cu, 128, 256, tn), "ffma mwg=64 nwg=32 kwg=32")
    -- one round of four-warp blocks (two a multiprocessor), at least 85%
    -- full: those, with 16-deep tiles in four stages; 75% full: the small ones
    lu.assertStrContains(netcl.gemm_config(128 * cu, 128, 256, tn), "ffma mwg=128 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=8 vwn=8 stages=4")
    lu.assertStrContains(netcl.gemm_config(112 * cu, 128, 512, tn), "ffma mwg=128 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=8 vwn=8 stages=4")
    lu.assertStrContains(netcl.gemm_config(96 * cu, 128, 512, tn), "ffma mwg=64 nwg=32 kwg=32")
    -- below that, 64x32 blocks of two warps; 64x64 where w is k-contiguous
    lu.assertStrContains(netcl.gemm_config(192 * cu - 128, 128, 256, tn), "ffma mwg=64 nwg=32 kwg=32 mdimc=2 ndimc=1 vwm=4 vwn=8 stages=2")
    lu.assertStrContains(netcl.gemm_config(64 * cu, 64, 512, { device = H.device }), "ffma mwg=64 nwg=32 kwg=32")
    lu.assertStrContains(netcl.gemm_config(64 * cu, 64, 512, { device = H.device, trans_b = true }), "ffma mwg=64 nwg=64 kwg=32")
    -- the other layouts' four-warp 128x64 blocks (two a multiprocessor) by
    -- the same rounds: 2.5 rounds of them take the small blocks, 3 keep them
    local nt = { device = H.device, trans_b = true }
    lu.assertStrContains(netcl.gemm_config(128, 320 * cu, 512, { device = H.device }), "ffma mwg=64 nwg=32 kwg=32")
    lu.assertStrContains(netcl.gemm_config(128, 320 * cu, 512, nt), "ffma mwg=64 nwg=64 kwg=32")
    lu.assertStrContains(netcl.gemm_config(128, 384 * cu, 512, nt), "ffma mwg=128 nwg=64 kwg=32 mdimc=2 ndimc=2")
    lu.assertStrContains(netcl.gemm_config(128, 256 * cu, 512, nt), "ffma mwg=128 nwg=64 kwg=32 mdimc=2 ndimc=2")
  end)
end

-- The same kernel with cp.async done by plain copies (NETCL_MMA_EMULATE) on
-- an OpenCL device without PTX, all four layouts: the configuration of the
-- device probe (so two of its five programs are built once; operands a step
-- ahead, FMAs by rows) and 128x64 blocks of the same 4 x 8 a thread (FMAs by
-- columns; larger thread tiles took PoCL over 15 minutes to compile). The
-- small products' 64x32 blocks of two warps are checked on the GPU only
-- (test_ffma_products): PoCL took 13 minutes to compile them cold.
function TestGemm:test_ffma_emulated()
  lu.skipIf(H.is_cpu or H.device_info().vendor:find("NVIDIA"), "the PTX stand-ins are for OpenCL devices that cannot run PTX: not " .. H.device)
  ffi.C.setenv("NETCL_MMA_EMULATE", "1", 1)
  local ok, err = pcall(check_ffma, { "ffma mwg=64 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=3 gm=8",
                                      "ffma mwg=128 nwg=64 kwg=16 mdimc=4 ndimc=2 vwm=4 vwn=8 stages=3 gm=8" },
    { { 100, 200, 72 }, { 65, 96, 67 } })
  ffi.C.unsetenv("NETCL_MMA_EMULATE")
  if not ok then error(err, 0) end
  lu.assertFalse(ffma_serves())
end

-- Large 16-bit products whose k-contiguous operands' (or m-contiguous a's)
-- rows do not start on 32-byte boundaries copy them first into rows on
-- 128-byte lines, in their own layout (wgmma; docs/gemm.md, "Rows on whole
-- lines"); the products against the cpu, and aligned ones, or a row-major
-- w, copy nothing
function TestGemm:test_misaligned_rows_copied()
  lu.skipIf(not H.device_info().tensor_cores:find("wgmma", 1, true), "wgmma not enabled on " .. H.device)
  local pad = "rows on 128-byte lines"
  local cases = {
    { "float16", 2048, 2048, 1032, false, true, { "a copied first, its " .. pad, "w copied first, its " .. pad } },
    { "bfloat16", 2056, 2048, 1024, true, false, { "a copied first, its " .. pad } },
    { "float16", 2048, 2056, 1024, false, false, {} },
    { "float16", 2048, 2048, 1024, false, true, {} },
  }
  with_cache_dir(function()
    netcl.tune_cache_reload(H.device)
    for _, c in ipairs(cases) do
      local dt, m, n, k, ta, tb, want = unpack(c)
      local cfg = netcl.gemm_config(m, n, k, { device = H.device, dtype = dt, trans_a = ta, trans_b = tb })
      for _, w in ipairs(want) do lu.assertStrContains(cfg, w) end
      if #want == 0 then lu.assertNotStrContains(cfg, pad) end
      local a, b = operands(H.device, m, k, n, ta, tb, dt)
      local ref = a:to("cpu"):to("float32"):matmul(b:to("cpu"):to("float32"))
      H.assert_close(a:matmul(b):to("cpu"):to("float32"), ref, 1e-2, 1e-2 * 16, dt .. " " .. cfg)
    end
  end)
end

-- x @ w^T of m x k by n x k on the test device, plain and with bias + relu,
-- against the cpu
local function check_xwt(m, k, n)
  local a, b = operands(H.device, m, k, n, false, true)
  local bias = netcl.randn(n, { device = H.device })
  local ac, bc = a:to("cpu"), b:to("cpu")
  H.assert_close(a:matmul(b):to("cpu"), ac:matmul(bc), tol(k))
  H.assert_close(netcl.gemm(a, b, { bias = bias, act = "relu" }):to("cpu"), (ac:matmul(bc) + bias:to("cpu")):relu(), tol(k))
end

-- Split-K where the FFMA kernel serves x @ w^T (gemm_split.c; docs/gemm.md,
-- "Split-K"): the slices' configuration and values
function TestGemm:test_split_k_fills_the_ffma_blocks()
  local serves, cfg = ffma_serves()
  lu.skipIf(not serves, "the ffma kernel does not serve " .. H.device .. ": " .. cfg)
  -- x @ w^T of 4 x n/64 blocks of 128x64, about one a multiprocessor: two
  -- slices of K make a round of the blocks (two a multiprocessor); none
  -- where the slices would be under 1024 long or the blocks fill a round
  local cu = H.device_info().compute_units
  local n, nt = 64 * math.floor(cu / 4), { device = H.device, trans_b = true }
  with_cache_dir(function()
    netcl.tune_cache_reload(H.device)
    lu.assertStrContains(netcl.gemm_config(512, n, 4096, nt), "; K in 2 slices of 2048, summed)")
    lu.assertNotStrContains(netcl.gemm_config(512, n, 1024, nt), "slices")
    lu.assertNotStrContains(netcl.gemm_config(512, 4 * n, 4096, nt), "slices")
    -- fewer of the small 64x64 blocks than multiprocessors (a small batch):
    -- those, in the fewest power-of-two slices that give every
    -- multiprocessor one, none under 256 long; unsplit from K = 256,
    -- gemm_tiled below (gemm_split.c)
    local split = netcl.gemm_config(64, n + 64, 1024, nt)
    lu.assertStrContains(split, "ffma mwg=64 nwg=64 ")
    lu.assertStrContains(split, "; K in 4 slices of 256, summed in the kernel")
    local whole = netcl.gemm_config(64, n + 64, 256, nt)
    lu.assertStrContains(whole, "ffma mwg=64 nwg=64 ")
    lu.assertNotStrContains(whole, "slices")
    lu.assertNotStrContains(netcl.gemm_config(64, n + 64, 128, nt), "ffma")
  end)
  check_xwt(512, 4096, n)
  check_xwt(64, 1024, n + 64)
end

-- Split-K summed inside the FFMA kernel where its small blocks run the
-- slices (gemm_split.c; kernels/gemm_ffma.cl, SPLIT_SUM): the last block of
-- each tile adds the partials in slice order, so without a rest the bits
-- are the separate pass's (NETCL_GEMM_SPLIT_SUM=pass); a rest goes into the
-- last slice. The values against the cpu's, with and without an epilogue.
-- On NVIDIA as it is (every layout), elsewhere emulated in one layout and
-- the device probe's configuration (PoCL compiles each program for minutes).
function TestGemm:test_split_k_summed_in_the_kernel()
  lu.skipIf(H.is_cpu, "the FFMA kernel is an OpenCL kernel")
  local nvidia = H.device_info().vendor:find("NVIDIA") ~= nil
  if not nvidia then ffi.C.setenv("NETCL_MMA_EMULATE", "1", 1) end
  local cfg = "ffma mwg=64 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=3 gm=8"
  local ok, err = pcall(function()
    local serves, why = ffma_serves()
    lu.skipIf(not serves, "the ffma kernel does not serve " .. H.device .. ": " .. why)
    netcl.gemm_set_config(cfg, H.device)
    with_split("3", function()
      local nt = { device = H.device, trans_b = true }
      lu.assertStrContains(netcl.gemm_config(100, 72, 200, nt),
        "; K in 3 slices of 64 and the rest (in the last), summed in the kernel")
      lu.assertStrContains(netcl.gemm_config(65, 67, 96, nt), "; K in 3 slices of 32, summed in the kernel")
      local layouts = nvidia and { { false, true }, { false, false }, { true, false }, { true, true } } or { { false, true } }
      for _, l in ipairs(layouts) do
        for _, s in ipairs({ { 100, 200, 72 }, { 65, 96, 67 } }) do
          local a, b = operands(H.device, s[1], s[2], s[3], l[1], l[2])
          local what = ("%dx%dx%d ta=%s tb=%s"):format(s[1], s[2], s[3], l[1], l[2])
          local fused = a:matmul(b):to("cpu")
          H.assert_close(fused, a:to("cpu"):matmul(b:to("cpu")), 1e-4, 1e-5 * math.sqrt(s[2]), what)
          if s[2] % 24 == 0 then   -- no rest: the separate pass's bits
            ffi.C.setenv("NETCL_GEMM_SPLIT_SUM", "pass", 1)
            local pass = a:matmul(b):to("cpu")
            ffi.C.unsetenv("NETCL_GEMM_SPLIT_SUM")
            lu.assertEquals((fused - pass):abs():max():item(), 0, what)
          end
        end
      end
      local a, b = operands(H.device, 100, 200, 72, false, true)
      netcl.manual_seed(5)
      local c, bias = netcl.randn(100, 72, { device = H.device }), netcl.randn(72, { device = H.device })
      local ac, bc, cc, biasc = a:to("cpu"), b:to("cpu"), c:to("cpu"), bias:to("cpu")
      H.assert_close(netcl.gemm(a, b, { c = c, bias = bias, alpha = 0.75, beta = 1.25, act = "relu" }):to("cpu"),
        (ac:matmul(bc) * 0.75 + cc * 1.25 + biasc):relu(), 1e-4, 1e-4)
    end)
  end)
  ffi.C.unsetenv("NETCL_GEMM_SPLIT_SUM")
  netcl.gemm_set_config(nil, H.device)
  if not nvidia then ffi.C.unsetenv("NETCL_MMA_EMULATE") end
  if not ok then error(err, 0) end
end

-- Large float32 products copy their operands to the tn layout first where
-- the FFMA kernel serves (src/ops/linalg.c, copy_operands; docs/gemm.md): a
-- row-major a to m-contiguous, a k-contiguous w (x @ w^T) to n-contiguous;
-- the same values as the cpu's. On NVIDIA as it is, on other OpenCL
-- devices through emulation.
function TestGemm:test_ffma_operands_copied()
  lu.skipIf(H.is_cpu, "the FFMA kernel is an OpenCL kernel")
  local nvidia = H.device_info().vendor:find("NVIDIA") ~= nil
  if not nvidia then ffi.C.setenv("NETCL_MMA_EMULATE", "1", 1) end
  local ok, err = pcall(function()
    local serves, why = ffma_serves()
    lu.skipIf(not serves, "the ffma kernel does not serve " .. H.device .. ": " .. why)
    with_cache_dir(function()
      netcl.tune_cache_reload(H.device)
      local big = netcl.gemm_config(2048, 4096, 1024, { device = H.device })
      lu.assertStrContains(big, "ffma ")
      lu.assertStrContains(big, "(default; a copied m-contiguous first)")
      -- copied from more than four 64x64 tiles a multiprocessor, and M, N,
      -- K of at least 1024 (docs/gemm.md, "Selecting a configuration")
      local cu = H.device_info().compute_units
      local n = math.max(1024, 64 * (math.floor(4 * cu / 16) + 1))   -- 16 m-tiles of 64 at M = 1024
      local copied = "a copied m-contiguous first"
      lu.assertStrContains(netcl.gemm_config(1024, n, 1024, { device = H.device }), copied)
      lu.assertNotStrContains(netcl.gemm_config(1024, n - 64, 1024, { device = H.device }), copied)
      lu.assertNotStrContains(netcl.gemm_config(1024, n, 512, { device = H.device }), copied)
      -- w k-contiguous: copied where M >= 2048 (nt: N too, and a's rule)
      -- and the tn product runs the two-warp tn blocks
      local tnb, wcopied = "mwg=128 nwg=64 kwg=16 mdimc=2 ndimc=1 vwm=8 vwn=16", "w copied n-contiguous first"
      local tt = { device = H.device, trans_a = true, trans_b = true }
      local tn_blocks = netcl.gemm_config(2048, 2048, 1024, { device = H.device, trans_a = true }):find(tnb, 1, true)
      if tn_blocks then
        lu.assertStrContains(netcl.gemm_config(2048, 2048, 1024, tt), tnb .. " stages=4 gm=8 (default; " .. wcopied .. ")")
        lu.assertStrContains(netcl.gemm_config(2048, 2048, 1024, { device = H.device, trans_b = true }),
          tnb .. " stages=4 gm=8 (default; " .. copied .. "; " .. wcopied .. ")")
      end
      lu.assertNotStrContains(netcl.gemm_config(1024, 2048, 1024, tt), wcopied)
      lu.assertNotStrContains(netcl.gemm_config(2048, 1024, 1024, { device = H.device, trans_b = true }), "copied")
    end)
    local a, b = operands(H.device, 1024, 1024, 4096, false, false)
    H.assert_close(a:matmul(b):to("cpu"), a:to("cpu"):matmul(b:to("cpu")), tol(1024))
    a, b = operands(H.device, 2048, 1024, 2048, false, true)
    H.assert_close(a:matmul(b):to("cpu"), a:to("cpu"):matmul(b:to("cpu")), tol(1024))
    -- with a fused epilogue (nn.Linear's forward); GPU only: on PoCL these
    -- blocks take minutes to compile cold, once per epilogue
    if nvidia then
      local bias = netcl.randn(2048, { device = H.device })
      H.assert_close(netcl.gemm(a, b, { bias = bias, act = "relu" }):to("cpu"),
        (a:to("cpu"):matmul(b:to("cpu")) + bias:to("cpu")):relu(), tol(1024))
    end
  end)
  if not nvidia then ffi.C.unsetenv("NETCL_MMA_EMULATE") end
  if not ok then error(err, 0) end
end

function TestGemm:test_ffma_config_parse()
  lu.skipIf(H.is_cpu, "forces OpenCL kernel configurations: the cpu backend has one kernel (or BLAS)")
  -- a thread tile that does not make the block, a pipeline too deep, a
  -- k-tile that is not a power of two (the swizzle needs whole 8-chunk rows)
  for _, bad in ipairs({ "ffma mwg=128 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=3",
                         "ffma mwg=64 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=5",
                         "ffma mwg=64 nwg=64 kwg=24 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=3",
                         "mma mwg=128 nwg=128 kwg=24 mdimc=2 ndimc=2 stages=3 gm=8" }) do
    H.assert_error(function() netcl.gemm_set_config(bad, H.device) end, "cannot parse")
  end
  -- a product the kernel cannot take (K = 45 is not a multiple of 4, and
  -- off NVIDIA there is no cp.async at all) runs the default instead, correctly
  netcl.gemm_set_config("ffma mwg=64 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=3 gm=8", H.device)
  local ok, err = pcall(function()
    lu.assertStrContains(netcl.gemm_config(8, 8, 8, { device = H.device }),
      "ffma mwg=64 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=3 gm=8 (forced)")
    local a, b = operands(H.device, 37, 45, 29, false, true)
    H.assert_close(a:matmul(b):to("cpu"), a:to("cpu"):matmul(b:to("cpu")), tol(45))
  end)
  netcl.gemm_set_config(nil, H.device)
  if not ok then error(err, 0) end
end
