#!/usr/bin/env python3
"""The label check (mrcnn-engine --task label_check) against cleanlab's object-detection label
issues on the same predictions, and prints the table of docs/BENCHMARKS.md ("Label mistakes").

A trained shapes model (specs/shapes_resnet18.txt; --checkpoint, or trained here first with
the spec's whole schedule, its mAP targets off, about 25 minutes on 2 cores) predicts on a held-out shapes set of
--images images. Into a copy of its annotations the script plants, seeded, one mistake in each
of --share of the images, the kind drawn in turn:
  missing     an annotation deleted
  wrong_class its class changed to another
  shift       box and mask moved by 20-40% of the box's size
  coarse      the mask replaced by its box (a coarse polygon) or eroded by 25% of its size
  spurious    a box added on the background, where no object is
  duplicate   an annotation copied
Both tools then see the planted annotations and the same predictions: ours through
`--task label_check --spec ... --annotations planted.json` (which runs the model on those
images; its results.json is what cleanlab gets), cleanlab through
cleanlab.object_detection.rank (get_label_quality_scores for images; overlooked, swap and
badloc box scores for single annotations). Reported per planted kind and overall:
image-level AUROC (images with that kind against images with none) and annotation-level
precision at K (K = how many of that kind were planted; our entries of the matching kind,
cleanlab's matching box scores: missing-overlooked, wrong_class-swap, the rest-badloc).

  scripts/bench_label_check.py [--checkpoint CKPT] [--images 300] [--share 0.3] [--seeds 0,1,2]
                               [--reuse] [--write]
  scripts/bench_label_check.py --annotations GT.json --results DT.json [--share 0.3] [--seeds 0]

The second form plants into any COCO set (tinycoco's val, COCO's) whose detections come from
elsewhere, a model that knows its classes (none can be had offline here: no COCO-trained
weights): ours runs in file mode on the same detections as cleanlab; it prints the table, it
writes nothing.

Each seed plants into a held-out set of its own (generator seed 7000 + seed) under
WORK/seed-N; the tables have a column per seed, and a last table the image AUROC over all the
seeds' images together (each seed's 15 planted images of a kind leave its own figure several
hundredths up or down). --write replaces the "### Last result" of
docs/BENCHMARKS.md's "Label mistakes" with this run's machine, model and tables
($MRCNN_BENCHMARKS_MD names another file to write instead).

cleanlab runs from its own venv ($MRCNN_VENV/cleanlab, made here on first use from
scripts/python-requirements-cleanlab.txt); pycocotools from the project's .venv.
"""

import argparse
import glob
import json
import os
import random
import subprocess
import sys
import time

import numpy as np
from pycocotools import mask as mask_utils

from bench_doc import load_average, machine_line, venv_python, write_last_result

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = os.path.join(ROOT, "specs", "shapes_resnet18.txt")
SECTION = "## Label mistakes"
KINDS = ["missing", "wrong_class", "shift", "coarse", "spurious", "duplicate"]
OURS_KIND = {"missing": "missing", "wrong_class": "wrong_class", "shift": "localization",
             "coarse": "localization", "spurious": "spurious", "duplicate": "duplicate"}
CLEANLAB_KIND = {"missing": "overlooked", "wrong_class": "swap", "shift": "badloc",
                 "coarse": "badloc", "spurious": "badloc", "duplicate": "badloc"}


def engine_path(build):
    path = os.path.join(build, "bin", "mrcnn-engine")
    if not os.path.exists(path):
        sys.exit("mrcnn-engine not built: flock /tmp/mrcnn-build.lock scripts/build.sh mrcnn-engine")
    return path


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


# ---- planting -------------------------------------------------------------------------------

def ann_mask(ann, h, w):
    seg = ann["segmentation"]
    if isinstance(seg, list):
        rle = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
    elif isinstance(seg["counts"], list):
        rle = mask_utils.frPyObjects(seg, h, w)
    else:
        rle = seg
    return mask_utils.decode(rle)


def set_mask(ann, mask):
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    rle["counts"] = rle["counts"].decode("ascii")
    ann["segmentation"] = rle
    ann["area"] = float(mask_utils.area(rle))
    ann["bbox"] = [float(v) for v in mask_utils.toBbox(rle)]


