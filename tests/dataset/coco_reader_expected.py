#!/usr/bin/env python3
"""Expected values for test_dataset_coco: what json and pycocotools make of a COCO file.

Usage: coco_reader_expected.py <instances.json> <out.json>

Writes {"images": [...], "categories": [...], "annotations": [...], "img_to_anns": {...}}:
images and categories as the file has them (file order); for every annotation its fields as
Python's json reads them, its segmentation kind ("polygons", "counts", "compressed", "none")
and pycocotools' COCO.annToRLE(ann) as a compressed counts string ("rle"); img_to_anns is
pycocotools' imgToAnns as annotation ids, in its order. Prints one RESULT line.
"""
import json
import sys

from pycocotools.coco import COCO


def kind(segmentation):
    if isinstance(segmentation, list):
        return "polygons"
    if isinstance(segmentation, dict):
        return "compressed" if isinstance(segmentation["counts"], str) else "counts"
    return "none"


def main(path, out_path):
    coco = COCO(path)
    data = coco.dataset
    annotations = []
    for ann in data["annotations"]:
        rle = coco.annToRLE(ann)
        counts = rle["counts"]
        entry = {k: ann[k] for k in ("id", "image_id", "category_id", "area", "bbox", "iscrowd")}
        entry["ignore"] = ann.get("ignore", -1)
        entry["kind"] = kind(ann.get("segmentation"))
        entry["segmentation"] = ann.get("segmentation")
        entry["rle"] = counts.decode("ascii") if isinstance(counts, bytes) else counts
        annotations.append(entry)
    expected = {
        "images": [{k: im[k] for k in ("id", "file_name", "width", "height")}
                   for im in data["images"]],
        "categories": [{"id": c["id"], "name": c["name"],
                        "supercategory": c.get("supercategory", "")}
                       for c in data["categories"]],
        "annotations": annotations,
        "img_to_anns": {str(i): [a["id"] for a in coco.imgToAnns.get(i, [])] for i in coco.imgs},
    }
    with open(out_path, "w") as f:
        json.dump(expected, f)
    print(f"RESULT images={len(data['images'])} annotations={len(annotations)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
