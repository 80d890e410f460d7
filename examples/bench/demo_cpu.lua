-- examples/bench/demo_cpu.lua — the README's main job on the cpu backend
-- against PyTorch CPU, same cores, same command: one epoch of
-- examples/fashion_mnist.lua (--quick --device cpu: the demo's CNN, Adam,
-- one-cycle, batch 128) with NETCL_NUM_THREADS=T, pinned by taskset to
-- cores 0..T-1, and demo_cpu_peer.py (the same CNN and schedule in PyTorch,
-- torch.set_num_threads(T)) on the same cores, for each T asked. Prints
-- training images per second of each side and the ratio (> 1: netcl
-- faster). Without PyTorch the peer column says so.
--   netcl examples/bench/demo_cpu.lua [--threads 2,16] [--data DIR]
local opts = { threads = "2", data = "/usr/share/datasets/fashion-mnist" }
local i = 1
while arg and arg[i] do
  local key = arg[i]:match("^%-%-(.+)$")
  if not key or opts[key] == nil or arg[i + 1] == nil then error("usage: demo_cpu.lua [--threads 2,16] [--data DIR]") end
  opts[key] = arg[i + 1]
  i = i + 2
end
local here = arg[0]:match("^(.*)/[^/]*$") or "."
local root = here .. "/../.."

local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  return out
end
local has_taskset = os.execute("command -v taskset >/dev/null 2>&1") == 0
local has_torch = os.execute("python3 -c 'import torch' >/dev/null 2>&1") == 0
local ncores = tonumber(run("nproc"):match("%d+")) or 1

print(("%-8s %12s %9s %12s %9s %7s"):format("threads", "netcl img/s", "acc", "PyTorch", "acc", "ratio"))
for t in opts.threads:gmatch("%d+") do
  t = math.min(tonumber(t), ncores)
  local pin = has_taskset and ("taskset -c 0-%d "):format(t - 1) or ""
  local out = run(("cd %s && NETCL_NUM_THREADS=%d %sbuild/netcl examples/fashion_mnist.lua --quick --device cpu --save none --data %s")
    :format(root, t, pin, opts.data))
  local ours = tonumber(out:match("([%d%.]+) img/s"))
  local acc = tonumber(out:match("final test accuracy ([%d%.]+)%%"))
  if not ours then error("the netcl run failed:\n" .. out) end
  local peer, pacc = nil, nil
  if has_torch then
    local pout = run(("%spython3 %s/demo_cpu_peer.py %d %s"):format(pin, here, t, opts.data))
    peer, pacc = tonumber(pout:match("imgs_per_s ([%d%.]+)")), tonumber(pout:match("test_accuracy ([%d%.]+)"))
    if not peer then io.stderr:write("the PyTorch run failed:\n", pout, "\n") end
  end
  print(("%-8d %12.0f %8.2f%% %12s %9s %7s"):format(t, ours, acc or 0, peer and ("%.0f"):format(peer) or "-",
    pacc and ("%.2f%%"):format(100 * pacc) or "-", peer and ("%.2fx"):format(ours / peer) or
    (has_torch and "-" or "no torch")))
end
