# examples/bench/gemm_shapes_peer.py — the PyTorch side of
# examples/bench/gemm_shapes.lua: the same float32 products (TF32 off),
# printed as "name TFLOP/s".
# usage: python3 gemm_shapes_peer.py cuda|cpu
import sys, time
import torch

dev = sys.argv[1] if sys.argv[1] == "cpu" or torch.cuda.is_available() else "cpu"
torch.backends.cuda.matmul.allow_tf32 = False
print("device", torch.cuda.get_device_name() if dev == "cuda" else "cpu (%d threads)" % torch.get_num_threads())
ROWS = [("conv3x3s2_data", 128, 576, 128, 256, True), ("conv3x3s2_weight", 128, 128, 256, 576, False)]
ROWS += [("k%d" % k, 8192 // k, 1024, k, 1024, False) for k in (128, 256, 512, 1024, 4096)]

def sync():
    if dev == "cuda":
        torch.cuda.synchronize()

for name, B, M, K, N, bcast in ROWS:
    a = torch.randn(1 if bcast else B, M, K, device=dev)
    b = torch.randn(B, K, N, device=dev)
    for _ in range(20):
        torch.matmul(a, b)
    sync()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(10):
            torch.matmul(a, b)
        sync()
        ts.append((time.perf_counter() - t0) / 10)
    ts.sort()
    print(name, "%.4f" % (2 * B * M * K * N / ts[2] / 1e12))
