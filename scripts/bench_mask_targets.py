#!/usr/bin/env python3
"""The mask loss's targets on the CPU, three ways, on one training image's worth of work:
`mrcnn::mask_targets_cropped` reading the loader's crops (what training does), the same
targets from whole masks already in memory (`mrcnn::mask_targets`), and the way training did
it before the crops were read directly: the matched masks made whole (unique, zero-filled,
crops copied in), then `mask_targets` on them. All three give the same bits (checked).

  scripts/bench_mask_targets.py [--height 800] [--width 1216] [--masks 60] [--rois 128]
                                [--repeats 7] [--write]

Seeded masks of 40-400 px (random pixels in a random rectangle), RoIs around the matched
masks' boxes (jittered by 10 px), M = 28, 2 threads; each figure the best of --repeats after a
warm-up. Needs the ops library built (build/lib/libmrcnn_ops.so). With --write the section
"Mask targets from crops" of docs/BENCHMARKS.md is rewritten.
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_doc import ROOT, load_average, machine_line, report_section  # noqa: E402


def make_masks(gen, height, width, count):
    """Whole masks, and the same as crops: (uint8 bytes, windows [G, 4], offsets [G])."""
    masks = torch.zeros(count, height, width, dtype=torch.uint8)
    windows, crops, offsets, at = [], [], [], 0
    for i in range(count):
        h = int(torch.randint(40, 400, (1,), generator=gen))
        w = int(torch.randint(40, 400, (1,), generator=gen))
        y0 = int(torch.randint(0, height - h, (1,), generator=gen))
        x0 = int(torch.randint(0, width - w, (1,), generator=gen))
        masks[i, y0:y0 + h, x0:x0 + w] = (torch.rand(h, w, generator=gen) > 0.3).to(torch.uint8)
        windows.append([x0, y0, w, h])
        crops.append(masks[i, y0:y0 + h, x0:x0 + w].reshape(-1))
        offsets.append(at)
        at += h * w
    return masks, torch.cat(crops), torch.tensor(windows), torch.tensor(offsets)


def best_ms(fn, repeats):
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--height", type=int, default=800)
    ap.add_argument("--width", type=int, default=1216)
    ap.add_argument("--masks", type=int, default=60)
    ap.add_argument("--rois", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--library", default=os.path.join(ROOT, "build", "lib", "libmrcnn_ops.so"))
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(args.library):
        raise SystemExit(args.library + " not built: flock /tmp/mrcnn-build.lock ninja -C build mrcnn_ops_module")
    torch.ops.load_library(args.library)
    torch.set_num_threads(2)
    load_before = load_average()

    gen = torch.Generator().manual_seed(0)
    h, w = args.height, args.width
    masks, data, windows, offsets = make_masks(gen, h, w, args.masks)
    matched = torch.randint(0, args.masks, (args.rois,), generator=gen)
    rois = windows.float()[matched]
    rois[:, 2:] += rois[:, :2]
    rois += torch.randn(args.rois, 4, generator=gen) * 10

    def cropped():
        return torch.ops.mrcnn.mask_targets_cropped(data, windows, offsets, h, w, rois, matched, 28)

    def whole():
        return torch.ops.mrcnn.mask_targets(masks, rois, matched, 28)

    def made_whole():
        used, inverse = torch.unique(matched, return_inverse=True)
        m = torch.zeros(len(used), h, w, dtype=torch.uint8)
        for j, i in enumerate(used.tolist()):
            x0, y0, cw, ch = windows[i].tolist()
            start = int(offsets[i])
            m[j, y0:y0 + ch, x0:x0 + cw] = data[start:start + cw * ch].view(ch, cw)
        return torch.ops.mrcnn.mask_targets(m, rois, inverse, 28)

    same = torch.equal(cropped(), whole()) and torch.equal(cropped(), made_whole())
    if not same:
        raise SystemExit("the three ways disagree: nothing written")
    ms = {name: best_ms(fn, args.repeats) for name, fn in
          (("cropped", cropped), ("whole", whole), ("made_whole", made_whole))}
    header = (f"{machine_line(load_before)}; {args.masks} masks of 40-400 px on a {w}x{h} image "
              f"({data.numel() / 2**20:.1f} MiB of crops, {masks.numel() / 2**20:.0f} MiB whole), "
              f"{args.rois} RoIs, M = 28, 2 threads, best of {args.repeats}; the three give the same "
              "bits (`scripts/bench_mask_targets.py`):")
    rows = ["| targets from | ms | against made whole |", "| --- | ---: | ---: |",
            f"| the crops (`mask_targets_cropped`, training now) | {ms['cropped']:.1f} | "
            f"{ms['made_whole'] / ms['cropped']:.2f}x |",
            f"| whole masks already in memory (`mask_targets`) | {ms['whole']:.1f} | "
            f"{ms['made_whole'] / ms['whole']:.2f}x |",
            f"| the matched masks made whole first (training before) | {ms['made_whole']:.1f} | 1.00x |"]
    report_section("## Mask targets from crops", header, rows, args.write)


if __name__ == "__main__":
    main()
