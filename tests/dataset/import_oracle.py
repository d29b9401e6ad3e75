"""The dataset importers' oracle (tests/dataset/test_import.cpp): datumaro reads the same files
as our importer and writes its COCO, which the C++ test compares with ours instance by
instance. Run with the datumaro environment's Python ($MRCNN_VENV/datumaro, scripts/setup.sh).

  import_oracle.py coco FORMAT INPUT OUT_DIR
      datumaro imports INPUT as FORMAT (cvat, coco_instances, voc_instance_segmentation,
      yolo_ultralytics) and exports COCO instances into OUT_DIR (one json a subset, images not
      copied).
  import_oracle.py fixtures TINYCOCO OUT_DIR
      Writes the fixtures our importer reads, from tinycoco's real annotations, none by us:
      OUT_DIR/voc       datumaro's VOC instance segmentation export (palette PNGs, labelmap.txt,
                        ImageSets): what our VOC reader and datumaro's both then read;
      OUT_DIR/yolo_box  datumaro's Ultralytics YOLO export (boxes: datumaro 1.13 has no YOLO
                        segmentation exporter), subsets train and val;
      OUT_DIR/yolo_seg  the same images with segmentation lines, `class x1 y1 ...` normalised as
                        Ultralytics' format documents them, written here from tinycoco's
                        single-polygon, non-crowd annotations (datumaro cannot write them), and
                        OUT_DIR/yolo_seg_expected.json, those annotations as COCO (the oracle).
"""

import json
import os
import shutil
import sys

import datumaro as dm


def export_coco(fmt, src, out_dir):
    dataset = dm.Dataset.import_from(src, fmt)
    dataset.export(out_dir, "coco_instances", save_media=False)


def tinycoco_dataset(tinycoco):
    dataset = dm.Dataset.import_from(tinycoco, "coco_instances")
    # tinycoco's subsets are train2017 and val2017; the YOLO exporter wants train and val.
    return dataset.transform("map_subsets", mapping={"train2017": "train", "val2017": "val"})


def write_fixtures(tinycoco, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    dataset = tinycoco_dataset(tinycoco)
    # VOC's instance PNGs hold masks: datumaro paints only mask annotations into them.
    voc = os.path.join(out_dir, "voc")
    dataset.transform("polygons_to_masks").export(voc, "voc_instance_segmentation", save_media=True)
    # The export also writes the detection task's Annotations/*.xml (the COCO boxes), which
    # datumaro's reader would group with the masks; the instance segmentation data set is the
    # PNGs, which both readers then read alone.
    shutil.rmtree(os.path.join(voc, "Annotations"))
    dataset.export(os.path.join(out_dir, "yolo_box"), "yolo_ultralytics", save_media=True)

    # YOLO segmentation: the box export's images and data.yaml, labels rewritten as polygons.
    seg = os.path.join(out_dir, "yolo_seg")
    shutil.copytree(os.path.join(out_dir, "yolo_box"), seg)
    expected = {"images": [], "annotations": [], "categories": []}
    names = None
    for subset, json_name in (("train", "instances_train2017.json"), ("val", "instances_val2017.json")):
        with open(os.path.join(tinycoco, "annotations", json_name)) as f:
            coco = json.load(f)
        if names is None:
            # The box export numbered the classes in tinycoco's category order.
            names = {c["id"]: i for i, c in enumerate(sorted(coco["categories"], key=lambda c: c["id"]))}
            expected["categories"] = coco["categories"]
        lines = {im["id"]: [] for im in coco["images"]}
        for ann in coco["annotations"]:
            if ann["iscrowd"] or len(ann["segmentation"]) != 1:
                continue
            im = next(i for i in coco["images"] if i["id"] == ann["image_id"])
            size = [im["width"], im["height"]]
            normalised = ["%.6f" % (v / size[k % 2]) for k, v in enumerate(ann["segmentation"][0])]
            lines[im["id"]].append("%d %s" % (names[ann["category_id"]], " ".join(normalised)))
            # The expected polygon is what the line says, back in pixels: six decimals move a
            # point by up to 3e-4 px, which flips a pixel of a 5-pixel object.
            polygon = [float(t) * size[k % 2] for k, t in enumerate(normalised)]
            expected["annotations"].append(dict(ann, image_id=im["file_name"], segmentation=[polygon]))
        for im in coco["images"]:
            stem = os.path.splitext(im["file_name"])[0]
            with open(os.path.join(seg, "labels", subset, stem + ".txt"), "w") as f:
                f.write("".join(line + "\n" for line in lines[im["id"]]))
            expected["images"].append(im)
    # Image ids of the two files overlap: the expected file names images by file name.
    ids = {im["file_name"]: k + 1 for k, im in enumerate(expected["images"])}
    for im in expected["images"]:
        im["id"] = ids[im["file_name"]]
    for k, ann in enumerate(expected["annotations"]):
        ann["image_id"] = ids[ann["image_id"]]
        ann["id"] = k + 1
    with open(os.path.join(out_dir, "yolo_seg_expected.json"), "w") as f:
        json.dump(expected, f)


def main(argv):
    if len(argv) == 5 and argv[1] == "coco":
        export_coco(argv[2], argv[3], argv[4])
    elif len(argv) == 4 and argv[1] == "fixtures":
        write_fixtures(argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
