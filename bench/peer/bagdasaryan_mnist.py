#!/usr/bin/env python3
"""Bagdasaryan, Poursaeed and Shmatikov 2019 ("Differential privacy has
disparate impact on model accuracy"), their MNIST DP-SGD protocol in plain
PyTorch, as their public code (github.com/ebagdasa/differential-privacy-vs-
fairness, files playing.py, image_helper.py, models/simple.py,
utils/params_mnist.yaml) runs it. Xu, Du and Wu 2021 (DPSGD-F) replicate this
setting for their Table 1 MNIST row; bench/results/dpsgdf_regimes.md lists
each setting with the file and line it comes from.

Their regime ("theirs"):
  - data: MNIST, inputs Normalize(0.1307, 0.3081); training class 8 cut to
    500 images chosen at random (54,649 training images); the full 10,000
    test images;
  - model: Net (Conv 1→20 5×5, ReLU, MaxPool 2, Conv 20→50 5×5, ReLU,
    MaxPool 2, Linear 800→500, ReLU, Linear 500→10, log-softmax), PyTorch's
    default initialisation; cross-entropy;
  - batches: a fresh random permutation each epoch, fixed batches of 256,
    the last partial batch dropped (213 steps an epoch);
  - DP-SGD: per-sample gradients each clipped to total norm S = 1
    (clip_grad_norm_: factor min(1, S/(‖g‖ + 1e-6))), summed, N(0, (0.8·S)²)
    added per coordinate, divided by 256;
  - optimiser: SGD lr 0.01, momentum 0.5, no weight decay, no schedule;
  - 59 epochs: their loop is range(1, 60).

Every choice can be switched to fairdp's default regime ("fairdp": Poisson
batches of expected size 256 divided by 256, no momentum, pixels p/255), one
at a time, to find which difference moves class 8.

Per-sample gradients are torch.func.vmap(grad) (functorch on PyTorch < 2.0),
not Opacus. Runs on CPU (slowly; --limit for a smoke run) or CUDA.

Output: one CSV row on stdout, columns
    method,regime,epochs,seed,epsilon,total,class2,class8,command
(epsilon: fairdp's RDP accountant with Balle et al. 2020's conversion for
the steps run: Poisson sampling at q = 256/n, or for shuffled batches the
valid bound of one Gaussian per epoch (their code's compute_rdp assumes
Poisson sampling for those too; that figure is not a guarantee); it is
asked from --fairdp BIN when given, else left empty; "inf" for SGD). With --row-file the same row is rewritten after every epoch,
so a run stopped by a timeout still leaves its last completed epoch.
--budget S stops before an epoch that would end past S seconds.
"""
import argparse
import gzip
import json
import math
import os
import random
import shlex
import struct
import subprocess
import sys
import time

import torch
from torch import nn
import torch.nn.functional as F

try:  # PyTorch ≥ 2.0
    from torch.func import functional_call, grad, vmap
except ImportError:  # PyTorch 1.13 (Debian's python3-torch)
    from functorch import grad, vmap
    from torch.nn.utils.stateless import functional_call

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


def read_idx(dirname, base):
    """The bytes and dimensions of one IDX file (raw or .gz)."""
    for name, opener in ((base, open), (base + ".gz", gzip.open)):
        path = os.path.join(dirname, name)
        if os.path.exists(path):
            with opener(path, "rb") as f:
                raw = f.read()
            magic = struct.unpack(">I", raw[:4])[0]
            ndim = magic & 0xFF
            dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
            return raw[4 + 4 * ndim:], dims
    raise SystemExit(f"{dirname}: neither {base} nor {base}.gz")


def load_mnist(dirname, part):
    pix, dims = read_idx(dirname, f"{part}-images-idx3-ubyte")
    lab, _ = read_idx(dirname, f"{part}-labels-idx1-ubyte")
    x = torch.frombuffer(bytearray(pix), dtype=torch.uint8).reshape(dims[0], 1, dims[1], dims[2])
    y = torch.frombuffer(bytearray(lab), dtype=torch.uint8).long()
    return x, y


