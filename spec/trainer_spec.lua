-- spec/trainer_spec.lua — netcl.Trainer: fit/evaluate/predict, the JSON
-- log and the PNG of the curves, a run killed mid-epoch and started again
-- ending with the parameters of an uninterrupted run, early stopping,
-- callbacks, gradient accumulation, clipping, amp and compile, the
-- progress line on a terminal and off one, and clear errors.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local nn, optim, data = netcl.nn, netcl.optim, netcl.data
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  os.execute("mkdir -p " .. d)
  return d
end

-- a separable 2-class problem on the device under test
local function problem(n, seed)
  netcl.manual_seed(seed or 1)
  local x = netcl.randn(n, 4)
  local y = (x:narrow(2, 1, 1):squeeze(2):gt(0)):long() + 1
  return data.DataLoader(data.TensorDataset(x, y), { batch_size = 32, num_workers = 0, seed = 3, device = H.device })
end

local function mlp()
  netcl.manual_seed(2)
  return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)):to(H.device)
end

-- an output sink that keeps what is written
local function sink()
  local s = { text = "" }
  function s:write(...) for _, v in ipairs({ ... }) do self.text = self.text .. tostring(v) end return self end
  function s:flush() end
  return s
end

local function params_of(m)
  local out = {}
  for _, p in ipairs(m:parameters()) do out[#out + 1] = p:detach():to("cpu"):clone() end
  return out
end

local function assert_params_close(a, b, tol)
  for i = 1, #a do H.assert_close(a[i], b[i], tol, tol, "parameter " .. i) end
end

TestTrainer = {}

function TestTrainer:test_fit_evaluate_predict_log_and_plot()
  local dir = tmpdir()
  local loader = problem(256)
  local model = mlp()
  local opt = optim.SGD(model, { lr = 0.1, momentum = 0.9 })
  local out = sink()
  local tr = netcl.Trainer({ model = model, optimizer = opt, loss = nn.CrossEntropyLoss(), metrics = { "loss", "accuracy" },
                             checkpoint_dir = dir, out = out, progress = false })
  local h = tr:fit(loader, { epochs = 3, val = loader })
  lu.assertEquals(#h, 3)
  lu.assertTrue(h[3].val_accuracy > 0.9, "accuracy " .. h[3].val_accuracy)
  lu.assertTrue(h[3].train_loss < h[1].train_loss)
  local ev = tr:evaluate(loader)
  lu.assertAlmostEquals(ev.accuracy, h[3].val_accuracy, 1e-12)
  lu.assertEquals(tr:predict(loader):size(), { 256, 2 })
  -- one summary line per epoch, no control characters off a terminal
  local lines = 0
  for _ in out.text:gmatch("epoch %d/3:") do lines = lines + 1 end
  lu.assertEquals(lines, 3)
  lu.assertNil(out.text:find("\r", 1, true))
  -- the JSON-lines log
  local log = H.read_file(dir .. "/log.jsonl")
  local rows = {}
  for l in log:gmatch("[^\n]+") do rows[#rows + 1] = require("netcl.json").decode(l) end
  lu.assertEquals(#rows, 3)
  lu.assertEquals(rows[2].epoch, 2)
  lu.assertAlmostEquals(rows[3].val_accuracy, h[3].val_accuracy, 1e-12)
  -- the curves: a loss panel and an accuracy panel
  local png = netcl.image.load(dir .. "/curves.png")
  lu.assertEquals(png:size(), { 3, 320, 840 })
  lu.assertTrue(png:float():mean():item() < 255, "the picture is blank")
  os.execute("rm -rf " .. dir)
end

function TestTrainer:test_killed_run_resumes_to_the_same_parameters()
  if not H.is_cpu then lu.skip("trainer resume: device independent, run in the cpu pass") end
  local a, b = tmpdir(), tmpdir()
  local script = root .. "/spec/trainer/resume.lua"
  local whole, code = H.run(("NETCL_DEVICE=cpu %s/build/netcl %s %s"):format(root, script, a))
  lu.assertEquals(code, 0, whole)
  local _, killed = H.run(("NETCL_DEVICE=cpu %s/build/netcl %s %s kill"):format(root, script, b))
  lu.assertEquals(killed, 137, "the run should have been killed")
  local again, code2 = H.run(("NETCL_DEVICE=cpu %s/build/netcl %s %s"):format(root, script, b))
  lu.assertEquals(code2, 0, again)
  lu.assertStrContains(again, "resuming after epoch 1")
  lu.assertEquals(again:match("params ([^\n]+)"), whole:match("params ([^\n]+)"))
  os.execute("rm -rf " .. a .. " " .. b)
end

function TestTrainer:test_early_stopping_and_callbacks()
  local loader = problem(64)
  local model = mlp()
  local calls = { fit_start = 0, batch = 0, epoch = 0, fit_end = 0 }
  local tr = netcl.Trainer({ model = model, optimizer = optim.SGD(model, { lr = 0 }), loss = nn.CrossEntropyLoss(),
    out = sink(), progress = false, callbacks = {
      on_fit_start = function() calls.fit_start = calls.fit_start + 1 end,
      on_batch_end = function(_, b) calls.batch = calls.batch + 1; lu.assertTrue(b.size > 0) end,
      on_epoch_end = function(t, e, row) calls.epoch = calls.epoch + 1; lu.assertEquals(row.epoch, e); lu.assertEquals(t.epoch, e) end,
      on_fit_end = function() calls.fit_end = calls.fit_end + 1 end } })
  -- lr 0: the loss never improves, so patience 1 stops after epoch 3
  local h = tr:fit(loader, { epochs = 10, early_stopping = { patience = 1, metric = "train_loss" } })
  lu.assertEquals(#h, 3)
  lu.assertEquals(calls, { fit_start = 1, batch = 6, epoch = 3, fit_end = 1 })
  -- a callback returning "stop" ends the epoch or the fit
  local tr2 = netcl.Trainer({ model = model, optimizer = optim.SGD(model, { lr = 0.1 }), loss = nn.CrossEntropyLoss(),
    out = sink(), progress = false, callbacks = { on_epoch_end = function() return "stop" end } })
  lu.assertEquals(#tr2:fit(loader, { epochs = 5 }), 1)
end

function TestTrainer:test_accumulation_equals_a_larger_batch()
  netcl.manual_seed(4)
  local x, y = netcl.randn(64, 4):to(H.device), netcl.randint(1, 3, { 64 }):long():to(H.device)
  local function run(batch, acc)
    local list = {}
    for i = 1, 64, batch do list[#list + 1] = { x:narrow(1, i, batch), y:narrow(1, i, batch) } end
    local model = mlp()
    local tr = netcl.Trainer({ model = model, optimizer = optim.SGD(model, { lr = 0.5 }), loss = nn.CrossEntropyLoss(),
                               accumulate = acc, out = sink(), progress = false, grad_clip = 1e9 })
    tr:fit(list, { epochs = 2 })
    return params_of(model)
  end
  assert_params_close(run(16, 2), run(32, 1), 1e-5)
end

function TestTrainer:test_clipping_amp_and_compile()
  local loader = problem(128)
  -- clipping to a tiny norm keeps the first step tiny
  local model = mlp()
  local before = params_of(model)
  local tr = netcl.Trainer({ model = model, optimizer = optim.SGD(model, { lr = 1 }), loss = nn.CrossEntropyLoss(),
                             grad_clip = 1e-6, out = sink(), progress = false })
  tr:fit({ { netcl.randn(8, 4):to(H.device), netcl.ones({ 8 }, { dtype = "int64" }):to(H.device) } }, { epochs = 1 })
  assert_params_close(params_of(model), before, 1e-5)
  -- mixed precision trains
  local m2 = mlp()
  local h = netcl.Trainer({ model = m2, optimizer = optim.Adam(m2, { lr = 1e-2 }), loss = nn.CrossEntropyLoss(), amp = true,
                            metrics = { "loss", "accuracy" }, out = sink(), progress = false }):fit(loader, { epochs = 3 })
  lu.assertTrue(h[3].train_loss < h[1].train_loss)
  -- the compiled step gives the eager step's parameters
  local function train(compile)
    local m = mlp()
    netcl.Trainer({ model = m, optimizer = optim.SGD(m, { lr = 0.1, momentum = 0.9 }), loss = nn.CrossEntropyLoss(),
                    compile = compile, out = sink(), progress = false }):fit(loader, { epochs = 2 })
    return params_of(m)
  end
  assert_params_close(train(true), train(false), 1e-5)
end

function TestTrainer:test_progress_line_on_a_terminal()
  local out = sink()
  local tr = netcl.Trainer({ model = mlp(), optimizer = optim.SGD(mlp(), { lr = 0.1 }), loss = nn.CrossEntropyLoss(),
                             out = out, progress = true })
  tr:fit(problem(64), { epochs = 1 })
  lu.assertStrContains(out.text, "\r")
  lu.assertStrContains(out.text, "epoch 1/1 [")
  lu.assertStrContains(out.text, "img/s")
  lu.assertStrContains(out.text, "loss ")
  lu.assertStrContains(out.text, "2/2")
end

function TestTrainer:test_errors()
  local model = mlp()
  local opt = optim.SGD(model, { lr = 0.1 })
  local base = { model = model, optimizer = opt, loss = nn.CrossEntropyLoss() }
  local function with(k, v)
    local o = {}
    for a, b in pairs(base) do o[a] = b end
    o[k] = v
    return o
  end
  H.assert_error(function() netcl.Trainer(with("nosuch", 1)) end, "unknown option 'nosuch'")
  H.assert_error(function() netcl.Trainer(with("model", 3)) end, "option model must be a table")
  H.assert_error(function() netcl.Trainer(with("metrics", { "f1" })) end, "unknown metric 'f1'")
  H.assert_error(function() netcl.Trainer(with("amp", "int8")) end, "amp must be true, false, 'float16' or 'bfloat16'")
  local o = with("amp", true)
  o.compile = true
  H.assert_error(function() netcl.Trainer(o) end, "amp with compile")
  H.assert_error(function() netcl.Trainer(with("accumulate", 0)) end, "accumulate")
  local tr = netcl.Trainer(with("out", sink()))
  H.assert_error(function() tr:fit(problem(32), { epochs = 0 }) end, "epochs")
  H.assert_error(function() tr:fit(problem(32), { nosuch = 1 }) end, "unknown option 'nosuch'")
  H.assert_error(function() tr:fit(42) end, "a loader must be")
end
