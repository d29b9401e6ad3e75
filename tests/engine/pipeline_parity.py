"""The whole pipeline from the image file on, against torchvision, for
tests/engine/test_mask_rcnn.cpp: `mrcnn-engine --task inference` on image files against
torchvision's `model([image])` on the same files, with the same weights.

    pipeline_parity.py make OUT_DIR
    pipeline_parity.py compare OUT_DIR RESULTS.json

make: the seeded random, confident torchvision Mask R-CNN of mask_rcnn_parity.py
(OUT_DIR/model.pt), four real photos of tinycoco of four padded sizes as JPEG and as PNG
(decoding then cannot differ) in OUT_DIR/images, and torchvision's detections of each file, one image a call as a
user runs it (OUT_DIR/expected.json: boxes as [x, y, w, h] in the file's pixels, scores,
category ids), and the confident ones of the JPEGs as a COCO ground truth
(OUT_DIR/truth.json) for the evaluation's batches.

compare: matches each of torchvision's top 50 detections of every file with ours (the
results.json the engine wrote): the same category, every box coordinate within 0.05 px, the
score within 1e-3. Prints one JSON line (matched, compared, the worst box and score
differences, per file) and exits 1 when fewer than 98% match. Test-only: the product never
runs Python.
"""

import glob
import json
import os
import shutil
import sys

import torch
import torchvision
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mask_rcnn_parity  # noqa: E402

TOP = 50
BOX_PX = 0.05
SCORE = 1e-3
REQUIRED_SHARE = 0.98


def photos():
    """Four photos of tinycoco whose padded sizes at torchvision's resize differ (landscape
    and portrait, 4:3 and 3:2): batched together, each is padded beyond its own size."""
    root = os.path.join(os.environ["MRCNN_SHARED_DIR"], "data/tinycoco/images")
    chosen, sizes = [], set()
    for path in sorted(glob.glob(os.path.join(root, "*", "*.jpg"))):
        w, h = Image.open(path).size
        scale = min(800 / min(h, w), 1333 / max(h, w))
        padded = tuple(-(-int(v * scale) // 32) * 32 for v in (h, w))
        if padded not in sizes:
            sizes.add(padded)
            chosen.append(path)
        if len(chosen) == 4:
            return chosen
    raise SystemExit(f"need photos of 4 padded sizes in {root}, found {sorted(sizes)}")


def make(out_dir):
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = mask_rcnn_parity.build()
    mask_rcnn_parity.randomise(model, torch.Generator().manual_seed(2024))
    torch.save(model.state_dict(), os.path.join(out_dir, "model.pt"))
    model.eval()

    images = os.path.join(out_dir, "images")
    os.makedirs(images, exist_ok=True)
    files = []
    for photo in photos():
        name = os.path.basename(photo)
        shutil.copyfile(photo, os.path.join(images, name))
        # "png_" sorts after the JPEGs: the engine's batches of 2 then mix sizes as well.
        png = "png_" + os.path.splitext(name)[0] + ".png"
        Image.open(photo).convert("RGB").save(os.path.join(images, png))
        files += [name, png]
    expected = {}
    with torch.no_grad():
        for name in files:
            image = torchvision.io.read_image(os.path.join(images, name),
                                              torchvision.io.ImageReadMode.RGB).float() / 255.0
            d = model([image])[0]
            boxes = d["boxes"]
            expected[name] = [
                {"bbox": [float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])],
                 "score": float(s), "category_id": int(c)}
                for b, s, c in zip(boxes, d["scores"], d["labels"])]
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f)
    # torchvision's confident detections of the JPEGs as a COCO ground truth (boxes as
    # polygons for segm): evaluating our model against it gives AP 1 exactly when our
    # detections are torchvision's, whatever the evaluation's batches.
    truth = {"images": [], "annotations": [],
             "categories": [{"id": c, "name": f"class {c}"} for c in range(1, 91)]}
    for index, name in enumerate(n for n in files if n.endswith(".jpg")):
        w, h = Image.open(os.path.join(images, name)).size
        truth["images"].append({"id": index + 1, "file_name": name, "width": w, "height": h})
        for d in expected[name]:
            if d["score"] < 0.5:
                continue
            x, y, bw, bh = d["bbox"]
            truth["annotations"].append({
                "id": len(truth["annotations"]) + 1, "image_id": index + 1,
                "category_id": d["category_id"], "bbox": d["bbox"], "area": bw * bh,
                "iscrowd": 0, "segmentation": [[x, y, x + bw, y, x + bw, y + bh, x, y + bh]]})
    with open(os.path.join(out_dir, "truth.json"), "w") as f:
        json.dump(truth, f)
    print(f"pipeline_parity: {len(files)} files, detections "
          f"{[len(v) for v in expected.values()]}; torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}")


def compare(out_dir, results_path):
    with open(os.path.join(out_dir, "expected.json")) as f:
        expected = json.load(f)
    with open(results_path) as f:
        ours_all = json.load(f)
    ours_by_file = {}
    for r in ours_all:
        ours_by_file.setdefault(r["file_name"], []).append(r)
    matched = compared = 0
    worst_box = worst_score = 0.0
    per_file = {}
    for name, theirs in expected.items():
        theirs = sorted(theirs, key=lambda d: -d["score"])[:TOP]
        ours = ours_by_file.get(name, [])
        used = [False] * len(ours)
        n = 0
        for t in theirs:
            for k, o in enumerate(ours):
                if used[k] or o["category_id"] != t["category_id"]:
                    continue
                # Corners, as both sides compute them; xywh rounds the width.
                to = [o["bbox"][0], o["bbox"][1], o["bbox"][0] + o["bbox"][2], o["bbox"][1] + o["bbox"][3]]
                tt = [t["bbox"][0], t["bbox"][1], t["bbox"][0] + t["bbox"][2], t["bbox"][1] + t["bbox"][3]]
                box = max(abs(a - b) for a, b in zip(to, tt))
                score = abs(o["score"] - t["score"])
                if box <= BOX_PX and score <= SCORE:
                    used[k] = True
                    n += 1
                    worst_box = max(worst_box, box)
                    worst_score = max(worst_score, score)
                    break
        matched += n
        compared += len(theirs)
        per_file[name] = [n, len(theirs), len(ours)]
    share = matched / compared if compared else 1.0
    print(json.dumps({"matched": matched, "compared": compared, "share": share,
                      "worst_box_px": worst_box, "worst_score": worst_score,
                      "per_file": per_file}))
    if share < REQUIRED_SHARE:
        raise SystemExit(1)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
