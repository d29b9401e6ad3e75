#!/usr/bin/env python3
"""Mask R-CNN speed on the CPU: ours (bench_mask_rcnn, C++) beside torchvision's
maskrcnn_resnet50_fpn, with the same weights, the same real photo, the same thread count, in
the same run: per-image inference end to end and the training step, fp32 and bfloat16
autocast.

    .venv/bin/python scripts/bench_mask_rcnn.py [--build build-bench] [--threads 2,1]
        [--modes infer,train] [--precisions fp32[,bf16]] [--warmup 3] [--iters 10]
        [--image PHOTO] [--stages] [--channels-last] [--quiet-load 2.5] [--out DIR]
        [--write]

Build the executable first: ninja -C <build> bench_mask_rcnn.

Weights: torchvision builds maskrcnn_resnet50_fpn as with its COCO weights (ResNet-50 + FPN,
FrozenBatchNorm2d, trainable_backbone_layers 3, 91 classes) with seeded random weights scaled
as tests/engine/mask_rcnn_parity.py scales them (confident, well separated detections, so
that inference keeps its 100 detections and pastes 100 masks as with real weights), and saves
the state_dict; our executable loads that file.

Image: the first tinycoco val2017 photo (sorted by name) at the COCO recipe's size (shorter
side 800, longer at most 1333, padded to a multiple of 32); the training targets are its
ground truth (boxes, labels, masks) resized by torchvision's transform, saved for our side.

What each side times (median of --iters after --warmup iterations):
  infer: batch tensor [1, 3, H, W] -> backbone -> RPN -> RoI heads (boxes, masks) -> boxes
    scaled and mask probabilities pasted at the original size (torchvision:
    transform.postprocess; ours: toOriginalImage). Decoding and resizing are not timed.
    torch.inference_mode on both sides; ours folds the frozen batch norms first.
  train: losses on the batch and its targets (RPN, RoI heads, mask), zero_grad, backward, and
    an SGD step (momentum 0.9, weight decay 1e-4) over the trainable parameters, at learning
    rate 0: the step does all its arithmetic but the weights stay as loaded, so every measured
    step times the same model (with these random weights lr 1e-3 diverged to NaN after 8
    steps on both sides, and NaN steps time differently). A non-finite loss is an error.
    torchvision's transform of image and targets is done once, not timed.
  bf16: under torch.autocast("cpu", torch.bfloat16) (ours: the same autocast in C++); the
    backward and the step run outside it, as usual. By default only on a CPU that computes
    bf16 itself (AVX-512 BF16 or AMX): elsewhere oneDNN emulates it, and the rows would time
    the emulation; --precisions fp32,bf16 asks for them anyway.

The machine is shared: with --quiet-load L each measurement waits (up to 10 minutes) until
the 1-minute load average is below L; the load before and after each measurement is
printed. Writes OUT/results.json (default <build>/bench-data/mask_rcnn); with --write, the
"### Last result" subsection of docs/BENCHMARKS.md ("## Mask R-CNN inference and training step
vs torchvision") becomes this run's machine, date and tables ($MRCNN_BENCHMARKS_MD names
another file to write instead).
"""
import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torchvision
from bench_doc import load_average, machine_line, native_bf16, wait_quiet, write_last_result

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MRCNN_SHARED_DIR", ROOT.parent / "shared"))
SECTION = "## Mask R-CNN inference and training step vs torchvision"
STAGES = {"infer": ("backbone", "rpn", "roi_heads", "paste"), "train": ("forward", "backward", "step")}


