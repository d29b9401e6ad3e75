#!/usr/bin/env python3
"""Parity oracle for the C++ mask API (dataset/mask/rle.h): pycocotools recomputes, we compare.

Usage: mask_api_check.py tinycoco <cpp.json>
       mask_api_check.py random <cpp.json>

Both files are written by test_dataset_mask_api, with the C++ results next to the inputs:

tinycoco: {"<split>": {"file": <instances json>, "images": [{"image_id", "annotations":
    [{"id", "counts", "area", "bbox"}], "segm_iou": [[...]], "bbox_iou": [[...]]}]}}
  For every annotation: COCO.annToRLE's compressed string, maskUtils.area and toBbox; for
  every image: maskUtils.iou between all its annotations (annToRLE masks, then the "bbox"
  fields), with their iscrowd flags.

random: {"masks": [{"h", "w", "bits" (column-major "0"/"1"), "counts", "area", "bbox"}],
         "strings": [{"h", "w", "counts", "recoded", "area", "bbox"}],
         "polygons": [{"h", "w", "lists", "error", "counts", "merged", "area", "bbox"}],
         "box_masks": [{"h", "w", "boxes", "counts"}],
         "uncompressed": [{"size", "counts", "error", "out", "area", "bbox"}],
         "merges": [{"inputs", "union", "intersection"}],
         "mask_ious": [{"dt", "gt", "iscrowd", "iou"}], "box_ious": [same with boxes]}
  "error": true means the C++ side threw; pycocotools must raise too.

Every comparison is exact (strings, integers, doubles). pycocotools' area is uint32, so a
C++ area (uint64) is compared modulo 2^32. Prints one RESULT line; exits 1 on any mismatch.
"""
import json
import sys

import numpy as np
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO


def text(counts):
    return counts.decode("ascii") if isinstance(counts, bytes) else counts


class Checker:
    def __init__(self):
        self.failures = []

    def equal(self, where, what, theirs, ours):
        if theirs != ours:
            self.failures.append(f"{where}: {what}: pycocotools {theirs!r} != C++ {ours!r}")

    def mask_stats(self, where, rle, case):
        """area and bbox of a pycocotools RLE against the case's C++ values."""
        self.equal(where, "area", int(mask_utils.area(rle)), case["area"] % 2**32)
        self.equal(where, "toBbox", mask_utils.toBbox(rle).tolist(), case["bbox"])

    def matrix(self, where, theirs, ours):
        if isinstance(theirs, list):  # pycocotools returns [] when a side is empty
            self.equal(where, "iou", theirs, ours)
            return 0
        ours = np.array(ours, dtype=np.float64)
        if ours.shape != theirs.shape or not np.array_equal(ours, theirs, equal_nan=True):
            bad = "shape" if ours.shape != theirs.shape else np.argwhere(ours != theirs)[:5].tolist()
            self.failures.append(f"{where}: iou differs at {bad}:\npycocotools {theirs.tolist()}\n"
                                 f"C++ {ours.tolist()}")
        return theirs.size


def check_tinycoco(cpp, c):
    annotations = images = pairs = 0
    for split, data in cpp.items():
        coco = COCO(data["file"])
        seen = set()
        for image in data["images"]:
            where = f"{split} image {image['image_id']}"
            anns = [coco.anns[a["id"]] for a in image["annotations"]]
            c.equal(where, "annotation ids", [a["id"] for a in coco.imgToAnns[image["image_id"]]],
                    [a["id"] for a in anns])
            rles = []
            for ann, ours in zip(anns, image["annotations"]):
                rle = coco.annToRLE(ann)
                rles.append(rle)
                c.equal(f"{where} annotation {ann['id']}", "counts", text(rle["counts"]),
                        ours["counts"])
                c.mask_stats(f"{where} annotation {ann['id']}", rle, ours)
                seen.add(ann["id"])
            crowd = [a["iscrowd"] for a in anns]
            pairs += c.matrix(f"{where} segm", mask_utils.iou(rles, rles, crowd), image["segm_iou"])
            boxes = [a["bbox"] for a in anns]
            c.matrix(f"{where} bbox", mask_utils.iou(boxes, boxes, crowd), image["bbox_iou"])
            annotations += len(anns)
            images += 1
        missing = set(coco.anns) - seen
        if missing:
            c.failures.append(f"{split}: C++ sent no results for annotations {sorted(missing)[:10]}")
    print(f"RESULT tinycoco annotations={annotations} images={images} pairs={pairs} "
          f"failures={len(c.failures)}")


def raises(f):
    try:
        return False, f()
    except Exception as e:  # pycocotools raises TypeError, IndexError, Exception, ...
        return True, e


