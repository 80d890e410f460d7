-- spec/catalogue/cases.lua — the bad-input catalogue: public functions of
-- every module with one good call each, and for each argument the bad
-- values of its kind. Every (function, argument, bad value) is a case
-- that must raise a clear error: one that names the function (`who`) and
-- is not a raw Lua or FFI error. spec/catalogue_spec.lua runs them in
-- child processes, an entry per child, so a crash is a failed case.
local M = {}

-- bad values by kind of argument
local NAN, INF = 0 / 0, math.huge
M.BAD = {
  tensor = { { nil, "nil" }, { "x", '"x"' }, { true, "true" }, { {}, "{}" } },
  size = { { "x", '"x"' }, { 1.5, "1.5" }, { -1, "-1" }, { NAN, "nan" }, { INF, "inf" }, { 2 ^ 70, "2^70" }, { true, "true" } },
  count = { { 0, "0" }, { -1, "-1" }, { 1.5, "1.5" }, { NAN, "nan" }, { INF, "inf" }, { "x", '"x"' } },
  count0 = { { -1, "-1" }, { 1.5, "1.5" }, { NAN, "nan" }, { INF, "inf" }, { "x", '"x"' } },
  dim = { { 0, "0" }, { 3, "3" }, { -3, "-3" }, { 1.5, "1.5" }, { "x", '"x"' }, { NAN, "nan" } },
  newdim = { { 0, "0" }, { 4, "4" }, { -4, "-4" }, { 1.5, "1.5" }, { "x", '"x"' } },   -- a dim to insert into [2, 3]
  shape = { { "x", '"x"' }, { 1.5, "1.5" }, { -2, "-2" }, { NAN, "nan" }, { INF, "inf" }, { true, "true" } },   -- -1 infers
  bool = { { "x", '"x"' }, { 5, "5" }, { {}, "{}" } },
  closure = { { 5, "5" }, { "x", '"x"' } },
  maxnorm = { { -1, "-1" }, { NAN, "nan" }, { "x", '"x"' } },
  index = { { 0, "0" }, { 99, "99" }, { 1.5, "1.5" }, { "x", '"x"' }, { NAN, "nan" } },
  prob = { { -0.1, "-0.1" }, { 1.5, "1.5" }, { NAN, "nan" }, { "x", '"x"' } },
  number = { { "x", '"x"' }, { NAN, "nan" }, { INF, "inf" }, { true, "true" } },
  value = { { "x", '"x"' }, { {}, "{}" } },   -- a fill value: NaN and inf are values too
  positive = { { 0, "0" }, { -1, "-1" }, { NAN, "nan" }, { INF, "inf" }, { "x", '"x"' } },
  dtype = { { "float99", '"float99"' }, { 5, "5" }, { true, "true" } },
  device = { { "opencl:99", '"opencl:99"' }, { "gpu0", '"gpu0"' }, { 5, "5" } },
  func = { { nil, "nil" }, { 5, "5" }, { "x", '"x"' } },
  opts = { { "x", '"x"' }, { { nosuch = 1 }, "{nosuch = 1}" } },
  path = { { nil, "nil" }, { 5, "5" }, { "/nonexistent/dir/file", '"/nonexistent/dir/file"' } },
  module = { { nil, "nil" }, { 5, "5" }, { {}, "{}" } },
  list = { { nil, "nil" }, { 5, "5" }, { "x", '"x"' } },
}