def parity_module():
    """tests/engine/mask_rcnn_parity.py: the model's construction and weight scaling."""
    path = ROOT / "tests/engine/mask_rcnn_parity.py"
    spec = importlib.util.spec_from_file_location("mask_rcnn_parity", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def autocast(precision):
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def time_theirs(model, state, image, target, mode, precision, warmup, iters, stages):
    """torchvision's side, in this process; the model is reset to `state` first."""
    model.load_state_dict(state)
    times, stage_times, detections, last_loss = [], {}, -1, None

    def mark(name, start, measured):
        if measured:
            stage_times.setdefault(name, []).append((time.perf_counter() - start) * 1e3)
        return time.perf_counter()

    if mode == "infer":
        model.eval()
        with torch.inference_mode():
            batch, _ = model.transform([image])
        original = [tuple(image.shape[-2:])]
        for it in range(warmup + iters):
            measured = it >= warmup
            start = time.perf_counter()
            with torch.inference_mode(), autocast(precision):
                t = start
                features = model.backbone(batch.tensors)
                t = mark("backbone", t, measured and stages)
                proposals, _ = model.rpn(batch, features)
                t = mark("rpn", t, measured and stages)
                dets, _ = model.roi_heads(features, proposals, batch.image_sizes)
                t = mark("roi_heads", t, measured and stages)
                dets = model.transform.postprocess(dets, batch.image_sizes, original)
                mark("paste", t, measured and stages)
            if measured:
                times.append((time.perf_counter() - start) * 1e3)
            detections = len(dets[0]["boxes"])
        shape = list(batch.tensors.shape)
    else:
        model.train()
        batch, targets = model.transform([image], [dict(target)])
        params = [p for p in model.parameters() if p.requires_grad]
        sgd = torch.optim.SGD(params, lr=0.0, momentum=0.9, weight_decay=1e-4)
        for it in range(warmup + iters):
            measured = it >= warmup
            start = time.perf_counter()
            with autocast(precision):
                features = model.backbone(batch.tensors)
                proposals, rpn_losses = model.rpn(batch, features, targets)
                _, head_losses = model.roi_heads(features, proposals, batch.image_sizes, targets)
                total = sum(rpn_losses.values()) + sum(head_losses.values())
            t = mark("forward", start, measured and stages)
            sgd.zero_grad()
            total.backward()
            t = mark("backward", t, measured and stages)
            sgd.step()
            mark("step", t, measured and stages)
            if measured:
                times.append((time.perf_counter() - start) * 1e3)
            last_loss = total.item()
            if not math.isfinite(last_loss):
                raise SystemExit(f"torchvision's training loss became {last_loss} at step {it + 1}")
        shape = list(batch.tensors.shape)
    result = {"side": "torchvision", "mode": mode, "precision": precision,
              "threads": torch.get_num_threads(), "input": shape,
              "median_ms": statistics.median(times), "min_ms": min(times), "times_ms": times,
              "detections": detections}
    if last_loss is not None:
        result["last_loss"] = last_loss
    if stages:
        result["stages_ms"] = {k: statistics.median(v) for k, v in stage_times.items()}
    return result


def time_ours(exe, weights, image, targets, mode, precision, threads, warmup, iters, stages,
              channels_last):
    cmd = [str(exe), "--weights", str(weights), "--image", str(image), "--mode", mode,
           "--precision", precision, "--threads", str(threads), "--warmup", str(warmup),
           "--iters", str(iters)]
    if mode == "train":
        cmd += ["--targets", str(targets)]
    if stages:
        cmd.append("--stages")
    if channels_last:
        cmd.append("--channels-last")
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=str(ROOT / "build-bench"))
    parser.add_argument("--threads", default="2,1")
    parser.add_argument("--modes", default="infer,train")
    parser.add_argument("--precisions", default=None,
                        help="default: fp32,bf16 where the CPU has native bf16, else fp32")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--image", default=None)
    parser.add_argument("--stages", action="store_true", help="median time of each stage too")
    parser.add_argument("--channels-last", action="store_true",
                        help="feed our model a channels-last batch")
    parser.add_argument("--quiet-load", type=float, default=None,
                        help="wait before each measurement until the load average is below")
    parser.add_argument("--out", default=None)
    parser.add_argument("--write", action="store_true",
                        help="rewrite the last result in docs/BENCHMARKS.md")
    args = parser.parse_args()
    if args.precisions is None:
        args.precisions = "fp32,bf16" if native_bf16() else "fp32"
        if not native_bf16():
            print("no bf16 rows: this CPU has neither AVX-512 BF16 nor AMX (emulated bf16 "
                  "would be timed); --precisions fp32,bf16 to time it anyway", file=sys.stderr)

    build = Path(args.build)
    exe = build / "bin/bench_mask_rcnn"
    if not exe.exists():
        raise SystemExit(f"{exe} does not exist: ninja -C {build} bench_mask_rcnn")
    out = Path(args.out) if args.out else build / "bench-data/mask_rcnn"
    out.mkdir(parents=True, exist_ok=True)

    parity = parity_module()
    os.environ.setdefault("MRCNN_SHARED_DIR", str(SHARED))
    torch.manual_seed(0)
    model = parity.build()
    parity.randomise(model, torch.Generator().manual_seed(2024))
    weights = out / "model.pt"
    torch.save(model.state_dict(), weights)
    state = {k: v.clone() for k, v in model.state_dict().items()}

    files, coco = parity.photos()
    photo = Path(args.image) if args.image else Path(files[0])
    image = torchvision.io.read_image(str(photo), torchvision.io.ImageReadMode.RGB).float() / 255
    target = parity.ground_truth(coco, photo.name, image.shape[-2], image.shape[-1])
    model.train()
    _, transformed = model.transform([image], [dict(target)])
    targets = out / "targets.pt"
    torch.save({k: transformed[0][k].contiguous() for k in ("boxes", "labels", "masks")}, targets)

    load_before = load_average()
    results = []
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        for mode in args.modes.split(","):
            for precision in args.precisions.split(","):
                row = {"mode": mode, "precision": precision, "threads": threads}
                for side in ("torchvision", "ours"):
                    wait_quiet(args.quiet_load)
                    before = load_average()
                    if side == "ours":
                        r = time_ours(exe, weights, photo, targets, mode, precision, threads,
                                      args.warmup, args.iters, args.stages, args.channels_last)
                    else:
                        r = time_theirs(model, state, image, target, mode, precision,
                                        args.warmup, args.iters, args.stages)
                    r["load_before"], r["load_after"] = before, load_average()
                    row[side] = r
                    print(f"  {side:11} {mode:5} {precision} {threads} thr: median "
                          f"{r['median_ms']:8.1f} ms  (load {before:.2f} -> "
                          f"{r['load_after']:.2f})" +
                          (f"  stages {r['stages_ms']}" if "stages_ms" in r else ""),
                          file=sys.stderr, flush=True)
                if row["ours"]["input"] != row["torchvision"]["input"]:
                    raise SystemExit(f"the inputs differ: ours {row['ours']['input']}, "
                                     f"torchvision's {row['torchvision']['input']}")
                row["speedup"] = row["torchvision"]["median_ms"] / row["ours"]["median_ms"]
                results.append(row)
                row_print(row)

    meta = {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "torch": torch.__version__,
            "torchvision": torchvision.__version__, "python": platform.python_version(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "photo": photo.name,
            "original_size": list(image.shape[-2:]), "warmup": args.warmup,
            "iters": args.iters}
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    print(f"\n{meta}\nresults: {out / 'results.json'}")
    if args.write:
        header = (f"{machine_line(load_before)}; torch {meta['torch']} (LibTorch's CPU capability "
                  f"{meta['cpu_capability']}), torchvision {meta['torchvision']}, Python "
                  f"{meta['python']}; photo `{meta['photo']}` "
                  f"({meta['original_size'][0]}x{meta['original_size'][1]}); warm-up {args.warmup}, "
                  f"median of {args.iters}" +
                  ("; ours fed a channels-last batch" if args.channels_last else "") +
                  (f"; each measurement waited for the 1-minute load to fall under {args.quiet_load}"
                   if args.quiet_load else "") +
                  "; training at learning rate 0" +
                  ("" if "bf16" in args.precisions else
                   "; no bf16 rows (this CPU has neither AVX-512 BF16 nor AMX: bf16 is emulated)")
                  + ":")
        write_last_result(SECTION, header + "\n\n" + doc_tables(results))
        print(f"docs/BENCHMARKS.md: {SECTION[3:]} / Last result rewritten")


def doc_tables(results):
    """The run as docs/BENCHMARKS.md shows it: one row a measurement, the load from the start of
    torchvision's to the end of ours; then, when the stages were timed, their medians."""
    lines = ["| mode | precision | threads | torchvision ms | ours ms | ours/torchvision | speed-up | "
             "detections (tv/ours) | load during |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for row in results:
        tv, ours = row["torchvision"], row["ours"]
        detections = f"{tv['detections']}/{ours['detections']}" if row["mode"] == "infer" else "–"
        lines.append(f"| {row['mode']} | {row['precision']} | {row['threads']} | {tv['median_ms']:.1f} | "
                     f"{ours['median_ms']:.1f} | {ours['median_ms'] / tv['median_ms']:.3f} | "
                     f"{row['speedup']:.2f}× | {detections} | "
                     f"{tv['load_before']:.2f}..{ours['load_after']:.2f} |")
    staged = [r for r in results if "stages_ms" in r["torchvision"] and "stages_ms" in r["ours"]]
    if staged:
        lines += ["", "Per stage (medians, ms; torchvision / ours):"]
    for mode, names in STAGES.items():
        rows = [r for r in staged if r["mode"] == mode]
        if not rows:
            continue
        lines += ["", "| run | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for r in rows:
            cells = [f"{r['torchvision']['stages_ms'].get(n, float('nan')):.0f} / "
                     f"{r['ours']['stages_ms'].get(n, float('nan')):.0f}" for n in names]
            lines.append(f"| {mode} {r['precision']}, {r['threads']} thr | " + " | ".join(cells) + " |")
    return "\n".join(lines)


HEADER_PRINTED = []


def row_print(row):
    if not HEADER_PRINTED:
        print("| mode | precision | threads | torchvision ms | ours ms | ours/torchvision | "
              "speedup | detections (tv/ours) | load before..after |")
        print("|---|---|---:|---:|---:|---:|---:|---|---|")
        HEADER_PRINTED.append(True)
    tv, ours = row["torchvision"], row["ours"]
    loads = [tv["load_before"], tv["load_after"], ours["load_before"], ours["load_after"]]
    print(f"| {row['mode']} | {row['precision']} | {row['threads']} | {tv['median_ms']:.1f} | "
          f"{ours['median_ms']:.1f} | {ours['median_ms'] / tv['median_ms']:.3f} | "
          f"{row['speedup']:.2f}x | {tv['detections']}/{ours['detections']} | "
          f"{min(loads):.2f}..{max(loads):.2f} |", flush=True)


if __name__ == "__main__":
    main()
