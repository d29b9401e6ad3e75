"""pycocotools as the oracle of the COCO evaluation tests.

  eval_oracle.py evaluate GT DT TYPE OUT [IDS] COCOeval(GT, loadRes(DT), TYPE) -> OUT (json),
                                               on the comma-separated image ids IDS if given
  eval_oracle.py random SEED COUNT DIR        COUNT random cases in DIR, with expectations
  eval_oracle.py tinycoco GT_JSON SEED DIR    detections made from a real annotation file

Every case DIR/case_N/ holds gt.json, dt.json (and expected_bbox.json / expected_segm.json):
the 12 stats, per-category AP, the precision and recall arrays, and the metrics file's
pr_curves and F1 thresholds made from them, as pycocotools computes them in this very run;
and the TIDE errors as the tidecv package computes them on the same files.
"""
import contextlib
import importlib.util
import io
import json
import os
import sys
import types

import numpy as np
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval


def evaluate(gt_path, dt_path, iou_type, out_path, image_ids=None):
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(gt_path)
        dt = gt.loadRes(dt_path)
        e = COCOeval(gt, dt, iou_type)
        if image_ids:
            e.params.imgIds = sorted(image_ids)
        e.evaluate()
        e.accumulate()
        e.summarize()
    precision = e.eval["precision"]
    per_category = {}
    for k, cat in enumerate(e.params.catIds):
        p = precision[:, :, k, 0, -1]
        p = p[p > -1]
        per_category[str(cat)] = float(np.mean(p)) if p.size else -1.0
    # The metrics file's error-analysis parts, from pycocotools' own arrays: precision at
    # IoU .50 and .75 (area all, 100 detections), and per category the recall point of the
    # .50 curve with the largest F1 (the first on ties) with eval['scores'] there.
    iou = list(np.round(e.params.iouThrs, 2))
    pr_curves, pr_scores, thresholds = {}, {}, {}
    for k, cat in enumerate(e.params.catIds):
        pr_curves[str(cat)] = {"0.50": precision[iou.index(0.5), :, k, 0, -1].tolist(),
                               "0.75": precision[iou.index(0.75), :, k, 0, -1].tolist()}
        pr_scores[str(cat)] = {"0.50": e.eval["scores"][iou.index(0.5), :, k, 0, -1].tolist()}
        p = precision[iou.index(0.5), :, k, 0, -1]
        rec = np.array(e.params.recThrs)
        valid = (p > 0) & (rec > 0)
        best = None
        if valid.any():
            f1 = np.where(valid, 2 * p * rec / np.where(valid, p + rec, 1), -1.0)
            r = int(np.argmax(f1))
            best = {"score": float(e.eval["scores"][iou.index(0.5), r, k, 0, -1]),
                    "precision": float(p[r]), "recall": float(rec[r]), "f1": float(f1[r])}
        thresholds[str(cat)] = best
    matrix, cells = confusion(gt, dt, iou_type, e.params.imgIds)
    tide = tide_errors(gt, dt, iou_type, e.params.imgIds)
    with open(out_path, "w") as f:
        json.dump({"stats": [float(s) for s in e.stats], "per_category": per_category,
                   "confusion": {"categories": sorted(gt.getCatIds()), "matrix": matrix,
                                 "images": cells},
                   "precision": precision.ravel().tolist(),
                   "recall": e.eval["recall"].ravel().tolist(),
                   "shape": list(precision.shape),
                   "pr_curves": pr_curves, "pr_scores": pr_scores, "thresholds": thresholds,
                   "tide": tide}, f)


