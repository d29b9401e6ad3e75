#!/usr/bin/env python3
"""COCO evaluation speed: ours (mrcnn-engine --task evaluate) beside pycocotools and
faster-coco-eval, on a generated case the size of COCO val2017, in the same run.

    .venv/bin/python scripts/bench_coco_eval.py [--build build] [--images 5000] [--threads N]
        [--write]

The case (cached under <build>/bench-data/coco_eval_<images>/): 5,000 images of 640x480,
~36k ground-truth instances over COCO's 80 category ids (polygons, ~1% crowd regions in
uncompressed RLE), and 100 detections an image with compressed-RLE masks and boxes (jittered
copies of the ground truth and false positives). Each tool loads the two files and runs
bbox and segm evaluation; the stats must agree. A third row evaluates bbox on the same
detections without their masks (dt_boxes.json: what any box detector writes), whose loading
must not cost more than the file with masks. Prints the table; with --write it replaces the
"### Last result" subsection of docs/BENCHMARKS.md ("## COCO evaluation") with this run's
machine, date and table ($MRCNN_BENCHMARKS_MD names another file to write instead).
"""
import argparse
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np
from bench_doc import load_average, machine_line, write_last_result
from pycocotools import mask as mask_utils

SECTION = "## COCO evaluation"

COCO_IDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
            25, 27, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49,
            50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 67, 70, 72, 73, 74,
            75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90]


def polygon(rng, cx, cy, rx, ry, n):
    t = np.sort(rng.uniform(0, 2 * np.pi, n))
    r = rng.uniform(0.6, 1.0, n)
    return np.stack([cx + np.cos(t) * rx * r, cy + np.sin(t) * ry * r], 1).ravel()


def generate(directory, n_images, seed=0):
    gt_path, dt_path = os.path.join(directory, "gt.json"), os.path.join(directory, "dt.json")
    if os.path.exists(gt_path) and os.path.exists(dt_path):
        return gt_path, dt_path
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    h, w = 480, 640
    images, anns, dts = [], [], []
    ann_id = 1
    for i in range(n_images):
        image_id = int(i * 7 + 3)
        images.append({"id": image_id, "width": w, "height": h, "file_name": f"{image_id:012d}.jpg"})
        objects = []
        for _ in range(int(rng.poisson(7.3))):
            cat = int(rng.choice(COCO_IDS))
            size = float(np.exp(rng.uniform(np.log(6), np.log(400))))
            rx, ry = size * rng.uniform(0.5, 1), size * rng.uniform(0.5, 1)
            cx, cy = rng.uniform(rx, w - rx) if w > 2 * rx else w / 2, rng.uniform(ry, h - ry) if h > 2 * ry else h / 2
            crowd = rng.random() < 0.01
            poly = polygon(rng, cx, cy, rx / 2, ry / 2, int(rng.integers(6, 40)))
            rle = mask_utils.merge(mask_utils.frPyObjects([poly.tolist()], h, w))
            bbox = [float(v) for v in mask_utils.toBbox(rle)]
            if crowd:
                m = mask_utils.decode(rle).ravel(order="F")
                change = np.flatnonzero(np.diff(m)) + 1
                bounds = np.concatenate([[0], change, [m.size]])
                counts = np.diff(bounds).tolist()
                if m[0] == 1:
                    counts = [0] + counts
                seg = {"size": [h, w], "counts": counts}
            else:
                seg = [[round(float(v), 2) for v in poly]]
            anns.append({"id": ann_id, "image_id": image_id, "category_id": cat, "iscrowd": int(crowd),
                         "area": float(mask_utils.area(rle)), "bbox": bbox, "segmentation": seg})
            objects.append((cat, cx, cy, rx, ry))
            ann_id += 1
        for _ in range(100):
            if objects and rng.random() < 0.5:
                cat, cx, cy, rx, ry = objects[int(rng.integers(0, len(objects)))]
                if rng.random() < 0.1:
                    cat = int(rng.choice(COCO_IDS))
                j = rng.normal(0, 0.1, 4)
                cx, cy, rx, ry = cx + j[0] * rx, cy + j[1] * ry, rx * (1 + j[2]), ry * (1 + j[3])
            else:
                cat = int(rng.choice(COCO_IDS))
                size = float(np.exp(rng.uniform(np.log(6), np.log(300))))
                rx, ry = size, size * rng.uniform(0.5, 1.5)
                cx, cy = rng.uniform(0, w), rng.uniform(0, h)
            poly = polygon(rng, cx, cy, abs(rx) / 2 + 1, abs(ry) / 2 + 1, 16)
            rle = mask_utils.merge(mask_utils.frPyObjects([poly.tolist()], h, w))
            dts.append({"image_id": image_id, "category_id": cat,
                        "bbox": [round(float(v), 2) for v in mask_utils.toBbox(rle)],
                        "score": round(float(rng.random()), 3),
                        "segmentation": {"size": [h, w], "counts": rle["counts"].decode("ascii")}})
    cats = [{"id": c, "name": f"category {c}", "supercategory": "thing"} for c in COCO_IDS]
    with open(gt_path, "w") as f:
        json.dump({"images": images, "annotations": anns, "categories": cats}, f)
    with open(dt_path, "w") as f:
        json.dump(dts, f)
    return gt_path, dt_path


