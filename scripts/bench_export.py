#!/usr/bin/env python3
"""CPU inference of the exported model beside every peer, one run, the same photos and
weights: torchvision eager fp32 and bf16 autocast, ONNX Runtime on our model.onnx, OpenVINO
(Python API) f32 and bf16 on our model.onnx, and the workbench's own backends (LibTorch fp32
and bf16 autocast, OpenVINO f32 and bf16; bench_backends, C++).

    .venv/bin/python scripts/bench_export.py [--build build] [--images 4] [--warmup 1]
        [--iters 3] [--threads 2] [--bf16 auto|yes|no] [--out DIR] [--write]

Build first: ninja -C <build> mrcnn-engine bench_backends.

Weights: torchvision's maskrcnn_resnet50_fpn architecture (ResNet-50 + FPN, 91 classes) with
the seeded random, confident weights of tests/engine/mask_rcnn_parity.py (100 detections and
100 masks an image, as with real weights). Photos: the first --images landscape 640x480
photos of tinycoco (sorted by name) as PNG: at torchvision's resize (shorter side 800, longer
at most 1333) each becomes 800x1066, padded to 800x1088. The engine exports the weights with
specs/coco_torchvision_r50.txt (its parity check on the same photos is part of the run).

What is timed, per image, median over --iters rounds of every photo after --warmup rounds:
  torchvision: model([image]) under inference_mode (its transform, the model, boxes scaled
    and masks pasted at the image's size); image already a float tensor.
  onnxruntime / openvino (Python): session.run / infer on the float image [3, H, W]; the
    masks stay 28x28 (pasting is the consumer's).
  ours: the inference backend on the file: decoding (its median is printed apart), the
    model, masks pasted at the image's size.
The bf16 rows (torchvision autocast, OpenVINO bf16, ours) run by default only where the CPU
computes bf16 itself (AVX-512 BF16 or AMX); elsewhere oneDNN emulates it (minutes an image).
Agreement: against torchvision fp32, the share of its detections matched by one of the same
category with box IoU >= 0.9, and the largest score difference among those.

Writes OUT/results.json (default <build>/bench-data/export) and prints a markdown table; with
--write, the "### Last result" subsection of docs/BENCHMARKS.md ("## Export: CPU inference of
the exported model vs the peers") becomes this run's machine, date and table
($MRCNN_BENCHMARKS_MD names another file to write instead).
"""

import argparse
import glob
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "engine"))
import mask_rcnn_parity  # noqa: E402
from bench_doc import (cpu_features, cpu_name, load_average, machine_line, native_bf16,  # noqa: E402
                       write_last_result)
from export_parity import iou  # noqa: E402

SECTION = "## Export: CPU inference of the exported model vs the peers"


def prepare(out, n, drawn_biases=False):
    """The seeded R50-FPN's weights (out/model.pt) and n photos of 640x480 (out/images).
    drawn_biases: the convolutions whose biases torchvision starts at zero (the FPN's, the
    RPN's 3x3, the mask head's) get small random ones, as a trained model has. With all-zero
    biases OpenVINO 2026.4's CPU plugin computes an int8 convolution that reads such a layer's
    int8 output wrong (zeros), which no trained model shows: measured in docs/BENCHMARKS.md,
    "int8 export vs NNCF"."""
    torch.manual_seed(0)
    model = mask_rcnn_parity.build()
    mask_rcnn_parity.randomise(model, torch.Generator().manual_seed(2024))
    if drawn_biases:
        gen = torch.Generator().manual_seed(7)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, (torch.nn.Conv2d, torch.nn.ConvTranspose2d)) and \
                        m.bias is not None and not m.bias.any():
                    m.bias.normal_(0, 0.02, generator=gen)
    weights = os.path.join(out, "model.pt")
    torch.save(model.state_dict(), weights)
    images = os.path.join(out, "images")
    os.makedirs(images, exist_ok=True)
    root = os.path.join(os.environ.get("MRCNN_SHARED_DIR", os.path.join(ROOT, "..", "shared")),
                        "data/tinycoco/images")
    chosen = []
    for path in sorted(glob.glob(os.path.join(root, "*", "*.jpg"))):
        if Image.open(path).size == (640, 480):
            chosen.append(path)
        if len(chosen) == n:
            break
    for path in chosen:
        name = os.path.splitext(os.path.basename(path))[0] + ".png"
        Image.open(path).convert("RGB").save(os.path.join(images, name))
    return weights, images


