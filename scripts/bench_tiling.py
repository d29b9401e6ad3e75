#!/usr/bin/env python3
"""Tiled inference (mrcnn-engine --task inference --tile) against SAHI's sliced prediction
around torchvision's Mask R-CNN with the same weights, and the whole image, on large images
of small objects; prints the table of docs/BENCHMARKS.md ("Tiled inference vs SAHI").

The data, seeded, written here (--work, default build/bench-data/tiling):
  large/      --images canvases of --size x --size pixels, each holding --shapes shapes
              (circle, square, triangle, star) of 12 to 40 pixels, apart from each other, on a
              noisy background of its own colour; COCO ground truth with the shapes' polygons
  crops/      --crops training images of --tile x --tile pixels cut from canvases drawn the
              same way (shapes may lie across a crop's border: what the crop holds of them is
              annotated when it is at least 30% of the shape), and 100 validation crops
A model (scripts/bench_specs/tiles_resnet18.txt: the shapes spec's ResNet-18 FPN at a canvas of
--tile) is trained on the crops (--checkpoint skips this; about half an hour on 2 cores).

Rows, every one on the same large images and scored by pycocotools (bbox and segm AP):
  whole image   ours, each large image resized into the model's canvas (no tiling)
  SAHI          sahi.predict.get_sliced_prediction: tiles of --tile with --overlap, no
                whole-image pass, around torchvision's MaskRCNN built to the spec and loaded
                with our checkpoint (strict=True; scripts/bench_train.py builds it), torch's
                threads set to the engine's, under inference_mode; twice: called with its
                GREEDYNMM merge (IOS 0.5), which at the spec's score threshold (0.05) SAHI
                replaces by NMS/IOU itself, and with GREEDYNMM forced. A detection whose mask
                makes no polygon (SAHI 0.12.8 raises on it) is kept as its box.
  ours          mrcnn-engine --task inference --tile --tile-overlap: LibTorch with
                --tile-merge nmm and nms, OpenVINO f32 and int8 (the checkpoint's
                --task export --data_type int8, calibrated on --cal validation crops) with nmm
Seconds per image: SAHI's whole call per image (slicing, model, merge, its COCO predictions;
its model built and loaded before); ours from the engine's event that the backend is ready to
its last event (decoding, tiles, merge, results written; --no-overlays, as SAHI draws
nothing), the ratio to SAHI's on that; and ours over the whole task (engine start, model load
or compilation included) in a column of its own.
Before the rows, the script checks that torchvision's model is ours: on the validation crops
both run untiled, and the share of our detections that torchvision matches (same label, box
IoU >= 0.9, score within 0.05) is printed with the table.

  scripts/bench_tiling.py [--checkpoint CKPT] [--images 2] [--size 2000] [--tile 128]
                          [--overlap 0.2] [--cal 16] [--write]

SAHI runs from its own venv ($MRCNN_VENV/sahi, made on first use from
scripts/python-requirements-sahi.txt; it reads torch and torchvision from the project's .venv).
With --write, this CPU's subsection of the section is rewritten; other CPUs' stay.
"""

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time

import numpy as np
from PIL import Image, ImageDraw

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench_doc import (BF16_FLAGS, FP32_FLAGS, find_program, float_flags_unless_bf16,  # noqa: E402
                       kernels_folder, load_average, machine_line, native_bf16,
                       out_of_date, replace_machine_subsection, venv_python)

SPEC = os.path.join(ROOT, "scripts", "bench_specs", "tiles_resnet18.txt")
SECTION = "## Tiled inference vs SAHI"
KINDS = ["circle", "square", "triangle", "star"]
MIN_PX, MAX_PX = 12, 40


# ---- data -----------------------------------------------------------------------------------

def outline(kind, cx, cy, size, angle):
    """The shape's polygon, [(x, y), ...]; `size` is its diameter."""
    r = size / 2
    if kind == "circle":
        corners = [(r, 2 * math.pi * k / 48) for k in range(48)]
    elif kind == "square":
        corners = [(r, angle + math.pi / 4 + math.pi / 2 * k) for k in range(4)]
    elif kind == "triangle":
        corners = [(r, angle + 2 * math.pi * k / 3) for k in range(3)]
    else:
        corners = [(r if k % 2 == 0 else 0.45 * r, angle + math.pi * k / 5) for k in range(10)]
    return [(cx + d * math.cos(a), cy + d * math.sin(a)) for d, a in corners]


