#!/usr/bin/env python3
"""fairdp's peer benchmark: the models of fairdp's GPU benchmark
(cuda.BenchmarkDeviceNetStep) in PyTorch, plain and with Opacus's DP-SGD
(per-sample clip to 1, noise multiplier 1), at batch 64 and 256 on GPU 0, so
gpu-check.sh can put fairdp's samples/s beside theirs on the same GPU.

One line per case, as gpu-check.sh reads it:
    PEER <model> <plain|dpsgd> <batch> <samples/s> <peak MB>
peak MB is torch.cuda.max_memory_allocated during the case. Synthetic data;
the first STEPS_WARM steps are not timed. Needs torch; no network. DP-SGD is
Opacus's when `import opacus` works, else the same step written with torch.func
(per-sample gradients by vmap(grad), flat clip, Gaussian noise), which is how
Opacus's functorch mode computes them; the first line says which ran.
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


def have_opacus():
    try:
        import opacus  # noqa: F401
        return True
    except ImportError:
        return False


class FuncDPSGD:
    """DP-SGD without Opacus: per-sample gradients by torch.func.vmap(grad),
    each clipped to norm 1, summed, plus N(0, 1) noise per coordinate, divided
    by the batch size; then plain SGD. Stands in for DPOptimizer where Opacus
    is not installed."""

    def __init__(self, model, loss_fn, lr, clip=1.0, sigma=1.0):
        from torch.func import functional_call, grad, vmap
        self.model, self.lr, self.clip, self.sigma = model, lr, clip, sigma
        self.params = {k: v.detach() for k, v in model.named_parameters()}

        def loss_one(p, x, y):
            out = functional_call(model, p, (x.unsqueeze(0),))
            return loss_fn(out, y.unsqueeze(0))

        self.per_sample = vmap(grad(loss_one), in_dims=(None, 0, 0))

    def step(self, x, y):
        g = self.per_sample(self.params, x, y)
        n = x.shape[0]
        norms = torch.sqrt(sum(t.reshape(n, -1).pow(2).sum(1) for t in g.values()))
        f = (self.clip / (norms + 1e-6)).clamp(max=1.0)
        for k, t in g.items():
            s = torch.einsum("b,b...->...", f, t)
            s += torch.randn_like(s) * (self.sigma * self.clip)
            self.params[k] -= self.lr * s / n


def run(name, shape, classes, build, dp, n, dev):
    torch.manual_seed(0)
    model = build().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    func = None
    if dp and have_opacus():
        from opacus import GradSampleModule
        from opacus.optimizers import DPOptimizer
        model = GradSampleModule(model)
        opt = DPOptimizer(opt, noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=n)
    x = torch.randn((n,) + shape, device=dev)
    if classes == 1:
        y = (torch.arange(n, device=dev) % 2).float().unsqueeze(1)
        loss_fn = nn.BCEWithLogitsLoss()
    else:
        y = torch.arange(n, device=dev) % classes
        loss_fn = nn.CrossEntropyLoss()
    if dp and not have_opacus():
        func = FuncDPSGD(model, loss_fn, 0.01)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for i in range(STEPS_WARM + STEPS):
        if i == STEPS_WARM:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        if func is not None:
            func.step(x, y)
            continue
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
    engine = "opacus" if have_opacus() else "torch.func (opacus not installed)"
    print(f"peer: torch {torch.__version__}, {torch.cuda.get_device_name(0)}; DP-SGD by {engine}", flush=True)
    for name, shape, classes, build in models():
        for dp in (False, True):
            for n in (64, 256):
                run(name, shape, classes, build, dp, n, dev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
