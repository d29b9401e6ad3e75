"""Reads a pruned model.pt the way a Python user would (torch.load, weights_only=True) and
prints what the prune test checks: the parameter count, the tensors' shapes and meta.json."""
import json
import sys

import torch

state = torch.load(sys.argv[1], weights_only=True, map_location="cpu")
other_keys = sorted(k for k in state if not k.startswith("model."))
meta = json.loads(bytes(state["meta.json"].numpy()).decode())
model = {k[len("model."):]: v for k, v in state.items() if k.startswith("model.")}
skip = (".running_mean", ".running_var", ".num_batches_tracked")
print(json.dumps({
    "tensors": len(model),
    "other_keys": other_keys,
    "param_count": sum(v.numel() for k, v in model.items() if not k.endswith(skip)),
    "shapes": {k: list(v.shape) for k, v in model.items()},
    "meta": meta,
}))