def polygon_area(points):
    return abs(sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in
                   zip(points, points[1:] + points[:1]))) / 2


def clipped(points, width, height):
    """The polygon cut to the rectangle [0, width] x [0, height] (Sutherland-Hodgman)."""
    def cut(poly, inside, cross):
        out = []
        for k, p in enumerate(poly):
            q = poly[k - 1]
            if inside(p):
                if not inside(q):
                    out.append(cross(q, p))
                out.append(p)
            elif inside(q):
                out.append(cross(q, p))
        return out

    def at_x(x):
        return lambda a, b: (x, a[1] + (b[1] - a[1]) * (x - a[0]) / (b[0] - a[0]))

    def at_y(y):
        return lambda a, b: (a[0] + (b[0] - a[0]) * (y - a[1]) / (b[1] - a[1]), y)

    poly = list(points)
    for inside, cross in [(lambda p: p[0] >= 0, at_x(0)), (lambda p: p[0] <= width, at_x(width)),
                          (lambda p: p[1] >= 0, at_y(0)), (lambda p: p[1] <= height, at_y(height))]:
        if not poly:
            break
        poly = cut(poly, inside, cross)
    return poly


def canvas(rng, width, height, count, margin=0):
    """A background and `count` shapes placed apart (their boxes 3 px from each other), centres
    anywhere in the canvas grown by `margin`. Returns the image and [(kind, polygon)]."""
    base = np.array([rng.randint(20, 110) for _ in range(3)], np.float32)
    noise = np.random.default_rng(rng.randint(0, 2 ** 31)).normal(0, 6, (height, width, 1))
    pixels = np.clip(base + noise, 0, 255).astype(np.uint8)
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    shapes, boxes = [], []
    for _ in range(count * 30):
        if len(shapes) == count:
            break
        size = math.exp(rng.uniform(math.log(MIN_PX), math.log(MAX_PX)))
        cx = rng.uniform(size / 2 - margin, width - size / 2 + margin)
        cy = rng.uniform(size / 2 - margin, height - size / 2 + margin)
        box = (cx - size / 2 - 3, cy - size / 2 - 3, cx + size / 2 + 3, cy + size / 2 + 3)
        if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in boxes):
            continue
        kind = rng.choice(KINDS)
        points = outline(kind, cx, cy, size, rng.uniform(0, 2 * math.pi))
        colour = tuple(rng.randint(150, 255) if k == rng.randint(0, 2) else rng.randint(60, 255)
                       for k in range(3))
        draw.polygon(points, fill=colour)
        shapes.append((kind, points))
        boxes.append(box)
    return image, shapes


def annotation(ann_id, image_id, kind, points):
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return {"id": ann_id, "image_id": image_id, "category_id": KINDS.index(kind) + 1,
            "segmentation": [[round(v, 2) for p in points for v in p]],
            "area": polygon_area(points), "iscrowd": 0,
            "bbox": [min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)]}


def write_set(folder, name, rng, count, width, height, shapes_per_image, margin=0):
    """Draws `count` canvases into folder/name/ and their COCO json into folder/name.json."""
    images_dir = os.path.join(folder, name)
    shutil.rmtree(images_dir, ignore_errors=True)  # a set of another size before
    os.makedirs(images_dir)
    coco = {"images": [], "annotations": [],
            "categories": [{"id": k + 1, "name": n} for k, n in enumerate(KINDS)]}
    for i in range(count):
        n = shapes_per_image(rng)
        image, shapes = canvas(rng, width, height, n, margin)
        file_name = "%s_%05d.png" % (name, i)
        image.save(os.path.join(images_dir, file_name))
        coco["images"].append({"id": i + 1, "file_name": file_name, "width": width, "height": height})
        for kind, points in shapes:
            inside = clipped(points, width, height) if margin else points
            if len(inside) < 3 or polygon_area(inside) < 0.3 * polygon_area(points):
                continue
            coco["annotations"].append(annotation(len(coco["annotations"]) + 1, i + 1, kind, inside))
    with open(os.path.join(folder, name + ".json"), "w") as f:
        json.dump(coco, f)
    return images_dir, os.path.join(folder, name + ".json")


