# examples/bench/models_peer.py — the PyTorch side of examples/bench/models.lua:
# the LeNet-5 Adam step (us/step) and ResNet-18 CIFAR training throughput
# (img/s) with the same models, optimizers and timing, eager mode, float32
# (TF32 off unless the last argument is tf32), printed as "key size value".
# usage: python3 models_peer.py cuda|cpu key:size,... lenet_steps resnet_steps resnet_warmup [fp32|tf32]
import sys, time
import torch
import torch.nn as nn

dev = sys.argv[1] if sys.argv[1] == "cpu" or torch.cuda.is_available() else "cpu"
tf32 = len(sys.argv) > 6 and sys.argv[6] == "tf32"
torch.backends.cuda.matmul.allow_tf32 = tf32
torch.backends.cudnn.allow_tf32 = tf32
lenet_steps, resnet_steps, resnet_warmup = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print("device", torch.cuda.get_device_name() if dev == "cuda" else "cpu (%d threads)" % torch.get_num_threads(), flush=True)

def sync():
    if dev == "cuda":
        torch.cuda.synchronize()

def lenet5():
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (self.downsample(x) if self.downsample is not None else x))

def resnet18_cifar():
    layers, cin = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()], 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10))

def trainer(model, opt, x, y):
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
    step = trainer(model, opt, x, y)
    for _ in range(resnet_warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(resnet_steps):
        step()
    sync()
    return resnet_steps * batch / (time.perf_counter() - t0)

for spec in sys.argv[2].split(","):
    key, size = spec.split(":")
    print(key, size, globals()[key](int(size)), flush=True)
