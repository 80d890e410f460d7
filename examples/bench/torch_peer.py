# examples/bench/torch_peer.py — the PyTorch side of examples/bench/run.lua:
# the same workloads on the same machine, printed as "key size value".
# usage: python3 torch_peer.py cuda|cpu key:size,key:size,...
import sys, time
import torch

dev = sys.argv[1] if sys.argv[1] == "cpu" or torch.cuda.is_available() else "cpu"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
print("device", torch.cuda.get_device_name() if dev == "cuda" else "cpu (%d threads)" % torch.get_num_threads())

def sync():
    if dev == "cuda":
        torch.cuda.synchronize()

def time_it(fn, reps):
    fn(); sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); sync(); ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[(len(ts) + 1) // 2 - 1]

def elementwise(n):
    x = torch.rand(n, device=dev)
    t = time_it(lambda: torch.relu(x * 1.5 + 0.25), 10)
    return 8 * n / t / 1e9

def matmul(n):
    a = torch.randn(n, n, device=dev); b = torch.randn(n, n, device=dev)
    t = time_it(lambda: a @ b, 3 if n >= 4096 else 5)
    return 2 * n ** 3 / t / 1e9

def small_add(reps):
    a = torch.rand(64, device=dev); b = torch.rand(64, device=dev)
    def loop():
        for _ in range(reps):
            a + b
    return time_it(loop, 3) / reps * 1e6

def create(reps):
    def loop():
        for _ in range(reps):
            torch.zeros(64, device=dev)
    return time_it(loop, 3) / reps * 1e6

for spec in sys.argv[2].split(","):
    key, size = spec.split(":")
    print(key, size, globals()[key](int(size)), flush=True)