def check_random(cpp, c):
    for i, case in enumerate(cpp["masks"]):
        h, w = case["h"], case["w"]
        mask = (np.frombuffer(case["bits"].encode(), np.uint8) - 48).reshape((h, w), order="F")
        where = f"mask {i} ({h}x{w})"
        rle = mask_utils.encode(np.asfortranarray(mask))
        c.equal(where, "encode", text(rle["counts"]), case["counts"])
        decoded = mask_utils.decode({"size": [h, w], "counts": case["counts"]})
        if not np.array_equal(decoded, mask):
            c.failures.append(f"{where}: pycocotools decodes the C++ string to another mask")
        c.mask_stats(where, rle, case)

    for i, case in enumerate(cpp["strings"]):
        where = f"string {i} {case['counts']!r} ({case['h']}x{case['w']})"
        rle = {"size": [case["h"], case["w"]], "counts": case["counts"]}
        c.equal(where, "decoded and encoded", text(mask_utils.merge([rle])["counts"]),
                case["recoded"])
        c.mask_stats(where, rle, case)

    for i, case in enumerate(cpp["polygons"]):
        h, w = case["h"], case["w"]
        where = f"polygons {i} ({h}x{w}, {case['lists']})"
        failed, rles = raises(lambda: mask_utils.frPyObjects(case["lists"], h, w))
        if failed != case["error"]:
            c.failures.append(f"{where}: pycocotools {'raises ' + repr(rles) if failed else 'works'}"
                              f", C++ {'threw' if case['error'] else 'did not'}")
            continue
        if failed:
            continue
        c.equal(where, "frPyObjects", [text(r["counts"]) for r in rles], case["counts"])
        merged = mask_utils.merge(rles)
        c.equal(where, "merge", text(merged["counts"]), case["merged"])
        c.mask_stats(where, merged, case)

    for i, case in enumerate(cpp["box_masks"]):
        h, w = case["h"], case["w"]
        rles = mask_utils.frPyObjects(np.array(case["boxes"], dtype=np.double), h, w)
        c.equal(f"box masks {i} ({h}x{w}, {case['boxes']})", "frBbox",
                [text(r["counts"]) for r in rles], case["counts"])

    for i, case in enumerate(cpp["uncompressed"]):
        h, w = case["size"]
        where = f"uncompressed {i} ({h}x{w}, {case['counts']})"
        # The image size given (here a wrong one) must not matter: the object's size counts.
        failed, rle = raises(lambda: mask_utils.frPyObjects(case, h + 7, w + 3))
        if failed != case["error"]:
            c.failures.append(f"{where}: pycocotools {'raises ' + repr(rle) if failed else 'works'}"
                              f", C++ {'threw' if case['error'] else 'did not'}")
            continue
        if failed:
            continue
        c.equal(where, "size", rle["size"], [h, w])
        c.equal(where, "counts", text(rle["counts"]), case["out"])
        c.mask_stats(where, rle, case)

    for i, case in enumerate(cpp["merges"]):
        where = f"merge {i} ({len(case['inputs'])} masks of {case['inputs'][0]['size']})"
        c.equal(where, "union", text(mask_utils.merge(case["inputs"])["counts"]), case["union"])
        c.equal(where, "intersection", text(mask_utils.merge(case["inputs"], 1)["counts"]),
                case["intersection"])

    pairs = 0
    for kind in ("mask_ious", "box_ious"):
        for i, case in enumerate(cpp[kind]):
            theirs = mask_utils.iou(case["dt"], case["gt"], case["iscrowd"])
            pairs += c.matrix(f"{kind} {i} (dt {case['dt']}, gt {case['gt']}, iscrowd "
                              f"{case['iscrowd']})", theirs, case["iou"])

    counts = " ".join(f"{k}={len(cpp[k])}" for k in ("masks", "strings", "polygons"))
    print(f"RESULT random {counts} boxes={len(cpp['box_masks'])} "
          f"uncompressed={len(cpp['uncompressed'])} merges={len(cpp['merges'])} "
          f"mask_ious={len(cpp['mask_ious'])} box_ious={len(cpp['box_ious'])} pairs={pairs} "
          f"failures={len(c.failures)}")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("tinycoco", "random"):
        print(__doc__)
        return 2
    with open(sys.argv[2]) as f:
        cpp = json.load(f)
    c = Checker()
    (check_tinycoco if sys.argv[1] == "tinycoco" else check_random)(cpp, c)
    for failure in c.failures[:20]:
        print("MISMATCH", failure[:1000])
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
