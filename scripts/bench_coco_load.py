#!/usr/bin/env python3
"""COCO json loading: our loadCoco beside pycocotools' COCO(), on the same file, in one run.

Generates once (seeded, cached) a COCO instances json of train2017's size and shape: 118,287
images, 860,001 annotations (1% iscrowd with uncompressed RLE, the rest polygons with a
realistic spread of vertex counts, some in several parts), the 80 categories with COCO's
non-contiguous ids, the official file's formatting; about 448 MiB. Then times, each in a fresh
process: pycocotools' COCO(path) (wall time of the call, peak RSS of the process) and
bench_coco_load (our loader, 1 thread and all threads; best of --repeat), and prints a table
with the ratios. Writes nothing but the cached file, and with --write the "### Last result"
subsection of docs/BENCHMARKS.md ("## COCO json loading"): this run's machine, date and table
($MRCNN_BENCHMARKS_MD names another file to write instead).

Usage: scripts/bench_coco_load.py [--exe build-coco/bin/bench_coco_load] [--cache-dir DIR]
       [--repeat 3] [--write]
Run with the project's Python (.venv/bin/python): it needs numpy and pycocotools.
"""
import argparse
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from bench_doc import load_average, machine_line, memory_gib, write_last_result

ROOT = Path(__file__).resolve().parent.parent
GENERATOR_VERSION = 1
N_IMAGES = 118_287
N_ANNOTATIONS = 860_001
TARGET_BYTES = 469_785_474  # instances_train2017.json
CROWD_SHARE = 0.01
COCO_CATEGORY_IDS = [i for i in range(1, 91) if i not in (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)]
IMAGE_SHAPES = [(480, 640), (427, 640), (640, 480), (640, 427), (424, 640), (612, 612),
                (500, 375), (375, 500), (360, 640), (640, 640)]

SECTION = "## COCO json loading"

PYCOCOTOOLS = r"""
import resource, sys, time
from pycocotools.coco import COCO
start = time.perf_counter()
coco = COCO(sys.argv[1])
seconds = time.perf_counter() - start
print(f"seconds={seconds:.3f} peak_rss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} "
      f"images={len(coco.imgs)} annotations={len(coco.anns)}")
"""


def fmt(values):
    """Floats as Python's json writes them (shortest repr), comma-separated, no spaces."""
    return ",".join(map(repr, values))


def polygon_parts(rng, h, w, vertices):
    """Star-shaped polygons inside the image: coordinates rounded to 2 decimals like COCO."""
    parts = []
    cx, cy = rng.uniform(0.1, 0.9) * w, rng.uniform(0.1, 0.9) * h
    radius = min(h, w) * min(0.45, rng.lognormal(-2.2, 0.8))
    for n in vertices:
        angles = np.sort(rng.uniform(0, 2 * np.pi, n))
        r = radius * rng.uniform(0.6, 1.0, n)
        ox, oy = rng.normal(0, radius * 0.3, 2)
        xs = np.clip(cx + ox + r * np.cos(angles), 0, w)
        ys = np.clip(cy + oy + r * np.sin(angles), 0, h)
        xy = np.empty(2 * n)
        xy[0::2], xy[1::2] = np.round(xs, 2), np.round(ys, 2)
        parts.append(xy)
    return parts


