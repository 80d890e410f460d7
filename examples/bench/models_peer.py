# examples/bench/models_peer.py — the PyTorch side of examples/bench/models.lua:
# the LeNet-5 Adam step (us/step) and ResNet-18 CIFAR training throughput
# (img/s) with the same models, optimizers and timing, eager mode, float32
# (TF32 off unless the last argument is tf32), printed as "key size value";
# amp_float16 / amp_bfloat16: torch.autocast with that dtype (a GradScaler
# for float16) and channels_last, and the ResNet's peak memory on stderr.
# usage: python3 models_peer.py cuda|cpu key:size,... lenet_steps resnet_steps resnet_warmup [fp32|tf32|amp_float16|amp_bfloat16]
import sys, time
import torch
import torch.nn as nn
sys.path.insert(0, __file__.rsplit("/", 1)[0] if "/" in __file__ else ".")
from peer_models import lenet5, resnet18_cifar

dev = sys.argv[1] if sys.argv[1] == "cpu" or torch.cuda.is_available() else "cpu"
mode = sys.argv[6] if len(sys.argv) > 6 else "fp32"
tf32 = mode == "tf32"
amp = {"amp_float16": torch.float16, "amp_bfloat16": torch.bfloat16}.get(mode)
torch.backends.cuda.matmul.allow_tf32 = tf32
torch.backends.cudnn.allow_tf32 = tf32
lenet_steps, resnet_steps, resnet_warmup = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print("device", torch.cuda.get_device_name() if dev == "cuda" else "cpu (%d threads)" % torch.get_num_threads(), flush=True)

def sync():
    if dev == "cuda":
        torch.cuda.synchronize()

def trainer(model, opt, x, y):
    if amp is not None:
        scaler = torch.amp.GradScaler(enabled=amp == torch.float16)
        def amp_step():
            opt.zero_grad()
            with torch.autocast(device_type=dev, dtype=amp):
                loss = nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return amp_step
    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step

def per_step(step, n, rounds):
    for _ in range(3):
        step()
    sync()
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        ts.append((time.perf_counter() - t0) / n)
    ts.sort()
    return ts[(len(ts) + 1) // 2 - 1]

def lenet(batch):
    torch.manual_seed(1)
    model = lenet5().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    return per_step(trainer(model, opt, x, y), lenet_steps, 5) * 1e6

def resnet18(batch):
    torch.manual_seed(1)
    model = resnet18_cifar().to(dev)
    assert sum(p.numel() for p in model.parameters()) == 11173962
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(batch, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    if amp is not None:
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    step = trainer(model, opt, x, y)
    for _ in range(resnet_warmup):
        step()
    sync()
    t0 = time.perf_counter()
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for _ in range(resnet_steps):
        step()
    sync()
    rate = resnet_steps * batch / (time.perf_counter() - t0)
    if dev == "cuda":
        print("  PyTorch ResNet-18 peak device memory: %.0f MiB" % (torch.cuda.max_memory_allocated() / 2 ** 20), file=sys.stderr)
    return rate

for spec in sys.argv[2].split(","):
    key, size = spec.split(":")
    print(key, size, globals()[key](int(size)), flush=True)
