"""Expected parameters of the solver (engine/train/solver.h) from torch.optim.SGD.

Makes seeded parameters and per-step gradients, runs torch.optim.SGD over them in two
scenarios, and saves everything with torch.save as one flat dict of tensors:
  init.<name>, grad.<step>.<name>, lr (per step), expected.<scenario>.<step>.<name>
Scenario "plain": TAO's rules through torch's own options: weight_decay on the decayed group
(weights with >= 2 dims not named *bias), 0 on the rest, bias gradients doubled, momentum.
Scenario "clip": TAO's order with clipping: gradient + wd * w on the decayed group, bias
gradients doubled, torch.nn.utils.clip_grad_norm_, then SGD without weight decay.
usage: sgd_reference.py OUT.pt
"""
import sys

import torch

MOMENTUM = 0.9
WD = 1e-2
CLIP = 0.5
LRS = [0.1, 0.05, 0.02, 0.02, 0.01]
SHAPES = {
    "conv.weight": (4, 3, 3, 3),
    "conv.bias": (4,),
    "bn.weight": (4,),
    "fc.weight": (5, 8),
    "fc.bias": (5,),
}


def decayed(name, p):
    return not name.endswith("bias") and p.dim() >= 2


def run(scenario, init, grads):
    params = {n: torch.nn.Parameter(t.clone()) for n, t in init.items()}
    if scenario == "plain":
        groups = [
            {"params": [p for n, p in params.items() if decayed(n, p)], "weight_decay": WD},
            {"params": [p for n, p in params.items() if not decayed(n, p)], "weight_decay": 0.0},
        ]
    else:
        groups = [{"params": list(params.values()), "weight_decay": 0.0}]
    opt = torch.optim.SGD(groups, lr=LRS[0], momentum=MOMENTUM)
    out = {}
    for step, lr in enumerate(LRS):
        for n, p in params.items():
            g = grads[step][n].clone()
            if scenario == "clip" and decayed(n, p):
                g = g.add(p.detach(), alpha=WD)
            if n.endswith("bias"):
                g = g * 2.0
            p.grad = g
        if scenario == "clip":
            torch.nn.utils.clip_grad_norm_(list(params.values()), CLIP)
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        for n, p in params.items():
            out[f"expected.{scenario}.{step}.{n}"] = p.detach().clone()
    return out


def main():
    torch.manual_seed(7)
    init = {n: torch.randn(s) for n, s in SHAPES.items()}
    grads = [{n: torch.randn(s) * (3.0 if i % 2 else 0.3) for n, s in SHAPES.items()}
             for i in range(len(LRS))]
    out = {f"init.{n}": t for n, t in init.items()}
    for i, g in enumerate(grads):
        for n, t in g.items():
            out[f"grad.{i}.{n}"] = t
    out["lr"] = torch.tensor(LRS, dtype=torch.float64)
    out["config"] = torch.tensor([MOMENTUM, WD, CLIP], dtype=torch.float64)
    out.update(run("plain", init, grads))
    out.update(run("clip", init, grads))
    torch.save(out, sys.argv[1])


if __name__ == "__main__":
    main()
