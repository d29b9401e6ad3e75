"""Reads a checkpoint of engine/train/checkpoint.h the way a user would, with
torch.load(weights_only=True), and prints what the C++ test checks as one JSON object:
the keys, meta.json decoded, the trainer scalars and a digest of every tensor.
usage: read_checkpoint.py CHECKPOINT.pt
"""
import json
import sys

import torch


def main():
    ckpt = torch.load(sys.argv[1], weights_only=True)
    meta = json.loads(bytes(ckpt["meta.json"].numpy()).decode("utf-8"))
    digest = {}
    for k, t in ckpt.items():
        digest[k] = {
            "dtype": str(t.dtype).replace("torch.", ""),
            "shape": list(t.shape),
            "sum": float(t.double().sum()) if t.numel() else 0.0,
        }
    print(json.dumps({
        "type": type(ckpt).__name__,
        "meta": meta,
        "step": int(ckpt["trainer.step"]),
        "epoch": int(ckpt["trainer.epoch"]),
        "data_position": int(ckpt["trainer.data_position"]),
        "tensors": digest,
    }))


if __name__ == "__main__":
    main()
