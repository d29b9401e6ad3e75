"""Expected values for the data loader test (tests/dataset/test_loader.cpp), from torch and
torchvision, and from an independent Python rendering of the loader's documented PRNG.

Usage: loader_oracle.py WORKDIR. Reads WORKDIR/request.json, writes WORKDIR/response.json and
the raw arrays it names (float32 or uint8, C order). Request keys (all optional):
  sizes: [[h, w], ...] with min_size, max_size: torchvision's GeneralizedRCNNTransform output
    size of a single image of each size (eval mode), as "sizes";
  batches: [[[h, w], [h, w]], ...]: the padded batch shape [B, 3, H, W] it gives for images of
    those sizes (size_divisible 32), as "batch_shapes";
  image: {file, height, width}: an RGB uint8 HWC image, as the loader decoded it:
    - shorter_side: GeneralizedRCNNTransform's padded batch tensor of it alone -> "shorter"
    - fixed {height, width}: to_tensor + Normalize + interpolate(size=..., bilinear,
      align_corners=False) -> "fixed"
  masks: {file, count, height, width, out_height, out_width}: 0/1 uint8 masks resized with
    interpolate(bilinear, align_corners=False) then >= 0.5 -> "masks"
  orders: [{seed, epoch, count, buffer}]: the training order -> "orders"
  flips: {seed, epoch, count}: flip decisions of samples 0..count-1 -> "flips"
"""

import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torchvision.models.detection.transform import GeneralizedRCNNTransform

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]

# ---- The loader's PRNG, written from its description (dataset/loader/sample_order.h) ----
M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
ORDER_DOMAIN = 0x6F72646572000001
FLIP_DOMAIN = 0x666C697000000002


def mix64(x):
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


class Xoshiro256:
    def __init__(self, seed):
        self.s = []
        state = seed
        for _ in range(4):
            state = (state + GOLDEN) & M64
            self.s.append(mix64(state))

    def next(self):
        s = self.s
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, bound):
        product = (self.next() >> 32) * bound
        low = product & 0xFFFFFFFF
        if low < bound:
            threshold = ((1 << 32) - bound) % bound
            while low < threshold:
                product = (self.next() >> 32) * bound
                low = product & 0xFFFFFFFF
        return product >> 32


def epoch_key(seed, epoch):
    return mix64((mix64(seed) + GOLDEN * (epoch + 1)) & M64)


def training_order(seed, epoch, count, buffer):
    rng = Xoshiro256(epoch_key(seed, epoch) ^ ORDER_DOMAIN)
    if buffer == 0 or buffer >= count:
        order = list(range(count))
        for i in range(count, 1, -1):
            j = rng.below(i)
            order[i - 1], order[j] = order[j], order[i - 1]
        return order
    window = list(range(buffer))
    next_in = buffer
    order = []
    for _ in range(count):
        slot = rng.below(len(window))
        order.append(window[slot])
        if next_in < count:
            window[slot] = next_in
            next_in += 1
        else:
            window[slot] = window[-1]
            window.pop()
    return order


def flip(seed, epoch, index):
    return (mix64(epoch_key(seed, epoch) ^ FLIP_DOMAIN ^ mix64(index)) >> 63) != 0


# ---- torchvision ----


def rcnn_transform(min_size, max_size):
    t = GeneralizedRCNNTransform(min_size=min_size, max_size=max_size, image_mean=MEAN, image_std=STD)
    t.eval()
    return t


def normalised(rgb):
    image = torch.from_numpy(rgb).permute(2, 0, 1).float().div(255)
    mean = torch.tensor(MEAN, dtype=torch.float32)[:, None, None]
    std = torch.tensor(STD, dtype=torch.float32)[:, None, None]
    return (image - mean) / std


def save(workdir, name, array):
    np.ascontiguousarray(array).tofile(os.path.join(workdir, name))
    return name


def main():
    workdir = sys.argv[1]
    with open(os.path.join(workdir, "request.json")) as f:
        request = json.load(f)
    response = {}
    torch.set_num_threads(1)
    with torch.no_grad():
        min_size = request.get("min_size", 800)
        max_size = request.get("max_size", 1333)
        transform = rcnn_transform(min_size, max_size)
        if "sizes" in request:
            sizes = []
            for h, w in request["sizes"]:
                images, _ = transform([torch.zeros(3, h, w)])
                sizes.append(list(images.image_sizes[0]))
            response["sizes"] = sizes
        if "batches" in request:
            shapes = []
            for batch in request["batches"]:
                images, _ = transform([torch.zeros(3, h, w) for h, w in batch])
                shapes.append(list(images.tensors.shape))
            response["batch_shapes"] = shapes
        if "image" in request:
            spec = request["image"]
            rgb = np.fromfile(os.path.join(workdir, spec["file"]), dtype=np.uint8)
            rgb = rgb.reshape(spec["height"], spec["width"], 3)
            images, _ = transform([torch.from_numpy(rgb).permute(2, 0, 1).float().div(255)])
            response["shorter"] = {
                "file": save(workdir, "shorter.f32", images.tensors[0].numpy()),
                "shape": list(images.tensors[0].shape),
                "size": list(images.image_sizes[0]),
            }
            if "fixed" in request:
                size = (request["fixed"]["height"], request["fixed"]["width"])
                out = F.interpolate(normalised(rgb)[None], size=size, mode="bilinear", align_corners=False)[0]
                response["fixed"] = {"file": save(workdir, "fixed.f32", out.numpy()), "shape": list(out.shape)}
        if "masks" in request:
            spec = request["masks"]
            masks = np.fromfile(os.path.join(workdir, spec["file"]), dtype=np.uint8)
            masks = torch.from_numpy(masks.reshape(spec["count"], spec["height"], spec["width"]))
            size = (spec["out_height"], spec["out_width"])
            out = F.interpolate(masks[:, None].float(), size=size, mode="bilinear", align_corners=False)[:, 0]
            response["masks"] = {"file": save(workdir, "masks.out.u8", (out >= 0.5).to(torch.uint8).numpy())}
        if "orders" in request:
            response["orders"] = [
                training_order(o["seed"], o["epoch"], o["count"], o["buffer"]) for o in request["orders"]
            ]
        if "flips" in request:
            f = request["flips"]
            response["flips"] = [flip(f["seed"], f["epoch"], i) for i in range(f["count"])]
    with open(os.path.join(workdir, "response.json"), "w") as f:
        json.dump(response, f)


if __name__ == "__main__":
    main()
