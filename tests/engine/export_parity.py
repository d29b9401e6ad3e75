"""The exported model against the engine, for tests/app/test_export.cpp. Test-only: the
product never runs Python.

    export_parity.py onnxruntime MODEL.onnx IMAGES_DIR ENGINE_RESULTS.json
        ONNX Runtime (the oracle of the ONNX format) runs model.onnx on each image of the
        folder (RGB in 0..1, as the model's input says) and its detections are matched with
        the engine's own (results.json of `--task inference`); ONNX Runtime's masks are pasted
        with torchvision's paste_masks_in_image and thresholded at 0.5.
    export_parity.py torchvision MODEL.pth KWARGS_JSON IMAGES_DIR ENGINE_RESULTS.json
        torchvision's maskrcnn_resnet50_fpn(**KWARGS) loads model.pth with strict=True and
        runs each image; its detections are matched with the engine's.
    export_parity.py make OUT_DIR
        OUT_DIR/model.pt: the seeded random, confident torchvision Mask R-CNN of
        mask_rcnn_parity.py (confident: many detections to compare); OUT_DIR/images: two real
        photos of tinycoco (landscape and portrait) as PNG (decoders cannot differ) and one
        seeded random-noise image; OUT_DIR/model_saturated.pt: the same model with its RPN
        and class logits scaled up until many probabilities round to exactly 1.0 in float32
        (the tie case: each runtime's sigmoid and softmax round to 1 from another logit), with
        the share of saturated objectness among each photo's best anchors in the JSON line.
    export_parity.py results A.json B.json
        Two results files of the inference task (two backends) matched with each other.
    export_parity.py sqnr FP32.onnx INT8.onnx IMAGES_DIR [--min-db 30]
        int8 against fp32 where the detections do not say it (a seeded random model's
        detections are near-ties that any noise reorders): the FPN's outputs (the
        layer_blocks convolutions) of both models, in ONNX Runtime (after the ONNX checker) and
        in OpenVINO, as the signal-to-quantisation-noise ratio in dB over each image; exits 1
        when one is below --min-db.

Matching, per image: each detection of the reference (the second file, or the engine) is
paired with the unpaired detection of the same category whose box overlaps it most (IoU at
least 0.5). A pair agrees when every box coordinate is within BOX_REL of the reference's
(relative, at least 1 px scale), the score within SCORE and the mask IoU at least MASK_IOU.
Prints one JSON line (compared, agreed, the worst differences, per image) and exits 1 when
fewer than REQUIRED_SHARE of the reference's detections agree, or the counts differ by more
than 2% (tolerances are options: --box-rel, --score, --mask-iou, --share, --count-slack).
ONNX Runtime's mode runs the ONNX checker (full check, with shape inference) first.
"""

import argparse
import glob
import json
import os
import sys

import numpy as np
import torch
from PIL import Image
from pycocotools import mask as mask_utils


def make(out_dir):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import mask_rcnn_parity
    torch.manual_seed(0)
    model = mask_rcnn_parity.build()
    mask_rcnn_parity.randomise(model, torch.Generator().manual_seed(2024))
    torch.save(model.state_dict(), os.path.join(out_dir, "model.pt"))
    images = os.path.join(out_dir, "images")
    os.makedirs(images, exist_ok=True)
    root = os.path.join(os.environ["MRCNN_SHARED_DIR"], "data/tinycoco/images")
    landscape = portrait = None
    for path in sorted(glob.glob(os.path.join(root, "*", "*.jpg"))):
        w, h = Image.open(path).size
        if w > h and landscape is None:
            landscape = path
        if h > w and portrait is None:
            portrait = path
    for path in (landscape, portrait):
        name = os.path.splitext(os.path.basename(path))[0] + ".png"
        Image.open(path).convert("RGB").save(os.path.join(images, name))
    noise = np.random.default_rng(7).integers(0, 256, size=(300, 200, 3), dtype=np.uint8)
    Image.fromarray(noise).save(os.path.join(images, "noise.png"))
    saturated = saturate(model, [os.path.join(images, f) for f in sorted(os.listdir(images))])
    torch.save(model.state_dict(), os.path.join(out_dir, "model_saturated.pt"))
    print(json.dumps({"model": "model.pt", "images": sorted(os.listdir(images)),
                      "saturated_model": "model_saturated.pt", "saturated_objectness": saturated}))


