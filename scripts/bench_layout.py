#!/usr/bin/env python3
"""Channels-last (NHWC) against NCHW on this CPU: the engine's synthetic-data benchmark
(`mrcnn-engine --task benchmark`, no data loading) run with `memory_format: nchw` and with
`memory_format: nhwc`, in turns, for the training step and for inference, fp32 and (where the
CPU computes it) bf16, on the shapes spec (128x192, ResNet-18) and on torchvision's ResNet-50
FPN at 800x1333 (specs/coco_torchvision_r50.txt, random weights, score threshold 0 so that
every image keeps its 100 detections). Each row: both layouts' images/s (the mean over the
measured steps, best of the rounds) and NHWC / NCHW. What `memory_format: auto` picks on the
CPU (channels-last for inference, NCHW for training) comes from this table.

    bench_layout.py [--rounds 2] [--quiet-load 1.5] [--skip-r50 | --skip-shapes] [--write]

--write rewrites this CPU's subsection of docs/BENCHMARKS.md "Channels-last (NHWC) on the CPU".
Run on a quiet machine; build first: ninja -C build mrcnn-engine."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_doc  # noqa: E402

SECTION = "## Channels-last (NHWC) on the CPU"
SUMMARY = re.compile(r"benchmark (\w+): ([\d.]+) images/s")


def cases(skip_shapes, skip_r50, bf16):
    """(label, spec, mode, steps, extra --set flags) for every row."""
    out = []
    specs = []
    if not skip_shapes:
        specs.append(("shapes ResNet-18 128x192", "specs/shapes_resnet18.txt", {"train": 12, "inference": 20}, []))
    if not skip_r50:
        specs.append(("R50-FPN 800x1333", "specs/coco_torchvision_r50.txt", {"train": 3, "inference": 4},
                      ["--set", "maskrcnn_config.test_score_thresh=0", "--set", "train_batch_size=1"]))
    for name, spec, steps, extra in specs:
        for mode in ("train", "inference"):
            for precision, flags in [("fp32", bench_doc.FP32_FLAGS)] + ([("bf16", bench_doc.BF16_FLAGS)] if bf16 else []):
                out.append((f"{name}, {mode}, {precision}", spec, mode, steps[mode], extra + flags))
    return out


def run_once(engine, spec, mode, steps, flags, layout, work):
    cmd = [engine, "--spec", os.path.join(bench_doc.ROOT, spec), "--task", "benchmark", "--mode", mode,
           "--steps", str(steps), "--set", "memory_format=" + layout, "--set", "device=cpu",
           "--run-dir", os.path.join(work, f"{mode}-{layout}")] + flags
    done = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    for line in done.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("type") == "done" and (m := SUMMARY.search(event.get("summary", ""))):
            return float(m[2])
    raise SystemExit(f"{' '.join(cmd)}: no benchmark summary in its events")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="turns of NCHW then NHWC (best kept)")
    ap.add_argument("--quiet-load", type=float, help="wait for a 1-minute load average below this first")
    ap.add_argument("--skip-r50", action="store_true", help="the shapes rows only (minutes, not tens)")
    ap.add_argument("--skip-shapes", action="store_true", help="the R50 rows only")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    engine = bench_doc.find_program("mrcnn-engine")
    bench_doc.wait_quiet(args.quiet_load)
    load = bench_doc.load_average()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for label, spec, mode, steps, flags in cases(args.skip_shapes, args.skip_r50, bench_doc.native_bf16()):
            best = {"nchw": 0.0, "nhwc": 0.0}
            for r in range(args.rounds):
                order = ("nchw", "nhwc") if r % 2 == 0 else ("nhwc", "nchw")
                for layout in order:
                    best[layout] = max(best[layout], run_once(engine, spec, mode, steps, flags, layout, work))
            rows.append((label, best["nchw"], best["nhwc"]))
            print(json.dumps({"row": label, "nchw": best["nchw"], "nhwc": best["nhwc"],
                              "ratio": best["nhwc"] / best["nchw"]}), flush=True)
    header = (f"{bench_doc.machine_line(load)}; `mrcnn-engine --task benchmark` (synthetic batches "
              f"of the spec's size: the shapes spec's training batch 4, inference batch 1; R50 batch 1), "
              f"best of {args.rounds} rounds, the layouts in turns; images/s:")
    table = ["| row | NCHW | channels-last | channels-last / NCHW |", "| --- | ---: | ---: | ---: |"]
    table += [f"| {label} | {a:.2f} | {b:.2f} | {b / a:.2f}x |" for label, a, b in rows]
    text = header + "\n\n" + "\n".join(table) + "\n"
    print(text)
    if args.write:
        bench_doc.replace_machine_subsection(SECTION, text)
        print(f"{bench_doc.benchmarks_path()}: {SECTION[3:]} / {bench_doc.machine_heading()[4:]} rewritten")


if __name__ == "__main__":
    sys.exit(main())
