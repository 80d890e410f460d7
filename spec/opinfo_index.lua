-- spec/opinfo_index.lua — cases for the indexing, shape, sort, scan and
-- random family: each differentiable op with size-1, odd, non-contiguous
-- (T) and, where they apply, broadcast or expanded (stride-0) inputs;
-- integer results (indices, nonzero, one_hot, random draws) compared
-- exactly against the cpu. Device cases of scatter have no duplicate
-- indices (which one wins is unspecified on OpenCL). Every gradcheck uses
-- the default tolerances (eps 1e-6, atol 1e-5, rtol 1e-3, float64).
return function(M)
  local R, P, T, U, case = M.R, M.P, M.T, M.U, M.case
  local netcl = M.netcl
  local function I(env, v) return env.tensor(v, "int64") end
  local function B(env, v) return env.tensor(v, "bool") end
  -- normal values with exact zeros at the given positions (cumprod)
  local function Z(shape, zeros)
    return function(env, seed)
      local x = R(unpack(shape))(env, seed)
      for _, pos in ipairs(zeros) do x[pos] = 0 end
      return x
    end
  end

  -- ---- joining and splitting ----
  case({ op = "cat", inputs = { R(2, 3), T(4, 3) }, fn = function(a, b) return netcl.cat({ a, b }, 1) end })
  case({ op = "cat", inputs = { R(3, 1), R(3, 2), T(3, 5) }, fn = function(a, b, c) return netcl.cat({ a, b, c }, 2) end })
  case({ op = "cat", inputs = { R(1), R(4) },
         fn = function(a, b, env) return netcl.cat({ netcl.zeros(0, { device = env.device, dtype = a.dtype }), a, b }) end })
  case({ op = "stack", inputs = { R(2, 3), T(2, 3) }, fn = function(a, b) return netcl.stack({ a, b }, 2) end })
  case({ op = "stack", inputs = { R(1), R(1), R(1) }, fn = function(a, b, c) return netcl.stack({ a, b, c }, -1) end })
  case({ op = "split", inputs = { R(3, 5) },
         fn = function(x) local p = x:split({ 2, 3 }, 2); return netcl.cat({ p[2] * 2, p[1] }, 2) end })
  case({ op = "split", inputs = { T(5, 3) }, fn = function(x) local p = x:split(2); return p[3] * 3 + p[1]:sum() end })
  case({ op = "chunk", inputs = { T(4, 5) }, fn = function(x) local p = x:chunk(2, 1); return p[2] - p[1] end })
  case({ op = "chunk", inputs = { R(7) }, fn = function(x) local p = x:chunk(3); return netcl.cat({ p[3], p[1] }) end })
  case({ op = "repeat", inputs = { R(2, 3) }, fn = function(x) return x:repeat_tensor(2, 1, 3) end })
  case({ op = "repeat", inputs = { T(3, 2) }, fn = function(x) return x["repeat"](x, 1, 2) end })
  case({ op = "repeat", inputs = { R(1) }, fn = function(x) return x:repeat_tensor(3, 2) end })
  case({ op = "flip", inputs = { R(3, 4) }, fn = function(x) return x:flip(1, 2) end })
  case({ op = "flip", inputs = { T(4, 3) }, fn = function(x) return x:flip(2) end })
  case({ op = "flip", inputs = { R(1, 5) }, fn = function(x) return x:flip({ 1, -1 }) end })
  case({ op = "pad_reflect", inputs = { R(2, 3, 5) }, fn = function(x) return x:pad({ 2, 1, 1, 2 }, { mode = "reflect" }) end })
  case({ op = "pad_reflect", inputs = { T(3, 4) }, fn = function(x) return x:pad({ 3, 0 }, { mode = "reflect" }) end })
  case({ op = "pad_replicate", inputs = { R(2, 4) }, fn = function(x) return x:pad({ 3, 1 }, { mode = "replicate" }) end })
  case({ op = "pad_replicate", inputs = { T(3, 1) }, fn = function(x) return x:pad({ 1, 2, 2, 0 }, { mode = "replicate" }) end })
  case({ op = "pad_circular", inputs = { R(2, 3, 4) }, fn = function(x) return x:pad({ 1, 2, 3, 0 }, { mode = "circular" }) end })

  -- ---- gather / scatter / index ----
  case({ op = "gather", inputs = { R(3, 5) }, fn = function(x, env) return x:gather(2, I(env, { { 1, 5 }, { 3, 3 }, { 2, 1 } })) end })
  case({ op = "gather", inputs = { T(5, 3) }, fn = function(x, env) return x:gather(1, I(env, { { 5, 1, 2 }, { 4, 4, 4 } })) end })
  case({ op = "gather", inputs = { R(3, 5) },   -- an expanded (stride-0) index
         fn = function(x, env) return x:gather(2, I(env, { { 2 }, { 1 }, { 5 } }):expand(3, 4)) end })
  case({ op = "gather", inputs = { R(1, 1) }, fn = function(x, env) return x:gather(1, I(env, { { 1 } })) end })
  case({ op = "scatter", inputs = { R(3, 5), R(3, 2) },
         fn = function(a, s, env) return a:scatter(2, I(env, { { 1, 5 }, { 3, 2 }, { 2, 4 } }), s) end })
  case({ op = "scatter", inputs = { T(4, 3), R(3, 4) },   -- a source larger than the index
         fn = function(a, s, env) return a:scatter(1, I(env, { { 4, 1, 2 }, { 2, 3, 1 } }), s) end })
  case({ op = "scatter", inputs = { R(4, 3) }, fn = function(a, env) return a:scatter(1, I(env, { { 2, 1, 4 } }), 2.5) end })
  case({ op = "scatter_add", inputs = { R(3, 4), T(3, 3) },
         fn = function(a, s, env) return a:scatter_add(2, I(env, { { 1, 1, 2 }, { 4, 4, 4 }, { 2, 3, 2 } }), s) end })
  case({ op = "scatter_add", inputs = { R(5), R(6) }, fn = function(a, s, env) return a:scatter_add(1, I(env, { 5, 1, 5, 2, 2, 5 }), s) end })
  case({ op = "index_select", inputs = { R(5, 3) }, fn = function(x, env) return x:index_select(1, I(env, { 5, 1, 1, 3 })) end })
  case({ op = "index_select", inputs = { T(4, 6) }, fn = function(x) return x:index_select(2, { 2 }) end })
  case({ op = "index_select", inputs = { R(7) }, fn = function(x, env) return x:index_select(1, env.tensor({ 7, 1 }, "int32")) end })
  case({ op = "index_add", inputs = { R(4, 3), R(5, 3) },
         fn = function(a, s, env) return a:index_add(1, I(env, { 1, 4, 1, 2, 2 }), s) end })
  case({ op = "index_add", inputs = { T(3, 4), R(3, 2) }, fn = function(a, s, env) return a:index_add(2, I(env, { 4, 1 }), s) end })
  case({ op = "masked_fill", inputs = { R(3, 4) },
         fn = function(x, env) return x:masked_fill(B(env, { { true, false, false, true }, { false, false, true, false },
                                                             { true, true, true, true } }), -2) end })
  case({ op = "masked_fill", inputs = { T(3, 4) },   -- a broadcast mask
         fn = function(x, env) return x:masked_fill(B(env, { true, false, true, false }), 1 / 0) * 1 end, grad = false,
         label = "masked_fill_inf" })
  case({ op = "masked_fill", inputs = { T(3, 4) }, fn = function(x, env) return x:masked_fill(B(env, { { false, true, false, true } }), 0.5) end })
  case({ op = "masked_select", inputs = { R(3, 4) },
         fn = function(x, env) return x:masked_select(B(env, { { true, false, false, true }, { false, false, false, false },
                                                               { true, true, false, true } })) end })
  case({ op = "masked_select", inputs = { R(3, 1) },   -- the input broadcasts against the mask
         fn = function(x, env) return x:masked_select(B(env, { { true, true, false }, { false, true, true }, { true, false, false } })) end })
  case({ op = "nonzero", grad = false, inputs = { U(-1, 1, 3, 4) }, fn = function(x) return x:round():nonzero() end })
  case({ op = "nonzero", grad = false, inputs = { R(2, 3, 2) }, fn = function(x) return x:gt(0):nonzero() end })
  case({ op = "one_hot", grad = false, inputs = {}, fn = function(env) return netcl.one_hot(I(env, { 3, 1, 2, 3 }), 4) end })
  case({ op = "one_hot", grad = false, inputs = {},
         fn = function(env) return netcl.one_hot(I(env, { { 1, 2 }, { 2, 2 } }), 3, "float32") end })
  case({ op = "embedding", inputs = { R(5, 3) }, fn = function(w, env) return netcl.embedding(I(env, { { 1, 5 }, { 2, 2 } }), w) end })
  case({ op = "embedding", inputs = { T(4, 2) }, fn = function(w, env) return netcl.embedding(I(env, { 4 }), w) end })

  -- ---- sort / topk / scans ----
  case({ op = "sort", inputs = { R(3, 6) }, fn = function(x) return (x:sort(2)) end })
  case({ op = "sort", inputs = { T(5, 4) }, fn = function(x) return (x:sort(1, true)) end })
  case({ op = "sort", inputs = { R(7) }, fn = function(x) return (x:sort()) end })
  case({ op = "sort", grad = false, inputs = { U(-2, 2, 4, 9) },   -- ties: stable, identical indices everywhere
         fn = function(x) local v, i = x:round():sort(2, true); return i end, label = "sort_ties" })
  case({ op = "sort", grad = false, inputs = { R(3, 3000) }, fn = function(x) local v, i = x:sort(2); return i end,
         label = "sort_long" })
  case({ op = "topk", inputs = { R(4, 7) }, fn = function(x) return (x:topk(3, 2)) end })
  case({ op = "topk", inputs = { T(6, 3) }, fn = function(x) return (x:topk(2, 1, false)) end })
  case({ op = "topk", inputs = { R(5) }, fn = function(x) return (x:topk(5)) end })
  case({ op = "topk", grad = false, inputs = { U(-2, 2, 3, 8) }, fn = function(x) local v, i = x:round():topk(3); return i end,
         label = "topk_indices" })
  case({ op = "cumsum", inputs = { R(3, 5) }, fn = function(x) return x:cumsum(2) end })
  case({ op = "cumsum", inputs = { T(4, 3) }, fn = function(x) return x:cumsum(1) end })
  case({ op = "cumsum", inputs = { R(1) }, fn = function(x) return x:cumsum(1) end })
  case({ op = "cumsum", inputs = { R(2, 3, 4) }, fn = function(x) return x:cumsum(-1) end })
  case({ op = "cumsum", grad = false, inputs = { U(-5, 5, 3, 7) }, fn = function(x) return x:round():long():cumsum(2) end,
         label = "cumsum_int" })
  case({ op = "cumprod", inputs = { U(0.5, 1.5, 3, 5) }, fn = function(x) return x:cumprod(2) end })
  case({ op = "cumprod", inputs = { T(4, 3) }, fn = function(x) return x:cumprod(1) end })
  case({ op = "cumprod", inputs = { Z({ 4, 5 }, { { 1, 3 }, { 2, 1 }, { 3, 2 }, { 3, 4 }, { 4, 5 } }) },   -- zeros in the input
         fn = function(x) return x:cumprod(2) end, label = "cumprod_zeros" })
  case({ op = "cumprod", inputs = { Z({ 6 }, { { 2 } }) }, fn = function(x) return x:cumprod(1) end, label = "cumprod_zero" })

  -- ---- random (same seed: the same stream on every backend) ----
  case({ op = "bernoulli", grad = false, inputs = { U(0, 1, 4, 5) },
         fn = function(p) netcl.manual_seed(11); return netcl.bernoulli(p) end })
  case({ op = "bernoulli", grad = false, inputs = {},
         fn = function(env) netcl.manual_seed(12); return netcl.bernoulli(0.3, { 7, 3 }, { device = env.device }) end })
  case({ op = "randperm", grad = false, inputs = {},
         fn = function(env) netcl.manual_seed(13); return netcl.randperm(17, { device = env.device }) end })
  case({ op = "multinomial", grad = false, inputs = {},
         fn = function(env) netcl.manual_seed(14); return netcl.multinomial(env.tensor({ { 0.1, 0.2, 0.7 }, { 1, 1, 0 } }), 2) end })
  case({ op = "multinomial", grad = false, inputs = {},
         fn = function(env) netcl.manual_seed(15); return netcl.multinomial(env.tensor({ 0.5, 0, 2, 1 }), 9, true) end })
end
