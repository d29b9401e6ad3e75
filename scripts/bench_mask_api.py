#!/usr/bin/env python3
"""The mask API's iou() beside pycocotools' maskUtils.iou, timed in the same run.

COCO-like calls (480x640 images, star-shaped objects, detections jittered around them, one
crowd ground truth per call) in two shapes: the COCO benchmark's 100 detections x 20 ground
truths per image, and COCOeval's usual call per (image, category), 15 x 7. bench_mask_api
(bench/bench_mask_api.cpp) builds the calls, times ours (the strings decoded once, then iou,
best of 3) and writes the inputs and its matrices; this script times maskUtils.iou over the
same calls the way COCOeval.computeIoU makes them (RLE dicts with compressed strings, box
lists), best of 3, checks that every matrix equals ours exactly, and prints the table.
Exits 1 when a matrix differs. Writes only temporary files.

Usage: .venv/bin/python scripts/bench_mask_api.py [--build-dir build | --exe PATH] [--scale 10]
                                                 [--write]
--scale multiplies the calls (100 and 500 by default; 10 gives the 1000 and 5000 below).
Build the driver first (not built by default): scripts/build.sh bench_mask_api.
--write replaces the "### Last result" of docs/BENCHMARKS.md's "Mask API IoU" with this run's
machine and table ($MRCNN_BENCHMARKS_MD names another file to write instead); it writes only
when every matrix is equal.

Last result (2026-11-28, --scale 10), 2 cores of an AMD EPYC beside a full build (load 5.0),
pycocotools 2.0.11, best of 3 per side, all matrices equal (docs/BENCHMARKS.md has the table
and the first result, 2026-11-22, from when test_dataset_mask_api ran it):
  1000 calls of 100 dt x 20 gt:  segm 1.079 s vs ours 0.476 s (x2.3; x1.5 with our string
                                 decode), bbox 0.0718 s vs 0.0255 s (x2.8)
  5000 calls of 15 dt x 7 gt:    segm 0.579 s vs ours 0.210 s (x2.8; x1.3 with decode),
                                 bbox 0.0962 s vs 0.0097 s (x9.9)
"""
import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from pycocotools import mask as mask_utils

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from bench_doc import load_average, machine_line, write_last_result  # noqa: E402

SECTION = "## Mask API IoU"
SHAPES = [(100, 100, 20), (500, 15, 7)]  # calls, detections, ground truths per call


def best_of_3(images, dt_key, gt_key):
    best, results = None, None
    for _ in range(3):
        start = time.perf_counter()
        out = [mask_utils.iou(im[dt_key], im[gt_key], im["iscrowd"]) for im in images]
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
        results = out
    return best, np.concatenate([np.asarray(m).ravel() for m in results])


def pycocotools_side(bench_json: Path, cpp_segm: Path, cpp_bbox: Path):
    """Times maskUtils.iou on the driver's calls; returns (segm_s, bbox_s, equal)."""
    with open(bench_json) as f:
        bench = json.load(f)
    size = [bench["h"], bench["w"]]
    images = bench["images"]
    for im in images:  # as COCO.annToRLE and loadRes leave them
        im["dt_rles"] = [{"size": size, "counts": c.encode()} for c in im["dt"]]
        im["gt_rles"] = [{"size": size, "counts": c.encode()} for c in im["gt"]]
    segm_s, segm = best_of_3(images, "dt_rles", "gt_rles")
    bbox_s, bbox = best_of_3(images, "dt_boxes", "gt_boxes")
    ours_segm = np.fromfile(cpp_segm, dtype=np.float64)
    ours_bbox = np.fromfile(cpp_bbox, dtype=np.float64)
    equal = (segm.shape == ours_segm.shape and np.array_equal(segm, ours_segm)
             and bbox.shape == ours_bbox.shape and np.array_equal(bbox, ours_bbox))
    if not equal:
        print(f"segm {segm.shape} vs C++ {ours_segm.shape}, bbox {bbox.shape} vs {ours_bbox.shape}")
    return segm_s, bbox_s, equal


def find_exe(args) -> Path:
    exe = Path(args.exe) if args.exe else Path(args.build_dir) / "bin" / "bench_mask_api"
    if not exe.is_file():
        sys.exit(f"{exe} does not exist: build it (scripts/build.sh bench_mask_api) or pass --exe")
    return exe


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=str(ROOT / "build"))
    parser.add_argument("--exe", help="the bench_mask_api executable")
    parser.add_argument("--scale", type=int, default=1, help="multiplies the number of calls")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the last result in docs/BENCHMARKS.md")
    args = parser.parse_args()
    exe = find_exe(args)

    version = importlib.metadata.version("pycocotools")
    load_before = load_average()
    print(f"# {machine_line(load_before)}; pycocotools {version}")
    all_equal = True
    table = ["| calls | dt × gt | segm: pycocotools | ours | ratio | ours + decode | ratio | "
             "bbox: pycocotools | ours | ratio |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for calls, dts, gts in SHAPES:
        calls *= max(args.scale, 1)
        with tempfile.TemporaryDirectory(prefix="bench_mask_api-") as tmp:
            out = Path(tmp)
            result = subprocess.run([str(exe), "--out", tmp, "--calls", str(calls), "--dts", str(dts),
                                     "--gts", str(gts)], check=True, capture_output=True, text=True)
            ours = json.loads(result.stdout)
            py_segm, py_bbox, equal = pycocotools_side(out / "bench.json", out / "segm.bin",
                                                       out / "bbox.bin")
        all_equal = all_equal and equal
        segm, bbox, decode = ours["segm_s"], ours["bbox_s"], ours["decode_s"]
        print(f"iou, {calls} calls of {dts} detections x {gts} ground truths (480x640, best of 3), "
              f"{'equal' if equal else 'NOT EQUAL'}:")
        print(f"  segm: pycocotools {py_segm:.3f} s | ours {segm:.4f} s (x{py_segm / segm:.1f}) | "
              f"ours + string decode {segm + decode:.4f} s (x{py_segm / (segm + decode):.1f})")
        print(f"  bbox: pycocotools {py_bbox:.4f} s | ours {bbox:.4f} s (x{py_bbox / bbox:.1f})")
        table.append(f"| {calls:,} | {dts} × {gts} | {py_segm:.3f} s | {segm:.3f} s | "
                     f"{py_segm / segm:.1f}× | {segm + decode:.3f} s | "
                     f"{py_segm / (segm + decode):.1f}× | {py_bbox:.4f} s | {bbox:.4f} s | "
                     f"{py_bbox / bbox:.1f}× |")
    if args.write and all_equal:
        header = (f"{machine_line(load_before)}; `--scale {args.scale}`, pycocotools {version}, "
                  f"best of 3 a side, all matrices equal:")
        write_last_result(SECTION, header + "\n\n" + "\n".join(table))
        print(f"docs/BENCHMARKS.md: {SECTION[3:]} / Last result rewritten")
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main())