class Net(nn.Module):
    """models/simple.py's Net: 431,080 parameters."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5, 1)
        self.conv2 = nn.Conv2d(20, 50, 5, 1)
        self.fc1 = nn.Linear(4 * 4 * 50, 500)
        self.fc2 = nn.Linear(500, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)
        x = F.relu(self.fc1(x.reshape(-1, 4 * 4 * 50)))
        return F.log_softmax(self.fc2(x), dim=1)


def keep_class(y, key, n_keep, rng):
    """image_helper.sampler_exponential_class with mu = 1: every image of
    every class except n_keep random ones of class key."""
    idx = []
    for c in range(10):
        members = [i for i in range(len(y)) if int(y[i]) == c]
        rng.shuffle(members)
        idx.extend(members[:n_keep] if c == key else members)
    return sorted(idx)


def dp_step_fn(model, clip, sigma, denom):
    """Their train_dp: per-sample gradients clipped to total norm clip
    (torch clip_grad_norm_'s factor min(1, clip/(‖g‖ + 1e-6))), summed,
    N(0, (sigma·clip)²) per coordinate added, divided by denom."""
    names = [n for n, _ in model.named_parameters()]

    def loss_one(params, x, y):
        out = functional_call(model, dict(zip(names, params)), (x.unsqueeze(0),))
        return F.nll_loss(out, y.unsqueeze(0))

    per_sample = vmap(grad(loss_one), in_dims=(None, 0, 0))
    use_loop = []

    def clipped_sum(x, y):
        params = tuple(p.detach() for p in model.parameters())
        if not len(y):  # an empty Poisson batch still releases noise
            return [torch.zeros_like(p) for p in params]
        if not use_loop:
            try:
                grads = per_sample(params, x, y)
                sq = sum(g.reshape(g.shape[0], -1).pow(2).sum(1) for g in grads)
                factor = (clip / (sq.sqrt() + 1e-6)).clamp(max=1.0)
                return [(g * factor.view(-1, *([1] * (g.dim() - 1)))).sum(0) for g in grads]
            except RuntimeError as e:  # an unsupported vmap rule: their own loop, slower
                print(f"# vmap per-sample gradients failed ({e}); using their per-sample loop", file=sys.stderr)
                use_loop.append(True)
        return loop_clipped_sum(model, x, y, clip)

    def step(x, y):
        sums = clipped_sum(x, y)
        for p, s in zip(model.parameters(), sums):
            p.grad = (s + torch.randn_like(s) * (sigma * clip)) / denom

    return step


def loop_clipped_sum(model, x, y, clip):
    """Their train_dp loop (playing.py:144–168): one backward per sample,
    clip_grad_norm_ to clip, summed."""
    sums = [torch.zeros_like(p) for p in model.parameters()]
    for i in range(len(y)):
        model.zero_grad()
        F.nll_loss(model(x[i:i + 1]), y[i:i + 1]).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for s, p in zip(sums, model.parameters()):
            s += p.grad
    model.zero_grad(set_to_none=True)
    return sums


def check_dp_step(dev):
    """The vmap step against their own loop (playing.py train_dp: one
    backward per sample, clip_grad_norm_, sum) on 6 random images with the
    noise off; returns the largest relative difference."""
    torch.manual_seed(0)
    model = Net().to(dev)
    x = torch.randn(6, 1, 28, 28, device=dev)
    y = torch.tensor([0, 8, 2, 8, 5, 9], device=dev)
    x[1] *= 50  # a gradient far above the clip bound
    dp_step_fn(model, 1.0, 0.0, 6)(x, y)
    fast = [p.grad.clone() for p in model.parameters()]
    slow = loop_clipped_sum(model, x, y, 1.0)
    return max(((f - s / 6).norm() / (s / 6).norm().clamp(min=1e-12)).item() for f, s in zip(fast, slow))


def evaluate(model, x, y):
    model.eval()
    correct = torch.zeros(10, device=x.device)
    count = torch.zeros(10, device=x.device)
    with torch.no_grad():
        for i in range(0, len(y), 1000):
            pred = model(x[i:i + 1000]).argmax(1)
            yy = y[i:i + 1000]
            count += torch.bincount(yy, minlength=10).float()
            correct += torch.bincount(yy[pred == yy], minlength=10).float()
    model.train()
    acc = (correct / count.clamp(min=1)).tolist()
    return (correct.sum() / count.sum()).item(), acc


def epsilon(fairdp, sigma, q, steps, delta, shuffle_epoch=0):
    """ε of steps subsampled Gaussian steps from fairdp's RDP accountant
    (Balle et al. 2020 conversion): Poisson sampling at rate q, or, with
    shuffle_epoch batches per shuffled epoch, the valid bound of one Gaussian
    per epoch (fairdp privacy --sampling shuffle); "" without a binary."""
    if not fairdp or steps == 0:
        return ""
    cmd = [fairdp, "privacy", "epsilon", "--accountant", "rdp", "--sigma", repr(sigma), "--sample-rate", repr(q),
           "--steps", str(steps), "--delta", repr(delta), "--json"]
    if shuffle_epoch:
        cmd += ["--sampling", "shuffle", "--steps-per-epoch", str(shuffle_epoch)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
        return "%.4f" % json.loads(out)["epsilon"]
    except (subprocess.SubprocessError, OSError, ValueError, KeyError) as e:
        print(f"epsilon: {' '.join(cmd)}: {e}", file=sys.stderr)
        return ""


def command_args(argv):
    """The run's arguments for the CSV's command column: no machine paths
    (--data becomes MNIST_DIR) and none of the options that only say where
    to write or how long to try (--row-file, --fairdp, --budget)."""
    out, skip = [], False
    for i, s in enumerate(argv):
        if skip:
            skip = False
            continue
        name = s.split("=", 1)[0]
        if name in ("--row-file", "--fairdp", "--budget"):
            skip = "=" not in s
            continue
        if name == "--data":
            out += ["--data", "MNIST_DIR"]
            skip = "=" not in s
            continue
        out.append(shlex.quote(s))
    return " ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="folder of the four MNIST IDX files (raw or .gz)")
    ap.add_argument("--method", choices=["dpsgd", "sgd"], default="dpsgd")
    ap.add_argument("--regime", choices=["theirs", "fairdp"], default="theirs",
                    help="theirs: shuffled fixed batches, momentum 0.5, Normalize(0.1307, 0.3081); "
                         "fairdp: Poisson batches, no momentum, p/255; the three flags below override one at a time")
    ap.add_argument("--sampling", choices=["shuffle", "poisson"])
    ap.add_argument("--momentum", type=float)
    ap.add_argument("--normalize", choices=["yes", "no"])
    ap.add_argument("--label", help="the CSV's regime column (default: the regime, with any override)")
    ap.add_argument("--epochs", type=int, default=59, help="their loop runs range(1, 60): 59 epochs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--clip", type=float, default=1.0, help="S")
    ap.add_argument("--sigma", type=float, default=0.8, help="z (noise std z·S)")
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--keep8", type=int, default=500, help="training images of class 8 kept")
    ap.add_argument("--blur8", type=float, default=0.0,
                    help="SGD only: their non-private train() Gaussian-filters the class-8 inputs of each batch with "
                         "csigma 0.9 (scipy.ndimage over the whole 4-D batch); 0 (default) leaves them as they are")
    ap.add_argument("--limit", type=int, default=0, help="smoke runs: first N training records (test: N/3)")
    ap.add_argument("--device", default="auto", help="auto, cpu or cuda")
    ap.add_argument("--budget", type=float, default=0, help="seconds: stop before an epoch that would end later")
    ap.add_argument("--row-file", help="rewrite the CSV row here after every epoch")
    ap.add_argument("--fairdp", help="fairdp binary, for the epsilon column")
    ap.add_argument("--check", action="store_true",
                    help="only compare the vmap DP step with their per-sample loop (exit 1 above 1e-4 relative)")
    a = ap.parse_args()
    if a.check:
        dev = torch.device("cuda" if a.device == "auto" and torch.cuda.is_available() else
                           ("cpu" if a.device == "auto" else a.device))
        diff = check_dp_step(dev)
        print(f"dp-step check on {dev}: largest relative difference {diff:.2e} (vmap step against their loop)")
        sys.exit(0 if diff < 1e-4 else 1)
    start = time.time()

    base = {"theirs": ("shuffle", 0.5, "yes"), "fairdp": ("poisson", 0.0, "no")}[a.regime]
    sampling = a.sampling or base[0]
    momentum = base[1] if a.momentum is None else a.momentum
    normalize = (a.normalize or base[2]) == "yes"
    label = a.label
    if not label:
        over = [f"{k}={v}" for k, v, d in (("sampling", sampling, base[0]), ("momentum", momentum, base[1]),
                                           ("normalize", "yes" if normalize else "no", base[2])) if v != d]
        label = a.regime + ("(" + "+".join(over) + ")" if over else "")
    dev = torch.device("cuda" if a.device == "auto" and torch.cuda.is_available() else
                       ("cpu" if a.device == "auto" else a.device))
    command = "python3 bench/peer/bagdasaryan_mnist.py " + command_args(sys.argv[1:])

    if not a.data:
        raise SystemExit("--data DIR is needed")
    random.seed(a.seed)
    torch.manual_seed(a.seed)
    xtr, ytr = load_mnist(a.data, "train")
    xte, yte = load_mnist(a.data, "t10k")
    keep = keep_class(ytr, 8, a.keep8, random.Random(a.seed))
    xtr, ytr = xtr[keep], ytr[keep]
    if a.limit:
        sel = torch.randperm(len(ytr))[:a.limit]
        xtr, ytr = xtr[sel], ytr[sel]
        xte, yte = xte[:max(1, a.limit // 3)], yte[:max(1, a.limit // 3)]

    def prep(x):
        x = x.float() / 255
        return ((x - MNIST_MEAN) / MNIST_STD if normalize else x).to(dev)

    xtr, ytr, xte, yte = prep(xtr), ytr.to(dev), prep(xte), yte.to(dev)
    n = len(ytr)
    if a.batch > n:
        raise SystemExit(f"batch {a.batch} > {n} training records")
    q = a.batch / n
    steps_per_epoch = n // a.batch  # shuffle: drop_last; poisson: n/b expected batches, rounded down alike
    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=momentum, weight_decay=0)
    dp = dp_step_fn(model, a.clip, a.sigma, a.batch) if a.method == "dpsgd" else None
    if a.blur8 and a.method == "sgd":
        from scipy import ndimage

    def row(epochs_done, total, acc):
        eps = "inf" if a.method == "sgd" else epsilon(a.fairdp, a.sigma, q, epochs_done * steps_per_epoch, a.delta,
                                                      steps_per_epoch if sampling == "shuffle" else 0)
        return ",".join([a.method, label, str(epochs_done), str(a.seed), eps, "%.4f" % total, "%.4f" % acc[2],
                         "%.4f" % acc[8], '"' + command.replace('"', "'") + '"'])

    print(f"# {a.method} {label} on {dev}: {n} training images ({int((ytr == 8).sum())} of class 8), "
          f"{len(yte)} test, {steps_per_epoch} steps/epoch, {sampling} batches, momentum {momentum}, "
          f"{'Normalize(0.1307, 0.3081)' if normalize else 'p/255'}", file=sys.stderr)
    last, done, epoch_s = None, 0, 0.0
    for epoch in range(1, a.epochs + 1):
        if a.budget and time.time() - start + epoch_s > a.budget:
            print(f"# budget {a.budget:.0f} s reached after {done} epochs", file=sys.stderr)
            break
        t0 = time.time()
        perm = torch.randperm(n, device=dev)
        for s in range(steps_per_epoch):
            if sampling == "shuffle":
                idx = perm[s * a.batch:(s + 1) * a.batch]
            else:
                idx = (torch.rand(n, device=dev) < q).nonzero().squeeze(1)
            x, y = xtr[idx], ytr[idx]
            opt.zero_grad(set_to_none=True)
            if dp is not None:
                dp(x, y)
            else:
                if a.blur8:
                    m = y == 8
                    if m.any():
                        x = x.clone()
                        x[m] = torch.as_tensor(ndimage.gaussian_filter(x[m].cpu().numpy(), sigma=a.blur8), device=dev)
                F.nll_loss(model(x), y).backward()
            opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        epoch_s = time.time() - t0
        done = epoch
        total, acc = evaluate(model, xte, yte)
        print(f"# epoch {epoch}: total {total:.4f} class2 {acc[2]:.4f} class8 {acc[8]:.4f} ({epoch_s:.1f} s)",
              file=sys.stderr, flush=True)
        last = (total, acc)
        if a.row_file:
            tmp = a.row_file + ".tmp"
            with open(tmp, "w") as f:
                f.write(row(done, *last) + "\n")
            os.replace(tmp, a.row_file)
    if last is None:
        raise SystemExit("no epoch completed")
    print(row(done, *last), flush=True)


if __name__ == "__main__":
    main()
