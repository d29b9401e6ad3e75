#!/usr/bin/env python3
"""The int8 export (mrcnn-engine --task export --data_type int8) against NNCF's post-training
quantisation, one run, the same fp32 model.onnx and the same calibration images.

    .venv/bin/python scripts/bench_int8.py [--checkpoint SHAPES.pt] [--train-steps N]
        [--tiles DIR] [--cal 10] [--photos 4] [--iters 3] [--out DIR] [--write]

Build first: flock /tmp/mrcnn-build.lock scripts/build.sh mrcnn-engine.

Part 1, the trained shapes model (specs/shapes_resnet18.txt; --checkpoint, else trained here
with the spec's schedule, about 18 minutes on 2 cores): exported with --data_type int8,
calibrated on the first --cal validation images (by name); NNCF (its venv,
scripts/python-requirements-nncf.txt) quantises the OpenVINO model read from the same
model.onnx on the same images (nncf.quantize, default preset, subset_size = --cal) and saves
it as OpenVINO IR. Each model is evaluated by the engine on the 50 validation images
(--task evaluate --backend openvino --onnx FILE: COCO bbox and segm AP) and timed with
OpenVINO's Python API, whose outputs give the share of OpenVINO f32's detections each model
keeps (same category, box IoU >= 0.9). With --tiles DIR the trained model is bench_tiling.py's instead
(scripts/bench_specs/tiles_resnet18.txt, --checkpoint its checkpoint) and the validation
images its 100 crops of 128 x 128 under DIR/crops.

Part 2, torchvision's R50-FPN on photos (bench_export.py's seeded weights, with small random
biases where torchvision starts them at zero, as a trained model has them, and 640x480
tinycoco photos): the same export and quantisation, calibrated on the first --cal photos;
timed per image: torchvision fp32 eager, OpenVINO f32, bf16 where the CPU has it, our int8,
NNCF's int8 (and both int8 models with their float layers in bf16 where the CPU has it,
"int8+bf16"), with agreement with OpenVINO f32 (share of its detections matched by one of the
same category with box IoU >= 0.9).

Timing: OpenVINO's Python API on the float image [3, H, W], every core of the machine
(threads as OpenVINO chooses), all the models of a part in one pass (for each round and image,
each model in turn, the order reversed every other image, so that a busy moment of a shared
machine falls on all of them); per model the mean over the images of each image's median over
--iters rounds, after one warm-up round.

Prints markdown tables; with --write, this CPU's subsection of docs/BENCHMARKS.md ("## int8
export vs NNCF", "### <CPU name> (<its vector extensions>)") becomes this run's machine, date
and tables; other CPUs' subsections stay. MRCNN_BENCH_ISA=avx2 (scripts/bench_doc.py) times
this CPU with an AVX2-only CPU's kernels, in a subsection of its own and a work folder of its
own (--out with "-avx2": the export's choices depend on the kernels).
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench_doc import (BF16_FLAGS, FP32_FLAGS, find_program, float_flags_unless_bf16,  # noqa: E402
                       kernels_folder, load_average, native_bf16, out_of_date,
                       machine_line, replace_machine_subsection, venv_python)
from bench_export import (agreement, openvino_runner, prepare, timed_together,  # noqa: E402
                         torchvision_runner)

SECTION = "## int8 export vs NNCF"
SHAPES_SPEC = os.path.join(ROOT, "specs", "shapes_resnet18.txt")
TILES_SPEC = os.path.join(ROOT, "scripts", "bench_specs", "tiles_resnet18.txt")
R50_SPEC = os.path.join(ROOT, "specs", "coco_torchvision_r50.txt")

NNCF_RUN = r"""
import sys, time, numpy as np, openvino as ov, nncf
from PIL import Image
src, dst, images = sys.argv[1], sys.argv[2], sys.argv[3:]
def transform(path):
    return {"image": np.ascontiguousarray(np.asarray(Image.open(path).convert("RGB"),
            dtype=np.float32).transpose(2, 0, 1) / 255.0)}
