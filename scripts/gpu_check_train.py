#!/usr/bin/env python3
"""Verdict on a GPU training check (scripts/gpu_check.sh): reads the events of an
uninterrupted run and of the same run resumed from its middle checkpoint, and checks

  - every reported loss is finite, the run ended `done: ok`, and no step was skipped by the
    fp16 loss scaler past the first few (the scale settling from 2^16);
  - the losses fall: the mean total loss of the last fifth of the steps is below that of the
    first fifth;
  - the resume is exact: the resumed run starts at the checkpoint's step, and its first step's
    losses equal the uninterrupted run's bit for bit (same weights, optimiser state, data
    position and random state; the forward pass is deterministic). Later steps are compared
    and their largest relative difference reported: backward passes on a GPU add with atomics
    in no fixed order, so two runs drift apart by rounding, and that drift is what is shown.

    gpu_check_train.py --run DIR --resumed DIR --resume-step K [--json OUT.json]

Exit 0 when every check holds, 1 otherwise; one line of findings either way.
Test-only: the product never runs Python.
"""

import argparse
import json
import math
import sys


def read_events(run_dir):
    events = []
    with open(f"{run_dir}/events.jsonl") as f:
        for line in f:
            line = line.strip()
            if line:
                events.append(json.loads(line))
    return events


def last_session(events):
    """The events from the last start event on (a resumed run appends to the same file)."""
    starts = [i for i, e in enumerate(events) if e.get("type") == "start"]
    return events[starts[-1]:] if starts else events


def losses_by_step(events):
    return {int(e["step"]): e["losses"] for e in events if e.get("type") == "progress" and "losses" in e}


def done_status(events):
    done = [e for e in events if e.get("type") == "done"]
    return done[-1].get("status") if done else None


def write_verdict(report, json_path):
    """Writes the report (when asked) and returns its verdict: "ok", or the problems."""
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=1)
    return "ok" if not report["problems"] else "FAIL: " + "; ".join(report["problems"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True)
    ap.add_argument("--resumed", required=True)
    ap.add_argument("--resume-step", type=int, required=True)
    ap.add_argument("--json")
    args = ap.parse_args()

    problems = []
    run = read_events(args.run)
    resumed = last_session(read_events(args.resumed))
    full = losses_by_step(run)
    again = losses_by_step(resumed)
    if done_status(run) != "ok":
        problems.append(f"the run ended {done_status(run)!r}, not 'ok'")
    if done_status(resumed) != "ok":
        problems.append(f"the resumed run ended {done_status(resumed)!r}, not 'ok'")
    steps = sorted(full)
    if len(steps) < 10:
        problems.append(f"only {len(steps)} progress events (logging_frequency 1 expected)")
    bad = [s for s in steps if not all(math.isfinite(v) for v in full[s].values())]
    if bad:
        problems.append(f"non-finite losses at steps {bad[:5]}")
    fifth = max(1, len(steps) // 5)
    first = sum(full[s]["total"] for s in steps[:fifth]) / fifth
    last = sum(full[s]["total"] for s in steps[-fifth:]) / fifth
    if not last < first:
        problems.append(f"the loss did not fall: first fifth {first:.4f}, last fifth {last:.4f}")
    skipped = [e for e in run if e.get("type") == "progress" and e.get("skippedSteps", 0)]
    skipped_count = max((int(e.get("skippedSteps", 0)) for e in skipped), default=0)
    if skipped_count > 5:
        problems.append(f"the fp16 loss scaler skipped {skipped_count} steps")

    start = [e for e in resumed if e.get("type") == "start"]
    first_step = args.resume_step + 1
    if first_step not in again:
        problems.append(f"the resumed run reported no step {first_step} (steps {sorted(again)[:3]}...)")
    elif again[first_step] != full.get(first_step):
        problems.append(f"step {first_step} after the resume differs: {again[first_step]} "
                        f"against {full.get(first_step)}")
    drift = 0.0
    for s in sorted(again):
        if s in full and full[s]["total"] != 0:
            drift = max(drift, abs(again[s]["total"] - full[s]["total"]) / abs(full[s]["total"]))
    report = {
        "steps": len(steps),
        "loss_first_fifth": first,
        "loss_last_fifth": last,
        "skipped_steps": skipped_count,
        "resume_first_step_bitwise_equal": first_step in again and again[first_step] == full.get(first_step),
        "resume_max_relative_drift_total_loss": drift,
        "resumed_steps_compared": len([s for s in again if s in full]),
        "resumed_start_event": start[-1] if start else None,
        "problems": problems,
    }
    verdict = write_verdict(report, args.json)
    print(f"{verdict} | loss {first:.4f} -> {last:.4f} over {len(steps)} steps; resume at step "
          f"{args.resume_step}: first step bitwise equal: {report['resume_first_step_bitwise_equal']}, "
          f"largest relative drift of the total loss after it {drift:.2e} over "
          f"{report['resumed_steps_compared']} steps")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
