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

def matmul_stream(n):  # ten products per synchronisation: the device's rate without the wait
    a = torch.randn(n, n, device=dev); b = torch.randn(n, n, device=dev)
    def ten():
        for _ in range(10):
            a @ b
    return 10 * 2 * n ** 3 / time_it(ten, 5) / 1e9

def sync_wait(reps):  # a synchronisation with nothing queued
    sync()
    t0 = time.perf_counter()
    for _ in range(reps):
        sync()
    return (time.perf_counter() - t0) / reps * 1e6

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

def add(n):
    a = torch.rand(n, device=dev); b = torch.rand(n, device=dev)
    return 12 * n / time_it(lambda: a + b, 10) / 1e9

def sum(n):
    x = torch.rand(n, device=dev)
    return 4 * n / time_it(lambda: x.sum(), 10) / 1e9

def softmax(rows):
    x = torch.randn(rows, 1000, device=dev, requires_grad=True)
    g = torch.randn(rows, 1000, device=dev)
    def step():
        x.grad = None
        torch.softmax(x, 1).backward(g)
    return time_it(step, 10) * 1e3

def cross_entropy(rows):
    x = torch.randn(rows, 1000, device=dev, requires_grad=True)
    t = torch.randint(0, 1000, (rows,), device=dev)
    def step():
        x.grad = None
        torch.nn.functional.cross_entropy(x, t).backward()
    return time_it(step, 10) * 1e3

def mlp(batch):
    F = torch.nn.functional
    w1 = (torch.randn(256, 784, device=dev) * 0.05).requires_grad_()
    b1 = torch.zeros(256, device=dev, requires_grad=True)
    w2 = (torch.randn(10, 256, device=dev) * 0.05).requires_grad_()
    b2 = torch.zeros(10, device=dev, requires_grad=True)
    x = torch.randn(batch, 784, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    params = [w1, b1, w2, b2]
    def step():
        loss = F.cross_entropy(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2), y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.sub_(p.grad * 0.01)
                p.grad.zero_()
    return time_it(step, 20) * 1e6

def launch(reps):
    a = torch.rand(64, device=dev); b = torch.rand(64, device=dev)
    best = float("inf")
    for _ in range(5):
        sync(); t0 = time.perf_counter()
        for _ in range(reps):
            a + b
        best = min(best, time.perf_counter() - t0); sync()
    return best / reps * 1e6

for spec in sys.argv[2].split(","):
    key, size = spec.split(":")
    print(key, size, globals()[key](int(size)), flush=True)
