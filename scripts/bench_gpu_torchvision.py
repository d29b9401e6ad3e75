#!/usr/bin/env python3
"""torchvision's Mask R-CNN on a GPU with synthetic data: the peer measured beside our
`mrcnn-engine --task benchmark` in scripts/gpu_check.sh (same GPU, same run).

    bench_gpu_torchvision.py [--batches 1,4,8] [--steps 20] [--height 800] [--width 1333]
        [--amp fp16|bf16|none] [--inference-batch 1] [--score-thresh 0.05] [--json OUT.json]
    bench_gpu_torchvision.py --write-from SUMMARY.json [--before SUMMARY.json]

The model is maskrcnn_resnet50_fpn as built with COCO backbone weights (ResNet-50 + FPN,
FrozenBatchNorm2d, the last three stages trainable, 91 classes), with random weights; the
transform's min_size/max_size are the image's own size so nothing is resized. The data are
what the engine's benchmark makes: normalised noise, three boxes per image with their
filled-rectangle masks.

  train: loss over the batch (autocast when --amp), GradScaler for fp16, backward, SGD step
    (momentum 0.9, weight decay 1e-4), timed between device synchronisations;
  inference: model(images) in eval mode under torch.inference_mode (autocast when --amp),
    including torchvision's postprocessing (masks pasted into the image).

Reports images/s (steps after a warm-up of max(2, steps/10)), the median step time and the
peak memory allocated on the device (torch.cuda.max_memory_allocated). Test-only tool: the
product never runs Python.

The GPU machine cannot write the document, so the table of docs/BENCHMARKS.md ("## GPU: the
GPU check on a lent H100") comes from the check's result file afterwards, on any machine:
--write-from takes the summary.json of scripts/gpu_check.sh (its machine and its "bench" rows,
ours beside this script's) and rewrites that section's "### Last result" subsection with the
run's GPU, date and table; --before adds an earlier run's summary as the "before" columns
(a change measured on two lent machines). Nothing is measured then, and no GPU is needed.
$MRCNN_BENCHMARKS_MD names another file to write instead of docs/BENCHMARKS.md.
"""

import argparse
import json
import re
import statistics
import sys
import time

import torch
from bench_doc import write_last_result

SECTION = "## GPU: the GPU check on a lent H100"


def build_model(height, width, score_thresh):
    from torchvision.models import resnet50
    from torchvision.models.detection import MaskRCNN
    from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
    from torchvision.ops import FrozenBatchNorm2d

    backbone = _resnet_fpn_extractor(resnet50(norm_layer=FrozenBatchNorm2d), 3)
    return MaskRCNN(backbone, num_classes=91, min_size=height, max_size=max(height, width),
                    box_score_thresh=score_thresh)


def fake_batch(count, height, width, device):
    images, targets = [], []
    for _ in range(count):
        images.append(torch.randn(3, height, width, device=device))
        boxes, masks = [], torch.zeros(3, height, width, dtype=torch.uint8, device=device)
        for k in range(3):
            x0, y0 = width * (0.05 + 0.25 * k), height * (0.1 + 0.2 * k)
            x1, y1 = min(width - 1, x0 + width * 0.3), min(height - 1, y0 + height * 0.3)
            boxes.append([x0, y0, x1, y1])
            masks[k, int(y0):int(y1), int(x0):int(x1)] = 1
        targets.append({"boxes": torch.tensor(boxes, device=device),
                        "labels": torch.randint(1, 91, (3,), device=device), "masks": masks})
    return images, targets