model = ov.Core().read_model(src)
start = time.perf_counter()
quantized = nncf.quantize(model, nncf.Dataset(images, transform), subset_size=len(images))
print("nncf %s: quantised in %.1f s" % (nncf.__version__, time.perf_counter() - start))
ov.save_model(quantized, dst)
"""


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def images_in(folder):
    return sorted(p for p in glob.glob(os.path.join(folder, "*"))
                  if os.path.splitext(p)[1].lower() in (".png", ".jpg", ".jpeg"))


def train_shapes(engine, out, steps):
    run_dir = os.path.join(out, "shapes_run")
    last = os.path.join(run_dir, "checkpoints", "last")
    if not os.path.exists(last):
        cmd = [engine, "--spec", SHAPES_SPEC, "--run-dir", run_dir, "--set", "device=cpu",
               "--set", "data_config.shapes_dataset.root=" + os.path.join(out, "shapes"),
               "--set", "target_bbox_map=0", "--set", "target_segm_map=0"]
        if steps:
            cmd += ["--set", "total_steps=%d" % steps]
        run(cmd, stdout=subprocess.DEVNULL)
    with open(last) as f:
        return os.path.join(run_dir, "checkpoints", f.read().strip())


def export_int8(engine, spec, checkpoint, out_dir, cal_dir, cal, extra):
    made = os.path.join(out_dir, "model.int8.onnx")
    # An export older than the engine or the checkpoint is made again: the int8 choices may
    # have changed.
    if out_of_date(made, engine, checkpoint):
        shutil.rmtree(out_dir, ignore_errors=True)
        extra = extra + float_flags_unless_bf16()
        run([engine, "--spec", spec, "--task", "export", "--checkpoint", checkpoint,
             "--output-dir", out_dir, "--data_type", "int8", "--cal_image_dir", cal_dir,
             "--batches", str(cal), "--set", "device=cpu"] + extra, stdout=subprocess.DEVNULL)
    with open(os.path.join(out_dir, "export_report.json")) as f:
        return json.load(f)


def nncf_quantize(onnx, dst, images):
    # Made again whenever the float model is newer: NNCF's model of another one would be timed.
    if out_of_date(dst, onnx):
        run([venv_python("nncf"), "-c", NNCF_RUN, onnx, dst] + images)
    return dst


def evaluate(engine, spec, model, extra):
    """bbox and segm AP of one model through the engine's OpenVINO backend."""
    out = run([engine, "--spec", spec, "--task", "evaluate", "--backend", "openvino",
               "--onnx", model, "--set", "device=cpu"] + extra,
              stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("type") == "eval":
            return event["bbox"]["stats"][0], event["segm"]["stats"][0]
    raise SystemExit("no eval event from the engine for " + model)


def paths_by_row(fp32, ours, nncf):
    """The rows of a part and their model files. Where the CPU computes bf16 itself (AVX-512
    BF16, AMX), the float model in bf16 and both int8 models with their float layers in bf16
    ("int8+bf16", OpenVINO's inference precision bf16), as a user of such a CPU runs them."""
    rows = [("OpenVINO f32", fp32)]
    if native_bf16():
        rows.append(("OpenVINO bf16", fp32))
    rows += [("ours int8", ours), ("NNCF int8", nncf)]
    if native_bf16():
        rows += [("ours int8+bf16", ours), ("NNCF int8+bf16", nncf)]
    return rows


def shapes_part(engine, args):
    if args.tiles:
        # bench_tiling.py's model: its spec, and its 100 validation crops of 128 x 128.
        spec = TILES_SPEC
        checkpoint = args.checkpoint or sys.exit("--tiles needs --checkpoint (bench_tiling.py's model)")
        crops = os.path.join(os.path.abspath(args.tiles), "crops")  # the spec's folder is not ours
        data = []
        for key, value in [("train_image_dir", "train"), ("train_json_file", "train.json"),
                           ("val_image_dir", "val"), ("val_json_file", "val.json")]:
            data += ["--set", "data_config.%s=%s" % (key, os.path.join(crops, value))]
        val = os.path.join(crops, "val")
        described = "tiles_resnet18: ResNet-18 FPN, %s; %%d validation crops of 128 x 128"
        # The evaluate task reads the categories and the model's settings from a checkpoint.
        checked = ["--checkpoint", checkpoint]
    else:
        spec = SHAPES_SPEC
        checkpoint = args.checkpoint or train_shapes(engine, args.out, args.train_steps)
        data = ["--set", "data_config.shapes_dataset.root=" + os.path.join(args.out, "shapes")]
        val = os.path.join(args.out, "shapes", "images", "val")
        described = "Shapes (ResNet-18 FPN, %s): %%d validation images (128-192 px)"
        checked = []  # the training's run directory has it
    cal = images_in(val)[:args.cal]
    export = os.path.join(args.out, "shapes_export")
    report = export_int8(engine, spec, checkpoint, export, val, args.cal, data)
    nncf = nncf_quantize(os.path.join(export, "model.onnx"),
                         os.path.join(args.out, "shapes_nncf", "model.xml"), cal)
    models = [(name, model, BF16_FLAGS if "bf16" in name else FP32_FLAGS)
              for name, model in paths_by_row(os.path.join(export, "model.onnx"),
                                              os.path.join(export, "model.int8.onnx"), nncf)]
    paths = images_in(val)
    aps = [evaluate(engine, spec, model,
                    extra + data + checked + ["--set", "data_config.eval_samples=0"])
           for _, model, extra in models]
    timings = timed_together({name: openvino_runner(model, "bf16" in name)[0]
                              for name, model, _ in models}, paths, 1, args.iters)
    rows, base = [], None
    reference = timings["OpenVINO f32"][1]
    for (name, _, _), (bbox, segm) in zip(models, aps):
        ms, last = timings[name]
        base = base or (bbox, segm, ms)
        kept, _ = agreement(last, reference)
        rows.append("| %s | %.3f | %+.3f | %.3f | %+.3f | %.2f | %.1f | %.2fx |" % (
            name, bbox, bbox - base[0], segm, segm - base[1], kept, ms, base[2] / ms))
    layers = report["int8"]["layers"]
    quantised = sum(1 for layer in layers if layer["quantised"])
    header = ((described % os.path.basename(checkpoint)) % len(paths) +
              ", calibration on the first %d; %d of %d layers int8 (ours)." % (
                  len(cal), quantised, len(layers)))
    table = ["| model | bbox AP | vs f32 | segm AP | vs f32 | f32 detections kept | ms / image "
             "| speed vs f32 |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"] + rows
    return header, table


def r50_part(engine, args):
    work = os.path.join(args.out, "r50")
    os.makedirs(work, exist_ok=True)
    weights, photos = prepare(work, max(args.photos, args.cal), drawn_biases=True)
    paths = images_in(photos)
    export = os.path.join(work, "export")
    export_int8(engine, R50_SPEC, weights, export, photos, args.cal, ["--images", photos])
    nncf = nncf_quantize(os.path.join(export, "model.onnx"),
                         os.path.join(work, "nncf", "model.xml"), paths[:args.cal])
    timed_paths = paths[:args.photos]
    models = [(name, model, "bf16" in name)
              for name, model in paths_by_row(os.path.join(export, "model.onnx"),
                                              os.path.join(export, "model.int8.onnx"), nncf)]
    runners = {"torchvision": torchvision_runner(weights, False)}
    runners.update({name: openvino_runner(model, bf16)[0] for name, model, bf16 in models})
    timings = timed_together(runners, timed_paths, 1, args.iters)
    tv_ms = timings["torchvision"][0]
    rows = ["| torchvision fp32 (eager) | %.0f | 1.00x | |" % tv_ms]
    f32_ms, reference = timings["OpenVINO f32"]
    for name, _, _ in models:
        ms, last = timings[name]
        share, _ = agreement(last, reference)
        rows.append("| %s | %.0f | %.2fx | %.2fx | %.2f |" % (name, ms, tv_ms / ms, f32_ms / ms,
                                                              share))
    rows[0] = "| torchvision fp32 (eager) | %.0f | 1.00x | %.2fx | |" % (tv_ms, f32_ms / tv_ms)
    header = ("R50-FPN (seeded weights, biases drawn where torchvision starts them at zero), %d photos 640x480 (800x1066 inside), calibration on "
              "%d photos; every path timed in one pass, image by image, the mean of each photo's "
              "median over %d rounds." % (len(timed_paths), args.cal, args.iters))
    table = ["| model | ms / image | vs torchvision fp32 | vs OpenVINO f32 | agrees with f32 |",
             "| --- | ---: | ---: | ---: | ---: |"] + rows
    return header, table


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", help="a trained shapes_resnet18 checkpoint (default: train one)")
    ap.add_argument("--train-steps", type=int, default=0, help="steps when training here")
    ap.add_argument("--cal", type=int, default=10, help="calibration images")
    ap.add_argument("--photos", type=int, default=4, help="R50 photos timed")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench-data", "int8"))
    ap.add_argument("--tiles", metavar="DIR",
                    help="part 1 on scripts/bench_tiling.py's model (--checkpoint) and the validation "
                         "crops of its work folder DIR (build/bench-data/tiling), not the default spec's")
    ap.add_argument("--skip-r50", action="store_true")
    ap.add_argument("--skip-shapes", action="store_true")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    engine = find_program("mrcnn-engine")
    args.out = kernels_folder(args.out)
    os.makedirs(args.out, exist_ok=True)
    load_before = load_average()
    started = time.time()
    parts = [] if args.skip_shapes else [shapes_part(engine, args)]
    if not args.skip_r50:
        parts.append(r50_part(engine, args))
    block = [machine_line(load_before), ""]
    for header, table in parts:
        block += [header, ""] + table + [""]
    block.append("Run took %.1f min." % ((time.time() - started) / 60))
    text = "\n".join(block)
    print(text)
    if args.write:
        replace_machine_subsection(SECTION, text)


if __name__ == "__main__":
    main()