def moved(mask, dx, dy):
    out = np.zeros_like(mask)
    h, w = mask.shape
    xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    out[yd, xd] = mask[ys, xs]
    return out


def eroded(mask, pixels):
    out = mask.astype(bool)
    for _ in range(pixels):
        inner = out.copy()
        inner[1:, :] &= out[:-1, :]
        inner[:-1, :] &= out[1:, :]
        inner[:, 1:] &= out[:, :-1]
        inner[:, :-1] &= out[:, 1:]
        out = inner
    return out.astype(np.uint8)


def box_iou(a, b):
    ax2, ay2, bx2, by2 = a[0] + a[2], a[1] + a[3], b[0] + b[2], b[1] + b[3]
    iw = max(0.0, min(ax2, bx2) - max(a[0], b[0]))
    ih = max(0.0, min(ay2, by2) - max(a[1], b[1]))
    inter = iw * ih
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def plant(gt, share, seed):
    """Returns the planted copy and the list of plants: {image_id, kind, annotation_id, bbox}."""
    rng = random.Random(seed)
    out = json.loads(json.dumps(gt))
    images = {im["id"]: im for im in out["images"]}
    by_image = {}
    for a in out["annotations"]:
        if not a.get("iscrowd", 0):
            by_image.setdefault(a["image_id"], []).append(a)
    candidates = sorted(i for i in by_image if by_image[i])
    rng.shuffle(candidates)
    chosen = candidates[:int(round(share * len(images)))]
    categories = [c["id"] for c in out["categories"]]
    next_id = max(a["id"] for a in out["annotations"]) + 1
    plants, removed = [], set()
    for k, image_id in enumerate(chosen):
        kind = KINDS[k % len(KINDS)]
        im = images[image_id]
        h, w = im["height"], im["width"]
        ann = rng.choice(by_image[image_id])
        plant = {"image_id": image_id, "kind": kind, "annotation_id": ann["id"], "bbox": list(ann["bbox"])}
        if kind == "missing":
            removed.add(ann["id"])
        elif kind == "wrong_class":
            ann["category_id"] = rng.choice([c for c in categories if c != ann["category_id"]])
        elif kind == "shift":
            bw, bh = ann["bbox"][2], ann["bbox"][3]
            f = rng.uniform(0.2, 0.4)
            dx, dy = rng.choice([(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1)])
            set_mask(ann, moved(ann_mask(ann, h, w), int(round(dx * f * bw)), int(round(dy * f * bh))))
        elif kind == "coarse":
            m = ann_mask(ann, h, w)
            if rng.random() < 0.5:
                x, y, bw, bh = (int(round(v)) for v in ann["bbox"])
                m = np.zeros_like(m)
                m[y:y + bh, x:x + bw] = 1
            else:
                m = eroded(m, max(1, int(round(0.25 * min(ann["bbox"][2], ann["bbox"][3]) / 2))))
            if m.sum() == 0:
                m = ann_mask(ann, h, w)
            set_mask(ann, m)
        elif kind == "spurious":
            # A box on the background: clear of every annotation of the image.
            side = max(12, int(min(h, w) * rng.uniform(0.12, 0.25)))
            for _ in range(200):
                x, y = rng.randint(0, w - side), rng.randint(0, h - side)
                box = [x, y, side, side]
                if all(box_iou(box, a["bbox"]) == 0 for a in by_image[image_id]):
                    break
            m = np.zeros((h, w), np.uint8)
            m[y:y + side, x:x + side] = 1
            new = {"id": next_id, "image_id": image_id, "category_id": rng.choice(categories), "iscrowd": 0}
            set_mask(new, m)
            out["annotations"].append(new)
            plant.update(annotation_id=next_id, bbox=new["bbox"])
            next_id += 1
        elif kind == "duplicate":
            new = json.loads(json.dumps(ann))
            new["id"] = next_id
            out["annotations"].append(new)
            plant.update(annotation_id=next_id)
            next_id += 1
        plants.append(plant)
    out["annotations"] = [a for a in out["annotations"] if a["id"] not in removed]
    return out, plants


# ---- scoring --------------------------------------------------------------------------------

def auroc(positives, negatives):
    """The probability that a positive outscores a negative (ties count half)."""
    if not positives or not negatives:
        return float("nan")
    wins = 0.0
    for p in positives:
        for n in negatives:
            wins += 1.0 if p > n else 0.5 if p == n else 0.0
    return wins / (len(positives) * len(negatives))


