#!/usr/bin/env python3
"""A rare class with and without the repeat-factor sampler (data_config.repeat_threshold): the
shapes spec's model trained twice on the same skewed training set, once plain and once with
class-balanced repeats, and evaluated on a balanced validation split; the rare class's bbox and
segm AP and the overall AP of each. Prints the table of docs/BENCHMARKS.md ("Class imbalance").

The set: the embedded shapes dataset (specs/shapes_resnet18.txt's generator settings, 1200
training images, --val-images balanced validation images) with the training images holding a
"star" kept only until stars are --share of the instances (every image without a star kept),
so stars are rare in training and as common as the other classes in validation.

  scripts/bench_rare_class.py [--steps 1000] [--threshold 0.3] [--share 0.05] [--write]

Each training takes about 7 minutes for 1000 steps on 2 cores.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_doc import ROOT, find_program, load_average, machine_line, report_section  # noqa: E402

SPEC = os.path.join(ROOT, "specs", "shapes_resnet18.txt")
RARE = "star"


def skewed(train_json, out_json, share, seed):
    coco = json.load(open(train_json))
    rare = next(c["id"] for c in coco["categories"] if c["name"] == RARE)
    by_image = {}
    for a in coco["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    with_rare = [i["id"] for i in coco["images"] if any(a["category_id"] == rare for a in by_image.get(i["id"], []))]
    keep = {i["id"] for i in coco["images"]} - set(with_rare)
    count = lambda ids, rare_only: sum(1 for i in ids for a in by_image.get(i, []) if not rare_only or a["category_id"] == rare)
    random.Random(seed).shuffle(with_rare)
    for image_id in with_rare:
        if count(keep, True) + count([image_id], True) > share * (count(keep, False) + count([image_id], False)):
            break
        keep.add(image_id)
    coco["images"] = [i for i in coco["images"] if i["id"] in keep]
    coco["annotations"] = [a for a in coco["annotations"] if a["image_id"] in keep]
    json.dump(coco, open(out_json, "w"))
    return rare, len(coco["images"]), count(keep, True), count(keep, False), sum(1 for i in keep if i in set(with_rare))


def train(engine, spec, run_dir, sets):
    cmd = [engine, "--spec", spec, "--task", "train", "--run-dir", run_dir]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("training failed:\n" + p.stderr[-3000:])
    evals = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{") and '"type":"eval"' in l]
    return evals[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--threshold", type=float, default=0.3)
    parser.add_argument("--share", type=float, default=0.05)
    parser.add_argument("--val-images", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="rewrite the section in docs/BENCHMARKS.md")
    args = parser.parse_args()
    engine = find_program("mrcnn-engine")
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="bench_rare_") as tmp:
        root = os.path.join(tmp, "shapes")
        subprocess.run([engine, "--spec", SPEC, "--task", "dataset_stats", "--set", "data_config.shapes_dataset.root=" + root,
                        "--set", "data_config.shapes_dataset.val_images=%d" % args.val_images],
                       check=True, capture_output=True)
        # The spec without its generator, so that training reads the skewed files.
        text = open(SPEC).read()
        start = text.index("  shapes_dataset {")
        spec = os.path.join(tmp, "spec.txt")
        with open(spec, "w") as f:
            f.write(text[:start] + text[text.index("}", start) + 2:])
        train_json = os.path.join(tmp, "train_skewed.json")
        rare, images, rare_n, all_n, rare_images = skewed(os.path.join(root, "annotations", "instances_train.json"),
                                                          train_json, args.share, args.seed)
        decay = [int(args.steps * 0.78), int(args.steps * 0.93)]
        common = ["total_steps=%d" % args.steps, "learning_rate_steps=[%d, %d]" % tuple(decay),
                  "num_steps_per_eval=%d" % args.steps, "save_checkpoints_steps=%d" % args.steps,
                  "target_bbox_map=0", "target_segm_map=0", "device=cpu",
                  "data_config.train_json_file=" + train_json,
                  "data_config.train_image_dir=" + os.path.join(root, "images", "train"),
                  "data_config.val_json_file=" + os.path.join(root, "annotations", "instances_val.json"),
                  "data_config.val_image_dir=" + os.path.join(root, "images", "val")]
        rows = ["| training | repeat_threshold | %s bbox AP | %s segm AP | bbox AP (all) | segm AP (all) | minutes |" % (RARE, RARE),
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for name, threshold in (("plain", 0.0), ("repeat factors", args.threshold)):
            start = time.time()
            e = train(engine, spec, os.path.join(tmp, name.replace(" ", "_")), common + ["data_config.repeat_threshold=%g" % threshold])
            minutes = (time.time() - start) / 60
            ap = lambda kind: e[kind]["perCategoryAp"].get(str(rare), float("nan"))
            rows.append("| %s | %g | %.3f | %.3f | %.3f | %.3f | %.1f |" % (
                name, threshold, ap("bbox"), ap("segm"), e["bbox"]["stats"][0], e["segm"]["stats"][0], minutes))
            print(rows[-1], flush=True)
    header = ("%s; %d training images, %d of them with a %s (%d of %d instances, %.1f%%), %d balanced validation "
              "images; %d steps of the shapes spec each:" % (machine_line(load_before), images, rare_images, RARE,
                                                              rare_n, all_n, 100.0 * rare_n / all_n, args.val_images, args.steps))
    report_section("## Class imbalance", header, rows, args.write)


if __name__ == "__main__":
    main()