def rgb01(path):
    return np.ascontiguousarray(
        np.asarray(Image.open(path).convert("RGB"), dtype=np.float32).transpose(2, 0, 1) / 255.0)


def timed(fn, paths, warmup, iters):
    inputs = {p: rgb01(p) for p in paths}
    times, last = [], {}
    for it in range(warmup + iters):
        for p in paths:
            start = time.perf_counter()
            out = fn(inputs[p])
            if it >= warmup:
                times.append(time.perf_counter() - start)
            last[os.path.basename(p)] = out
    return 1000 * statistics.median(times), last


def timed_together(runners, paths, warmup, iters):
    """Several runners (name -> fn) timed in one pass: for each round and image, every runner
    in turn (the order reversed every other image), so that a busy moment of a shared machine
    falls on all of them alike. Per runner: the mean over the images of each image's median
    over the rounds (ms), and the last outputs by file name."""
    inputs = {p: rgb01(p) for p in paths}
    names = list(runners)
    times = {n: {p: [] for p in paths} for n in names}
    last = {n: {} for n in names}
    for it in range(warmup + iters):
        for k, p in enumerate(paths):
            for n in (names if (it + k) % 2 == 0 else names[::-1]):
                start = time.perf_counter()
                out = runners[n](inputs[p])
                if it >= warmup:
                    times[n][p].append(time.perf_counter() - start)
                last[n][os.path.basename(p)] = out
    return {n: (1000 * statistics.mean(statistics.median(times[n][p]) for p in paths), last[n])
            for n in names}


def torchvision_runner(weights, bf16):
    model = mask_rcnn_parity.build()  # maskrcnn_resnet50_fpn's modules, FrozenBatchNorm2d
    model.load_state_dict(torch.load(weights, map_location="cpu"), strict=True)
    model.eval()

    def run(image):
        with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            o = model([torch.from_numpy(image)])[0]
        return {"boxes": o["boxes"].float().tolist(), "labels": o["labels"].tolist(),
                "scores": o["scores"].float().tolist()}
    return run