def hits(entry, plant):
    if entry["image_id"] != plant["image_id"]:
        return False
    if plant["kind"] == "missing":
        return entry.get("annotation_id") is None and entry.get("bbox") is not None and \
            box_iou(entry["bbox"], plant["bbox"]) >= 0.5
    return entry.get("annotation_id") == plant["annotation_id"]


def precision_at_k(entries, plants):
    """entries: dicts with score, image_id, annotation_id or bbox; plants of one kind."""
    k = len(plants)
    if k == 0:
        return float("nan")
    top = sorted(entries, key=lambda e: -e["score"])[:k]
    found = sum(1 for e in top if any(hits(e, p) for p in plants))
    return found / k


def rows_for(name, image_score, entries_by_kind, plants, image_ids):
    planted_images = {p["image_id"]: p["kind"] for p in plants}
    clean = [image_score.get(i, 0.0) for i in image_ids if i not in planted_images]
    rows = {}
    for kind in KINDS + ["all"]:
        pos = [image_score.get(i, 0.0) for i, kd in planted_images.items() if kind in ("all", kd)]
        kind_plants = [p for p in plants if kind in ("all", p["kind"])]
        entries = entries_by_kind("all" if kind == "all" else kind)
        rows[kind] = {"auroc": auroc(pos, clean), "precision_at_k": precision_at_k(entries, kind_plants),
                      "k": len(kind_plants)}
    return rows


CLEANLAB_RUN = r"""
import json, sys, numpy as np
from cleanlab.object_detection.rank import (get_label_quality_scores, compute_overlooked_box_scores,
    compute_badloc_box_scores, compute_swap_box_scores)
data = json.load(open(sys.argv[1]))
labels = [{"bboxes": np.array(l["bboxes"], dtype=float).reshape(-1, 4), "labels": np.array(l["labels"], dtype=int)}
          for l in data["labels"]]
preds = [[np.array(c, dtype=float).reshape(-1, 5) for c in p] for p in data["predictions"]]
out = {"image": [float(s) for s in get_label_quality_scores(labels, preds, verbose=False)]}
for name, fn in [("overlooked", compute_overlooked_box_scores), ("badloc", compute_badloc_box_scores),
                 ("swap", compute_swap_box_scores)]:
    out[name] = [[float(v) for v in np.nan_to_num(np.asarray(s, dtype=float), nan=1.0)]
                 for s in fn(labels=labels, predictions=preds)]
import cleanlab
out["version"] = cleanlab.__version__
json.dump(out, open(sys.argv[2], "w"))
"""


def run_cleanlab(work, planted, results):
    """cleanlab's scores on the planted annotations and the predictions (boxes: it has no masks)."""
    cats = sorted(c["id"] for c in planted["categories"])
    index = {c: k for k, c in enumerate(cats)}
    image_ids = [im["id"] for im in planted["images"]]
    labels, label_ids = {i: {"bboxes": [], "labels": []} for i in image_ids}, {i: [] for i in image_ids}
    for a in planted["annotations"]:
        if a.get("iscrowd", 0):
            continue
        x, y, w, h = a["bbox"]
        labels[a["image_id"]]["bboxes"].append([x, y, x + w, y + h])
        labels[a["image_id"]]["labels"].append(index[a["category_id"]])
        label_ids[a["image_id"]].append(a["id"])
    preds = {i: [[] for _ in cats] for i in image_ids}
    pred_boxes = {i: [[] for _ in cats] for i in image_ids}
    for r in results:
        x, y, w, h = r["bbox"]
        preds[r["image_id"]][index[r["category_id"]]].append([x, y, x + w, y + h, r["score"]])
        pred_boxes[r["image_id"]][index[r["category_id"]]].append([x, y, w, h])
    payload = {"labels": [labels[i] for i in image_ids], "predictions": [preds[i] for i in image_ids]}
    src, dst = os.path.join(work, "cleanlab_in.json"), os.path.join(work, "cleanlab_out.json")
    json.dump(payload, open(src, "w"))
    started = time.perf_counter()
    subprocess.run([venv_python("cleanlab"), "-c", CLEANLAB_RUN, src, dst], check=True)
    seconds = time.perf_counter() - started
    out = json.load(open(dst))
    image_score = {i: 1.0 - s for i, s in zip(image_ids, out["image"])}
    entries = {"overlooked": [], "badloc": [], "swap": []}
    for n, i in enumerate(image_ids):
        # Overlooked scores are per predicted box (cleanlab orders them class by class).
        flat = [b for per_class in pred_boxes[i] for b in per_class]
        for box, s in zip(flat, out["overlooked"][n]):
            entries["overlooked"].append({"image_id": i, "annotation_id": None, "bbox": box, "score": 1.0 - s})
        for name in ("badloc", "swap"):
            for ann_id, s in zip(label_ids[i], out[name][n]):
                entries[name].append({"image_id": i, "annotation_id": ann_id, "score": 1.0 - s})

    def by_kind(kind):
        if kind == "all":
            return entries["overlooked"] + entries["badloc"] + entries["swap"]
        return entries[CLEANLAB_KIND[kind]]

    return image_score, by_kind, seconds, out["version"]