def timed(step, steps):
    warmup = max(2, steps // 10)
    times = []
    for i in range(warmup + steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="1,4,8")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--height", type=int, default=800)
    ap.add_argument("--width", type=int, default=1333)
    ap.add_argument("--amp", default="fp16", choices=["fp16", "bf16", "none"])
    ap.add_argument("--inference-batch", type=int, default=1)
    ap.add_argument("--score-thresh", type=float, default=0.05,
                    help="box_score_thresh (0 keeps 100 detections an image with random weights)")
    ap.add_argument("--json")
    ap.add_argument("--write-from", metavar="SUMMARY.json",
                    help="write the section of docs/BENCHMARKS.md from gpu_check.sh's summary; "
                         "measures nothing")
    ap.add_argument("--before", metavar="SUMMARY.json",
                    help="with --write-from: an earlier run's summary, as the before columns")
    args = ap.parse_args()
    if args.write_from:
        write_from(args.write_from, args.before)
        return 0
    if args.before:
        ap.error("--before goes with --write-from")
    if not torch.cuda.is_available():
        print("no CUDA device: nothing measured")
        return 0
    import torchvision

    device = torch.device("cuda")
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "none": None}[args.amp]
    torch.manual_seed(0)
    rows = []
    for batch in [int(b) for b in args.batches.split(",") if b]:
        model = build_model(args.height, args.width, args.score_thresh).to(device).train()
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.SGD(params, lr=1e-6, momentum=0.9, weight_decay=1e-4)
        scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
        images, targets = fake_batch(batch, args.height, args.width, device)

        def train_step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
                loss = sum(model(images, targets).values())
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

        torch.cuda.reset_peak_memory_stats()
        times = timed(train_step, args.steps)
        rows.append({"mode": "train", "batch": batch, "images_per_second": batch * len(times) / sum(times),
                     "p50_ms": statistics.median(times) * 1000,
                     "peak_mib": torch.cuda.max_memory_allocated() / 2**20})
        del model, opt, images, targets
        torch.cuda.empty_cache()

    model = build_model(args.height, args.width, args.score_thresh).to(device).eval()
    images, _ = fake_batch(args.inference_batch, args.height, args.width, device)

    def infer():
        with torch.inference_mode(), torch.autocast("cuda", dtype=dtype or torch.float32,
                                                    enabled=dtype is not None):
            model(images)

    torch.cuda.reset_peak_memory_stats()
    times = timed(infer, args.steps)
    rows.append({"mode": "inference", "batch": args.inference_batch,
                 "images_per_second": args.inference_batch * len(times) / sum(times),
                 "p50_ms": statistics.median(times) * 1000,
                 "peak_mib": torch.cuda.max_memory_allocated() / 2**20})
    report = {"torch": torch.__version__, "torchvision": torchvision.__version__,
              "device": torch.cuda.get_device_name(0), "amp": args.amp,
              "image": [args.height, args.width], "rows": rows}
    for r in rows:
        print(f"torchvision {r['mode']} batch {r['batch']}: {r['images_per_second']:.2f} images/s, "
              f"p50 {r['p50_ms']:.1f} ms, peak {r['peak_mib']:.0f} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


def bench_rows(path):
    """The machine, the date and the benchmark rows (by key: train-b4, infer-b1-fp32, ...) of a
    gpu_check.sh summary."""
    with open(path) as f:
        summary = json.load(f)
    rows = (summary.get("bench") or {}).get("rows")
    if not rows:
        sys.exit(f"{path}: no benchmark rows (status {summary.get('status')!r}: "
                 f"{summary.get('note', '')}); write from a summary whose bench step passed")
    machine = summary.get("machine", {})
    # The prerequisites step's detail ends with nvidia-smi's "name, driver, memory, clock".
    driver = ""
    for step in summary.get("steps", []):
        if step.get("step") == "prerequisites" and "; " in step.get("detail", ""):
            fields = step["detail"].split("; ", 1)[1].split(", ")
            driver = fields[1] if len(fields) > 1 else ""
    details = ", ".join(x for x in (f"driver {driver}" if driver else "",
                                    f"{machine['multiprocessors']} SMs" if "multiprocessors" in machine
                                    else "") if x)
    started = summary.get("started", "")
    when = started[:16].replace("T", " ") + " UTC" if started else "undated"
    line = (f"{when}, one {machine.get('gpu', 'unknown GPU')}{f' ({details})' if details else ''}, "
            f"torch {machine.get('torch', '?')}, torchvision {machine.get('torchvision', '?')}")
    return line, {r["row"]: r for r in rows}


ROW_KEY = re.compile(r"(train|infer)-b(\d+)(-fp32|-bf16)?(-nchw|-graphs)?")


def row_order(key):
    """train before inference, fp16 before bf16 before fp32, then by batch, eager before its
    variants (the document's order)."""
    m = ROW_KEY.fullmatch(key)
    precision = {None: 0, "-bf16": 1, "-fp32": 2}
    return (m[1] != "train", precision[m[3]], int(m[2]), m[4] or "") if m else (2, 0, 0, "")


def row_label(key):
    m = ROW_KEY.fullmatch(key)
    if not m:
        return key
    precision = {None: "fp16", "-bf16": "bf16", "-fp32": "fp32"}[m[3]]
    variant = {None: "", "-nchw": ", NCHW", "-graphs": ", CUDA graphs"}[m[4]]
    return f"{'train' if m[1] == 'train' else 'inference'}, batch {m[2]}, {precision}{variant}"


def speed_cells(row):
    """ours img/s | torchvision img/s | ratio, "–" where a side is missing."""
    ours, tv = (row or {}).get("ours"), (row or {}).get("torchvision")
    return [f"{ours['images_per_second']:.2f}" if ours else "–",
            f"{tv['images_per_second']:.2f}" if tv else "–",
            f"{ours['images_per_second'] / tv['images_per_second']:.2f}x" if ours and tv else "–"]


def latency(rows):
    """The median step of inference at batch 1, fp16 / fp32, each side."""
    def p50(key, side):
        r = (rows.get(key) or {}).get(side)
        return f"{r['p50_ms']:.1f}" if r else "–"
    return (f"ours {p50('infer-b1', 'ours')} ms fp16 / {p50('infer-b1-fp32', 'ours')} ms fp32, "
            f"torchvision {p50('infer-b1', 'torchvision')} / {p50('infer-b1-fp32', 'torchvision')} ms")


def write_from(path, before_path=None):
    line, rows = bench_rows(path)
    before_line, before = bench_rows(before_path) if before_path else (None, {})
    if before_path:
        header = f"{line}; before: {before_line}; each ratio from one run:"
        table = ["| row | before: ours img/s | torchvision | ratio | after: ours img/s | torchvision | "
                 "ratio | memory after: ours / torchvision MiB |",
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    else:
        header = f"{line}:"
        table = ["| row | ours img/s | torchvision | ratio | memory: ours / torchvision MiB |",
                 "| --- | ---: | ---: | ---: | ---: |"]
    for key in sorted(set(rows) | set(before), key=row_order):
        row = rows.get(key) or {}
        memory = " / ".join(f"{row[side]['peak_mib']:.0f}" if row.get(side) else "–"
                            for side in ("ours", "torchvision"))
        cells = (speed_cells(before.get(key)) if before_path else []) + speed_cells(row) + [memory]
        table.append(f"| {row_label(key)} | " + " | ".join(cells) + " |")
    note = (f"Inference latency at batch 1 (median step{', after' if before_path else ''}): "
            f"{latency(rows)}")
    note += f" (before: {latency(before)})." if before_path else "."
    block = header + "\n\n" + "\n".join(table) + "\n\n" + note
    print(block)
    write_last_result(SECTION, block)
    print(f"docs/BENCHMARKS.md: {SECTION[3:]} / Last result rewritten")


if __name__ == "__main__":
    sys.exit(main())