def shoelace(xy):
    x, y = xy[0::2], xy[1::2]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def crowd_counts(rng, h, w):
    """Uncompressed RLE of a ragged blob: column-major runs that add up to h * w."""
    x0 = int(rng.integers(0, w // 2))
    x1 = min(w, x0 + int(rng.integers(20, w // 2 + 20)))
    y0 = int(rng.integers(0, h // 2))
    y1 = min(h, y0 + int(rng.integers(20, h // 2 + 20)))
    toggles = []
    for c in range(x0, x1):
        k = 2 * int(rng.integers(1, 4))
        ys = np.sort(rng.choice(np.arange(y0, y1 + 1), size=k, replace=False))
        toggles.extend((c * h + ys).tolist())
    edges = [0] + toggles + [h * w]
    counts = np.diff(edges).tolist()
    area = sum(counts[1::2])
    return counts, area, [float(x0), float(y0), float(x1 - x0), float(y1 - y0)]


def annotation_text(rng, ann_id, image, category_id, crowd, vertex_mean):
    h, w = image[2], image[3]
    if crowd:
        counts, area, bbox = crowd_counts(rng, h, w)
        segmentation = '{"counts": [' + ",".join(map(str, counts)) + f'],"size": [{h},{w}]}}'
        area = float(area)
    else:
        parts = 1 if rng.random() < 0.9 else int(rng.integers(2, 5))
        vertices = np.maximum(3, np.round(rng.lognormal(np.log(vertex_mean), 0.7, parts)))
        xys = polygon_parts(rng, h, w, vertices.astype(int))
        segmentation = "[" + ",".join("[" + fmt(xy.tolist()) + "]" for xy in xys) + "]"
        area = sum(shoelace(xy) for xy in xys)
        allx = np.concatenate([xy[0::2] for xy in xys])
        ally = np.concatenate([xy[1::2] for xy in xys])
        bbox = [float(allx.min()), float(ally.min()), round(float(allx.max() - allx.min()), 2),
                round(float(ally.max() - ally.min()), 2)]
    return (f'{{"segmentation": {segmentation},"area": {area!r},"iscrowd": {int(crowd)},'
            f'"image_id": {image[0]},"bbox": [{fmt(bbox)}],"category_id": {category_id},'
            f'"id": {ann_id}}}')


def generate(path, seed):
    rng = np.random.default_rng(seed)
    image_ids = rng.choice(np.arange(1, 581_930), size=N_IMAGES, replace=False)
    shapes = rng.integers(0, len(IMAGE_SHAPES), N_IMAGES)
    images = [(int(i), f"{int(i):012d}.jpg", *IMAGE_SHAPES[s]) for i, s in zip(image_ids, shapes)]
    # About 1% of COCO's images have no annotation; the rest get a skewed number of them.
    weights = rng.lognormal(0, 1.0, N_IMAGES) * (rng.random(N_IMAGES) > 0.01)
    owners = rng.choice(N_IMAGES, size=N_ANNOTATIONS, p=weights / weights.sum())
    categories = rng.choice(COCO_CATEGORY_IDS, size=N_ANNOTATIONS)
    crowds = rng.random(N_ANNOTATIONS) < CROWD_SHARE
    ann_ids = np.cumsum(rng.integers(1, 3, N_ANNOTATIONS))

    # Calibrate the polygon size so that the whole file lands on train2017's size.
    trial = 4000
    sizes = [len(annotation_text(rng, 1, images[owners[i]], 1, crowds[i], 16.0)) + 1
             for i in range(trial)]
    image_bytes = 280 * N_IMAGES
    vertex_mean = 16.0 * (TARGET_BYTES - image_bytes - 8000 - N_ANNOTATIONS * 150) / (
        (np.mean(sizes) - 150) * N_ANNOTATIONS)

    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as out:
        out.write('{"info": {"description": "synthetic COCO train2017-sized instances",'
                  f'"url": "scripts/bench_coco_load.py","version": "{GENERATOR_VERSION}",'
                  f'"year": 2026,"contributor": "mrcnn-workbench","seed": {seed}}},')
        out.write('"licenses": [' + ",".join(
            f'{{"url": "http://creativecommons.org/licenses/{i}/","id": {i},"name": "License {i}"}}'
            for i in range(1, 9)) + "],")
        out.write('"images": [')
        out.write(",".join(
            f'{{"license": {1 + i % 8},"file_name": "{name}",'
            f'"coco_url": "http://images.cocodataset.org/train2017/{name}","height": {h},'
            f'"width": {w},"date_captured": "2013-11-14 11:18:45",'
            f'"flickr_url": "http://farm9.staticflickr.com/8186/{iid}_4e622c8349_z.jpg",'
            f'"id": {iid}}}' for i, (iid, name, h, w) in enumerate(images)))
        out.write('],"annotations": [')
        for i in range(N_ANNOTATIONS):
            if i:
                out.write(",")
            out.write(annotation_text(rng, int(ann_ids[i]), images[owners[i]],
                                      int(categories[i]), crowds[i], vertex_mean))
        out.write('],"categories": [' + ",".join(
            f'{{"supercategory": "group{c // 10}","id": {c},"name": "category {c}"}}'
            for c in COCO_CATEGORY_IDS) + "]}")
    os.replace(tmp, path)


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{result.stdout}{result.stderr}")
    fields = dict(re.findall(r"(\w+)=([\d.]+)", result.stdout.strip().splitlines()[-1]))
    return float(fields["seconds"]), int(fields["peak_rss_kb"]) * 1024, fields


def find_exe(explicit):
    candidates = [Path(explicit)] if explicit else [
        ROOT / "build-coco/bin/bench_coco_load", ROOT / "build/bin/bench_coco_load"]
    for c in candidates:
        if c.is_file():
            return c
    sys.exit("bench_coco_load not found: build it (ninja -C build bench_coco_load) or pass --exe")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", help="bench_coco_load executable")
    parser.add_argument("--cache-dir", default="/tmp/mrcnn-bench-coco")
    parser.add_argument("--seed", type=int, default=2017)
    parser.add_argument("--repeat", type=int, default=3, help="runs of our loader (best is kept)")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the last result in docs/BENCHMARKS.md")
    args = parser.parse_args()

    exe = find_exe(args.exe)
    path = Path(args.cache_dir) / f"instances_synthetic_v{GENERATOR_VERSION}_seed{args.seed}.json"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"generating {path} (once)...", file=sys.stderr)
        start = time.perf_counter()
        generate(path, args.seed)
        print(f"  {time.perf_counter() - start:.0f} s", file=sys.stderr)
    size = path.stat().st_size
    with open(path, "rb") as f:  # into the page cache, so neither side pays the disk
        while f.read(1 << 24):
            pass

    load_before = load_average()
    rows = []
    seconds, rss, info = run([sys.executable, "-c", PYCOCOTOOLS, str(path)])
    rows.append(("pycocotools `COCO()`", seconds, rss))
    threads = os.cpu_count() or 1
    for t in sorted({1, threads}):
        best = min((run([str(exe), str(path), str(t)]) for _ in range(args.repeat)),
                   key=lambda r: r[0])
        if best[2]["annotations"] != info["annotations"] or best[2]["images"] != info["images"]:
            sys.exit(f"loaders disagree: ours {best[2]}, pycocotools {info}")
        rows.append((f"`loadCoco`, {t} thread{'s' if t > 1 else ''}", best[0], best[1]))

    base_time, base_rss = rows[0][1], rows[0][2]
    table = ["| loader | time (s) | peak RSS (MiB) | RSS / file | speed-up | RSS vs pycocotools |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, seconds, rss in rows:
        table.append(f"| {name} | {seconds:.2f} | {rss / 2**20:.0f} | {rss / size:.2f}× | "
                     f"{base_time / seconds:.1f}× | {rss / base_rss:.2f}× |")
    memory = memory_gib()
    header = (f"{machine_line(load_before)}{f', {memory:.0f} GiB' if memory else ''}; "
              f"pycocotools {importlib.metadata.version('pycocotools')}, Python "
              f"{platform.python_version()}; file `{path.name}`: {size:,} bytes "
              f"({size / 2**20:.0f} MiB, {int(info['images']):,} images, "
              f"{int(info['annotations']):,} annotations); ours best of {args.repeat}:")
    print(header)
    print("\n".join(table))
    print("target: speed-up >= 8x, peak RSS <= 2x the file")
    if args.write:
        write_last_result(SECTION, header + "\n\n" + "\n".join(table))
        print(f"docs/BENCHMARKS.md: {SECTION[3:]} / Last result rewritten")

if __name__ == "__main__":
    main()
