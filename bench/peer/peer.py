#!/usr/bin/env python3
"""fairdp's peer benchmark: the models of fairdp's GPU benchmark
(cuda.BenchmarkDeviceNetStep) in PyTorch, plain and with Opacus's DP-SGD
(per-sample clip to 1, noise multiplier 1), at batch 64 and 256 on GPU 0, so
gpu-check.sh can put fairdp's samples/s beside theirs on the same GPU.

One line per case, as gpu-check.sh reads it:
    PEER <model> <plain|dpsgd> <batch> <samples/s> <peak MB>
peak MB is torch.cuda.max_memory_allocated during the case. Synthetic data;
the first STEPS_WARM steps are not timed. Needs torch and opacus; no network.
"""
import sys
import time

import torch
from torch import nn

STEPS_WARM = 3
STEPS = 20


def models():
    def cnn_mnist():
        return nn.Sequential(
            nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(20, 50, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))

    def vgg():
        layers, c = [], 3
        for out, pool in zip([32, 32, 64, 64, 128, 128], [1, 2, 1, 2, 1, 4]):
            layers += [nn.Conv2d(c, out, 3, padding=1), nn.ReLU()]
            if pool > 1:
                layers.append(nn.MaxPool2d(pool))
            c = out
        layers += [nn.Flatten(), nn.Linear(128 * 8 * 8, 160), nn.ReLU(), nn.Linear(160, 64), nn.ReLU(), nn.Linear(64, 9)]
        return nn.Sequential(*layers)

    return [
        ("logistic", (108,), 1, lambda: nn.Linear(108, 1)),
        ("mlp", (108,), 1, lambda: nn.Sequential(nn.Linear(108, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))),
        ("mnist-cnn", (1, 28, 28), 10, cnn_mnist),
        ("vgg", (3, 128, 128), 9, vgg),
    ]


def run(name, shape, classes, build, dp, n, dev):
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    torch.manual_seed(0)
    model = build().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if dp:
        model = GradSampleModule(model)
        opt = DPOptimizer(opt, noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=n)
    x = torch.randn((n,) + shape, device=dev)
    if classes == 1:
        y = (torch.arange(n, device=dev) % 2).float().unsqueeze(1)
        loss_fn = nn.BCEWithLogitsLoss()
    else:
        y = torch.arange(n, device=dev) % classes
        loss_fn = nn.CrossEntropyLoss()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for i in range(STEPS_WARM + STEPS):
        if i == STEPS_WARM:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() / 1e6
    print(f"PEER {name} {'dpsgd' if dp else 'plain'} {n} {n * STEPS / secs:.0f} {peak:.1f}", flush=True)


def main():
    if not torch.cuda.is_available():
        print("peer: torch sees no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda:0")
    print(f"peer: torch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
    for name, shape, classes, build in models():
        for dp in (False, True):
            for n in (64, 256):
                run(name, shape, classes, build, dp, n, dev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
