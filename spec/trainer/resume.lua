-- spec/trainer/resume.lua — run by spec/trainer_spec.lua: trains a small
-- MLP with dropout (so the generator's state matters) for 3 epochs with a
-- checkpoint directory. arg[1]: the directory; arg[2]: "kill" makes the
-- process kill itself (SIGKILL) in the middle of epoch 2. Prints the
-- parameters' values ("params <values>") when it finishes.
local ffi = require("ffi")
pcall(ffi.cdef, "int kill(int pid, int sig); int getpid(void);")
local netcl = require("netcl")
local nn, optim, data = netcl.nn, netcl.optim, netcl.data
netcl.manual_seed(11)
local x = netcl.randn(192, 6)
local y = (x:narrow(2, 1, 1):squeeze(2):gt(0)):long() + 1
local loader = data.DataLoader(data.TensorDataset(x, y), { batch_size = 16, num_workers = 0, seed = 5 })
local model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 2))
local opt = optim.Adam(model, { lr = 1e-2 })
local tr = netcl.Trainer({
  model = model, optimizer = opt, loss = nn.CrossEntropyLoss(), metrics = { "loss", "accuracy" },
  scheduler = optim.lr_scheduler.StepLR(opt, { step_size = 1, gamma = 0.7 }), checkpoint_dir = arg[1],
  callbacks = { on_batch_end = function(_, b)
    if arg[2] == "kill" and b.epoch == 2 and b.batch == 5 then ffi.C.kill(ffi.C.getpid(), 9) end
  end },
})
tr:fit(loader, { epochs = 3, val = loader })
local vals = {}
for _, p in ipairs(model:parameters()) do
  for _, v in ipairs(p:detach():reshape({ -1 }):totable()) do vals[#vals + 1] = ("%.9g"):format(v) end
end
print("params " .. table.concat(vals, " "))
