#!/usr/bin/env python3
"""Convergence of the main job: runs the README's main command (`mrcnn-workbench --headless
specs/shapes_resnet18.txt`) unattended in a fresh run directory, times it from launch to exit,
and records the loss and mAP curve from the run's events.jsonl.

    .venv/bin/python scripts/bench_convergence.py [--spec SPEC] [--set k=v]... [--run-dir D]
        [--workbench build/bin/mrcnn-workbench] [--quiet-load L] [--write] [--note TEXT]
    .venv/bin/python scripts/bench_convergence.py --render RUN_DIR [--write] [--note TEXT]

Writes RUN_DIR/curve.csv (one row per progress or eval event: seconds since launch, step,
learning rate, the loss components, images/s, bbox and segm AP) and RUN_DIR/curve.svg (total
loss and both mAPs against wall time); with --write, copies both to docs/convergence/ and
replaces the "Convergence on shapes" section of docs/BENCHMARKS.md. Run by hand, not a test:
the figure it proves is a wall time on this machine, so start it on a quiet machine
(--quiet-load waits until the 1-minute load average is below L).
"""
import argparse
import csv
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_doc import cpu_name, memory_gib, replace_section, wait_quiet

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Convergence on shapes"
LOSSES = ["total", "rpnObjectness", "rpnBox", "fastRcnnClass", "fastRcnnBox", "mask"]


def machine():
    mem = memory_gib()
    return (f"{platform.system()} {platform.release()}, {os.cpu_count()} cores ({cpu_name()})"
            + (f", {mem:.0f} GiB" if mem else ""))


def read_events(run_dir):
    events = []
    path = Path(run_dir) / "events.jsonl"
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise SystemExit(f"{path}:{number}: not a JSON event: {e}")
    return events


def curve_rows(events, launched):
    """Rows of the curve; `launched` is the launch time (unix s), else the first event's."""
    t0 = launched if launched is not None else events[0]["time"]
    rows = []
    for e in events:
        if e["type"] == "progress":
            row = {"seconds": e["time"] - t0, "step": int(e["step"]), "lr": e.get("lr", 0.0),
                   "images_per_second": e.get("imagesPerSecond", 0.0),
                   "data_wait_share": e.get("dataWaitShare", 0.0)}
            for k in LOSSES:
                row["loss_" + k] = e.get("losses", {}).get(k, 0.0)
            rows.append(row)
        elif e["type"] == "eval":
            row = {"seconds": e["time"] - t0, "step": int(e["step"])}
            for kind in ("bbox", "segm"):
                stats = e.get(kind, {}).get("stats", [])
                if stats:
                    row[kind + "_ap"], row[kind + "_ap50"], row[kind + "_ap75"] = stats[:3]
            rows.append(row)
    return rows