def run_ours(engine, work, planted_path, image_dir, checkpoint, shapes_sets):
    """Ours in spec mode: the model predicts on the planted set's images."""
    out = os.path.join(work, "ours")
    return ours_from(out, [engine, "--spec", SPEC, "--task", "label_check", "--checkpoint",
                           checkpoint, "--annotations", planted_path, "--image-dir", image_dir,
                           "--output-dir", out, "--set", "device=cpu"] + shapes_sets,
                     os.path.join(out, "inference", "results.json"))


def ours_from(out, cmd, results_path):
    """Runs our label_check (`cmd`, writing into `out`) and reads its findings."""
    started = time.perf_counter()
    run(cmd, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    mistakes = json.load(open(os.path.join(out, "mistakes.json")))["mistakes"]
    image_score = {}
    entries = []
    for m in mistakes:
        image_score[m["image_id"]] = max(image_score.get(m["image_id"], 0.0), m["score"])
        e = {"image_id": m["image_id"], "annotation_id": m["annotation_id"], "score": m["score"],
             "kind": m["kind"], "bbox": (m["suggestion"] or {}).get("bbox")}
        entries.append(e)

    def by_kind(kind):
        return entries if kind == "all" else [e for e in entries if e["kind"] == OURS_KIND[kind]]

    results = json.load(open(results_path))
    return image_score, by_kind, seconds, results


def train(engine, work, steps):
    run_dir = os.path.join(work, "train")
    # The spec's whole schedule: its mAP targets would stop it before the last decay.
    cmd = [engine, "--spec", SPEC, "--run-dir", run_dir, "--set", "device=cpu",
           "--set", "data_config.shapes_dataset.root=" + os.path.join(work, "shapes-train"),
           "--set", "target_bbox_map=0", "--set", "target_segm_map=0"]
    if steps:
        cmd += ["--set", "total_steps=%d" % steps]
    run(cmd, stdout=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "checkpoints", "last")) as f:
        return os.path.join(run_dir, "checkpoints", f.read().strip())


def one_seed(engine, checkpoint, work, args, seed):
    """Plants seed `seed`'s mistakes into a held-out set of its own (generator seed 7000 +
    seed) under work/seed-N, runs both tools and returns their rows, times and counts."""
    work = os.path.join(work, "seed-%d" % seed)
    os.makedirs(work, exist_ok=True)
    shapes = os.path.join(work, "shapes-check")
    shapes_sets = ["--set", "data_config.shapes_dataset.root=" + shapes,
                   "--set", "data_config.shapes_dataset.train_images=1",
                   "--set", "data_config.shapes_dataset.val_images=%d" % args.images,
                   "--set", "data_config.shapes_dataset.seed=%d" % (7000 + seed)]
    run([engine, "--spec", SPEC, "--task", "dataset_stats", "--run-dir", os.path.join(work, "stats")]
        + shapes_sets, stdout=subprocess.DEVNULL)
    val_json = glob.glob(os.path.join(shapes, "**", "*val*.json"), recursive=True)
    if not val_json:
        sys.exit("no val json under " + shapes)
    gt = json.load(open(val_json[0]))
    image_dir = os.path.dirname(os.path.dirname(val_json[0]))
    image_dir = os.path.join(image_dir, "images", "val")
    planted, plants = plant(gt, args.share, seed)
    planted_path = os.path.join(work, "planted.json")
    json.dump(planted, open(planted_path, "w"))
    json.dump(plants, open(os.path.join(work, "plants.json"), "w"))

    ours_image, ours_entries, ours_s, results = run_ours(engine, work, planted_path, image_dir,
                                                         checkpoint, shapes_sets)
    cl_image, cl_entries, cl_s, cl_version = run_cleanlab(work, planted, results)
    image_ids = [im["id"] for im in planted["images"]]
    result = {"seed": seed, "images": len(image_ids), "planted": len(plants),
              "detections": len(results), "ours_s": ours_s, "cleanlab_s": cl_s,
              "cleanlab_version": cl_version, "checkpoint": checkpoint,
              "ours": rows_for("ours", ours_image, ours_entries, plants, image_ids),
              "cleanlab": rows_for("cleanlab", cl_image, cl_entries, plants, image_ids)}
    json.dump(result, open(os.path.join(work, "result.json"), "w"), indent=1)
    return result


