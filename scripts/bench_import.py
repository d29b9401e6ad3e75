#!/usr/bin/env python3
"""Times the dataset importer (dataset/import, through the bench_import driver) against
datumaro on the same generated data set, and prints the table of docs/BENCHMARKS.md
("Dataset import").

Rows: the two commands a user types (mrcnn-data, which runs the tasks on files without
LibTorch, and mrcnn-workbench --headless in front of it), then the bench_import driver (the
importer alone, on the LabelMe files and on the CVAT XML).

The data: N images (default 10,000; small PNGs, one file each) with a few polygons each,
written twice with the same annotations: as LabelMe JSON files (one a picture, the issue's
case) and as one CVAT for images 1.1 XML. datumaro has no reader for LabelMe's JSON (its
`label_me` format is MIT LabelMe's XML), so the peer row is datumaro reading the CVAT XML and
exporting COCO; we time our importer on both inputs, so the ratio compares the same files.

  scripts/bench_import.py [--images N] [--repeat R] [--threads T] [--write]

With --write the "### Last result" subsection of docs/BENCHMARKS.md ("## Dataset import") is
replaced by this run's machine, date and table.

Build first: flock /tmp/mrcnn-build.lock scripts/build.sh bench_import mrcnn-data mrcnn-workbench
datumaro runs from its venv ($MRCNN_VENV/datumaro, made by scripts/setup.sh).
"""

import argparse
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

from bench_doc import cpu_features, cpu_name, find_program, load_average, replace_subsection

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABELS = ["car", "cat", "dog", "person", "tree"]
WIDTH, HEIGHT = 320, 240


def find_driver():
    build = os.environ.get("MRCNN_BUILD_DIR", os.path.join(ROOT, "build"))
    for dirpath, _, files in os.walk(build):
        if "bench_import" in files:
            return os.path.join(dirpath, "bench_import")
    sys.exit("bench_import not built: flock /tmp/mrcnn-build.lock scripts/build.sh bench_import")


def tiny_png(width, height):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grayscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def polygon(rng):
    cx, cy = rng.uniform(40, WIDTH - 40), rng.uniform(40, HEIGHT - 40)
    n = rng.randint(6, 14)
    pts = []
    for k in range(n):
        # A star-shaped polygon around the centre: always simple, never self-crossing.
        angle = 2 * 3.141592653589793 * k / n
        r = rng.uniform(10, 35)
        pts.append([round(cx + r * math.cos(angle), 2), round(cy + r * math.sin(angle), 2)])
    return pts


def generate(root, count, seed=0):
    rng = random.Random(seed)
    labelme = os.path.join(root, "labelme")
    cvat_dir = os.path.join(root, "cvat")
    os.makedirs(labelme)
    os.makedirs(os.path.join(cvat_dir, "images"))
    # One small grey PNG (made with zlib: no imaging library needed), linked under every name.
    png = tiny_png(WIDTH, HEIGHT)
    xml = [
        '<?xml version="1.0" encoding="utf-8"?>\n<annotations>\n<version>1.1</version>\n<meta><task><labels>'
        + "".join("<label><name>%s</name></label>" % l for l in LABELS)
        + "</labels></task></meta>\n"
    ]
    for i in range(count):
        name = "img%05d.png" % i
        with open(os.path.join(labelme, name), "wb") as f:
            f.write(png)
        shapes = []
        xml.append('<image id="%d" name="%s" width="%d" height="%d">\n' % (i, name, WIDTH, HEIGHT))
        for _ in range(rng.randint(2, 4)):
            label = rng.choice(LABELS)
            pts = polygon(rng)
            shapes.append({"label": label, "points": pts, "group_id": None, "shape_type": "polygon", "flags": {}})
            xml.append(
                '<polygon label="%s" occluded="0" points="%s" z_order="0"/>\n'
                % (label, ";".join("%s,%s" % (x, y) for x, y in pts))
            )
        xml.append("</image>\n")
        doc = {"version": "5.4.1", "flags": {}, "shapes": shapes, "imagePath": name, "imageData": None,
               "imageHeight": HEIGHT, "imageWidth": WIDTH}
        with open(os.path.join(labelme, "img%05d.json" % i), "w") as f:
            json.dump(doc, f, indent=2)
        os.link(os.path.join(labelme, name), os.path.join(cvat_dir, "images", name))
    xml.append("</annotations>\n")
    with open(os.path.join(cvat_dir, "annotations.xml"), "w") as f:
        f.write("".join(xml))
    return labelme, cvat_dir


