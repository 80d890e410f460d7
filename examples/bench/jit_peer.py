# examples/bench/jit_peer.py — the PyTorch side of examples/bench/jit.lua:
# per workload "key:size mode value" lines for mode eager, compile
# (torch.compile; of the model for training steps) and graph (the whole
# training step captured as a CUDA graph), each where it runs here.
# usage: python3 jit_peer.py cuda|cpu key:size,... quick|full
import sys, time
import torch
import torch.nn as nn
sys.path.insert(0, __file__.rsplit("/", 1)[0] if "/" in __file__ else ".")
from peer_models import lenet5, resnet18_cifar

dev = sys.argv[1] if sys.argv[1] == "cpu" or torch.cuda.is_available() else "cpu"
quick = len(sys.argv) > 3 and sys.argv[3] == "quick"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
print("device", torch.cuda.get_device_name() if dev == "cuda" else "cpu (%d threads)" % torch.get_num_threads(), flush=True)

def sync():
    if dev == "cuda":
        torch.cuda.synchronize()

def per_call(fn, n, rounds=5):
    for _ in range(3):
        fn()
    sync()
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        ts.append((time.perf_counter() - t0) / n)
    ts.sort()
    return ts[(len(ts) + 1) // 2 - 1]

def report(key, mode, fn):
    try:
        v = fn()
    except Exception as e:  # torch.compile needs a working toolchain; say so and go on
        print("# %s %s: %s" % (key, mode, str(e).splitlines()[0] if str(e) else type(e).__name__), flush=True)
        return
    print(key, mode, v, flush=True)

CHAINS = {
    "relu": lambda x: torch.relu(x * 1.5 + 0.25),
    "six": lambda x: torch.sqrt(torch.abs(torch.tanh((x + 1) * 2) - 0.5)) * 3,
}

def chain(key, n):
    x = torch.rand(n, device=dev)
    reps = 3 if quick else 10
    gbs = lambda t: 8 * n / t / 1e9
    name = key.split(":")[0]
    if name == "copy":
        y = torch.empty_like(x)
        report(key, "eager", lambda: gbs(per_call(lambda: y.copy_(x), reps)))
        return
    f = CHAINS[name]
    report(key, "eager", lambda: gbs(per_call(lambda: f(x), reps)))
    report(key, "compile", lambda: gbs(per_call(lambda cf=torch.compile(f): cf(x), reps)))

def training(key, batch):
    name = key.split(":")[0]
    torch.manual_seed(1)
    if name == "lenet":
        make = lambda: (lambda m: (m, torch.optim.Adam(m.parameters(), lr=1e-3, capturable=True)))(lenet5().to(dev))
        shape, n = (1, 28, 28), 5 if quick else 50
    else:
        make = lambda: (lambda m: (m, torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)))(
            resnet18_cifar().to(dev))
        shape, n = (3, 32, 32), 2 if quick else 10
    x = torch.randn(batch, *shape, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    unit = (lambda t: t * 1e6) if name == "lenet" else (lambda t: batch / t)

    def stepper(m, opt):
        def step():
            opt.zero_grad(set_to_none=False)
            nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
        return step

    m, opt = make()
    report(key, "eager", lambda: unit(per_call(stepper(m, opt), n)))

    def compiled():  # the model compiled (inductor; reduce-overhead raises "output overwritten" in this loop), loss and optimizer eager
        m2, opt2 = make()
        cm = torch.compile(m2)
        def call():
            opt2.zero_grad(set_to_none=False)
            nn.functional.cross_entropy(cm(x), y).backward()
            opt2.step()
        return unit(per_call(call, n))
    report(key, "compile", compiled)

    def graph():
        if dev != "cuda":
            raise RuntimeError("CUDA graphs need CUDA")
        m3, opt3 = make()
        step = stepper(m3, opt3)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up on a side stream, as CUDA graph capture asks
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        return unit(per_call(g.replay, n))
    report(key, "graph", graph)

for spec in sys.argv[2].split(","):
    if spec.split(":")[0] in ("lenet", "resnet"):
        training(spec, int(spec.split(":")[1]))
    else:
        chain(spec, int(spec.split(":")[1]))
