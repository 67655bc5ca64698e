#!/usr/bin/env python3
"""Run the SteFFLe authors' public code on Credit, one (N, h, ε, seed) cell.

The code (justaguyalways/Stochastic-Federated-Differentially-Private-and-Fair-
Learning; Makhdoumi et al. 2024, "A Stochastic Optimization Framework for
Private and Fair Learning From Decentralized Data") is not vendored: --src
names an unpacked snapshot of it (`git --git-dir=<mirror> archive HEAD '*.py'
| tar x -C <dir>`), and its dp_fermi_federated.py runs from there as
`__main__`, unchanged. Its settings live in args_fed.Args with every tuned
value left as None, so this script swaps in a subclass that fills them, and
replaces four things around the code, each listed in the output's "shims":

  opacus       Opacus is not installed (no network for pip). The code uses
               only GradSampleModule(nn.Linear model): p.grad_sample after a
               backward of a mean-reduced loss, cleared by zero_grad(). The
               shim computes it as Opacus's hooks do for nn.Linear (Opacus
               1.x rearrange_grad_samples: backprops multiplied by the batch
               size for loss_reduction="mean", so grad_sample[i] is the
               gradient of sample i's own loss), and `--selfcheck` compares
               it with a per-sample autograd loop.
  dataset      TabularDataset.__getitem__ reads three pandas rows per record
               (minutes per epoch on this CPU). The shim precomputes the same
               values once per dataset (the code's own onehotlookup per row)
               and returns identical tensors; `--selfcheck` compares both.
  metrics      calculate_final_mean_metrics slices by eval_start/eval_epochs
               - 1, a float (TypeError in Python 3): the shim casts it to int
               and keeps each model's checkpoint averages for the output.
               plot_losses (a PNG per epoch) is skipped: it draws, computes
               nothing.
  seed         the code seeds each model with torch.manual_seed(model_number);
               with num_models_train = 1 the shim makes that seed --seed, so
               seed s is the code's model number s. The split and the silo
               partition use the code's fixed random_state (100) for every
               seed, as in the code.

Credit data: the code reads credit-card-defaulters_processed.csv, which the
snapshot does not carry (the file is missing from the stored repository). It
is rebuilt from UCI's file with the only encoding that gives the code's
num_inp_attr = 85 after its get_dummies: EDUCATION 0, 5, 6 -> 4 and
MARRIAGE 0 -> 3 (fairdp's loaders do the same), label "Yes"/"No".

Prints one JSON line (prefix "RESULT ") with the checkpoint-averaged test
error and demographic-parity violation, as the code computes them.
"""
import argparse
import json
import os
import runpy
import sys
import types


def build_processed_csv(named_csv, out_path):
    import pandas as pd
    df = pd.read_csv(named_csv)
    df = df.rename(columns={"default payment": "default payment next month"})
    df["default payment next month"] = df["default payment next month"].map({1: "Yes", 0: "No"})
    df["EDUCATION"] = df["EDUCATION"].replace({0: 4, 5: 4, 6: 4})
    df["MARRIAGE"] = df["MARRIAGE"].replace({0: 3})
    for c in ["EDUCATION", "MARRIAGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6"]:
        df[c] = df[c].astype(str)
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    tmp = f"{out_path}.{os.getpid()}"
    df.to_csv(tmp, index=False)
    os.replace(tmp, out_path)  # concurrent runs share the workdir: never read half a file