def saturate(model, paths):
    """Scales the RPN's objectness and the box head's class logits; returns, per image, how
    many of its 1000 most confident anchors (over all levels) have a sigmoid of exactly 1.0."""
    with torch.no_grad():
        for layer in (model.rpn.head.cls_logits, model.roi_heads.box_predictor.cls_score):
            layer.weight.mul_(10.0)
            layer.bias.mul_(10.0)
    logits = []
    hook = model.rpn.head.register_forward_hook(lambda m, i, o: logits.append(o[0]))
    model.eval()
    counts = []
    with torch.no_grad():
        for path in paths:
            logits.clear()
            model([torch.from_numpy(rgb01(path))])
            flat = torch.cat([level.flatten() for level in logits[0]])
            counts.append(int((torch.sigmoid(flat.topk(min(1000, flat.numel())).values) == 1.0).sum()))
    hook.remove()
    return counts


def rgb01(path):
    return np.ascontiguousarray(
        np.asarray(Image.open(path).convert("RGB"), dtype=np.float32).transpose(2, 0, 1) / 255.0)


def detections_from_results(path):
    by_file = {}
    for r in json.load(open(path)):
        x, y, w, h = r["bbox"]
        d = {"box": [x, y, x + w, y + h], "score": r["score"], "category": r["category_id"]}
        if "segmentation" in r:
            d["mask"] = mask_utils.decode(r["segmentation"]).astype(bool)
        by_file.setdefault(r["file_name"], []).append(d)
    return by_file


def detections_from_arrays(boxes, labels, scores, masks, size):
    """masks: [N, 1, M, M] probabilities over each box (ONNX) or [N, 1, H, W] pasted."""
    from torchvision.models.detection.roi_heads import paste_masks_in_image
    boxes_t = torch.as_tensor(np.asarray(boxes), dtype=torch.float32)
    masks_t = torch.as_tensor(np.asarray(masks), dtype=torch.float32)
    if masks_t.numel() and masks_t.shape[-2:] != size:
        masks_t = paste_masks_in_image(masks_t, boxes_t, size)
    out = []
    for k in range(len(scores)):
        out.append({"box": [float(v) for v in boxes_t[k]], "score": float(scores[k]),
                    "category": int(labels[k]), "mask": (masks_t[k, 0] > 0.5).numpy()})
    return out


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def mask_iou(a, b):
    union = np.logical_or(a, b).sum()
    return 1.0 if union == 0 else float(np.logical_and(a, b).sum()) / float(union)


def compare(ours, reference, opts):
    """Both: file name -> detections. Returns the report and whether it passes."""
    report = {"compared": 0, "agreed": 0, "worst_box_rel": 0.0, "worst_score": 0.0,
              "worst_mask_iou": 1.0, "counts": {}, "files": len(reference)}
    ok = True
    for name in sorted(set(reference) | set(ours)):
        ref = reference.get(name, [])
        mine = list(ours.get(name, []))
        report["counts"][name] = [len(mine), len(ref)]
        if abs(len(mine) - len(ref)) > max(1, opts.count_slack * len(ref)):
            ok = False
        used = [False] * len(mine)
        for r in sorted(ref, key=lambda d: -d["score"]):
            report["compared"] += 1
            best, best_iou = -1, 0.5
            for k, m in enumerate(mine):
                if used[k] or m["category"] != r["category"]:
                    continue
                v = iou(m["box"], r["box"])
                if v >= best_iou:
                    best, best_iou = k, v
            if best < 0:
                continue
            used[best] = True
            m = mine[best]
            box_rel = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(m["box"], r["box"]))
            score = abs(m["score"] - r["score"])
            miou = mask_iou(m["mask"], r["mask"]) if "mask" in m and "mask" in r else 1.0
            report["worst_box_rel"] = max(report["worst_box_rel"], box_rel)
            report["worst_score"] = max(report["worst_score"], score)
            report["worst_mask_iou"] = min(report["worst_mask_iou"], miou)
            if box_rel <= opts.box_rel and score <= opts.score and miou >= opts.mask_iou:
                report["agreed"] += 1
    share = report["agreed"] / max(1, report["compared"])
    report["share"] = share
    return report, ok and share >= opts.share


def images_of(folder, reference):
    """Every image of the folder: those without a detection of the engine's too (the
    exported model must find none there either)."""
    paths = sorted(p for p in glob.glob(os.path.join(folder, "*"))
                   if os.path.splitext(p)[1].lower() in (".png", ".jpg", ".jpeg"))
    for p in paths:
        reference.setdefault(os.path.basename(p), [])
    if not paths:
        raise SystemExit(f"no image in {folder}")
    return paths


