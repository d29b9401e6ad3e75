#!/usr/bin/env python3
"""Peak memory of training on images with many objects: the engine's peak resident memory for
two training steps on 1024x1024 images holding 50, 200 and 800 instances each (seeded
ellipses of 10-28 px, each its own polygon, on a textured background), data_config
max_num_instances raised to 1000, the shapes spec's model (ResNet-18 FPN, anchors on levels 2
to 6: 261,888 anchors an image). Prints the table of docs/BENCHMARKS.md ("Many instances"),
with what the whole anchors x objects IoU matrix would take at each count beside it.

  scripts/bench_many_instances.py [--counts 50,200,800] [--batch 1] [--write]

Peak memory is the engine process's maximum resident set (GNU time's %M). With --write the
section of docs/BENCHMARKS.md is rewritten.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, ImageDraw

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_doc import ROOT, find_program, load_average, machine_line, report_section  # noqa: E402

SIDE = 1024
ANCHORS = sum((SIDE >> level) ** 2 for level in range(2, 7)) * 3


def ellipse(cx, cy, rx, ry, vertices=16):
    return [v for k in range(vertices)
            for v in (cx + rx * math.cos(2 * math.pi * k / vertices), cy + ry * math.sin(2 * math.pi * k / vertices))]


def make_set(folder, count, images, seed):
    """`images` images of `count` instances each, on a jittered grid so that they barely
    overlap; COCO json and PNGs in `folder`."""
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(folder, "images"), exist_ok=True)
    coco = {"images": [], "annotations": [], "categories": [
        {"id": i + 1, "name": n} for i, n in enumerate(["circle", "square", "triangle", "star"])]}
    cells = math.ceil(math.sqrt(count))
    cell = SIDE / cells
    for i in range(images):
        base = rng.integers(60, 200, size=(SIDE // 8, SIDE // 8, 3), dtype=np.uint8)
        img = Image.fromarray(base).resize((SIDE, SIDE), Image.BILINEAR)
        draw = ImageDraw.Draw(img)
        slots = rng.permutation(cells * cells)[:count]
        for slot in slots:
            r = float(rng.uniform(5, min(14, cell / 2 - 1)))
            cx = (slot % cells + 0.5) * cell + rng.uniform(-1, 1) * (cell / 2 - r - 1)
            cy = (slot // cells + 0.5) * cell + rng.uniform(-1, 1) * (cell / 2 - r - 1)
            rx, ry = r, r * float(rng.uniform(0.6, 1.0))
            poly = ellipse(cx, cy, rx, ry)
            draw.polygon(poly, fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
            coco["annotations"].append({
                "id": len(coco["annotations"]) + 1, "image_id": i + 1,
                "category_id": int(rng.integers(1, 5)), "segmentation": [poly],
                "bbox": [cx - rx, cy - ry, 2 * rx, 2 * ry], "area": math.pi * rx * ry, "iscrowd": 0})
        name = "%d.png" % (i + 1)
        img.save(os.path.join(folder, "images", name))
        coco["images"].append({"id": i + 1, "file_name": name, "width": SIDE, "height": SIDE})
    path = os.path.join(folder, "instances.json")
    with open(path, "w") as f:
        json.dump(coco, f)
    return path


def peak_mib(engine, spec, json_path, image_dir, run_dir, batch, instances):
    sets = ["device=cpu", "total_steps=2", "train_batch_size=%d" % batch, "num_steps_per_eval=1000",
            "save_checkpoints_steps=1000", "logging_frequency=1", "warmup_steps=0",
            "data_config.train_json_file=" + json_path, "data_config.train_image_dir=" + image_dir,
            "data_config.val_json_file=" + json_path, "data_config.val_image_dir=" + image_dir,
            "data_config.image_size=(%d, %d)" % (SIDE, SIDE), "data_config.max_num_instances=1000",
            "data_config.n_workers=1", "data_config.prefetch_buffer_size=1"]
    cmd = ["/usr/bin/time", "-f", "peak %M"] + [engine, "--spec", spec, "--task", "train", "--run-dir", run_dir]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("%d instances: the engine failed:\n%s" % (instances, p.stderr[-3000:]))
    steps = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{") and '"progress"' in line]
    peak = next(int(line.split()[1]) for line in reversed(p.stderr.splitlines()) if line.startswith("peak "))
    return peak / 1024.0, [s.get("losses", {}).get("total") for s in steps]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="50,200,800")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="rewrite the section in docs/BENCHMARKS.md")
    args = parser.parse_args()
    engine = find_program("mrcnn-engine")
    load_before = load_average()
    counts = [int(c) for c in args.counts.split(",")]
    rows = ["| instances an image | peak resident MiB | over the 50-instance run | whole IoU matrix (float + its == mask) | losses of the 2 steps |",
            "| ---: | ---: | ---: | ---: | --- |"]
    spec_text = open(os.path.join(ROOT, "specs", "shapes_resnet18.txt")).read()
    start = spec_text.index("  shapes_dataset {")
    spec_text = spec_text[:start] + spec_text[spec_text.index("}", start) + 2:]
    base = None
    with tempfile.TemporaryDirectory(prefix="bench_many_") as tmp:
        spec = os.path.join(tmp, "spec.txt")
        with open(spec, "w") as f:
            f.write(spec_text)
        for count in counts:
            folder = os.path.join(tmp, "set%d" % count)
            json_path = make_set(folder, count, max(2, args.batch * 2), seed=count)
            mib, losses = peak_mib(engine, spec, json_path, os.path.join(folder, "images"),
                                   os.path.join(tmp, "run%d" % count), args.batch, count)
            base = mib if base is None else base
            matrix = ANCHORS * count * 5 * args.batch / 2 ** 20
            rows.append("| %d | %.0f | %+.0f | %.0f | %s |" % (count, mib, mib - base, matrix,
                                                             ", ".join("%.3f" % l for l in losses if l is not None)))
            print(rows[-1], flush=True)
    header = "%s; batch %d, %d anchors an image:" % (machine_line(load_before), args.batch, ANCHORS)
    report_section("## Many instances", header, rows, args.write)


if __name__ == "__main__":
    main()
