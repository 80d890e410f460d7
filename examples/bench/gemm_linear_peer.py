# examples/bench/gemm_linear_peer.py — the PyTorch side of
# examples/bench/gemm_linear.lua: the same products, given as
# layout:MxNxK, printed as "layout:MxNxK TFLOP/s".
# usage: python3 gemm_linear_peer.py cuda|cpu [--tf32] ROW...
import sys, time
import torch

args = sys.argv[1:]
dev = args.pop(0)
dev = dev if dev == "cpu" or torch.cuda.is_available() else "cpu"
tf32 = "--tf32" in args
rows = [r for r in args if r != "--tf32"]
torch.backends.cuda.matmul.allow_tf32 = tf32
print("device", torch.cuda.get_device_name() if dev == "cuda" else "cpu (%d threads)" % torch.get_num_threads())

def sync():
    if dev == "cuda":
        torch.cuda.synchronize()

for r in rows:
    lay, shape = r.split(":")
    m, n, k = (int(x) for x in shape.split("x"))
    a = torch.randn(k, m, device=dev).t() if lay[0] == "t" else torch.randn(m, k, device=dev)
    b = torch.randn(n, k, device=dev).t() if lay[1] == "t" else torch.randn(k, n, device=dev)
    for _ in range(20):
        a @ b
    sync()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(10):
            a @ b
        sync()
        ts.append((time.perf_counter() - t0) / 10)
    ts.sort()
    print(r, "%.4f" % (2 * m * n * k / ts[2] / 1e12))