class _Absent(types.ModuleType):
    """Stands for a module tidecv imports only to draw (matplotlib, cv2, seaborn, ...)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Absent(f"{self.__name__}.{name}")

    def __call__(self, *args, **kwargs):
        return self


def load_tidecv():
    """tidecv's computing classes. It is installed without its plotting dependencies
    (scripts/python-requirements-nodeps.txt); those it imports at load time are stood in for
    by empty modules. Its TIDERun is what TIDE.evaluate() runs, without the plotter."""
    absent = [top for top in ("cv2", "matplotlib", "pandas", "seaborn", "appdirs")
              if top not in sys.modules and importlib.util.find_spec(top) is None]
    for name in ("cv2", "matplotlib", "matplotlib.pyplot", "matplotlib.lines", "pandas",
                 "seaborn", "appdirs"):
        if name.split(".")[0] in absent:
            sys.modules[name] = _Absent(name)
    from tidecv.ap import ClassedAPDataObject
    from tidecv.data import Data
    from tidecv.quantify import TIDERun

    # tidecv divides by zero where no class has ground truth or detections (e.g. once every
    # detection of an image set without objects is dropped as a background error); the
    # metrics file calls that mAP 0.
    if not getattr(ClassedAPDataObject, "_zero_when_empty", False):
        mean = ClassedAPDataObject.get_mAP

        def get_map(self):
            try:
                return mean(self)
            except ZeroDivisionError:
                return 0.0
        ClassedAPDataObject.get_mAP = get_map
        ClassedAPDataObject._zero_when_empty = True
    return Data, TIDERun


def tide_errors(gt, dt, iou_type, image_ids, pos=0.5, bg=0.1):
    """TIDE's main and special dAP, error counts and errors per image, from tidecv on the
    ground truth and results as pycocotools loaded them (boxes of mask-only results from
    loadRes), in file order, on the evaluated images; categories outside the ground truth
    take no part (the metrics file's rule)."""
    Data, TIDERun = load_tidecv()
    mode = "bbox" if iou_type == "bbox" else "mask"
    cats = set(gt.getCatIds())
    ids = set(image_ids)
    g, p = Data("gt", max_dets=100), Data("dt")
    for img in gt.dataset["images"]:
        if img["id"] in ids:
            g.add_image(img["id"], img["file_name"])
    for c in gt.dataset["categories"]:
        g.add_class(c["id"], c["name"])
    for a in gt.dataset["annotations"]:
        if a["image_id"] not in ids or a["category_id"] not in cats:
            continue
        add = g.add_ignore_region if a["iscrowd"] else g.add_ground_truth
        add(a["image_id"], a["category_id"], a["bbox"], gt.annToRLE(a) if mode == "mask" else None)
    for d in dt.dataset["annotations"]:
        if d["category_id"] in cats and d["image_id"] in ids:
            p.add_detection(d["image_id"], d["category_id"], d["score"], d["bbox"],
                            d.get("segmentation") if mode == "mask" else None)
    run = TIDERun(g, p, pos, bg, mode, g.max_dets, True)
    main = {e.short_name: float(v) for e, v in run.fix_main_errors().items()}
    special = {e.short_name: float(v) for e, v in run.fix_special_errors().items()}
    ap = float(run.ap)
    counts = {e.short_name: int(v) for e, v in run.count_errors().items()}
    per_image = {}
    for error in run.errors:
        owner = error.pred if hasattr(error, "pred") else error.gt
        per_image[str(owner["image"])] = per_image.get(str(owner["image"]), 0) + 1
    return {"ap": ap, "main": main, "special": special, "counts": counts, "images": per_image}


def confusion(gt, dt, iou_type, image_ids, iou_thr=0.5, score_thr=0.5):
    """The metrics file's confusion matrix, written here from its definition with
    pycocotools' IoU: per image, detections scoring >= score_thr, highest first (loadRes
    order on ties), each to the unmatched non-crowd ground truth of any class with the
    largest IoU >= iou_thr (the first on ties); else ignored if it overlaps a crowd region by
    iou_thr, else background. Rows: ground-truth class (+ background), columns: predicted
    class (+ missed). Also the images behind each non-empty cell: [[row, col, [ids]]...]."""
    cats = sorted(gt.getCatIds())
    index = {c: i for i, c in enumerate(cats)}
    K = len(cats)
    m = np.zeros((K + 1, K + 1), dtype=np.int64)
    images = {}

    def count(row, col, img):
        m[row, col] += 1
        images.setdefault((row, col), set()).add(img)

    def geometry(coco, anns):
        if iou_type == "bbox":
            return [a["bbox"] for a in anns]
        return [coco.annToRLE(a) for a in anns]

    for img in image_ids:
        anns = [a for a in gt.loadAnns(gt.getAnnIds(imgIds=[img])) if a["category_id"] in index]
        objects = [a for a in anns if not a["iscrowd"]]
        crowds = [a for a in anns if a["iscrowd"]]
        dts = [d for d in dt.loadAnns(dt.getAnnIds(imgIds=[img]))
               if d["score"] >= score_thr and d["category_id"] in index]
        dts.sort(key=lambda d: -d["score"])
        matched = [False] * len(objects)
        iou_o = (mask_utils.iou(geometry(dt, dts), geometry(gt, objects), [0] * len(objects))
                 if dts and objects else None)
        iou_c = (mask_utils.iou(geometry(dt, dts), geometry(gt, crowds), [1] * len(crowds))
                 if dts and crowds else None)
        for d, det in enumerate(dts):
            best, best_iou = -1, iou_thr
            for g in range(len(objects)):
                v = iou_o[d][g]
                if not matched[g] and (v > best_iou or (v == best_iou and best < 0)):
                    best, best_iou = g, v
            if best >= 0:
                matched[best] = True
                count(index[objects[best]["category_id"]], index[det["category_id"]], img)
            elif iou_c is None or not any(iou_c[d][g] >= iou_thr for g in range(len(crowds))):
                count(K, index[det["category_id"]], img)
        for g, obj in enumerate(objects):
            if not matched[g]:
                count(index[obj["category_id"]], K, img)
    cells = [[int(r), int(c), sorted(int(i) for i in ids)] for (r, c), ids in sorted(images.items())]
    return m.tolist(), cells


def random_mask(rng, h, w, box):
    x, y, bw, bh = box
    m = np.zeros((h, w), dtype=np.uint8)
    yy, xx = np.mgrid[0:h, 0:w]
    cx, cy = x + bw / 2, y + bh / 2
    rx, ry = max(bw / 2, 0.5), max(bh / 2, 0.5)
    m[((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1.0 + rng.uniform(-0.3, 0.3)] = 1
    if rng.random() < 0.3:  # a hole or a bite
        m[((xx - cx - rx / 2) / (rx / 2)) ** 2 + ((yy - cy) / (ry / 2)) ** 2 <= 1] = 0
    return m


def random_box(rng, h, w, tiny=False, huge=False):
    if huge:
        return [float(rng.uniform(0, 3)), float(rng.uniform(0, 3)), float(w - 4), float(h - 4)]
    side = rng.uniform(1, 6) if tiny else rng.uniform(4, max(5, min(h, w) * 0.8))
    bw = float(np.clip(side * rng.uniform(0.5, 1.5), 1, w - 1))
    bh = float(np.clip(side * rng.uniform(0.5, 1.5), 1, h - 1))
    return [round(float(rng.uniform(0, w - bw)), 2), round(float(rng.uniform(0, h - bh)), 2), round(bw, 2), round(bh, 2)]


def polygon_of(box, rng):
    x, y, w, h = box
    n = int(rng.integers(3, 9))
    t = np.sort(rng.uniform(0, 2 * np.pi, n))
    px = x + w / 2 + np.cos(t) * w / 2 * rng.uniform(0.6, 1.0, n)
    py = y + h / 2 + np.sin(t) * h / 2 * rng.uniform(0.6, 1.0, n)
    return [round(float(v), 2) for pair in zip(px, py) for v in pair]


def rle_json(m, compressed):
    r = mask_utils.encode(np.asfortranarray(m))
    if compressed:
        return {"size": r["size"], "counts": r["counts"].decode("ascii")}
    # uncompressed counts, as COCO's crowd annotations store them
    flat = m.ravel(order="F")
    counts, prev, run = [], 0, 0
    for v in flat:
        if v != prev:
            counts.append(run)
            run, prev = 0, v
        run += 1
    counts.append(run)
    return {"size": list(m.shape), "counts": [int(c) for c in counts]}


def make_case(rng, directory):
    os.makedirs(directory, exist_ok=True)
    n_images = int(rng.integers(1, 9))
    cat_ids = sorted(int(c) for c in rng.choice(np.arange(1, 30), size=int(rng.integers(1, 6)), replace=False))
    images = [{"id": int(i), "width": int(rng.integers(30, 320)), "height": int(rng.integers(30, 320)),
               "file_name": f"{i}.jpg"} for i in rng.choice(np.arange(1, 10000), n_images, replace=False)]
    anns, dts = [], []
    ann_id = int(rng.integers(1, 50))
    score_pool = [0.1, 0.5, 0.5, 0.9] if rng.random() < 0.5 else None
    many = rng.random() < 0.1  # past maxDets=100
    for img in images:
        h, w = img["height"], img["width"]
        masks = []
        for _ in range(int(rng.integers(0, 7))):
            cat = int(rng.choice(cat_ids[:-1] if len(cat_ids) > 1 and rng.random() < 0.3 else cat_ids))
            box = random_box(rng, h, w, tiny=rng.random() < 0.15, huge=rng.random() < 0.08)
            crowd = rng.random() < 0.12
            if crowd:
                m = random_mask(rng, h, w, box)
                seg = rle_json(m, compressed=False)
                area = float(m.sum())
                box = [float(v) for v in mask_utils.toBbox(mask_utils.encode(np.asfortranarray(m)))]
            else:
                seg = [polygon_of(box, rng)]
                r = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
                m = mask_utils.decode(r)
                area = float(mask_utils.area(r)) if rng.random() < 0.8 else round(box[2] * box[3], 2)
            anns.append({"id": ann_id, "image_id": img["id"], "category_id": cat, "bbox": box,
                         "area": area, "iscrowd": int(crowd), "segmentation": seg})
            masks.append((cat, box, m))
            ann_id += int(rng.integers(1, 3))
        n_dt = int(rng.integers(0, 16)) + (int(rng.integers(90, 130)) if many else 0)
        for _ in range(n_dt):
            if masks and rng.random() < 0.7:
                cat, box, m = masks[int(rng.integers(0, len(masks)))]
                if rng.random() < 0.15:
                    cat = int(rng.choice(cat_ids))
                jitter = rng.normal(0, max(1.0, min(box[2], box[3]) * 0.15), 4)
                b = [box[0] + jitter[0], box[1] + jitter[1], box[2] + jitter[2], box[3] + jitter[3]]
                b = [round(float(np.clip(b[0], 0, w - 1)), 2), round(float(np.clip(b[1], 0, h - 1)), 2),
                     round(float(max(b[2], 0.5)), 2), round(float(max(b[3], 0.5)), 2)]
                dm = np.roll(m, (int(round(jitter[1])), int(round(jitter[0]))), axis=(0, 1))
            else:
                cat = int(rng.choice(cat_ids)) if rng.random() < 0.95 else 999  # 999: not in GT
                b = random_box(rng, h, w, tiny=rng.random() < 0.2)
                dm = random_mask(rng, h, w, b)
            score = float(rng.choice(score_pool)) if score_pool else round(float(rng.random()), 3)
            dts.append({"image_id": img["id"], "category_id": cat, "bbox": b, "score": score,
                        "segmentation": rle_json(dm.astype(np.uint8), compressed=True)})
    # Half the cases give masks without boxes: loadRes then takes area and box from the mask.
    if rng.random() < 0.5:
        for d in dts:
            del d["bbox"]
    categories = [{"id": c, "name": f"c{c}", "supercategory": "x"} for c in cat_ids]
    rng.shuffle(images)
    with open(os.path.join(directory, "gt.json"), "w") as f:
        json.dump({"images": images, "annotations": anns, "categories": categories}, f)
    with open(os.path.join(directory, "dt.json"), "w") as f:
        json.dump(dts, f)
    return bool(dts)


def write_expected(directory, types):
    for iou_type in types:
        evaluate(os.path.join(directory, "gt.json"), os.path.join(directory, "dt.json"), iou_type,
                 os.path.join(directory, f"expected_{iou_type}.json"))


def main():
    mode = sys.argv[1]
    if mode == "evaluate":
        ids = [int(i) for i in sys.argv[6].split(",")] if len(sys.argv) > 6 else None
        evaluate(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], ids)
    elif mode == "random":
        rng = np.random.default_rng(int(sys.argv[2]))
        count, root = int(sys.argv[3]), sys.argv[4]
        made = 0
        while made < count:
            directory = os.path.join(root, f"case_{made}")
            if make_case(rng, directory):  # pycocotools' loadRes cannot take an empty list
                write_expected(directory, ["segm", "bbox"])
                made += 1
    elif mode == "tinycoco":
        gt_path, seed, directory = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        rng = np.random.default_rng(seed)
        os.makedirs(directory, exist_ok=True)
        with contextlib.redirect_stdout(io.StringIO()):
            gt = COCO(gt_path)
        dts = []
        for ann in gt.dataset["annotations"]:
            img = gt.imgs[ann["image_id"]]
            m = gt.annToMask(ann)
            for _ in range(int(rng.integers(0, 3))):
                shift = rng.integers(-6, 7, 2)
                dm = np.roll(m, (int(shift[0]), int(shift[1])), axis=(0, 1)).astype(np.uint8)
                x, y, w, h = ann["bbox"]
                cat = ann["category_id"] if rng.random() < 0.85 else int(rng.choice(gt.getCatIds()))
                dts.append({"image_id": ann["image_id"], "category_id": cat,
                            "bbox": [x + float(shift[1]), y + float(shift[0]), w, h],
                            "score": round(float(rng.random()), 2),
                            "segmentation": rle_json(dm, compressed=True)})
        with open(os.path.join(directory, "dt.json"), "w") as f:
            json.dump(dts, f)
        evaluate(gt_path, os.path.join(directory, "dt.json"), "bbox", os.path.join(directory, "expected_bbox.json"))
        evaluate(gt_path, os.path.join(directory, "dt.json"), "segm", os.path.join(directory, "expected_segm.json"))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