-- entries: who (what the message must name), kinds (one per argument, nil
-- for an argument left good), call(args...) performing the call with the
-- given arguments; good = the good arguments (a function of netcl, so
-- each child builds fresh ones)
local E = {}
local function entry(who, kinds, good, call) E[#E + 1] = { who = who, kinds = kinds, good = good, call = call } end

local function t2(n) return n.randn(2, 3) end

-- ---- creation ----
for _, f in ipairs({ "zeros", "ones", "empty", "rand", "randn" }) do
  entry(f, { "size", "size" }, function() return 2, 3 end, function(n, a, b) return n[f](a, b) end)
  entry(f, { nil, nil, "opts" }, function() return 2, 3, {} end, function(n, a, b, o) return n[f](a, b, o) end)
end
entry("full", { "size", "value" }, function() return { 2, 3 }, 1 end, function(n, s, v) return n.full(s, v) end)
entry("arange", { "number", "number", "number" }, function() return 0, 5, 1 end, function(n, a, b, c) return n.arange(a, b, c) end)
entry("linspace", { "number", "number", "count0" }, function() return 0, 1, 5 end, function(n, a, b, c) return n.linspace(a, b, c) end)
entry("eye", { "count0", "count0" }, function() return 3, 3 end, function(n, a, b) return n.eye(a, b) end)
entry("randint", { "number", "number", "size" }, function() return 0, 5, { 3 } end, function(n, a, b, s) return n.randint(a, b, s) end)
entry("randperm", { "count0" }, function() return 5 end, function(n, a) return n.randperm(a) end)
entry("manual_seed", { "number" }, function() return 1 end, function(n, a) return n.manual_seed(a) end)
entry("bernoulli", { "prob" }, function() return 0.5 end, function(n, p) return n.bernoulli(p, { 3 }) end)
entry("device", { "device" }, function() return "cpu" end, function(n, d) return n.device(d) end)
entry("set_default_device", { "device" }, function() return "cpu" end, function(n, d) return n.set_default_device(d) end)

-- ---- tensor methods (on a [2, 3] float32 tensor) ----
local function method(who, kinds, good, m)
  entry(who, kinds, good, function(n, ...) return t2(n)[m](t2(n), ...) end)
end
method("view", { "shape", "shape" }, function() return 3, 2 end, "view")
method("reshape", { "shape", "shape" }, function() return 3, 2 end, "reshape")
method("expand", { "shape", "shape" }, function() return 2, 3 end, "expand")
method("transpose", { "dim", "dim" }, function() return 1, 2 end, "transpose")
method("narrow", { "dim", "index", "count0" }, function() return 2, 1, 2 end, "narrow")
method("select", { "dim", "index" }, function() return 1, 1 end, "select")
method("unsqueeze", { "newdim" }, function() return 1 end, "unsqueeze")
method("sum", { "dim" }, function() return 1 end, "sum")
method("mean", { "dim" }, function() return 1 end, "mean")
method("max", { "dim" }, function() return 1 end, "max")
method("argmax", { "dim" }, function() return 1 end, "argmax")
method("softmax", { "dim" }, function() return 1 end, "softmax")
method("log_softmax", { "dim" }, function() return 1 end, "log_softmax")
method("cumsum", { "dim" }, function() return 1 end, "cumsum")
method("topk", { "count0" }, function() return 2 end, "topk")
method("std", { "dim" }, function() return 1 end, "std")
method("var", { "dim" }, function() return 1 end, "var")
method("to", { "dtype" }, function() return "float64" end, "to")
method("type", { "dtype" }, function() return "float64" end, "type")
method("matmul", { "tensor" }, function(n) return n.randn(3, 2) end, "matmul")
method("add", { "tensor" }, function(n) return n.randn(2, 3) end, "add")
method("copy_", { "value" }, function(n) return n.randn(2, 3) end, "copy_")
method("clamp", { "value", "value" }, function() return 0, 1 end, "clamp")
method("pow", { "value" }, function() return 2 end, "pow")
method("fill_", { "value" }, function() return 2 end, "fill_")
method("requires_grad_", { "bool" }, function() return true end, "requires_grad_")
entry("gather", { "dim" }, function() return 2 end, function(n, d) return t2(n):gather(d, n.zeros(2, 1, { dtype = "int64" }) + 1) end)
entry("index_select", { "dim" }, function() return 2 end, function(n, d) return t2(n):index_select(d, n.tensor({ 1 }):long()) end)
entry("cat", { "list", "dim" }, function(n) return { t2(n), t2(n) }, 1 end, function(n, l, d) return n.cat(l, d) end)
entry("stack", { "list", "newdim" }, function(n) return { t2(n), t2(n) }, 1 end, function(n, l, d) return n.stack(l, d) end)

-- ---- nn layers ----
entry("Linear", { "count", "count" }, function() return 4, 2 end, function(n, a, b) return n.nn.Linear(a, b) end)
entry("Conv2d", { "count", "count", "count" }, function() return 1, 2, 3 end, function(n, a, b, c) return n.nn.Conv2d(a, b, c) end)
entry("BatchNorm2d", { "count" }, function() return 4 end, function(n, a) return n.nn.BatchNorm2d(a) end)
entry("Dropout", { "prob" }, function() return 0.5 end, function(n, p) return n.nn.Dropout(p) end)
entry("MaxPool2d", { "count" }, function() return 2 end, function(n, k) return n.nn.MaxPool2d(k) end)
entry("Embedding", { "count", "count" }, function() return 10, 4 end, function(n, a, b) return n.nn.Embedding(a, b) end)
entry("LayerNorm", { "count" }, function() return 4 end, function(n, a) return n.nn.LayerNorm(a) end)

-- ---- nn.functional ----
local function F(who, kinds, good, call) entry(who, kinds, good, function(n, ...) return call(n.nn.functional, n, ...) end) end
F("relu", { "tensor" }, function(n) return t2(n) end, function(f, _, x) return f.relu(x) end)
F("softmax", { "tensor", "dim" }, function(n) return t2(n), 2 end, function(f, _, x, d) return f.softmax(x, d) end)
F("cross_entropy", { "tensor", "tensor" }, function(n) return n.randn(4, 3), n.tensor({ 1, 2, 3, 1 }):long() end,
  function(f, _, x, y) return f.cross_entropy(x, y) end)
F("mse_loss", { "tensor", "tensor" }, function(n) return t2(n), t2(n) end, function(f, _, a, b) return f.mse_loss(a, b) end)
F("conv2d", { "tensor", "tensor" }, function(n) return n.randn(1, 1, 5, 5), n.randn(2, 1, 3, 3) end,
  function(f, _, x, w) return f.conv2d(x, w) end)
F("conv2d", { nil, nil, nil, "opts" }, function(n) return n.randn(1, 1, 5, 5), n.randn(2, 1, 3, 3), nil, {} end,
  function(f, _, x, w, b, o) return f.conv2d(x, w, b, o) end)
F("max_pool2d", { "tensor", "count" }, function(n) return n.randn(1, 1, 4, 4), 2 end, function(f, _, x, k) return f.max_pool2d(x, k) end)
F("dropout", { "tensor", "prob" }, function(n) return t2(n), 0.5 end, function(f, _, x, p) return f.dropout(x, p, true) end)
F("layer_norm", { "tensor" }, function(n) return t2(n) end, function(f, _, x) return f.layer_norm(x, { 3 }) end)

-- ---- optim ----
local function model(n) return n.nn.Linear(2, 2) end
entry("SGD", { "module" }, function(n) return model(n) end, function(n, m) return n.optim.SGD(m, { lr = 0.1 }) end)
entry("SGD", { "number" }, function() return 0.1 end, function(n, lr) return n.optim.SGD(model(n), { lr = lr }) end)
entry("Adam", { "number" }, function() return 0.1 end, function(n, lr) return n.optim.Adam(model(n), { lr = lr }) end)
entry("Adam", { "opts" }, function() return { lr = 0.1 } end, function(n, o) return n.optim.Adam(model(n), o) end)
entry("SGD:step", { "closure" }, function() return function() return 0 end end,
  function(n, c) return n.optim.SGD(model(n), { lr = 0.1 }):step(c) end)
entry("StepLR", { "count" }, function() return 2 end,
  function(n, s) return n.optim.lr_scheduler.StepLR(n.optim.SGD(model(n), { lr = 0.1 }), { step_size = s }) end)
entry("clip_grad_norm", { "maxnorm" }, function() return 1 end,
  function(n, v) return n.optim.clip_grad_norm(model(n):parameters(), v) end)

-- ---- data ----
local function ds(n) return n.data.TensorDataset(n.randn(8, 2)) end
entry("DataLoader", { "opts" }, function() return { batch_size = 2 } end, function(n, o) return n.data.DataLoader(ds(n), o) end)
entry("DataLoader", { "count" }, function() return 2 end, function(n, b) return n.data.DataLoader(ds(n), { batch_size = b }) end)
entry("DataLoader", { "count0" }, function() return 0 end, function(n, w) return n.data.DataLoader(ds(n), { num_workers = w }) end)
entry("TensorDataset", { "tensor" }, function(n) return n.randn(4, 2) end, function(n, t) return n.data.TensorDataset(t) end)
entry("random_split", { "list" }, function() return { 4, 4 } end, function(n, l) return n.data.random_split(ds(n), l) end)
entry("DistributedSampler", { "count0" }, function() return 8 end,
  function(n, k) return n.data.DistributedSampler(k, { rank = 0, world_size = 1 }) end)
entry("DistributedSampler", { "opts" }, function() return { rank = 0, world_size = 2 } end,
  function(n, o) return n.data.DistributedSampler(8, o) end)
entry("WeightedRandomSampler", { "list", "count0" }, function() return { 1, 2 }, 4 end,
  function(n, w, k) return n.data.WeightedRandomSampler(w, k) end)

-- ---- io, image ----
entry("save", { nil, "path" }, function(n) return { x = n.ones(2) }, "/tmp/netcl-catalogue.st" end,
  function(n, o, p) local r = n.save(o, p); os.remove("/tmp/netcl-catalogue.st"); return r end)
entry("load", { "path" }, function() return "/nonexistent" end, function(n, p) return n.load(p) end)
entry("image.load", { "path" }, function() return "/nonexistent.png" end, function(n, p) return n.image.load(p) end)
entry("image.save", { "tensor", "path" }, function(n) return n.zeros(3, 4, 4, { dtype = "uint8" }), "/tmp/netcl-catalogue.png" end,
  function(n, t, p) local r = n.image.save(t, p); os.remove("/tmp/netcl-catalogue.png"); return r end)

-- ---- autograd, amp, jit, distributed, trainer, kernel ----
entry("no_grad", { "func" }, function() return function() end end, function(n, f) return n.no_grad(f) end)
entry("autocast", { "func" }, function() return function() end end, function(n, f) return n.amp.autocast(f) end)
entry("autocast", { nil, "opts" }, function() return function() end, {} end, function(n, f, o) return n.amp.autocast(f, o) end)
entry("GradScaler", { "opts" }, function() return {} end, function(n, o) return n.amp.GradScaler(o) end)
entry("compile", { "func" }, function() return function(x) return x * 2 end end, function(n, f) return n.compile(f, n.ones(2)) end)
entry("distributed.init", { "opts" }, function() return {} end, function(n, o) return n.distributed.init(o) end)
entry("Trainer", { "opts" }, function(n)
  local m = model(n)
  return { model = m, optimizer = n.optim.SGD(m, { lr = 0.1 }), loss = n.nn.MSELoss() }
end, function(n, o) return n.Trainer(o) end)
entry("kernel", { "list", "list" }, function() return "__kernel void k() {}", "k" end,
  function(n, s, k) return n.kernel(s, k, { device = "cpu" }) end)

M.entries = E
return M
