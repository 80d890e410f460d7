# examples/bench/gemm_peer.py — the PyTorch side of examples/bench/gemm.lua:
# the same products on the same machine, printed as "kind size TFLOP/s".
# usage: python3 gemm_peer.py cuda|cpu sgemm:4096,sgemm_nt:4096,tf32:4096,fp16:4096,...
# (sgemm_nt, fp16_nt, bf16_nt: a @ b.t(), b stored [n, n], nn.Linear's layout;
#  fp16_tn, bf16_tn: a.t() @ b, the layout of nn.Linear's weight gradient)
import sys, time
import torch

dev = sys.argv[1] if sys.argv[1] == "cpu" or torch.cuda.is_available() else "cpu"
print("device", torch.cuda.get_device_name() if dev == "cuda" else "cpu (%d threads)" % torch.get_num_threads())
# tf32x3: netcl's float32-accurate 3xTF32 mode, whose peer is the SGEMM
DTYPES = {"sgemm": torch.float32, "sgemm_nt": torch.float32, "tf32x3": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
          "fp16_nt": torch.float16, "bf16_nt": torch.bfloat16, "fp16_tn": torch.float16, "bf16_tn": torch.bfloat16}

def sync():
    if dev == "cuda":
        torch.cuda.synchronize()

def sampling(t):
    # gemm.lua's rule: samples of about 2 ms, as many as fill about 0.3 s (10 to 50)
    inner = max(1, int(2e-3 / t))
    return min(50, max(10, int(0.3 / (inner * t)))), inner

def run(kind, n):
    torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
    a = torch.randn(n, n, device=dev, dtype=DTYPES[kind])
    b = torch.randn(n, n, device=dev, dtype=DTYPES[kind])
    if kind.endswith("_nt"):
        b = b.t()
    if kind.endswith("_tn"):
        a = a.t()
    a @ b; sync()
    t_warm, done = time.perf_counter(), 0
    warm_until = t_warm + 0.2  # the same warm-up as gemm.lua's
    while time.perf_counter() < warm_until:
        for _ in range(4):
            a @ b
        sync()
        done += 4
    reps, inner = sampling((time.perf_counter() - t_warm) / done)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            a @ b
        sync()
        ts.append((time.perf_counter() - t0) / inner)
    ts.sort()
    return 2 * n ** 3 / ts[(len(ts) + 1) // 2 - 1] / 1e12

for spec in sys.argv[2].split(","):
    kind, n = spec.split(":")
    if dev == "cpu" and kind != "sgemm":
        continue
    print(kind, n, "%.4f" % run(kind, int(n)))