def install_opacus_shim():
    """A stand-in for opacus.grad_sample.GradSampleModule, nn.Linear only."""
    import torch
    from torch import nn

    class GradSampleModule(nn.Module):
        def __init__(self, m, batch_first=True, loss_reduction="mean"):
            super().__init__()
            if loss_reduction != "mean":
                raise NotImplementedError("shim: mean reduction only")
            self._module = m
            for mod in m.modules():
                if list(mod.children()):
                    continue
                if any(p.requires_grad for p in mod.parameters(recurse=False)):
                    if not isinstance(mod, nn.Linear):
                        raise NotImplementedError(f"shim: {type(mod).__name__}")
                    mod.register_forward_hook(self._capture)
                    mod.register_full_backward_hook(self._backprop)
            for p in self.parameters():
                p.grad_sample = None

        @staticmethod
        def _capture(mod, inp, out):
            if not mod.training or not torch.is_grad_enabled():
                return
            mod.__dict__.setdefault("_acts", []).append(inp[0].detach())

        @staticmethod
        def _backprop(mod, grad_in, grad_out):
            a = mod._acts.pop()
            g = grad_out[0].detach() * a.shape[0]  # Opacus: backprops * n for "mean"
            gw = torch.einsum("bo,bi->boi", g, a)
            for p, gs in ((mod.weight, gw), (mod.bias, g)):
                if p is None or not p.requires_grad:
                    continue
                # Opacus stacks a second backward into a list; the code
                # always zero_grad()s before, so that never happens here.
                if p.grad_sample is not None:
                    raise RuntimeError("shim: grad_sample accumulated over two backward passes")
                p.grad_sample = gs

        def forward(self, *a, **k):
            return self._module(*a, **k)

        def zero_grad(self, set_to_none=False):
            for p in self.parameters():
                p.grad_sample = None
            super().zero_grad(set_to_none)

    opacus = types.ModuleType("opacus")
    gs = types.ModuleType("opacus.grad_sample")
    gs.GradSampleModule = GradSampleModule
    opacus.grad_sample = gs
    opacus.GradSampleModule = GradSampleModule
    sys.modules["opacus"] = opacus
    sys.modules["opacus.grad_sample"] = gs
    return GradSampleModule


def install_dataset_shim(dataloader_fed):
    import numpy as np
    import torch
    TD = dataloader_fed.TabularDataset
    orig_init, orig_get = TD.__init__, TD.__getitem__
    maps = []

    def init(self, *a, **k):
        orig_init(self, *a, **k)
        self._x = self.one_hot_non_senstive.to_numpy()
        self._y = self.output.to_numpy()
        oh, ind = [], []
        for i in range(len(self.sensitive_table.index)):
            v, j = self.onehotlookup(self.sensitive_table.iloc[i])
            oh.append(v)
            ind.append(j)
        self._s = torch.stack(oh) if oh else torch.zeros(0)
        self._si = ind
        maps.append({c: {str(k2): v2 for k2, v2 in m.items()} for c, m in self.attr_no.items()})

    def get(self, idx):
        return torch.from_numpy(self._x[idx]), self._s[idx].clone(), self._y[idx], self._si[idx]

    TD.__init__ = init
    TD.__getitem__ = get
    TD._orig_getitem = orig_get

    # A batch the DataLoader asks for (its own sampler, so the same indices
    # and RNG draws) is gathered at once: the tensors default_collate would
    # build from the records one by one (float64 features, float32 one-hot,
    # int64 labels and group indices).
    from torch.utils.data._utils import fetch
    orig_fetch = fetch._MapDatasetFetcher.fetch

    def fast_fetch(self, idx):
        d = self.dataset
        if not (self.auto_collation and isinstance(d, TD) and self.collate_fn is dataloader_collate()):
            return orig_fetch(self, idx)
        ix = np.asarray(idx, dtype=np.int64)
        return [torch.from_numpy(d._x[ix]), d._s[torch.from_numpy(ix)], torch.from_numpy(d._y[ix]),
                torch.tensor([d._si[i] for i in idx])]

    fetch._MapDatasetFetcher.fetch = fast_fetch
    fetch._MapDatasetFetcher._orig_fetch = orig_fetch
    return maps


def dataloader_collate():
    from torch.utils.data._utils.collate import default_collate
    return default_collate