def run_python_peer(module, gt_path, dt_path, iou_type):
    """Loads and evaluates in a fresh interpreter; returns (load s, eval s, stats)."""
    code = f"""
import contextlib, io, json, sys, time
t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    if {module!r} == "pycocotools":
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval as Eval
    else:
        from faster_coco_eval import COCO
        from faster_coco_eval import COCOeval_faster as Eval
    gt = COCO({gt_path!r})
    dt = gt.loadRes({dt_path!r})
    t1 = time.perf_counter()
    e = Eval(gt, dt, {iou_type!r})
    e.evaluate(); e.accumulate(); e.summarize()
    t2 = time.perf_counter()
print(json.dumps({{"load": t1 - t0, "eval": t2 - t1, "stats": [float(s) for s in e.stats]}}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["load"], r["eval"], r["stats"]


def run_ours(engine, gt_path, dt_path, iou_type, threads):
    env = dict(os.environ)
    if threads:
        env["MRCNN_EVAL_THREADS"] = str(threads)
    metrics = os.path.join(os.path.dirname(gt_path), f"ours_{iou_type}.json")
    out = subprocess.run([engine, "--task", "evaluate", "--annotations", gt_path, "--results", dt_path,
                          "--iou-type", iou_type, "--metrics-out", metrics],
                         check=True, capture_output=True, text=True, env=env).stdout
    load = float(re.search(r"results in ([0-9.e-]+) s", out).group(1))
    ev = float(re.search(rf"\*{iou_type}\* \(([0-9.e-]+) s\)", out).group(1))
    stats = json.load(open(metrics))[iou_type]["stats"]
    return load, ev, stats


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=0, help="threads for ours (0: all cores)")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the last result in docs/BENCHMARKS.md")
    args = parser.parse_args()
    engine = os.path.join(args.build, "bin", "mrcnn-engine")
    directory = os.path.join(args.build, "bench-data", f"coco_eval_{args.images}")
    t = time.perf_counter()
    gt_path, dt_path = generate(directory, args.images)
    gt = json.load(open(gt_path))
    n_dt = len(json.load(open(dt_path)))
    print(f"case: {len(gt['images'])} images, {len(gt['annotations'])} ground truths, {n_dt} detections"
          f" (ready in {time.perf_counter() - t:.0f} s)")
    boxes_path = os.path.join(directory, "dt_boxes.json")
    if not os.path.exists(boxes_path):
        with open(boxes_path, "w") as f:
            json.dump([{k: v for k, v in d.items() if k != "segmentation"} for d in json.load(open(dt_path))], f)
    load_before = load_average()
    rows = []
    for label, iou_type, dt in (("bbox", "bbox", dt_path), ("segm", "segm", dt_path),
                                ("bbox, boxes only", "bbox", boxes_path)):
        results = {
            "pycocotools": run_python_peer("pycocotools", gt_path, dt, iou_type),
            "faster-coco-eval": run_python_peer("faster_coco_eval", gt_path, dt, iou_type),
            "ours": run_ours(engine, gt_path, dt, iou_type, args.threads),
        }
        ref = results["pycocotools"]
        for name, (load, ev, stats) in results.items():
            diff = max(abs(a - b) for a, b in zip(stats, ref[2]))
            rows.append((label, name, load, ev, load + ev, ref[1] / ev, (ref[0] + ref[1]) / (load + ev), diff))
    table = ["| type | tool | load s | eval s | total s | eval × | total × | max \\|stat diff\\| |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    table += [f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.1f} | {r[6]:.1f} | {r[7]:.3g} |"
              for r in rows]
    threads = args.threads or os.cpu_count()
    header = (f"{machine_line(load_before)}; pycocotools {importlib.metadata.version('pycocotools')}, "
              f"faster-coco-eval {importlib.metadata.version('faster-coco-eval')}, Python "
              f"{platform.python_version()}; {len(gt['images']):,} images, {len(gt['annotations']):,} "
              f"ground truths, {n_dt:,} detections; {threads} thread{'s' if threads > 1 else ''} for ours:")
    print(header)
    print("\n".join(table))
    print("×: pycocotools' time divided by the tool's (higher is faster); stat diff against pycocotools")
    if args.write:
        write_last_result(SECTION, header + "\n\n" + "\n".join(table))
        print(f"docs/BENCHMARKS.md: {SECTION[3:]} / Last result rewritten")

if __name__ == "__main__":
    main()
