# examples/bench/imagenet_peer.py — the PyTorch side of
# examples/bench/imagenet.lua: torchvision-layout ResNet-50 / ResNet-18 at
# 224x224 (peer_models.py; in-place ReLU as torchvision has it), SGD
# momentum, eager mode, float32 (TF32 off) or tf32; prints "key batch img/s
# peak_MiB" per workload (peak: torch.cuda.max_memory_allocated over the
# timed steps) and, with "max", "max_batch N" (the largest ResNet-50 batch
# that trains two steps, searched as the netcl side does).
# usage: python3 imagenet_peer.py key:batch,... steps warmup fp32|tf32 max|-
import sys, time
import torch
import torch.nn as nn
sys.path.insert(0, __file__.rsplit("/", 1)[0] if "/" in __file__ else ".")
from peer_models import resnet50, resnet18

dev = "cuda" if torch.cuda.is_available() else "cpu"
steps, warmup, mode = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
torch.backends.cudnn.allow_tf32 = mode == "tf32"
torch.backends.cudnn.benchmark = True
print("device", torch.cuda.get_device_name() if dev == "cuda" else "cpu (%d threads)" % torch.get_num_threads(), flush=True)
MODELS = {"resnet50": resnet50, "resnet18": resnet18}

def sync():
    if dev == "cuda":
        torch.cuda.synchronize()

def setup(key, batch):
    torch.manual_seed(1)
    model = MODELS[key]().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(batch, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (batch,), device=dev)
    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step

def measure(key, batch):
    step = setup(key, batch)
    for _ in range(warmup):
        step()
    sync()
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    rate = steps * batch / (time.perf_counter() - t0)
    peak = torch.cuda.max_memory_allocated() / 2 ** 20 if dev == "cuda" else 0
    return rate, peak

def fits(batch):
    try:
        step = setup("resnet50", batch)
        step(); step()
        sync()
        ok = True
    except torch.cuda.OutOfMemoryError:
        ok = False
    step = None
    if dev == "cuda":
        torch.cuda.empty_cache()
    return ok

for spec in sys.argv[1].split(","):
    key, batch = spec.split(":")
    rate, peak = measure(key, int(batch))
    print(key, batch, rate, peak, flush=True)
    if dev == "cuda":
        torch.cuda.empty_cache()

if len(sys.argv) > 5 and sys.argv[5] == "max":
    lo, hi = 0, 128
    while fits(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 32:
        mid = (lo + hi) // 64 * 32
        if fits(mid):
            lo = mid
        else:
            hi = mid
    print("max_batch", lo, flush=True)