def time_command(argv, out):
    """Wall seconds of a whole command a user types (its start included)."""
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(" ".join(argv) + " failed: " + result.stderr[-3000:])
    return wall


def time_ours(driver, fmt, src, out, threads):
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    result = subprocess.run([driver, fmt, src, out, str(threads)], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit("bench_import failed: " + result.stderr)
    counts = result.stdout.split()
    return wall, int(counts[1]), int(counts[3])


DATUMARO_RUN = """
import sys, time
t0 = time.perf_counter()
import datumaro as dm
t1 = time.perf_counter()
ds = dm.Dataset.import_from(sys.argv[1], "cvat")
ds.export(sys.argv[2], "coco_instances", save_media=False)
t2 = time.perf_counter()
print(dm.__version__, t2 - t1, t1 - t0)
"""


def time_datumaro(src, out):
    python = os.path.join(os.environ.get("MRCNN_VENV", os.path.join(ROOT, ".venv")), "datumaro", "bin", "python")
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    result = subprocess.run([python, "-c", DATUMARO_RUN, src, out], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit("datumaro failed: " + result.stderr[-3000:])
    version, work, load = result.stdout.split()[-3:]
    return wall, float(work), float(load), version


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of ours; the best counts")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="rewrite the table in docs/BENCHMARKS.md")
    args = parser.parse_args()
    load_before = load_average()
    driver = find_driver()
    with tempfile.TemporaryDirectory(prefix="bench_import_") as tmp:
        labelme, cvat_dir = generate(tmp, args.images)
        out = os.path.join(tmp, "out")
        ours_labelme = min((time_ours(driver, "labelme", labelme, out, args.threads) for _ in range(args.repeat)),
                           key=lambda r: r[0])
        ours_cvat = min((time_ours(driver, "cvat", cvat_dir, out, args.threads) for _ in range(args.repeat)),
                        key=lambda r: r[0])
        # The commands a user runs: mrcnn-data (no LibTorch), and the headless launcher in
        # front of it. Their threads: all cores (2 on the benchmark machine).
        task = ["--task", "dataset_import", "--format", "labelme", "--input", labelme, "--output-dir", out]
        data_wall = min(time_command([find_program("mrcnn-data")] + task, out) for _ in range(args.repeat))
        headless_wall = min(time_command([find_program("mrcnn-workbench"), "--headless"] + task, out)
                            for _ in range(args.repeat))
        dm_wall, dm_work, dm_load, dm_version = time_datumaro(os.path.join(cvat_dir, "annotations.xml"), out)
    rows = [
        "| what | input | wall s | vs datumaro |",
        "| --- | --- | ---: | ---: |",
        "| ours: `mrcnn-data --task dataset_import` | LabelMe JSON, %d files | %.2f | %.1fx |"
        % (args.images, data_wall, dm_wall / data_wall),
        "| ours: `mrcnn-workbench --headless --task dataset_import` | LabelMe JSON, %d files | %.2f | %.1fx |"
        % (args.images, headless_wall, dm_wall / headless_wall),
        "| ours (bench_import) | LabelMe JSON, %d files | %.2f | %.1fx |"
        % (args.images, ours_labelme[0], dm_wall / ours_labelme[0]),
        "| ours (bench_import) | CVAT XML, 1 file | %.2f | %.1fx |" % (ours_cvat[0], dm_wall / ours_cvat[0]),
        "| datumaro %s (CVAT -> COCO) | CVAT XML, 1 file | %.2f (%.2f import+export, %.2f `import datumaro`) | 1.0x |"
        % (dm_version, dm_wall, dm_work, dm_load),
    ]
    header = ("%s, %d cores (`%s`, %s), load average %.1f before the run; %d images, %d instances, "
              "%d threads for ours:" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count(),
                                        cpu_name(), cpu_features(), load_before, ours_labelme[1],
                                        ours_labelme[2], args.threads))
    print(header)
    print("\n".join(rows))
    if args.write:
        replace_subsection("## Dataset import", "### Last result",
                           "### Last result\n\n" + header + "\n\n" + "\n".join(rows) + "\n")
        print("docs/BENCHMARKS.md: Dataset import / Last result rewritten")


if __name__ == "__main__":
    main()