def make_data(args):
    done = os.path.join(args.work, "data.done")
    key = "%d %d %d %d %d %d" % (args.seed, args.images, args.size, args.shapes, args.tile, args.crops)
    data = {"large": (os.path.join(args.work, "large", "large"), os.path.join(args.work, "large", "large.json")),
            "train": (os.path.join(args.work, "crops", "train"), os.path.join(args.work, "crops", "train.json")),
            "val": (os.path.join(args.work, "crops", "val"), os.path.join(args.work, "crops", "val.json"))}
    if os.path.exists(done) and open(done).read() == key:
        return data
    started = time.time()
    write_set(os.path.join(args.work, "large"), "large", random.Random(args.seed), args.images,
              args.size, args.size, lambda r: args.shapes)
    # Crops: as dense as the large images, at least one shape in most of them.
    per_crop = args.shapes * (args.tile + MAX_PX) ** 2 / args.size ** 2
    for name, count, seed in [("train", args.crops, args.seed + 1), ("val", 100, args.seed + 2)]:
        write_set(os.path.join(args.work, "crops"), name, random.Random(seed), count, args.tile,
                  args.tile, lambda r: max(0, int(round(r.gauss(max(per_crop, 2.0), 1.0)))),
                  margin=MAX_PX / 2)
    with open(done, "w") as f:
        f.write(key)
    print("data written in %.0f s" % (time.time() - started), flush=True)
    return data


# ---- the model ------------------------------------------------------------------------------

def data_sets(data):
    return ["--set", "data_config.train_image_dir=" + data["train"][0],
            "--set", "data_config.train_json_file=" + data["train"][1],
            "--set", "data_config.val_image_dir=" + data["val"][0],
            "--set", "data_config.val_json_file=" + data["val"][1]]


def train(engine, args, data):
    run_dir = os.path.join(args.work, "train")
    cmd = [engine, "--spec", SPEC, "--run-dir", run_dir] + data_sets(data)
    if args.steps:
        cmd += ["--set", "total_steps=%d" % args.steps]
    print("+ training:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "checkpoints", "last")) as f:
        return os.path.join(run_dir, "checkpoints", f.read().strip())


def ours(engine, checkpoint, data, images, out, extra):
    cmd = [engine, "--spec", SPEC, "--task", "inference", "--checkpoint", checkpoint,
           "--images", images, "--out", out, "--no-overlays"] + data_sets(data) + extra
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit("%s\nexit %d\n%s%s" % (" ".join(cmd), done.returncode, done.stdout, done.stderr))
    described = ""
    ready = finished = None
    for line in done.stdout.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("type") == "log" and event.get("text", "").startswith("backend: "):
            described = event["text"][len("backend: "):]
            ready = event["time"]
        if event.get("type") == "done":
            finished = event["time"]
    if ready is None or finished is None:
        raise SystemExit("%s\nno backend or done event in its output" % " ".join(cmd))
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f), Timing(seconds, finished - ready), described


class Timing:
    """A task's wall time, and the part of it after the model was ready (the images: decoding,
    tiles, merge, results written), the same scope as SAHI's call per image."""

    def __init__(self, whole, images):
        self.whole, self.images = whole, images


