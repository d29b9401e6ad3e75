#!/usr/bin/env python3
"""Parity oracle for the dataset module: pycocotools reads what our C++ code wrote.

Usage: check_shapes_with_pycocotools.py <shapes root> <cpp.json>

cpp.json is written by test_dataset_shapes:
  {"annotations": {"train": {"<ann id>": "<compressed counts>"}, "val": {...}},
   "polygons": [{"h": H, "w": W, "polygons": [[x0, y0, ...], ...],
                 "counts": "<compressed counts>", "area": A, "bbox": [x, y, w, h]}, ...]}
The counts strings are what the C++ mask API makes of each segmentation (polygons rasterised
and merged, RLEs decoded and re-encoded). For every annotation of both splits this checks
that pycocotools' annToRLE gives the same string, that annToMask(...).sum() equals the
annotation's area and that toBbox equals its bbox; for every random polygon set, that
frPyObjects + merge give the same string, area and box. Prints one RESULT line with the
numbers checked; exits 1 on any mismatch.
"""
import json
import sys

import numpy as np
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO


def as_text(counts):
    return counts.decode("ascii") if isinstance(counts, bytes) else counts


def check_split(root, split, expected, failures):
    coco = COCO(f"{root}/annotations/instances_{split}.json")
    anns = coco.dataset["annotations"]
    if len(expected) != len(anns):
        failures.append(f"{split}: C++ sent {len(expected)} annotations, json has {len(anns)}")
    for ann in anns:
        where = f"{split} annotation {ann['id']}"
        rle = coco.annToRLE(ann)
        mask = coco.annToMask(ann)
        if int(mask.sum()) != ann["area"]:
            failures.append(f"{where}: annToMask sum {int(mask.sum())} != area {ann['area']}")
        if int(mask_utils.area(rle)) != ann["area"]:
            failures.append(f"{where}: maskUtils.area {mask_utils.area(rle)} != {ann['area']}")
        box = mask_utils.toBbox(rle)
        if not np.allclose(box, ann["bbox"], rtol=0, atol=1e-9):
            failures.append(f"{where}: toBbox {box.tolist()} != bbox {ann['bbox']}")
        ours = expected.get(str(ann["id"]))
        if as_text(rle["counts"]) != ours:
            failures.append(f"{where}: pycocotools counts {as_text(rle['counts'])!r} != C++ {ours!r}")
    return len(anns)


def check_polygons(cases, failures):
    for i, case in enumerate(cases):
        h, w = case["h"], case["w"]
        rle = mask_utils.merge(mask_utils.frPyObjects(case["polygons"], h, w))
        where = f"polygon case {i} (h={h}, w={w}, polygons={case['polygons']})"
        if as_text(rle["counts"]) != case["counts"]:
            failures.append(f"{where}: pycocotools {as_text(rle['counts'])!r} != C++ {case['counts']!r}")
        if int(mask_utils.area(rle)) != case["area"]:
            failures.append(f"{where}: area {mask_utils.area(rle)} != C++ {case['area']}")
        box = mask_utils.toBbox(rle)
        if not np.array_equal(box, np.array(case["bbox"], dtype=np.float64)):
            failures.append(f"{where}: toBbox {box.tolist()} != C++ {case['bbox']}")
    return len(cases)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    root, cpp_path = sys.argv[1], sys.argv[2]
    with open(cpp_path) as f:
        cpp = json.load(f)
    failures = []
    annotations = sum(check_split(root, split, cpp["annotations"][split], failures)
                      for split in ("train", "val"))
    polygons = check_polygons(cpp["polygons"], failures)
    print(f"RESULT annotations={annotations} polygons={polygons} failures={len(failures)}")
    for failure in failures[:20]:
        print("MISMATCH", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