def write_csv(rows, path):
    fields = ["seconds", "step", "lr"] + ["loss_" + k for k in LOSSES] + [
        "images_per_second", "data_wait_share", "bbox_ap", "bbox_ap50", "bbox_ap75", "segm_ap",
        "segm_ap50", "segm_ap75"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def write_svg(rows, path, limit_seconds, title):
    """Total loss (left axis) and bbox/segm AP (right axis, 0..1) against minutes."""
    W, H, L, R, T, B = 760, 360, 60, 60, 40, 50
    loss = [(r["seconds"], r["loss_total"]) for r in rows if "loss_total" in r]
    bbox = [(r["seconds"], r["bbox_ap"]) for r in rows if "bbox_ap" in r]
    segm = [(r["seconds"], r["segm_ap"]) for r in rows if "segm_ap" in r]
    t_max = max([limit_seconds] + [t for t, _ in loss + bbox + segm])
    l_max = max([v for _, v in loss] + [1.0])

    def x(t):
        return L + (W - L - R) * t / t_max

    def y(v, top):
        return T + (H - T - B) * (1 - v / top)

    def polyline(points, top, colour, dash=""):
        if not points:
            return ""
        p = " ".join(f"{x(t):.1f},{y(v, top):.1f}" for t, v in points)
        d = f' stroke-dasharray="{dash}"' if dash else ""
        dots = "".join(f'<circle cx="{x(t):.1f}" cy="{y(v, top):.1f}" r="3" fill="{colour}"/>'
                       for t, v in points) if top == 1.0 else ""
        return f'<polyline fill="none" stroke="{colour}" stroke-width="2"{d} points="{p}"/>{dots}'

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>']
    for i in range(6):  # horizontal grid: AP 0..1 on the right, loss on the left
        v = i / 5
        yy = y(v, 1.0)
        parts.append(f'<line x1="{L}" x2="{W - R}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{W - R + 6}" y="{yy + 4:.1f}">{v:.1f}</text>')
        parts.append(f'<text x="{L - 6}" y="{yy + 4:.1f}" text-anchor="end">{v * l_max:.2g}</text>')
    step = 2 if t_max <= 1500 else 5
    for m in range(0, int(t_max / 60) + 1, step):
        xx = x(m * 60)
        parts.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{T}" y2="{H - B}" stroke="#eee"/>')
        parts.append(f'<text x="{xx:.1f}" y="{H - B + 16}" text-anchor="middle">{m}</text>')
    xl = x(limit_seconds)
    parts.append(f'<line x1="{xl:.1f}" x2="{xl:.1f}" y1="{T}" y2="{H - B}" stroke="#c00" '
                 f'stroke-dasharray="4 3"/>')
    parts.append(f'<text x="{xl - 4:.1f}" y="{T + 12}" text-anchor="end" fill="#c00">'
                 f'{limit_seconds / 60:.0f} min</text>')
    yt = y(0.5, 1.0)
    parts.append(f'<line x1="{L}" x2="{W - R}" y1="{yt:.1f}" y2="{yt:.1f}" stroke="#888" '
                 f'stroke-dasharray="2 3"/>')
    parts.append(f'<text x="{L + 4}" y="{yt - 4:.1f}" fill="#888">target mAP 0.5</text>')
    parts.append(polyline(loss, l_max, "#555"))
    parts.append(polyline(bbox, 1.0, "#1f77b4"))
    parts.append(polyline(segm, 1.0, "#2ca02c", "6 3"))
    parts.append(f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle">minutes since launch</text>')
    parts.append(f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" '
                 f'text-anchor="middle">total loss (grey)</text>')
    parts.append(f'<text x="{W - 12}" y="{H / 2}" transform="rotate(90 {W - 12} {H / 2})" '
                 f'text-anchor="middle">mAP: bbox (blue), segm (green, dashed)</text>')
    parts.append("</svg>")
    Path(path).write_text("\n".join(parts) + "\n")


def summarise(events, rows, wall, launched):
    done = next((e for e in reversed(events) if e["type"] == "done"), None)
    start = next((e for e in events if e["type"] == "start"), None)
    evals = [r for r in rows if "bbox_ap" in r]
    progress = [r for r in rows if "loss_total" in r]
    first_step = next((e for e in events if e["type"] == "progress"), None)
    t0 = launched if launched is not None else events[0]["time"]
    return {
        "wall_seconds": wall,
        "status": done.get("status") if done else "no done event",
        "summary": done.get("summary", "") if done else "",
        "total_steps": int(start.get("totalSteps", 0)) if start else 0,
        "last_step": progress[-1]["step"] if progress else 0,
        "first_progress_seconds": first_step["time"] - t0 if first_step else None,
        "evals": evals,
        "images_per_second": (sum(r["images_per_second"] for r in progress[1:]) /
                              max(1, len(progress) - 1)) if progress else 0.0,
        "data_wait_share": max((r["data_wait_share"] for r in progress[1:]), default=0.0),
    }


def section(s, meta, note):
    lines = [SECTION, "",
             "The README's main command, unattended, in a fresh run directory: "
             f"`{meta['command']}`. Wall time from launch to exit, including setup of the "
             "dataset, evaluation on schedule, checkpoints and the final overlays.", "",
             f"Machine: {meta['machine']}. Date: {meta['date']}. Load average before "
             f"{meta['load_before']:.2f}, after {meta['load_after']:.2f}. "
             f"Engine threads: {meta['threads']}.", "",
             (f"Stopped by the script with Ctrl-C after {meta['stopped_after_minutes']:g} "
              "minutes, as a user would; the figures are those reached by then. "
              if meta.get("stopped_after_minutes") else "") +
             f"Result: **{s['status']}** after **{s['wall_seconds'] / 60:.1f} min** "
             f"(step {s['last_step']} of {s['total_steps']}); mean training speed "
             f"{s['images_per_second']:.2f} images/s, data-wait share at most "
             f"{100 * s['data_wait_share']:.1f}%. {s['summary']}", "",
             "| minutes | step | bbox AP | bbox AP50 | segm AP | segm AP50 |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in s["evals"]:
        lines.append(f"| {r['seconds'] / 60:.1f} | {r['step']} | {r['bbox_ap']:.3f} | "
                     f"{r['bbox_ap50']:.3f} | {r.get('segm_ap', float('nan')):.3f} | "
                     f"{r.get('segm_ap50', float('nan')):.3f} |")
    lines += ["", "![loss and mAP against wall time](convergence/shapes_curve.svg)", "",
              "The whole curve (every progress and evaluation event): "
              "[convergence/shapes_curve.csv](convergence/shapes_curve.csv)."]
    if note:
        lines += ["", note]
    lines += ["", "To reproduce: `.venv/bin/python scripts/bench_convergence.py --quiet-load 1 "
              "--write` (it builds nothing: run `scripts/run.sh --task validate` first)."]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--spec", default=str(ROOT / "specs/shapes_resnet18.txt"))
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--run-dir", default=None, help="default: a new temporary directory")
    p.add_argument("--workbench", default=str(ROOT / "build/bin/mrcnn-workbench"))
    p.add_argument("--limit-minutes", type=float, default=20.0)
    p.add_argument("--quiet-load", type=float, default=None)
    p.add_argument("--stop-after-minutes", type=float, default=None,
                   help="stop the run gracefully (SIGINT, as Ctrl-C) after this wall time")
    p.add_argument("--render", default=None, help="only read an existing run directory")
    p.add_argument("--write", action="store_true")
    p.add_argument("--note", default="")
    a = p.parse_args()

    launched = None
    if a.render:
        run_dir = Path(a.render)
        meta_path = run_dir / "convergence_meta.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
        if meta is None:
            raise SystemExit(f"{meta_path}: missing (the run was not started by this script)")
        launched, wall = meta["launched"], meta["wall_seconds"]
    else:
        if a.quiet_load is not None:
            wait_quiet(a.quiet_load)
        run_dir = Path(a.run_dir) if a.run_dir else Path(tempfile.mkdtemp(prefix="convergence-"))
        if (run_dir / "events.jsonl").exists():
            raise SystemExit(f"{run_dir}: already holds a run (it would resume); give a new one")
        cmd = [a.workbench, "--headless", a.spec, "--run-dir", str(run_dir)]
        for s in a.set:
            cmd += ["--set", s]
        load_before = os.getloadavg()[0]
        launched = time.time()
        t = time.perf_counter()
        log = open(run_dir.parent / (run_dir.name + ".out"), "w") if a.run_dir else None
        proc = subprocess.Popen(cmd, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT)
        stopped_early = False
        try:
            proc.wait(timeout=a.stop_after_minutes * 60 if a.stop_after_minutes else None)
        except subprocess.TimeoutExpired:
            # Ctrl-C as a user would: the engine finishes its step, checkpoints, says stopped.
            stopped_early = True
            proc.send_signal(signal.SIGINT)
            proc.wait()
        wall = time.perf_counter() - t
        threads = "?"
        for line in (run_dir / "events.jsonl").read_text().splitlines():
            if '"log"' in line and "CPU threads:" in line:
                threads = line.split("CPU threads:")[1].split(")")[0].strip()
                break
        meta = {"command": " ".join(["mrcnn-workbench", "--headless",
                                     os.path.relpath(a.spec, ROOT)] + [f"--set {s}" for s in a.set]),
                "machine": machine(), "date": datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%d %H:%M UTC"), "load_before": load_before,
                "load_after": os.getloadavg()[0], "threads": threads, "launched": launched,
                "wall_seconds": wall, "exit_code": proc.returncode,
                "stopped_after_minutes": a.stop_after_minutes if stopped_early else None}
        (run_dir / "convergence_meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        print(f"exit {proc.returncode} after {wall / 60:.1f} min; run directory {run_dir}")

    events = read_events(run_dir)
    rows = curve_rows(events, launched)
    write_csv(rows, run_dir / "curve.csv")
    s = summarise(events, rows, wall, launched)
    spec_name = meta["command"].split()[2] if len(meta["command"].split()) > 2 else "spec"
    write_svg(rows, run_dir / "curve.svg", a.limit_minutes * 60,
              f"mrcnn-workbench --headless {spec_name}, {meta['date']}")
    for r in s["evals"]:
        print(f"{r['seconds'] / 60:6.1f} min  step {r['step']:>5}  bbox AP {r['bbox_ap']:.3f}  "
              f"segm AP {r.get('segm_ap', float('nan')):.3f}")
    print(f"{s['status']}: {s['summary']}")
    if a.write:
        out = ROOT / "docs/convergence"
        out.mkdir(exist_ok=True)
        shutil.copy(run_dir / "curve.csv", out / "shapes_curve.csv")
        shutil.copy(run_dir / "curve.svg", out / "shapes_curve.svg")
        replace_section(SECTION, section(s, meta, a.note))
        print("docs/BENCHMARKS.md: section written; docs/convergence/ updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
