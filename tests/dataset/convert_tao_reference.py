"""TAO's dataset_convert warnings, recomputed with pycocotools and scikit-image, to check
ours by hand: prints the <tag>_warnings.json TAO would write for a COCO instances json (its
box rule, then its mask rule with find_contours), in json.dump's layout.

  python tests/dataset/convert_tao_reference.py instances.json

Needs scikit-image besides pycocotools (see convert_contours.py). Annotations the COCO reader
skips for a negative box size land in "box" on our side; TAO's rule puts them there too.
"""
import json
import sys

import numpy as np
from pycocotools import mask as mask_util
from skimage import measure


def ann_to_rle(ann, h, w):
    segm = ann["segmentation"]
    if isinstance(segm, list):
        return mask_util.merge(mask_util.frPyObjects(segm, h, w))
    if isinstance(segm["counts"], list):
        return mask_util.frPyObjects(segm, h, w)
    return segm


def main(path):
    data = json.load(open(path))
    images = {im["id"]: im for im in data["images"]}
    warnings = {}
    for image in data["images"]:
        w_img, h_img = image["width"], image["height"]
        entry = {"box": [], "mask": []}
        for ann in data["annotations"]:
            if ann["image_id"] != image["id"]:
                continue
            x, y, w, h = ann["bbox"]
            if w <= 0 or h <= 0 or x + w > w_img or y + h > h_img:
                entry["box"].append(ann["id"])
                continue
            binary = mask_util.decode(ann_to_rle(ann, h_img, w_img))
            if binary.shape[0] < 2 or binary.shape[1] < 2:
                continue
            contours = measure.find_contours(binary, 0.5)
            if not contours:
                continue
            p = np.concatenate(contours)
            min_x, max_x, min_y, max_y = p[:, 1].min(), p[:, 1].max(), p[:, 0].min(), p[:, 0].max()
            if x - 1 > min_x or y - 1 > min_y or x + w + 1 < max_x or y + h + 1 < max_y:
                entry["mask"].append(ann["id"])
        if entry["box"] or entry["mask"]:
            entry["box"].sort()
            entry["mask"].sort()
            warnings[str(image["id"])] = entry
    del images
    print(json.dumps(warnings))


if __name__ == "__main__":
    main(sys.argv[1])