def onnxruntime_runner(onnx, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(onnx, options, providers=["CPUExecutionProvider"])

    def run(image):
        boxes, labels, scores = session.run(["boxes", "labels", "scores"], {"image": image})
        return {"boxes": boxes.tolist(), "labels": labels.tolist(), "scores": scores.tolist()}
    return run, "onnxruntime " + ort.__version__


def openvino_runner(onnx, bf16):
    import openvino as ov
    core = ov.Core()
    compiled = core.compile_model(core.read_model(onnx), "CPU",
                                  {"INFERENCE_PRECISION_HINT": "bf16" if bf16 else "f32"})
    request = compiled.create_infer_request()

    def run(image):
        request.infer({"image": image})
        get = lambda n: request.get_tensor(n).data  # noqa: E731
        return {"boxes": get("boxes").tolist(), "labels": get("labels").tolist(),
                "scores": get("scores").tolist()}
    return run, "openvino " + ov.__version__


def agreement(ours, reference):
    matched = total = 0
    worst = 0.0
    for name, ref in reference.items():
        mine = ours.get(name, {"boxes": [], "labels": [], "scores": []})
        used = set()
        for box, label, score in zip(ref["boxes"], ref["labels"], ref["scores"]):
            total += 1
            best, best_iou = -1, 0.9
            for k, (b, l) in enumerate(zip(mine["boxes"], mine["labels"])):
                if k in used or l != label:
                    continue
                v = iou(b, box)
                if v >= best_iou:
                    best, best_iou = k, v
            if best >= 0:
                used.add(best)
                matched += 1
                worst = max(worst, abs(mine["scores"][best] - score))
    return matched / max(1, total), worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--images", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out")
    parser.add_argument("--bf16", choices=("auto", "yes", "no"), default="auto",
                        help="the bf16 rows: auto times them where the CPU computes bf16 itself "
                             "(AVX-512 BF16, AMX); elsewhere oneDNN emulates it, minutes an image")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the last result in docs/BENCHMARKS.md")
    opts = parser.parse_args()
    bf16 = opts.bf16 == "yes" or (opts.bf16 == "auto" and native_bf16())
    if not bf16:
        print("no bf16 rows (--bf16 %s, CPU: %s)" % (opts.bf16, cpu_features()), flush=True)
    out = opts.out or os.path.join(opts.build, "bench-data", "export")
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(opts.threads)
    weights, images = prepare(out, opts.images)
    paths = sorted(glob.glob(os.path.join(images, "*.png")))
    engine = os.path.join(opts.build, "bin", "mrcnn-engine")
    export_dir = os.path.join(out, "export-%d" % int(time.time()))
    subprocess.run([engine, "--spec", os.path.join(ROOT, "specs/coco_torchvision_r50.txt"),
                    "--task", "export", "--checkpoint", weights, "--output-dir", export_dir,
                    "--images", images, "--set", "device=cpu"], check=True,
                   stdout=subprocess.DEVNULL)
    onnx = os.path.join(export_dir, "model.onnx")

    load_before = load_average()
    rows, outputs = [], {}
    peers = [
        ("torchvision eager fp32", lambda: (torchvision_runner(weights, False), "")),
        ("torchvision eager bf16 (autocast)", lambda: (torchvision_runner(weights, True), "")),
        ("ONNX Runtime on our ONNX (fp32)", lambda: onnxruntime_runner(onnx, opts.threads)),
        ("OpenVINO (Python API) f32 on our ONNX", lambda: openvino_runner(onnx, False)),
        ("OpenVINO (Python API) bf16 on our ONNX", lambda: openvino_runner(onnx, True)),
    ]
    for name, make in [(n, m) for n, m in peers if bf16 or "bf16" not in n]:
        run, version = make()
        ms, last = timed(run, paths, opts.warmup, opts.iters)
        outputs[name] = last
        rows.append({"name": name, "median_ms": ms, "version": version})
        print(json.dumps(rows[-1]), flush=True)

    ours = subprocess.run(
        [os.path.join(opts.build, "bin", "bench_backends"), "--spec",
         os.path.join(ROOT, "specs/coco_torchvision_r50.txt"), "--checkpoint", weights,
         "--onnx", onnx, "--images", images, "--warmup", str(opts.warmup), "--iters",
         str(opts.iters), "--out", out] +
        ([] if bf16 else ["--only", "ours_libtorch_fp32,ours_openvino_f32"]),
        check=True, capture_output=True, text=True).stdout
    decode_ms = None
    labels = {"ours_libtorch_fp32": "workbench LibTorch fp32",
              "ours_libtorch_bf16": "workbench LibTorch bf16 (autocast)",
              "ours_openvino_f32": "workbench OpenVINO f32",
              "ours_openvino_bf16": "workbench OpenVINO bf16"}
    for line in ours.splitlines():
        r = json.loads(line)
        if "decode_ms" in r:
            decode_ms = r["decode_ms"]
            continue
        name = labels[r["name"]]
        outputs[name] = json.load(open(os.path.join(out, r["name"] + ".json")))
        rows.append({"name": name, "median_ms": r["median_ms"], "version": r["description"]})
        print(json.dumps(rows[-1]), flush=True)

    reference = outputs["torchvision eager fp32"]
    base = rows[0]["median_ms"]
    table = ["| path | median ms / image | vs torchvision fp32 | agreement (IoU >= 0.9) | max score diff |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        share, worst = agreement(outputs[r["name"]], reference)
        r.update(speedup=base / r["median_ms"], agreement=share, max_score_diff=worst)
        table.append(f"| {r['name']} | {r['median_ms']:.0f} | {r['speedup']:.2f}x | {share:.3f} | "
                     f"{worst:.4f} |")
    openvino = importlib.metadata.version("openvino").split("-")[0]
    header = (f"{machine_line(load_before)}; torch {torch.__version__}, onnxruntime "
              f"{importlib.metadata.version('onnxruntime')}, OpenVINO {openvino}; {len(paths)} "
              f"photo{'s' if len(paths) != 1 else ''} 640x480 as PNG (800x1088 padded), {opts.threads} "
              f"threads, median over {opts.iters} round{'s' if opts.iters != 1 else ''} after "
              f"{opts.warmup} warm-up; decoding a PNG {decode_ms:.1f} ms" +
              ("" if bf16 else "; no bf16 rows (this CPU has neither AVX-512 BF16 nor AMX: "
               "bf16 is emulated)") + ":")
    print("\n" + header + "\n")
    print("\n".join(table))
    json.dump({"cpu": f"{cpu_name()}, {os.cpu_count()} cores ({cpu_features()})",
               "torch": torch.__version__, "rows": rows, "decode_ms": decode_ms},
              open(os.path.join(out, "results.json"), "w"), indent=1)
    if opts.write:
        write_last_result(SECTION, header + "\n\n" + "\n".join(table))
        print(f"docs/BENCHMARKS.md: {SECTION[3:]} / Last result rewritten")

if __name__ == "__main__":
    main()