def files_set(engine, work, args, seed):
    """Any COCO set whose detections come from elsewhere (--annotations, --results: COCO
    results with segmentation, from any model that knows the set's classes): the mistakes
    planted as in a shapes set, ours in file mode (`label_check --annotations --results`, no
    model run), cleanlab on the same detections."""
    gt = json.load(open(args.annotations))
    results = json.load(open(args.results))
    known = {im["id"] for im in gt["images"]}
    unknown = sorted({r["image_id"] for r in results} - known)
    if unknown:
        sys.exit("%s: detections for image ids %s that %s does not have" %
                 (args.results, unknown[:5], args.annotations))
    work = os.path.join(work, "files-seed-%d" % seed)
    os.makedirs(work, exist_ok=True)
    planted, plants = plant(gt, args.share, seed)
    planted_path = os.path.join(work, "planted.json")
    json.dump(planted, open(planted_path, "w"))
    json.dump(plants, open(os.path.join(work, "plants.json"), "w"))
    out = os.path.join(work, "ours")
    ours_image, ours_entries, ours_s, _ = ours_from(
        out, [engine, "--task", "label_check", "--annotations", planted_path, "--results",
              os.path.abspath(args.results), "--output-dir", out], args.results)
    cl_image, cl_entries, cl_s, cl_version = run_cleanlab(work, planted, results)
    image_ids = [im["id"] for im in planted["images"]]
    return {"seed": seed, "images": len(image_ids), "planted": len(plants),
            "detections": len(results), "ours_s": ours_s, "cleanlab_s": cl_s,
            "cleanlab_version": cl_version, "checkpoint": "detections " + args.results,
            "ours": rows_for("ours", ours_image, ours_entries, plants, image_ids),
            "cleanlab": rows_for("cleanlab", cl_image, cl_entries, plants, image_ids)}


