# examples/bench/loader_peer.py — the PyTorch side of examples/bench/loader.lua:
# torch.utils.data.DataLoader over the same Fashion-MNIST file with the same
# transforms (reflect-pad 2 + random 28x28 crop, horizontal flip p=0.5, to
# float /255, normalize), batch 128, timed on the last epoch. Two forms:
# "sample" transforms each sample in the workers (the torchvision way),
# "batch" transforms the collated batch in collate_fn. Prints "mode workers img/s".
import argparse, gzip, time
import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--workers", default="0,2")
ap.add_argument("--batch", type=int, default=128)
ap.add_argument("--epochs", type=int, default=2)
ap.add_argument("--limit", type=int, default=None)
ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
a = ap.parse_args()
print("torch %s (%d threads)" % (torch.__version__, torch.get_num_threads()), flush=True)

def idx(path, header):
    with gzip.open(path) as f:
        raw = f.read()
    return torch.frombuffer(bytearray(raw[header:]), dtype=torch.uint8)

images = idx(a.data + "/train-images-idx3-ubyte.gz", 16).view(-1, 1, 28, 28)
labels = idx(a.data + "/train-labels-idx1-ubyte.gz", 8).long()
MEAN, STD = 0.2860, 0.3530

def transform_one(x):
    x = F.pad(x.unsqueeze(0).float(), (2, 2, 2, 2), mode="reflect")[0]
    i, j = torch.randint(0, 5, (2,)).tolist()
    x = x[:, i:i + 28, j:j + 28]
    if torch.rand(()) < 0.5:
        x = x.flip(-1)
    return (x / 255 - MEAN) / STD

def transform_batch(x):
    n = x.shape[0]
    p = F.pad(x.float(), (2, 2, 2, 2), mode="reflect")
    off = torch.randint(0, 5, (n, 2))
    out = torch.stack([p[k, :, off[k, 0]:off[k, 0] + 28, off[k, 1]:off[k, 1] + 28] for k in range(n)])
    flip = torch.rand(n) < 0.5
    out[flip] = out[flip].flip(-1)
    return (out / 255 - MEAN) / STD

class PerSample(torch.utils.data.Dataset):
    def __len__(self): return images.shape[0]
    def __getitem__(self, i): return transform_one(images[i]), labels[i]

class Raw(torch.utils.data.Dataset):
    def __len__(self): return images.shape[0]
    def __getitem__(self, i): return images[i], labels[i]

def collate_batch(items):
    x = torch.stack([it[0] for it in items]); y = torch.stack([it[1] for it in items])
    return transform_batch(x), y

def run(mode, workers):
    ds = PerSample() if mode == "sample" else Raw()
    kw = dict(batch_size=a.batch, shuffle=True, num_workers=workers, drop_last=False)
    if workers > 0:
        kw.update(persistent_workers=True, prefetch_factor=2)
    if mode == "batch":
        kw["collate_fn"] = collate_batch
    loader = torch.utils.data.DataLoader(ds, **kw)
    rate = 0
    for _ in range(a.epochs):
        t0, n = time.perf_counter(), 0
        for k, (x, y) in enumerate(loader):
            n += x.shape[0]
            if a.limit and k + 1 >= a.limit:
                break
        rate = n / (time.perf_counter() - t0)
    return rate

for w in [int(v) for v in a.workers.split(",")]:
    for mode in ("sample", "batch"):
        print(mode, w, run(mode, w), flush=True)
