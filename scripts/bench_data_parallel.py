#!/usr/bin/env python3
"""Data-parallel scaling on this machine: 2 ranks x 1 thread against 1 rank x 2 threads at
the same global batch, in the same run, alternating.

    .venv/bin/python scripts/bench_data_parallel.py [--spec SPEC] [--steps 30] [--repeats 3]
        [--train-steps 150] [--convergence | --only-convergence] [--quiet-load 1.0] [--write]

  1. Fake data (`--task benchmark --mode train`, no data loading): 1 rank with
     train_batch_size 2b and OMP_NUM_THREADS=2 against `mrcnn-workbench --headless
     --nproc-per-node 2` with batch b and OMP_NUM_THREADS=1 a rank: global images/s, step-time
     median, the gradient all-reduce's time per step (reported by the engine). Once as the
     spec says (a trained batch norm is synchronised across ranks: two small collectives per
     layer and step), once with `freeze_bn: true` (no collective but the gradients').
  2. Where the step goes: two independent single-thread processes at once (no process
     group), batch b each: what the two cores compute without any communication, and how
     unequal they are (a data-parallel step waits for the slower rank).
  3. Real training on the spec's data: the same two layouts train --train-steps steps (no
     evaluation, no checkpoint on the way); images/s from the progress events after the first
     20 steps.
  4. --convergence: the spec's whole run (its 20-minute convergence proof) with 2 ranks x
     b/2 against 1 rank x b: minutes to the end, mAP at each evaluation. About 40 minutes.
     Written as its own section, "Data-parallel time to mAP"; --only-convergence runs just it.
The machine's CPU is written beside the figures (--write: into docs/BENCHMARKS.md, section
"Data-parallel training", in this machine's own subsection: other machines' tables stay).
Run by hand on a quiet machine, not a test.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_doc  # noqa: E402

ROOT = bench_doc.ROOT
SECTION = "## Data-parallel training"
BIN = ROOT / "build/bin"


def events(lines):
    out = []
    for line in lines.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def launch(spec, ranks, threads, sets, extra):
    """Runs the workbench launcher with raw events; returns (events, seconds)."""
    cmd = [str(BIN / "mrcnn-workbench"), "--headless", "--raw-events", spec]
    if ranks > 1:
        cmd += ["--nproc-per-node", str(ranks)]
    for s in sets:
        cmd += ["--set", s]
    cmd += extra
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    start = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return events(p.stdout), time.time() - start


def benchmark_args(steps):
    return ["--task", "benchmark", "--mode", "train", "--steps", str(steps)]


def parse_summary(evs):
    """(images/s, step p50 ms, all-reduce ms) from a benchmark run's events."""
    summary = next(e for e in evs if e.get("type") == "done")["summary"]
    # "benchmark train: X images/s (global), step time p50 Y ms, ...; gradient all-reduce Z ms"
    ips = float(summary.split(": ")[1].split(" images/s")[0])
    p50 = float(summary.split("p50 ")[1].split(" ms")[0])
    allreduce = float(summary.split("all-reduce ")[1].split(" ms")[0]) if "all-reduce" in summary else 0.0
    return ips, p50, allreduce


def fake(spec, ranks, threads, batch, steps, sets=()):
    evs, _ = launch(spec, ranks, threads, [f"train_batch_size={batch}", *sets], benchmark_args(steps))
    return parse_summary(evs)


def apart(spec, batch, steps):
    """Two single-thread benchmark processes at once, no process group: (images/s of both
    together, the faster's step p50 ms, the slower's)."""
    cmd = [str(BIN / "mrcnn-workbench"), "--headless", "--raw-events", spec, "--set",
           f"train_batch_size={batch}", *benchmark_args(steps)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err[-3000:]}")
        results.append(parse_summary(events(out)))
    p50s = sorted(r[1] for r in results)
    return sum(r[0] for r in results), p50s[0], p50s[1]


def train_rate(spec, ranks, threads, batch, steps, run_dir):
    sets = [f"train_batch_size={batch}", f"total_steps={steps}", "num_steps_per_eval=0",
            "save_checkpoints_steps=0", "logging_frequency=1", "target_bbox_map=0",
            "target_segm_map=0", "data_config.shapes_dataset.val_images=4"]
    evs, _ = launch(spec, ranks, threads, sets, ["--run-dir", run_dir])
    prog = [e for e in evs if e.get("type") == "progress" and "losses" in e]
    t = {int(e["step"]): e["time"] for e in prog}
    first = 20
    return (steps - first) * batch * ranks / (t[steps] - t[first])


def convergence(spec, ranks, threads, batch, run_dir):
    evs, seconds = launch(spec, ranks, threads, [f"train_batch_size={batch}"], ["--run-dir", run_dir])
    start = next(e for e in evs if e.get("type") == "start")["time"]
    evals = [(int(e["step"]), (e["time"] - start) / 60, e["bbox"]["stats"][0], e["segm"]["stats"][0])
             for e in evs if e.get("type") == "eval"]
    return seconds / 60, evals


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default=str(ROOT / "specs/shapes_resnet18.txt"))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--train-steps", type=int, default=150)
    ap.add_argument("--convergence", action="store_true")
    ap.add_argument("--only-convergence", action="store_true")
    ap.add_argument("--quiet-load", type=float, default=None)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    bench_doc.wait_quiet(a.quiet_load)
    if not a.only_convergence:
        rates(a)
    if a.convergence or a.only_convergence:
        time_to_map(a)