def print_seed(r):
    print("\nmodel: %s; %d images, %d planted mistakes (seed %d), %d detections" %
          (r["checkpoint"], r["images"], r["planted"], r["seed"], r["detections"]))
    print("ours: label_check %.1f s (%s); cleanlab %s: %.1f s\n" %
          (r["ours_s"], "file mode" if r["checkpoint"].startswith("detections ") else
           "with the model's inference", r["cleanlab_version"], r["cleanlab_s"]))
    print("| planted kind | K | image AUROC ours | cleanlab | precision@K ours | cleanlab |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in KINDS + ["all"]:
        o, c = r["ours"][kind], r["cleanlab"][kind]
        print("| %s | %d | %.3f | %.3f | %.2f | %.2f |" % (kind, o["k"], o["auroc"], c["auroc"],
                                                          o["precision_at_k"], c["precision_at_k"]))


def pooled_auroc(work, seeds):
    """Image AUROC per kind over the images of every seed together, ours and cleanlab's (both
    tools' image scores as each seed's run left them in its work folder): 15 planted images of
    a kind a seed make each seed's figure move by several hundredths between seeds; pooled,
    the same model and finder are judged on all of them at once."""
    ours_score, cl_score, kinds, clean = {}, {}, {}, []
    for s in seeds:
        d = os.path.join(work, "seed-%d" % s)
        planted = json.load(open(os.path.join(d, "planted.json")))
        ids = [im["id"] for im in planted["images"]]
        for m in json.load(open(os.path.join(d, "ours", "mistakes.json")))["mistakes"]:
            key = (s, m["image_id"])
            ours_score[key] = max(ours_score.get(key, 0.0), m["score"])
        cl = json.load(open(os.path.join(d, "cleanlab_out.json")))
        for i, q in zip(ids, cl["image"]):
            cl_score[(s, i)] = 1.0 - q
        planted_kind = {p["image_id"]: p["kind"] for p in json.load(open(os.path.join(d, "plants.json")))}
        for i in ids:
            if i in planted_kind:
                kinds[(s, i)] = planted_kind[i]
            else:
                clean.append((s, i))
    rows = {}
    for kind in KINDS + ["all"]:
        pos = [k for k, kd in kinds.items() if kind in ("all", kd)]
        rows[kind] = {tool: auroc([score.get(k, 0.0) for k in pos], [score.get(k, 0.0) for k in clean])
                      for tool, score in (("ours", ours_score), ("cleanlab", cl_score))}
        rows[kind]["k"] = len(pos)
    return rows


def goal_line(results):
    """Where the issue's goal stands: every kind ahead of cleanlab by >= 0.1 image AUROC, and
    >= 0.9 overall, per seed."""
    margins = [r["ours"][k]["auroc"] - r["cleanlab"][k]["auroc"] for r in results for k in KINDS]
    overall = [r["ours"]["all"]["auroc"] for r in results]
    short = ["seed %d %s (%+.2f)" % (r["seed"], k, r["ours"][k]["auroc"] - r["cleanlab"][k]["auroc"])
             for r in results for k in KINDS
             if r["ours"][k]["auroc"] - r["cleanlab"][k]["auroc"] < 0.1]
    low = ["seed %d (%.3f)" % (r["seed"], r["ours"]["all"]["auroc"]) for r in results
           if r["ours"]["all"]["auroc"] < 0.9]
    met = not short and not low
    return ("Goal (ahead of cleanlab by >= 0.1 image AUROC on every kind, >= 0.9 overall): %s. "
            "Margins %+.2f to %+.2f; overall %.3f to %.3f%s%s." %
            ("**met** on every seed" if met else "**not met**", min(margins), max(margins),
             min(overall), max(overall),
             "; under 0.1: " + ", ".join(short) if short else "",
             "; under 0.9 overall: " + ", ".join(low) if low else ""))


def doc_block(results, load_before, pooled=None):
    """The "### Last result" of the section: machine, model, both tables over the seeds."""
    seeds = [r["seed"] for r in results]
    head = ("%s; `scripts/bench_label_check.py --seeds %s`, %d images a seed, %d planted a "
            "seed; cleanlab %s; model `%s`; %d-%d detections a set; `label_check` %.0f-%.0f s "
            "a set (the model's inference included), cleanlab %.1f-%.1f s.") % (
        machine_line(load_before), ",".join(map(str, seeds)), results[0]["images"],
        results[0]["planted"], results[0]["cleanlab_version"], results[0]["checkpoint"],
        min(r["detections"] for r in results), max(r["detections"] for r in results),
        min(r["ours_s"] for r in results), max(r["ours_s"] for r in results),
        min(r["cleanlab_s"] for r in results), max(r["cleanlab_s"] for r in results))
    reused = [r["reused"] for r in results if "reused" in r]
    if reused:
        stamp = lambda t: time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))
        head += (" The tools' results of %d seed(s) are those of the runs that ended %s to %s UTC, "
                 "kept in the work folder (--reuse)." % (len(reused), stamp(min(reused)), stamp(max(reused))))
    cols = " | ".join("seed %d" % s for s in seeds)
    rule = " | ".join("---" for _ in seeds)
    auroc = ["Image AUROC, ours / cleanlab (margin):", "",
             "| planted kind | K | %s |" % cols, "| --- | --- | %s |" % rule]
    prec = ["Precision@K, ours / cleanlab:", "", "| planted kind | %s |" % cols, "| --- | %s |" % rule]
    for kind in KINDS + ["all"]:
        o = [r["ours"][kind] for r in results]
        c = [r["cleanlab"][kind] for r in results]
        auroc.append("| %s | %d | %s |" % (kind, o[0]["k"], " | ".join(
            "%.3f / %.3f (%+.2f)" % (a["auroc"], b["auroc"], a["auroc"] - b["auroc"])
            for a, b in zip(o, c))))
        prec.append("| %s | %s |" % (kind, " | ".join(
            "%.2f / %.2f" % (a["precision_at_k"], b["precision_at_k"]) for a, b in zip(o, c))))
    lines = [head, ""] + auroc + [""] + prec + ["", goal_line(results)]
    if pooled and len(results) > 1:
        lines += ["", "Image AUROC over the %d seeds' images together (%d images; planted images of "
                  "the kind against the images with none), ours / cleanlab (margin):" %
                  (len(results), sum(r["images"] for r in results)), "",
                  "| planted kind | planted images | pooled |", "| --- | --- | --- |"]
        for kind in KINDS + ["all"]:
            p = pooled[kind]
            lines.append("| %s | %d | %.3f / %.3f (%+.2f) |" % (kind, p["k"], p["ours"], p["cleanlab"],
                                                               p["ours"] - p["cleanlab"]))
        worst = min(pooled[k]["ours"] - pooled[k]["cleanlab"] for k in KINDS)
        lines += ["", "Pooled: every kind ahead of cleanlab by %+.2f or more, overall %.3f (%s)." %
                  (worst, pooled["all"]["ours"],
                   "the goal's figures met pooled" if worst >= 0.1 and pooled["all"]["ours"] >= 0.9
                   else "the goal's figures not met pooled either")]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", help="a trained shapes_resnet18 checkpoint (default: train one)")
    ap.add_argument("--train-steps", type=int, default=0, help="steps when training here (default: the spec's)")
    ap.add_argument("--images", type=int, default=300, help="held-out images checked")
    ap.add_argument("--share", type=float, default=0.3, help="share of the images with a planted mistake")
    ap.add_argument("--seeds", default="0", help="planting seeds, each on a held-out set of its own: 0,1,2,3,4")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench_label_check"))
    ap.add_argument("--build", default=os.environ.get("MRCNN_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--reuse", action="store_true",
                    help="take a seed's WORK/seed-N/result.json where there is one made with the same "
                         "checkpoint after the engine binary was built: the tables again without "
                         "running the tools")
    ap.add_argument("--annotations", help="with --results: plant into this COCO set instead of a "
                    "shapes set (e.g. tinycoco's val), its detections made elsewhere")
    ap.add_argument("--results", help="COCO results (with segmentation) on --annotations' images")
    ap.add_argument("--write", action="store_true",
                    help='rewrite the "Last result" of docs/BENCHMARKS.md\'s "Label mistakes"')
    args = ap.parse_args()
    args.work = os.path.abspath(args.work)  # the spec's relative paths are taken from its folder
    engine = engine_path(args.build)
    os.makedirs(args.work, exist_ok=True)
    if bool(args.annotations) != bool(args.results):
        ap.error("--annotations and --results go together")
    if args.annotations:
        if args.write or args.checkpoint:
            ap.error("with --annotations/--results nothing is written and no model runs")
        for seed in [int(s) for s in args.seeds.split(",") if s]:
            print_seed(files_set(engine, args.work, args, seed))
        return
    checkpoint = os.path.abspath(args.checkpoint or train(engine, args.work, args.train_steps))
    load_before = load_average()
    results = []
    for seed in [int(s) for s in args.seeds.split(",") if s]:
        kept = os.path.join(args.work, "seed-%d" % seed, "result.json")
        if (args.reuse and os.path.exists(kept) and os.path.getmtime(kept) > os.path.getmtime(engine)
                and json.load(open(kept))["checkpoint"] == checkpoint):
            results.append(dict(json.load(open(kept)), reused=os.path.getmtime(kept)))
        else:
            results.append(one_seed(engine, checkpoint, args.work, args, seed))
        print_seed(results[-1])
    block = doc_block(results, load_before, pooled_auroc(args.work, [r["seed"] for r in results]))
    print("\n" + block)
    if args.write:
        write_last_result(SECTION, block)
        print("docs/BENCHMARKS.md: %s / Last result rewritten" % SECTION[3:])


if __name__ == "__main__":
    main()
