# tf32_rounding.py — does cuBLAS's TF32 round or truncate float32 operands?
# The peer-side check behind netcl's tf32 semantics (docs/gemm.md,
# "Hopper's wgmma"; netcl's own: spec/gemm_spec.lua test_tf32_rounds_to_nearest).
# x = 1 + 2^-11 + 2^-12 has 13 significant bits and 1/n is a power of two,
# so every sum is exact: x @ (1/n) gives 1 + 2^-10 where the operand
# carrying the low bits was rounded to the nearest tf32, 1 where it was
# truncated, x in float32. Needs PyTorch with CUDA: python3 tf32_rounding.py
import torch

torch.backends.cuda.matmul.allow_tf32 = True
x = 1 + 2**-11 + 2**-12
for n in (1024, 4096, 8192):
    for lay in ("nn", "nt"):
        for side in ("a", "b"):
            a = torch.full((n, n), x if side == "a" else 1.0 / n, device="cuda")
            b = torch.full((n, n), x if side == "b" else 1.0 / n, device="cuda")
            if lay == "nt":
                b = b.t().contiguous().t()
            v = (a @ b)[0, 0].item()
            kind = "rounded" if v == 1 + 2**-10 else "truncated" if v == 1 else "float32" if v == x else "other"
            print(f"{n} {lay} low bits on {side}: {v:.9f} {kind}")