def export(engine, checkpoint, data, work, cal):
    """model.onnx and model.int8.onnx (calibrated on `cal` validation crops) of the checkpoint."""
    # The export's int8 choices depend on the kernels it times and checks: a run capped to
    # AVX2 (MRCNN_BENCH_ISA) has its own.
    out = kernels_folder(os.path.join(work, "export"))
    # An export older than the engine or the checkpoint is made again (the int8 choices of a
    # newer engine may differ): a stale one was timed before.
    if out_of_date(os.path.join(out, "model.int8.onnx"), engine, checkpoint):
        shutil.rmtree(out, ignore_errors=True)
        cmd = [engine, "--spec", SPEC, "--task", "export", "--checkpoint", checkpoint, "--output-dir", out,
               "--data_type", "int8", "--cal_image_dir", data["val"][0], "--batches", str(cal),
               "--set", "device=cpu"] + data_sets(data) + float_flags_unless_bf16()
        print("+ export:", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return os.path.join(out, "model.onnx"), os.path.join(out, "model.int8.onnx")


# ---- SAHI and torchvision's model, in SAHI's venv -------------------------------------------

PEER = r"""
import json, math, sys, time
import numpy as np, torch
from PIL import Image
sys.path.insert(0, sys.argv[1])
import bench_train
import sahi.models.torchvision as sahi_torchvision
from sahi.models.torchvision import TorchVisionDetectionModel
from sahi.predict import get_sliced_prediction

# SAHI 0.12.8 raises "Invalid segmentation mask" on a detection whose mask of a few pixels
# makes no polygon, which ends the whole call: such a detection is kept as its box alone.
made, box_only = sahi_torchvision.ObjectPrediction, [0]
def tolerant(*a, **k):
    try:
        return made(*a, **k)
    except ValueError:
        box_only[0] += 1
        k["segmentation"] = None
        return made(*a, **k)
sahi_torchvision.ObjectPrediction = tolerant
job = json.load(open(sys.argv[2]))
torch.set_num_threads(job["threads"])
s = bench_train.resolve_spec(job["engine"], job["spec"], job["sets"])
model = bench_train.build_torchvision(s)
model.load_state_dict(bench_train.our_state(job["checkpoint"]), strict=True)
model.eval()
m = s["raw"]["maskrcnn_config"]
model.roi_heads.score_thresh = float(m.get("test_score_thresh", 0.05))
model.roi_heads.nms_thresh = float(m.get("test_nms", 0.5))
model.roi_heads.detections_per_img = int(m.get("test_detections_per_image", 100))
model.rpn.nms_thresh = float(m.get("test_rpn_nms_thresh", 0.7))
model.rpn.min_size = max(float(m.get("rpn_min_size", 0)), 1e-3)
out = {"version": __import__("sahi").__version__, "torch": torch.__version__,
       "threshold": model.roi_heads.score_thresh}

# Untiled, on the validation crops: the parity check against the engine's results.
crops = []
with torch.inference_mode():
    for f in job["crops"]:
        image = torch.from_numpy(np.asarray(Image.open(f).convert("RGB"))).permute(2, 0, 1).float() / 255
        d = model([image])[0]
        crops.append({"file": f, "boxes": d["boxes"].tolist(), "scores": d["scores"].tolist(),
                      "labels": d["labels"].tolist()})
out["crops"] = crops

detector = TorchVisionDetectionModel(model=model, device="cpu", confidence_threshold=model.roi_heads.score_thresh,
                                     mask_threshold=0.5, category_mapping={str(k + 1): n for k, n in enumerate(job["kinds"])},
                                     load_at_init=True)
# SAHI as called with GREEDYNMM/IOS 0.5: at a confidence threshold under its LOW_MODEL_CONFIDENCE
# it switches to NMS/IOU by itself ("auto"); "forced" keeps the greedy merge.
images = [(image_id, np.array(Image.open(path).convert("RGB"))) for image_id, path in job["large"]]
out["runs"] = {}
for mode in ("auto", "forced"):
    results, seconds = [], []
    for image_id, image in images:
        started = time.perf_counter()
        with torch.inference_mode():  # not SAHI's own default: the peer at its fastest
            r = get_sliced_prediction(image, detector, slice_height=job["tile"], slice_width=job["tile"],
                                      overlap_height_ratio=job["overlap"], overlap_width_ratio=job["overlap"],
                                      perform_standard_pred=False, postprocess_type="GREEDYNMM",
                                      postprocess_match_metric="IOS", postprocess_match_threshold=0.5,
                                      force_postprocess_type=mode == "forced", verbose=0)
        found = r.to_coco_predictions(image_id=image_id)
        seconds.append(time.perf_counter() - started)
        for p in found:
            r = {"image_id": image_id, "category_id": int(p["category_id"]),
                 "bbox": [float(v) for v in p["bbox"]], "score": float(p["score"])}
            if p.get("segmentation"):
                r["segmentation"] = p["segmentation"]  # else pycocotools' loadRes takes the box
            results.append(r)
    out["runs"][mode] = {"results": results, "seconds": seconds}
out["box_only"] = box_only[0]
json.dump(out, open(sys.argv[3], "w"))
"""


def peer(engine, args, data, checkpoint, large, crops):
    job = {"engine": engine, "spec": SPEC, "sets": [s for s in data_sets(data) if s != "--set"],
           "checkpoint": checkpoint, "threads": args.threads, "kinds": KINDS, "tile": args.tile,
           "overlap": args.overlap, "large": large, "crops": crops}
    src, dst = os.path.join(args.work, "peer_job.json"), os.path.join(args.work, "peer_out.json")
    with open(src, "w") as f:
        json.dump(job, f)
    done = subprocess.run([venv_python("sahi", inherit=True), "-c", PEER, os.path.join(ROOT, "scripts"), src, dst])
    if done.returncode != 0:
        raise SystemExit("SAHI's run failed (exit %d): its job is %s" % (done.returncode, src))
    with open(dst) as f:
        return json.load(f)


# ---- scoring --------------------------------------------------------------------------------

def coco_ap(gt_path, results, image_ids):
    """bbox and segm AP (pycocotools) of `results` on the images `image_ids`."""
    import contextlib
    import io
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(gt_path)
        if not results:
            return 0.0, 0.0
        dt = gt.loadRes(results)
        aps = []
        for kind in ("bbox", "segm"):
            e = COCOeval(gt, dt, kind)
            e.params.imgIds = image_ids
            e.evaluate()
            e.accumulate()
            e.summarize()
            aps.append(max(0.0, float(e.stats[0])))
    return aps


def parity(our_results, their_crops):
    """The share of our detections on the crops that torchvision's model also makes."""
    from pycocotools import mask as mask_utils
    theirs = {os.path.basename(c["file"]): c for c in their_crops}
    matched = total = 0
    for r in our_results:
        c = theirs.get(os.path.basename(r["file_name"]))
        if c is None:
            continue
        total += 1
        if not c["boxes"]:
            continue
        # pycocotools' box IoU, on [x, y, w, h] boxes (torchvision's are corners).
        boxes = [[x0, y0, x1 - x0, y1 - y0] for x0, y0, x1, y1 in c["boxes"]]
        ious = mask_utils.iou([r["bbox"]], boxes, [0] * len(boxes))[0]
        label = r["category_id"]  # contiguous labels are the category ids 1..4 here
        if any(lab == label and iou >= 0.9 and abs(s - r["score"]) <= 0.05
               for iou, s, lab in zip(ious, c["scores"], c["labels"])):
            matched += 1
    theirs_total = sum(len(c["boxes"]) for c in their_crops)
    return matched, total, theirs_total


def with_ids(results, file_ids):
    out = []
    for r in results:
        r = dict(r)
        r["image_id"] = file_ids[os.path.basename(r["file_name"])]
        out.append(r)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", help="a model of scripts/bench_specs/tiles_resnet18.txt (default: train one)")
    ap.add_argument("--steps", type=int, default=0, help="training steps (default: the spec's)")
    ap.add_argument("--images", type=int, default=2, help="large images")
    ap.add_argument("--size", type=int, default=2000, help="their side in pixels")
    ap.add_argument("--shapes", type=int, default=90, help="shapes in each large image")
    ap.add_argument("--crops", type=int, default=4000, help="training crops")
    ap.add_argument("--tile", type=int, default=128)
    ap.add_argument("--overlap", type=float, default=0.2)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cal", type=int, default=16, help="validation crops calibrating the int8 export")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench-data", "tiling"))
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    engine = find_program("mrcnn-engine")
    data = make_data(args)
    checkpoint = os.path.abspath(args.checkpoint) if args.checkpoint else train(engine, args, data)

    load_before = load_average()
    started = time.time()
    large_dir, large_json = data["large"]
    with open(large_json) as f:
        gt = json.load(f)
    file_ids = {im["file_name"]: im["id"] for im in gt["images"]}
    image_ids = sorted(file_ids.values())
    large = [(i, os.path.join(large_dir, name)) for name, i in sorted(file_ids.items(), key=lambda kv: kv[1])]
    crops_dir = data["val"][0]
    crops = sorted(os.path.join(crops_dir, f) for f in os.listdir(crops_dir))

    # fp32 unless a row says bf16: the spec asks for bf16 autocast, which the engine takes
    # where the CPU computes bf16 itself and falls back from to fp32 elsewhere.
    cpu = ["--set", "device=cpu"] + FP32_FLAGS
    bf16 = BF16_FLAGS
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    tiled = ["--tile", str(args.tile), "--tile-overlap", str(args.overlap)]
    rows = []
    crop_results, _, _ = ours(engine, checkpoint, data, crops_dir, os.path.join(args.work, "ours-crops"), cpu)
    whole, whole_s, described = ours(engine, checkpoint, data, large_dir, os.path.join(args.work, "ours-whole"), cpu)
    rows.append(("whole image (ours, resized into the %d x %d canvas)" % (args.tile, args.tile),
                 coco_ap(large_json, with_ids(whole, file_ids), image_ids), whole_s, len(large)))
    theirs = peer(engine, args, data, checkpoint, large, crops)
    sahi_s = sum(theirs["runs"]["auto"]["seconds"]) / len(large)
    for mode, name in [("auto", "SAHI %s as called with GREEDYNMM at threshold %g: it switches to NMS/IOU"),
                       ("forced", "SAHI %s, GREEDYNMM (IOS 0.5) forced, at threshold %g")]:
        run_ = theirs["runs"][mode]
        rows.append((name % (theirs["version"], theirs["threshold"]) + ", torchvision's model",
                     coco_ap(large_json, run_["results"], image_ids), Timing(None, sum(run_["seconds"])),
                     len(large)))
    onnx, onnx_int8 = export(engine, checkpoint, data, args.work, args.cal)
    backends = [("LibTorch fp32", [], ("nmm", "nms")),
                ("OpenVINO f32", ["--backend", "openvino", "--onnx", onnx], ("nmm",)),
                ("OpenVINO int8", ["--backend", "openvino", "--onnx", onnx_int8], ("nmm",))]
    if native_bf16():
        # Where the CPU computes bf16 itself, as its users run the model: bf16 autocast, and
        # OpenVINO's float layers in bf16 (the int8 model's too: "int8+bf16").
        backends += [("LibTorch bf16", bf16, ("nmm",)),
                     ("OpenVINO bf16", ["--backend", "openvino", "--onnx", onnx] + bf16, ("nmm",)),
                     ("OpenVINO int8+bf16", ["--backend", "openvino", "--onnx", onnx_int8] + bf16,
                      ("nmm",))]
    for backend, flags, merges in backends:
        for merge in merges:
            found, seconds, _ = ours(engine, checkpoint, data, large_dir,
                                     os.path.join(args.work, "ours-%s-%s" % (backend.replace(" ", "-"), merge)),
                                     cpu + flags + tiled + ["--tile-merge", merge])
            rows.append(("ours, %s, --tile %d --tile-overlap %g --tile-merge %s" % (
                backend, args.tile, args.overlap, merge),
                coco_ap(large_json, with_ids(found, file_ids), image_ids), seconds, len(large)))
    matched, total, theirs_total = parity(crop_results, theirs["crops"])

    n_shapes = len(gt["annotations"])
    lines = [machine_line(load_before), "",
             "%d images of %d x %d holding %d shapes of %d-%d px (seed %d); model: "
             "`scripts/bench_specs/tiles_resnet18.txt` trained on %d crops of %d x %d (%s); tiles "
             "of %d, overlap %g; %d threads; %s, torch %s. torchvision's model is ours: of our %d "
             "detections on the 100 validation crops, untiled, it makes %d (%.1f%%) with the same "
             "label, box IoU >= 0.9 and score within 0.05 (it makes %d in all). SAHI kept %d "
             "detections as boxes alone (masks that make no polygon)." % (
                 len(large), args.size, args.size, n_shapes, MIN_PX, MAX_PX, args.seed, args.crops,
                 args.tile, args.tile, os.path.relpath(checkpoint, ROOT) if checkpoint.startswith(ROOT) else checkpoint,
                 args.tile, args.overlap, args.threads, described or "LibTorch", theirs["torch"], total, matched,
                 100.0 * matched / max(1, total), theirs_total, theirs["box_only"]), "",
             "| path | bbox AP | segm AP | s / image | time vs SAHI | s / image, whole task |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, (bbox, segm), timing, n in rows:
        per_image = timing.images / n
        whole_task = "%.2f" % (timing.whole / n) if timing.whole is not None else "-"
        lines.append("| %s | %.3f | %.3f | %.2f | %.2fx | %s |" % (
            name, bbox, segm, per_image, per_image / sahi_s, whole_task))
    lines += ["", "Run took %.1f min." % ((time.time() - started) / 60)]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.work, "result.md"), "w") as f:
        f.write(text + "\n")
    if args.write:
        replace_machine_subsection(SECTION, text)


if __name__ == "__main__":
    main()
