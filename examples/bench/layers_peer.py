# examples/bench/layers_peer.py — the PyTorch side of examples/bench/layers.lua:
# the same layers at the same shapes, printed as "name<TAB>fwd ms<TAB>fwd+bwd ms".
# usage: python3 layers_peer.py cuda|cpu REPS [ONLY] [fp32|tf32]
import sys, time
import torch
import torch.nn.functional as F

dev = sys.argv[1] if sys.argv[1] == "cpu" or torch.cuda.is_available() else "cpu"
reps = int(sys.argv[2])
only = sys.argv[3] if len(sys.argv) > 3 else ""
torch.backends.cudnn.benchmark = True
# float32 as netcl computes it (cuDNN would otherwise run convolutions in
# TF32), unless the caller asked for TF32 on both sides
tf32 = len(sys.argv) > 4 and sys.argv[4] == "tf32"
torch.backends.cudnn.allow_tf32 = tf32
torch.backends.cuda.matmul.allow_tf32 = tf32
print("device", torch.cuda.get_device_name() if dev == "cuda" else "cpu (%d threads)" % torch.get_num_threads())

def sync():
    if dev == "cuda":
        torch.cuda.synchronize()

def time_ms(fn):
    fn(); fn(); sync()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        ts.append((time.perf_counter() - t0) / reps * 1e3)
    ts.sort()
    return ts[2]

CONVS = [
    ("demo conv1 b128", (128, 1, 28, 28), (32, 1, 3, 3), 1, 1),
    ("demo conv2 b128", (128, 32, 14, 14), (64, 32, 3, 3), 1, 1),
    ("lenet conv1 b256", (256, 1, 28, 28), (6, 1, 5, 5), 1, 2),
    ("lenet conv2 b256", (256, 6, 14, 14), (16, 6, 5, 5), 1, 0),
    ("resnet 64x32x32 3x3", (128, 64, 32, 32), (64, 64, 3, 3), 1, 1),
    ("resnet 64->128 s2 3x3", (128, 64, 32, 32), (128, 64, 3, 3), 2, 1),
    ("resnet 64->128 s2 1x1", (128, 64, 32, 32), (128, 64, 1, 1), 2, 0),
    ("resnet 128x16x16 3x3", (128, 128, 16, 16), (128, 128, 3, 3), 1, 1),
    ("resnet 256x8x8 3x3", (128, 256, 8, 8), (256, 256, 3, 3), 1, 1),
    ("resnet 512x4x4 3x3", (128, 512, 4, 4), (512, 512, 3, 3), 1, 1),
    ("resnet stem 3->64 3x3", (128, 3, 32, 32), (64, 3, 3, 3), 1, 1),
    ("resnet 128->256 s2 3x3", (128, 128, 16, 16), (256, 128, 3, 3), 2, 1),
    ("resnet 128->256 s2 1x1", (128, 128, 16, 16), (256, 128, 1, 1), 2, 0),
    ("resnet 256->512 s2 3x3", (128, 256, 8, 8), (512, 256, 3, 3), 2, 1),
    ("resnet 256->512 s2 1x1", (128, 256, 8, 8), (512, 256, 1, 1), 2, 0),
    ("imagenet stem 3->64 7x7 s2 b64", (64, 3, 224, 224), (64, 3, 7, 7), 2, 3),
    ("imagenet 1x1 64->64 56x56 b64", (64, 64, 56, 56), (64, 64, 1, 1), 1, 0),
    ("imagenet 1x1 256->64 56x56 b64", (64, 256, 56, 56), (64, 256, 1, 1), 1, 0),
    ("imagenet 1x1 64->256 56x56 b64", (64, 64, 56, 56), (256, 64, 1, 1), 1, 0),
    ("imagenet 3x3 64 56x56 b64", (64, 64, 56, 56), (64, 64, 3, 3), 1, 1),
    ("imagenet 3x3 128 s2 56->28 b64", (64, 128, 56, 56), (128, 128, 3, 3), 2, 1),
    ("imagenet 3x3 128 28x28 b64", (64, 128, 28, 28), (128, 128, 3, 3), 1, 1),
    ("imagenet 3x3 256 14x14 b64", (64, 256, 14, 14), (256, 256, 3, 3), 1, 1),
    ("imagenet 3x3 512 7x7 b64", (64, 512, 7, 7), (512, 512, 3, 3), 1, 1),
    ("imagenet 1x1 256->512 s2 b64", (64, 256, 56, 56), (512, 256, 1, 1), 2, 0),
    ("imagenet 1x1 512->2048 7x7 b64", (64, 512, 7, 7), (2048, 512, 1, 1), 1, 0),
    ("imagenet 1x1 2048->512 7x7 b64", (64, 2048, 7, 7), (512, 2048, 1, 1), 1, 0),
    ("mobilenet dw 144x16x16 3x3", (128, 144, 16, 16), (144, 1, 3, 3), 1, 1, 144),
    ("mobilenet dw 144x32x32 s2 3x3", (128, 144, 32, 32), (144, 1, 3, 3), 2, 1, 144),
    ("mobilenet dw 384x4x4 3x3", (128, 384, 4, 4), (384, 1, 3, 3), 1, 1, 384),
]

def report(name, fn, x):
    y = fn(x)
    g = torch.randn_like(y)
    fwd = time_ms(lambda: torch.no_grad()(fn)(x))
    def both():
        x.grad = None
        fn(x).backward(g)
    print("%s\t%.4f\t%.4f" % (name, fwd, time_ms(both)), flush=True)

for name, xs, ws, s, p, *g in CONVS:
    if only and only not in name:
        continue
    x = torch.randn(*xs, device=dev, requires_grad=True)
    w = (torch.randn(*ws, device=dev) * 0.1).requires_grad_()
    report(name, lambda t, w=w, s=s, p=p, g=(g or [1])[0]: F.conv2d(t, w, None, s, p, 1, g), x)

BN_PARAMS = {}

def bn(t):
    C = t.shape[1]
    if C not in BN_PARAMS:   # made once per width, as netcl's side does
        BN_PARAMS[C] = (torch.ones(C, device=dev, requires_grad=True), torch.zeros(C, device=dev, requires_grad=True),
                        torch.zeros(C, device=dev), torch.ones(C, device=dev))
    wt, bs, rm, rv = BN_PARAMS[C]
    return F.batch_norm(t, rm, rv, wt, bs, True, 0.1, 1e-5)

OTHERS = [
    ("lenet maxpool b256", (256, 6, 28, 28), lambda t: F.max_pool2d(t, 2)),
    ("resnet maxpool 64x32x32", (128, 64, 32, 32), lambda t: F.max_pool2d(t, 2)),
    ("resnet batchnorm 64x32x32", (128, 64, 32, 32), bn),
    ("resnet relu 64x32x32", (128, 64, 32, 32), lambda t: t.relu()),
    ("imagenet batchnorm 64x112x112 b64", (64, 64, 112, 112), bn),
    ("imagenet batchnorm 256x56x56 b64", (64, 256, 56, 56), bn),
    ("imagenet batchnorm 2048x7x7 b64", (64, 2048, 7, 7), bn),
    ("imagenet relu 256x56x56 b64", (64, 256, 56, 56), lambda t: t.relu()),
    ("imagenet bn+relu 256x56x56 b64", (64, 256, 56, 56), lambda t: bn(t).relu()),
]
for name, xs, fn in OTHERS:
    if only and only not in name:
        continue
    report(name, fn, torch.randn(*xs, device=dev, requires_grad=True))