def rates(a):
    b = 2  # per rank; one process takes 2b
    frozen = ["maskrcnn_config.freeze_bn=true"]
    one, two, one_frozen, two_frozen, alone = [], [], [], [], []
    for _ in range(a.repeats):
        one.append(fake(a.spec, 1, 2, 2 * b, a.steps))
        two.append(fake(a.spec, 2, 1, b, a.steps))
        one_frozen.append(fake(a.spec, 1, 2, 2 * b, a.steps, frozen))
        two_frozen.append(fake(a.spec, 2, 1, b, a.steps, frozen))
        alone.append(apart(a.spec, b, a.steps))
        print("fake data, 1x2 threads:", one[-1], " 2 ranks x 1 thread:", two[-1],
              " frozen batch norm:", one_frozen[-1], two_frozen[-1],
              " two processes apart:", alone[-1], flush=True)
    med = lambda rows, i: statistics.median(r[i] for r in rows)  # noqa: E731

    def row(label, x, y):
        return (f"| {label} | {med(x, 0):.2f} | {med(y, 0):.2f} | **{med(y, 0) / med(x, 0):.2f}x** | "
                f"{med(x, 1):.0f} / {med(y, 1):.0f} | {med(y, 2):.0f} |")

    rows = [row(f"fake data, global batch {2 * b}, the spec's batch norm", one, two),
            row(f"fake data, global batch {2 * b}, `freeze_bn: true`", one_frozen, two_frozen)]
    with tempfile.TemporaryDirectory() as tmp:
        r1 = [train_rate(a.spec, 1, 2, 2 * b, a.train_steps, f"{tmp}/one{i}") for i in range(a.repeats)]
        r2 = [train_rate(a.spec, 2, 1, b, a.train_steps, f"{tmp}/two{i}") for i in range(a.repeats)]
        print("shapes training images/s, 1 rank:", r1, " 2 ranks:", r2, flush=True)
        rows.append(f"| shapes training, global batch {2 * b}, {a.train_steps} steps | "
                    f"{statistics.median(r1):.2f} | {statistics.median(r2):.2f} | "
                    f"**{statistics.median(r2) / statistics.median(r1):.2f}x** | | |")
    together = med(alone, 0)
    text = (
        f"`scripts/bench_data_parallel.py --steps {a.steps} --train-steps {a.train_steps} "
        f"--repeats {a.repeats}`, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, "
        f"alternating, median of {a.repeats}. Spec: `{Path(a.spec).name}`.\n\n"
        "| workload | 1 rank x 2 threads, images/s | 2 ranks x 1 thread, images/s | ratio | "
        "step ms (1 / 2) | all-reduce ms/step |\n| --- | ---: | ---: | ---: | ---: | ---: |\n" +
        "\n".join(rows) + "\n\n"
        f"Two single-thread processes at once without a process group, batch {b} each: "
        f"{together:.2f} images/s together, **{together / med(one, 0):.2f}x** the 1 rank x 2 "
        f"threads row; step p50 {med(alone, 1):.0f} ms on the faster, {med(alone, 2):.0f} ms on "
        "the slower.\n")
    print(bench_doc.machine_heading() + "\n\n" + text)
    if a.write:
        bench_doc.replace_machine_subsection(SECTION, text)


def time_to_map(a):
    with tempfile.TemporaryDirectory() as tmp:
        m1, e1 = convergence(a.spec, 1, 2, 4, f"{tmp}/conv1")
        m2, e2 = convergence(a.spec, 2, 1, 2, f"{tmp}/conv2")
    text = (
        "## Data-parallel time to mAP\n\n"
        f"`scripts/bench_data_parallel.py --only-convergence` on {bench_doc.cpu_name()}, "
        f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}: the whole run of "
        f"`{Path(a.spec).name}` (it stops at its mAP targets or its last step) at global batch 4, "
        f"1 rank x 2 threads (batch 4) against 2 ranks x 1 thread (batch 2 each), one after the "
        f"other: {m1:.1f} against {m2:.1f} minutes ({m1 / m2:.2f}x).\n\n"
        "| layout | step | minutes | bbox AP | segm AP |\n| --- | ---: | ---: | ---: | ---: |\n" +
        "".join(f"| 1 x 2 threads | {s} | {t:.1f} | {bb:.3f} | {sg:.3f} |\n" for s, t, bb, sg in e1) +
        "".join(f"| 2 ranks x 1 | {s} | {t:.1f} | {bb:.3f} | {sg:.3f} |\n" for s, t, bb, sg in e2))
    print(text)
    if a.write:
        bench_doc.replace_section("## Data-parallel time to mAP", text)


if __name__ == "__main__":
    main()
