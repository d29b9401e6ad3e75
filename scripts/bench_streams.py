#!/usr/bin/env python3
"""Throughput mode against latency mode: the engine's inference task on a folder of photos,
one image at a time on every core (the default) and with --streams N: OpenVINO f32 and int8,
LibTorch fp32; where the CPU computes bf16 itself, also int8 with its float layers in bf16.

    .venv/bin/python scripts/bench_streams.py [--photos 16] [--streams 2,4] [--iters 2]
        [--out DIR] [--write]

Build first: flock /tmp/mrcnn-build.lock scripts/build.sh mrcnn-engine.

Model: torchvision's R50-FPN with bench_export.py's seeded weights (100 detections an image),
exported by the engine with --data_type int8 (model.onnx and model.int8.onnx, calibrated on
the first 4 photos). Photos: the first --photos 640x480 tinycoco photos (800x1066 inside).

What is timed: `mrcnn-engine --task inference [--backend openvino --onnx MODEL] --images DIR
[--streams N]`, the images per second of its last progress event: decoding, the model, masks
pasted, results.json and an overlay per image written; the best of --iters runs. Throughput
mode reads four images a stream at a time and runs a stream each; latency mode runs one image
at a time on every core.

Prints a markdown table; with --write, this CPU's subsection of docs/BENCHMARKS.md
("## Throughput mode (--streams)", "### <CPU name> (<its vector extensions>)") becomes this
run's machine, date and table; other CPUs' subsections stay.
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench_doc import (BF16_FLAGS, FP32_FLAGS, find_program, load_average,  # noqa: E402
                       machine_line, native_bf16,
                       replace_machine_subsection)
from bench_export import prepare  # noqa: E402
from bench_int8 import R50_SPEC, export_int8  # noqa: E402

SECTION = "## Throughput mode (--streams)"


def images_per_second(engine, backend, photos, streams, out):
    cmd = [engine, "--spec", R50_SPEC, "--task", "inference", "--images", photos, "--out", out,
           "--set", "device=cpu"] + FP32_FLAGS + backend
    if streams > 1:
        cmd += ["--streams", str(streams)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    rate, description = None, ""
    for line in done.stdout.splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event.get("type") == "progress":
            rate = event.get("imagesPerSecond")
        if event.get("type") == "log" and event.get("text", "").startswith("backend: "):
            description = event["text"][len("backend: "):]
    if rate is None:
        raise SystemExit("no progress event from: " + " ".join(cmd))
    return rate, description


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--photos", type=int, default=16)
    ap.add_argument("--streams", default="2,4", help="stream counts to time beside 1")
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench-data", "streams"))
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    engine = find_program("mrcnn-engine")
    os.makedirs(args.out, exist_ok=True)
    load_before = load_average()
    started = time.time()
    weights, photos = prepare(args.out, args.photos)
    export = os.path.join(args.out, "export")
    export_int8(engine, R50_SPEC, weights, export, photos, 4, ["--images", photos])
    counts = [1] + [int(n) for n in args.streams.split(",") if n]
    rows = []
    backends = [
        ("OpenVINO f32", ["--backend", "openvino", "--onnx", os.path.join(export, "model.onnx")]),
        ("OpenVINO int8",
         ["--backend", "openvino", "--onnx", os.path.join(export, "model.int8.onnx")]),
        ("LibTorch fp32", ["--checkpoint", weights]),
    ]
    if native_bf16():
        # Where the CPU computes bf16 itself: the int8 model's float layers in bf16, as a user
        # of such a CPU runs it (the later --set wins over the use_amp=False before it).
        backends.insert(2, ("OpenVINO int8+bf16",
                            ["--backend", "openvino", "--onnx",
                             os.path.join(export, "model.int8.onnx")] + BF16_FLAGS))
    for name, backend in backends:
        latency = None
        for streams in counts:
            best, description = 0.0, ""
            for i in range(args.iters):
                rate, description = images_per_second(
                    engine, backend, photos, streams,
                    os.path.join(args.out, "run-%s-%d-%d" % (name.replace(" ", "-"), streams, i)))
                best = max(best, rate)
            latency = latency or best
            rows.append("| %s | %s | %.2f | %.2fx | %s |" % (
                name, "1 (latency mode)" if streams == 1 else str(streams), best,
                best / latency, description))
    header = ("R50-FPN (seeded weights, 100 detections an image), %d photos 640x480 (800x1066 "
              "inside), the inference task: images per second of the whole "
              "task (decoding, model, masks pasted, results and overlays written), best of %d "
              "runs." % (args.photos, args.iters))
    table = ["| backend | streams | images / s | vs latency mode | as the engine names it |",
             "| --- | --- | ---: | ---: | --- |"] + rows
    text = "\n".join([machine_line(load_before), "", header, ""] + table +
                     ["", "Run took %.1f min." % ((time.time() - started) / 60)])
    print(text)
    if args.write:
        replace_machine_subsection(SECTION, text)


if __name__ == "__main__":
    main()
