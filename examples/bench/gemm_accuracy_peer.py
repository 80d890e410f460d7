# examples/bench/gemm_accuracy_peer.py — the PyTorch side of
# gemm_accuracy.lua: float32 (TF32 off) and TF32 products of 1024 x K
# operands against their float64 product, same sizes and distributions.
import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"
print("PyTorch on", torch.cuda.get_device_name() if dev == "cuda" else "cpu")
for K in (256, 4096, 16384):
    for dist in ("randn", "uniform"):
        g = torch.Generator(device=dev).manual_seed(3)
        f = torch.randn if dist == "randn" else torch.rand
        a = f(1024, K, device=dev, dtype=torch.float64, generator=g)
        b = f(K, 1024, device=dev, dtype=torch.float64, generator=g)
        ref = a @ b
        scale = ref.abs().max()
        line = "%-7s K=%-6d" % (dist, K)
        for tf in (False, True):
            if dev == "cpu" and tf:
                continue
            torch.backends.cuda.matmul.allow_tf32 = tf
            d = ((a.float() @ b.float()).double() - ref).abs()
            line += "  torch %s %.2e / %.2e" % ("tf32" if tf else "float32", d.max() / scale, d.mean() / scale)
        print(line)