def fpn_outputs(path):
    """The output names of the FPN's layer_blocks convolutions, finest first."""
    import onnx
    model = onnx.load(path)
    return model, [n.output[0] for n in model.graph.node
                   if n.op_type == "Conv" and "fpn/layer_blocks" in n.input[1]]


def sqnr(fp32, int8, folder, min_db):
    import onnx
    import onnxruntime as ort
    import openvino as ov
    onnx.checker.check_model(int8, full_check=True)
    runs = {}
    for tag, path in (("fp32", fp32), ("int8", int8)):
        model, names = fpn_outputs(path)
        for name in names:
            model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        ov_model = ov.Core().read_model(path)
        ov_model.add_outputs(names)
        compiled = ov.Core().compile_model(ov_model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()

        def run_ov(image, request=request, names=names):
            request.infer({"image": image})
            return [request.get_tensor(n).data.copy() for n in names]
        runs[tag] = {"onnxruntime": lambda image, s=session, n=names: s.run(n, {"image": image}),
                     "openvino": run_ov}
    report = {"min_db": min_db, "levels": {}}
    ok = True
    for path in sorted(glob.glob(os.path.join(folder, "*.png"))):
        image = rgb01(path)
        for runtime in ("onnxruntime", "openvino"):
            ref, got = runs["fp32"][runtime](image), runs["int8"][runtime](image)
            # Finest first: P2, P3...
            pairs = sorted(zip(ref, got), key=lambda p: -p[0].size)
            for level, (a, b) in enumerate(pairs):
                noise = float(np.sqrt(np.mean((a - b) ** 2)))
                signal = float(np.sqrt(np.mean(a ** 2)))
                db = 20 * np.log10(signal / max(noise, 1e-12))
                key = "%s %s P%d" % (os.path.basename(path), runtime, level + 2)
                report["levels"][key] = round(db, 1)
                ok = ok and db >= min_db
    report["worst_db"] = min(report["levels"].values())
    return report, ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["make", "onnxruntime", "torchvision", "results", "sqnr"])
    parser.add_argument("args", nargs="+")
    parser.add_argument("--box-rel", type=float, default=1e-3)
    parser.add_argument("--score", type=float, default=1e-4)
    parser.add_argument("--mask-iou", type=float, default=0.98)
    parser.add_argument("--share", type=float, default=0.98)
    parser.add_argument("--count-slack", type=float, default=0.02)
    parser.add_argument("--min-db", type=float, default=30.0)
    opts = parser.parse_args()
    torch.set_num_threads(2)

    if opts.mode == "make":
        make(opts.args[0])
        return
    if opts.mode == "sqnr":
        report, ok = sqnr(*opts.args, opts.min_db)
    elif opts.mode == "results":
        a, b = opts.args
        report, ok = compare(detections_from_results(a), detections_from_results(b), opts)
    elif opts.mode == "onnxruntime":
        import onnx
        import onnxruntime as ort
        model, folder, engine = opts.args
        onnx.checker.check_model(model, full_check=True)
        reference = detections_from_results(engine)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        ours = {}
        for path in images_of(folder, reference):
            image = rgb01(path)
            boxes, labels, scores, masks = session.run(["boxes", "labels", "scores", "masks"],
                                                       {"image": image})
            ours[os.path.basename(path)] = detections_from_arrays(
                boxes, labels, scores, masks, tuple(image.shape[1:]))
        report, ok = compare(ours, reference, opts)
        report["runtime"] = "onnxruntime " + ort.__version__
    else:
        import torchvision
        weights, kwargs, folder, engine = opts.args
        reference = detections_from_results(engine)
        model = torchvision.models.detection.maskrcnn_resnet50_fpn(**json.loads(kwargs))
        model.load_state_dict(torch.load(weights, map_location="cpu"), strict=True)
        model.eval()
        ours = {}
        with torch.no_grad():
            for path in images_of(folder, reference):
                image = torch.from_numpy(rgb01(path))
                out = model([image])[0]
                ours[os.path.basename(path)] = detections_from_arrays(
                    out["boxes"], out["labels"], out["scores"], out["masks"],
                    tuple(image.shape[1:]))
        report, ok = compare(ours, reference, opts)
        report["runtime"] = "torchvision " + torchvision.__version__
    print(json.dumps(report, sort_keys=True))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
