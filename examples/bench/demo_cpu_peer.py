# examples/bench/demo_cpu_peer.py — the PyTorch side of examples/bench/demo_cpu.lua:
# the README demo's CNN (examples/fashion_mnist.lua) trained one epoch on the
# CPU (Adam, one-cycle, batch 128, shuffled, normalised as netcl does),
# printing "imgs_per_s <v>", "train_s <v>" and "test_accuracy <v>".
# usage: python3 demo_cpu_peer.py THREADS [DATA_DIR]
import gzip, struct, sys, time
import torch
import torch.nn as nn

threads = int(sys.argv[1])
data = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
torch.set_num_threads(threads)
torch.manual_seed(1)

def idx(path):
    raw = gzip.open(path, "rb").read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(raw[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)

def load(prefix):
    x = idx("%s/%s-images-idx3-ubyte.gz" % (data, prefix)).float().div_(255).sub_(0.2860).div_(0.3530).unsqueeze(1)
    return x, idx("%s/%s-labels-idx1-ubyte.gz" % (data, prefix)).long()

xtr, ytr = load("train")
xte, yte = load("t10k")
model = nn.Sequential(
    nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))
B = 128
steps = xtr.shape[0] // B
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, epochs=1, steps_per_epoch=steps)
loss_fn = nn.CrossEntropyLoss()
t0 = time.perf_counter()
perm = torch.randperm(xtr.shape[0])
model.train()
for s in range(steps):
    i = perm[s * B:(s + 1) * B]
    x, y = xtr[i], ytr[i]
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    sched.step()
train_s = time.perf_counter() - t0
model.eval()
with torch.no_grad():
    correct = sum((model(xte[k:k + 250]).argmax(1) == yte[k:k + 250]).sum().item() for k in range(0, xte.shape[0], 250))
print("imgs_per_s %.1f" % (steps * B / train_s))
print("train_s %.2f" % train_s)
print("test_accuracy %.4f" % (correct / xte.shape[0]))