def selfcheck(src, named_csv, workdir):
    """The shims against slow paths: per-sample autograd, pandas rows."""
    import torch
    from torch import nn
    sys.path.insert(0, src)
    GSM = install_opacus_shim()
    torch.manual_seed(0)
    lin = nn.Linear(7, 1)
    ref = nn.Linear(7, 1)  # the slow path: same weights, no hooks
    ref.load_state_dict(lin.state_dict())
    m = GSM(lin)
    x, y = torch.randn(5, 7), torch.randint(0, 2, (5, 1)).float()
    loss = nn.BCEWithLogitsLoss(reduction="none")(m(x), y).mean()
    loss.backward()
    for i in range(5):
        g = torch.autograd.grad(nn.BCEWithLogitsLoss()(ref(x[i:i + 1]), y[i:i + 1]), [ref.weight, ref.bias])
        assert torch.allclose(lin.weight.grad_sample[i], g[0], atol=1e-6), "weight grad_sample"
        assert torch.allclose(lin.bias.grad_sample[i], g[1], atol=1e-6), "bias grad_sample"
    m.zero_grad()
    assert lin.weight.grad_sample is None
    import dataloader_fed
    install_dataset_shim(dataloader_fed)
    path = os.path.join(workdir, "Datasets", "CreditCard", "credit-card-defaulters_processed.csv")
    build_processed_csv(named_csv, path)
    import args_fed
    a = args_fed.Args()
    a.dataset, a.num_silos, a.level_of_heterogeneity = "credit-card", 3, 0.5
    a.lambd = 0
    a.assign()
    gd = dataloader_fed.GeneralData(path=path, random_state=100, num_silos=3, silo_attribute=a.silo_attribute,
                                    level_of_heterogeneity=0.5, sensitive_attributes=a.sensitive_attributes,
                                    cols_to_norm=a.cols_to_norm, output_col_name=a.output_col_name, split=0.75)
    ds = gd.getTrain()[1]
    assert len(gd.non_sens_attr) == a.num_inp_attr, (len(gd.non_sens_attr), a.num_inp_attr)
    for i in [0, 1, 17, len(ds) - 1]:
        f, s = ds.__getitem__(i), ds._orig_getitem(i)
        assert f[0].dtype == s[0].dtype and torch.equal(f[0], s[0]), "features"
        assert torch.equal(f[1], s[1]) and f[2] == s[2] and type(f[2]) == type(s[2]) and f[3] == s[3], "rest"
    import torch.utils.data as Data
    from torch.utils.data._utils import fetch
    for seed in (3, 4):
        torch.manual_seed(seed)
        fast = next(iter(Data.DataLoader(ds, batch_size=256, shuffle=True)))
        torch.manual_seed(seed)
        f = fetch._MapDatasetFetcher.fetch
        fetch._MapDatasetFetcher.fetch = fetch._MapDatasetFetcher._orig_fetch
        TD = dataloader_fed.TabularDataset
        g, TD.__getitem__ = TD.__getitem__, TD._orig_getitem
        slow = next(iter(Data.DataLoader(ds, batch_size=256, shuffle=True)))
        fetch._MapDatasetFetcher.fetch, TD.__getitem__ = f, g
        for a, b in zip(fast, slow):
            assert a.dtype == b.dtype and torch.equal(a, b), ("batch", a.dtype, b.dtype)
    print("selfcheck ok: grad_sample = per-sample autograd; fast rows and batches = pandas rows and "
          "default_collate; 85 features")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="unpacked snapshot of the authors' code")
    ap.add_argument("--credit", required=True, help="credit_card_clients_named.csv")
    ap.add_argument("--workdir", required=True, help="scratch folder (processed CSV, the code's logs)")
    ap.add_argument("--silos", type=int, default=3)
    ap.add_argument("--heterogeneity", type=float, default=0.0)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lam", type=float, default=0.5)
    ap.add_argument("--lr-theta", type=float, default=0.05)
    ap.add_argument("--lr-w", type=float, default=0.01)
    ap.add_argument("--radius", type=float, default=5.0, help="the code's C (W's ball)")
    ap.add_argument("--clip", type=float, default=0.5, help="the code's lipschitz_theta")
    ap.add_argument("--decay", type=float, default=0.5)
    ap.add_argument("--selfcheck", action="store_true")
    o = ap.parse_args()
    src, workdir = os.path.abspath(o.src), os.path.abspath(o.workdir)
    os.makedirs(workdir, exist_ok=True)
    if o.selfcheck:
        selfcheck(src, o.credit, workdir)
        return
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, src)
    install_opacus_shim()
    import dataloader_fed
    maps = install_dataset_shim(dataloader_fed)
    data = os.path.join(workdir, "Datasets", "CreditCard", "credit-card-defaulters_processed.csv")
    if not os.path.exists(data):
        build_processed_csv(o.credit, data)
    out = os.path.join(workdir, f"run_{os.getpid()}")
    for d in ("", "dumps", "plots"):
        os.makedirs(os.path.join(out, d), exist_ok=True)

    # N = 1: the code's Args sets 15 epochs, eval every 3 (its num_silos == 1
    # branch); its eval_start 20 would select no checkpoint, so 6 (skip the
    # first, as 20 does for eval every 10). η_θ decay step: 20 epochs of 60,
    # 5 of 15 (fairdp's steffle-credit-authors makes the same choices).
    single = o.silos == 1
    import args_fed

    class Args(args_fed.Args):
        def __init__(self):
            super().__init__()
            self.num_models_train = 1
            self.demographic_parity = True
            self.device = os.environ.get("CUDA_VISIBLE_DEVICES", "")
            self.folder_name = out
            self.num_workers = 0
            self.num_silos, self.level_of_heterogeneity = o.silos, o.heterogeneity
            self.epochs, self.eval_epochs, self.eval_start = (15, 3, 6) if single else (60, 10, 20)
            self.epsilon = o.epsilon
            self.C, self.lipschitz_theta = o.radius, o.clip
            self.lr_theta, self.lr_W = o.lr_theta, o.lr_w
            self.lr_theta_decay_rate, self.lr_theta_decay_step = o.decay, (5 if single else 20)
            self.lr_theta_initial = self.lr_theta
            self.lambd_list = [o.lam]
            self.dataset = "credit-card"
            self.prefix = f"N{o.silos}_h{o.heterogeneity}_s{o.seed}_"

        def assign(self):
            super().assign()
            self.path = data

    args_fed.Args = Args

    import metrics
    captured = {}
    orig_final = metrics.calculate_final_mean_metrics

    def final_mean(d, lams, start=0):
        start = int(start)
        for lam in lams:
            for k, v in d.get(lam, {}).items():
                e, dp = v["misclassification_error_list"][start:], v["demographic_parity_list"][start:]
                captured[(lam, k)] = (sum(e) / len(e), sum(dp) / len(dp), v["misclassification_error_list"],
                                      v["demographic_parity_list"])
        return orig_final(d, lams, start)

    metrics.calculate_final_mean_metrics = final_mean
    metrics.plot_losses = lambda *a, **k: None
    orig_seed = torch.manual_seed
    torch.manual_seed = lambda s: orig_seed(o.seed if s == 0 else s)

    noise = {}
    orig_calc = Args.calculate_noise

    def calc(self):
        orig_calc(self)
        noise.update(std_theta=float(self.std_theta), std_W=float(self.std_W), delta=float(self.delta),
                     rounds=int(self.epochs * self.number_of_batches_per_epoch))

    Args.calculate_noise = calc
    cwd = os.getcwd()
    os.chdir(src)
    try:
        runpy.run_path(os.path.join(src, "dp_fermi_federated.py"), run_name="__main__")
    finally:
        if sys.stdout is not sys.__stdout__:
            sys.stdout.close()
        sys.stdout = sys.__stdout__
        os.chdir(cwd)
    (err, dp, errs, dps), = captured.values()
    print("RESULT " + json.dumps({
        "error": err, "violation": dp, "error_checkpoints": errs, "violation_checkpoints": dps,
        "noise": noise, "silo_group_maps": maps,
        "shims": ["opacus", "dataset", "metrics", "seed"]}), flush=True)


if __name__ == "__main__":
    main()
