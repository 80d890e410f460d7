# examples/bench/ddp_peer.py — the PyTorch side of examples/bench/ddp.lua:
# ResNet-18 CIFAR training, batch per GPU, SGD momentum, on one GPU and
# then with DistributedDataParallel over NCCL on N GPUs (started through
# torch.distributed.run), eager mode, float32 (TF32 off unless tf32).
# Prints "one <img/s>" and "ddp <img/s>" (images/s of the whole job).
# usage: python3 ddp_peer.py gpus steps warmup batch fp32|tf32
import os, subprocess, sys, time
import torch
import torch.nn as nn
sys.path.insert(0, __file__.rsplit("/", 1)[0] if "/" in __file__ else ".")
from peer_models import resnet18_cifar

gpus, steps, warmup, batch, mode = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
torch.backends.cudnn.allow_tf32 = mode == "tf32"

def train(ddp):
    import torch.distributed as dist
    torch.manual_seed(1)
    model = resnet18_cifar().cuda()
    if ddp:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(batch, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    def settle():
        torch.cuda.synchronize()
        if ddp:
            dist.barrier()
    for _ in range(warmup):
        step()
    settle()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    settle()
    return steps * batch * (dist.get_world_size() if ddp else 1) / (time.perf_counter() - t0)

if "LOCAL_RANK" in os.environ:
    import torch.distributed as dist
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    rate = train(True)
    if dist.get_rank() == 0:
        print("ddp", rate, flush=True)
    dist.destroy_process_group()
    sys.exit(0)

if not torch.cuda.is_available() or torch.cuda.device_count() < gpus:
    sys.exit(0)
print("device %d x %s" % (gpus, torch.cuda.get_device_name()), flush=True)
print("one", train(False), flush=True)
env = dict(os.environ)
for k in ("NETCL_RANK", "NETCL_WORLD_SIZE", "NETCL_LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
    env.pop(k, None)
subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(gpus), __file__]
               + sys.argv[1:], env=env, check=False)
