#!/usr/bin/env python3
"""Verdict on the CUDA graphs check (scripts/gpu_check.sh): a training run with
use_cuda_graphs against the same run without (same spec, seed and steps), and checks

  - both ended `done: ok`; the graphs run logged "CUDA graphs: on" and its summary counts
    replays (a replay a micro-batch) and no eager fallback past the cap;
  - (reported, not judged) the images/s of each, the shapes read through the loader;
  - the losses agree to fp16 tolerance: the first step's five losses within 1e-3 relative
    (the same kernels replayed; only the backward's atomics are unordered, and they come after
    the first forward), every later step's total within 5e-2 (two runs on a GPU drift apart
    by rounding whatever records them).

    gpu_check_graphs.py --graphs DIR --eager DIR [--json OUT.json]

Exit 0 when every check holds, 1 otherwise; one line of findings either way.
Test-only: the product never runs Python.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_check_train import (done_status, last_session, losses_by_step, read_events,  # noqa: E402
                             write_verdict)


def throughput(events):
    """Median images/s of the progress events after the third step (the shapes through the
    loader, the recording and warm-up left out)."""
    rates = sorted(e["imagesPerSecond"] for e in events
                   if e.get("type") == "progress" and int(e.get("step", 0)) > 3 and e.get("imagesPerSecond"))
    return rates[len(rates) // 2] if rates else None


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", required=True)
    ap.add_argument("--eager", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()

    problems = []
    graphed = last_session(read_events(args.graphs))
    eager = last_session(read_events(args.eager))
    for name, events in (("graphs", graphed), ("eager", eager)):
        if done_status(events) != "ok":
            problems.append(f"the {name} run ended {done_status(events)!r}, not 'ok'")
    logs = [e.get("text", "") for e in graphed if e.get("type") == "log"]
    status = next((t for t in logs if t.startswith("CUDA graphs:")), "")
    if ": on " not in status:
        problems.append(f"the graphs were not on: {status!r}")
    done = [e.get("summary", "") for e in graphed if e.get("type") == "done"]
    counts = re.search(r"CUDA graphs: (\d+) input shape\(s\) recorded, (\d+) replays, (\d+) eager calls",
                       done[-1] if done else "")
    if not counts or int(counts[2]) == 0:
        problems.append(f"no replays in the summary: {done[-1] if done else None!r}")
    elif int(counts[3]) != 0:
        problems.append(f"{counts[3]} training calls ran eagerly")

    a, b = losses_by_step(graphed), losses_by_step(eager)
    steps = sorted(set(a) & set(b))
    first_step = {}
    drift = 0.0
    if not steps:
        problems.append("no step reported by both runs")
    else:
        first_step = {k: relative(a[steps[0]][k], b[steps[0]][k]) for k in b[steps[0]]}
        worst = max(first_step.values())
        if worst > 1e-3:
            problems.append(f"step {steps[0]}: losses differ by {worst:.2e} relative: {a[steps[0]]} against {b[steps[0]]}")
        drift = max(relative(a[s]["total"], b[s]["total"]) for s in steps)
        if drift > 5e-2:
            problems.append(f"the total losses drift apart by {drift:.2e} relative")
    report = {
        "status": status,
        "recorded_shapes": int(counts[1]) if counts else None,
        "replays": int(counts[2]) if counts else None,
        "steps_compared": len(steps),
        "first_step_relative_difference": first_step,
        "first_step_bitwise_equal": bool(steps) and a[steps[0]] == b[steps[0]],
        "max_relative_drift_total_loss": drift,
        "images_per_second": {"graphs": throughput(graphed), "eager": throughput(eager)},
        "problems": problems,
    }
    verdict = write_verdict(report, args.json)
    print(f"{verdict} | CUDA graphs against eager over {len(steps)} steps: first step bitwise equal "
          f"{report['first_step_bitwise_equal']}, largest relative drift of the total loss {drift:.2e}; "
          f"{report['replays']} replays of {report['recorded_shapes']} shape(s); images/s through the loader "
          f"{report['images_per_second']['graphs']} with, {report['images_per_second']['eager']} without")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
