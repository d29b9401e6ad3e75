#!/usr/bin/env python3
"""What pruning buys (issue 17's table): the default shapes spec trained to its end, pruned at
several thresholds with `--task prune`, each pruned model evaluated before and after
retraining, and its CPU inference timed on the same validation images; then torchvision's
ResNet-50 FPN architecture (specs/coco_torchvision_r50.txt) pruned at two thresholds for its
parameters, GFLOPs and CPU latency.

    .venv/bin/python scripts/bench_prune.py [--work DIR] [--base-run RUN_DIR]
        [--thresholds 0.1,0.3,0.5,0.7] [--l2-thresholds 0.05,0.07,0.1] [--retrain-steps 530]
        [--chain L2-pth0.07:max:0.9]
        [--quiet-load L] [--write]
        [--skip-shapes] [--skip-r50]

Needs build/bin/mrcnn-workbench, build/bin/mrcnn-engine and build/bin/bench_backends
(`ninja -C build bench_backends`). Without --base-run it first trains the default spec to its
end (about 20 minutes on a quiet 2-core machine) into WORK/runs. Retraining: the pruned model
through pruned_model_path for --retrain-steps steps at the base run's final learning rate
(0.002 after its decay), no early stop; the unpruned model retrained the same way is the
control. Latency: bench_backends' LibTorch fp32 backend, every validation image alone (file
decoding and mask pasting included), all the models of a table timed in one interleaved pass
once they exist: each of --iters rounds times every model in turn (the order reversed every
other round), so that a change in the machine's load falls on all of them alike; a round is
bench_backends' median over the images after a warm-up pass, a model's figure the median of
its rounds. With --write the sections "Pruning on shapes" and "Pruning ResNet-50 FPN" of
docs/BENCHMARKS.md are replaced ($MRCNN_BENCHMARKS_MD names another file to write instead).
Run by hand on a quiet machine; not a test.

The shapes part takes one to three hours (bf16 on a CPU with AVX-512 BF16 or AMX; fp32, about
3.5x slower, without), so it resumes: run the same command again with the same --work and it
goes on where it stopped — the base run from its last checkpoint, each finished stage (an
evaluation, a pruning, a retraining, the latency pass) from WORK/results.json; a retraining cut short
starts again. A work folder begun on another CPU is refused (its times and precision would mix).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_doc import cpu_features, cpu_name, load_average, replace_section, wait_quiet

ROOT = Path(__file__).resolve().parent.parent
SHAPES_SECTION = "## Pruning on shapes"
R50_SECTION = "## Pruning ResNet-50 FPN"
GOAL = ("Goal (ratio <= 0.5, retrained AP within 0.02 of the unpruned model's, the higher of "
        "before and after its control retraining; >= 1.5x faster)")


class Stages:
    """What each finished stage of the shapes part gave, kept in WORK/results.json so that a
    run stopped part-way (a session's end, a reboot) resumes without redoing it."""

    def __init__(self, work):
        self.path = work / "results.json"
        self.machine = f"{cpu_name()}; {flags()}; {os.cpu_count()} cores"
        self.done = json.loads(self.path.read_text()) if self.path.exists() else {}
        began = self.done.setdefault("machine", self.machine)
        if began != self.machine:
            sys.exit(f"{self.path}: begun on another machine ({began}), this is {self.machine}; "
                     "its times and training precision would mix: give a new --work")

    def get(self, key, make):
        if key not in self.done:
            self.done[key] = make()
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.done, indent=1))
            tmp.replace(self.path)
        else:
            print(f"= {key}: from {self.path}", flush=True)
        return self.done[key]


def finished(run_dir):
    """Whether a training run ended: its last done event says "ok" (not "stopped" by a signal,
    not "failed"); the engine writes one at the end, at its last step or its target mAP."""
    path = Path(run_dir) / "events.jsonl"
    if not path.exists():
        return False
    dones = [e for e in events(path.read_text()) if e.get("type") == "done"]
    return bool(dones) and dones[-1].get("status") == "ok"


def run(cmd, **kw):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(map(str, cmd))}\n{done.stdout[-3000:]}\n"
                 f"{done.stderr[-3000:]}")
    return done.stdout


def events(text):
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def last_eval(text):
    evals = [e for e in events(text) if e.get("type") == "eval"]
    if not evals:
        sys.exit("no eval event in:\n" + text[-2000:])
    e = evals[-1]
    return e["bbox"]["stats"][0], e["segm"]["stats"][0], int(e.get("step", 0))


def checkpoint_of(run_dir):
    last = Path(run_dir) / "checkpoints" / "last"
    name = last.read_text().splitlines()[0].strip()
    return Path(run_dir) / "checkpoints" / name


def latency_ms(args, spec, weights, images, out):
    """One round: bench_backends' median ms an image over `images`, after a warm-up pass."""
    Path(out).mkdir(parents=True, exist_ok=True)
    text = run([args.bench, "--spec", spec, "--checkpoint", weights, "--images", images,
                "--only", "ours_libtorch_fp32", "--warmup", "1", "--iters", "1", "--out", out])
    for line in text.splitlines():
        row = json.loads(line)
        if row.get("name") == "ours_libtorch_fp32":
            return row["median_ms"]
    sys.exit("bench_backends printed no LibTorch row:\n" + text)


def latencies(args, spec, models, images, out):
    """Every model's latency in one interleaved pass: `models` (name: weights) are timed in
    turn in each of --iters rounds, the order reversed every other round, so that the
    machine's load, whatever it does, falls on all of them alike (one model after another,
    minutes or hours apart, a load change would read as a speed-up). A model's figure is the
    median of its rounds."""
    wait_quiet(args.quiet_load)
    load_before = load_average()
    rounds = {name: [] for name in models}
    for r in range(args.iters):
        for name in (list(models) if r % 2 == 0 else list(models)[::-1]):
            rounds[name].append(latency_ms(args, spec, models[name], images, Path(out) / name))
    return {"ms": {name: statistics.median(v) for name, v in rounds.items()}, "rounds": rounds,
            "load_before": load_before, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def prune(args, spec, weights, out, threshold, run_dir=None, normalizer="max"):
    cmd = [args.engine, "--spec", spec, "--task", "prune", "--checkpoint", weights,
           "--output-dir", out, "--pruning-threshold", str(threshold), "--normalizer",
           normalizer]
    if run_dir:
        cmd += ["--run-dir", run_dir]
    run(cmd)
    return json.loads((Path(out) / "status.json").read_text())


def evaluate(args, spec, weights, run_dir):
    return last_eval(run([args.engine, "--spec", spec, "--task", "evaluate", "--checkpoint",
                          weights, "--run-dir", run_dir]))


def retrain(args, spec, weights, runs, name):
    partial = Path(runs) / name
    if partial.exists():  # cut short: it checkpoints only at its end, so it starts again
        print(f"= {partial}: an unfinished retraining, removed", flush=True)
        shutil.rmtree(partial)
    sets = {"pruned_model_path": weights, "output_dir": runs, "run_name": name,
            "total_steps": args.retrain_steps, "warmup_steps": 50, "warmup_learning_rate": 0.0002,
            "init_learning_rate": 0.002, "learning_rate_steps": f"[{args.retrain_steps + 1}]",
            "learning_rate_decay_levels": "[0.1]", "target_bbox_map": 0, "target_segm_map": 0,
            "num_steps_per_eval": args.retrain_steps, "save_checkpoints_steps": args.retrain_steps}
    cmd = [args.workbench, "--headless", spec, "--raw-events"]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    return last_eval(run(cmd))


def shapes(args, work):
    spec_src = ROOT / "specs/shapes_resnet18.txt"
    base = Path(args.base_run) if args.base_run else work / "runs/shapes_resnet18"
    stages = Stages(work)
    if not args.base_run and not finished(base):  # a run stopped part-way resumes
        wait_quiet(args.quiet_load)
        run([args.workbench, "--headless", spec_src, "--set", f"output_dir={work / 'runs'}",
             "--set", f"data_config.shapes_dataset.root={work / 'shapes'}"])
    spec = base / "spec.txt"
    weights = checkpoint_of(base)
    # The validation images of the run's shapes dataset (the spec as run names its root).
    root = next(l for l in spec.read_text().splitlines() if l.strip().startswith("root:"))
    images = Path(root.split('"')[1]) / "images/val"
    rows = []
    wait_quiet(args.quiet_load)
    b_bbox, b_segm, b_step = stages.get(
        "eval/base", lambda: evaluate(args, spec, weights, work / "eval/base"))
    base_status = stages.get(  # nothing removed
        "pruned/control", lambda: prune(args, spec, weights, fresh(work / "pruned/control"), 0.0))
    rows.append({"threshold": "unpruned", "ratio": 1.0,
                 "params": base_status["before"]["param_count"],
                 "gflops": base_status["before"]["gflops"], "bbox": b_bbox, "segm": b_segm,
                 "stage": "base", "model": str(weights)})
    r_bbox, r_segm, _ = stages.get("retrain_control", lambda: retrain(
        args, spec, weights, work / "runs", "retrain_control"))
    rows[-1].update({"bbox_retrained": r_bbox, "segm_retrained": r_segm})
    # The max normalizer's thresholds (TAO's default) first, then the L2 normalizer's.
    for normalizer, t in [("max", t) for t in args.thresholds] + \
            [("L2", t) for t in args.l2_thresholds]:
        # Stage names: pth<T> with the max normalizer, L2-pth<T> with L2.
        pth = f"pth{t}" if normalizer == "max" else f"{normalizer}-pth{t}"
        out = work / f"pruned/{pth}"
        status = stages.get(f"pruned/{pth}", lambda: prune(args, spec, weights, fresh(out), t,
                                                                normalizer=normalizer))
        model = out / "model.pt"
        row = {"threshold": t, "normalizer": normalizer, "ratio": status["pruning_ratio"],
               "params": status["param_count"], "gflops": status["gflops"],
               "cut": cut_layers(status)}
        if all(layer["kept"] == layer["filters"] for layer in status["layers"]):
            # Nothing removed: the unpruned model's numbers (the same weights, the same
            # retraining) instead of measuring them again; its latency too, below.
            row.update({k: rows[0][k] for k in ("bbox", "segm", "bbox_retrained",
                                                 "segm_retrained")}, same=True, stage="base")
            rows.append(row)
            print(json.dumps(rows[-1]), flush=True)
            continue
        row.update(measured(args, stages, work, spec, model, pth), stage=pth, model=str(model))
        rows.append(row)
        print(json.dumps(rows[-1]), flush=True)
    for chain in args.chain:
        rows.append(chained(args, stages, work, spec, rows[0], chain))
        print(json.dumps(rows[-1]), flush=True)
    # Every model timed once they all exist, in one interleaved pass (measured again when the
    # models or the rounds differ from the stored pass's).
    models = {r["stage"]: r["model"] for r in rows if "model" in r}
    stored = stages.done.get("latency")
    if stored and (stored.get("models") != models or stored.get("iters") != args.iters):
        del stages.done["latency"]
    timing = stages.get("latency", lambda: {"models": models, "iters": args.iters,
                                            **latencies(args, spec, models, images,
                                                        work / "latency")})
    for r in rows:
        r["ms"] = timing["ms"][r["stage"]]
    fallback = any(e.get("code") == "precision_fallback"
                   for e in events((base / "events.jsonl").read_text()))
    return rows, {"base_step": b_step, "images": len(list(images.glob("*"))),
                  "size": base_status["gflops_at"],
                  "precision": "fp32, as this CPU has no native bf16" if fallback else
                  "the spec's bf16 autocast", "latency": timing}


def chained(args, stages, work, spec, base, chain):
    """A second pruning of a row's retrained model (a pruned run prunes again as any other),
    retrained the same way: `chain` is "STAGE:NORMALIZER:THRESHOLD", STAGE a row's stage name
    (pth0.9, L2-pth0.07). The ratio is against the unpruned model."""
    first, normalizer, t = chain.split(":")
    t = float(t)
    name = f"{first}+{'' if normalizer == 'max' else normalizer + '-'}pth{t}"
    retrained = checkpoint_of(work / "runs" / f"retrain_{first}")
    out = work / f"pruned/{name}"
    status = stages.get(f"pruned/{name}", lambda: prune(args, spec, retrained, fresh(out), t,
                                                          normalizer=normalizer))
    first_normalizer, first_t = first.rsplit("pth", 1)
    return {"threshold": f"{first_t} {first_normalizer.rstrip('-') or 'max'}, retrained, then {t}",
            "normalizer": normalizer,
            "ratio": status["param_count"] / base["params"], "params": status["param_count"],
            "gflops": status["gflops"], "cut": cut_layers(status),
            **measured(args, stages, work, spec, out / "model.pt", name),
            "stage": name, "model": str(out / "model.pt")}


def measured(args, stages, work, spec, model, name):
    """A pruned model's stages: evaluated, retrained (each kept in WORK/results.json under its
    stage name); its latency comes from the interleaved pass over all the models."""
    bbox, segm, _ = stages.get(f"eval/{name}", lambda: evaluate(args, spec, model,
                                                                work / f"eval/{name}"))
    r_bbox, r_segm, _ = stages.get(f"retrain_{name}", lambda: retrain(
        args, spec, model, work / "runs", f"retrain_{name}"))
    return {"bbox": bbox, "segm": segm, "bbox_retrained": r_bbox, "segm_retrained": r_segm}


def cut_layers(status):
    """The layers a pruning cut, as "name kept/filters" (the backbone's prefix dropped)."""
    return [f"{l['name'].removeprefix('backbone.body.')} {l['kept']}/{l['filters']}"
            for l in status["layers"] if l["kept"] != l["filters"]]


def fresh(folder):
    """A pruning's output folder emptied (prune refuses a folder with files: one left by a
    pruning cut short)."""
    if Path(folder).exists():
        shutil.rmtree(folder)
    return folder


def r50(args, work):
    """torchvision's architecture with seeded random weights whose filters have spread norms
    (as a trained model's), pruned at two thresholds."""
    weights = work / "r50/random_state.pt"
    weights.parent.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-c", f"""
import torch, torchvision
torch.manual_seed(0)
m = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None)
with torch.no_grad():
    for n, p in m.named_parameters():
        if p.dim() == 4:
            p.mul_(torch.empty(p.shape[0], 1, 1, 1).uniform_(0.05, 1.0))
torch.save(m.state_dict(), {str(weights)!r})
"""])
    spec = ROOT / "specs/coco_torchvision_r50.txt"
    images = Path(os.environ.get("MRCNN_SHARED_DIR", ROOT.parent / "shared")) / \
        "data/tinycoco/images/val2017"
    control = prune(args, spec, weights, fresh(work / "r50/pth0"), 0.0)
    rows = [{"threshold": "unpruned", "ratio": 1.0, "params": control["before"]["param_count"],
             "gflops": control["before"]["gflops"], "stage": "base", "model": str(weights)}]
    for t in args.r50_thresholds:
        status = prune(args, spec, weights, fresh(work / f"r50/pth{t}"), t)
        rows.append({"threshold": t, "ratio": status["pruning_ratio"],
                     "params": status["param_count"], "gflops": status["gflops"],
                     "stage": f"pth{t}", "model": str(work / f"r50/pth{t}/model.pt")})
        print(json.dumps(rows[-1]), flush=True)
    timing = latencies(args, spec, {r["stage"]: r["model"] for r in rows}, images,
                       work / "r50/latency")
    for r in rows:
        r["ms"] = timing["ms"][r["stage"]]
    return rows, {"images": len(list(images.glob("*.jpg"))), "size": control["gflops_at"],
                  "latency": timing}


def flags():
    text = Path("/proc/cpuinfo").read_text()
    line = next((l for l in text.splitlines() if l.startswith("flags")), "")
    have = [f for f in ("avx512f", "avx512_bf16", "amx_bf16", "amx_tile") if f in line.split()]
    return ", ".join(have) or "no AVX-512"


def machine(info):
    """The CPU, and when and under what load the latencies were measured."""
    return (f"{cpu_name()}, {os.cpu_count()} cores ({cpu_features()}), {info['latency']['when']}, "
            f"load average {info['latency']['load_before']:.1f} before the latency pass")


def timing_phrase(args):
    """How the latencies were measured."""
    return (f"all models timed in one interleaved pass, in turn in each of {args.iters} "
            f"round{'s' if args.iters != 1 else ''} (each round the median over the images), "
            "a model's figure the median of its rounds")


def shapes_section(rows, info, args):
    base = rows[0]
    lines = [SHAPES_SECTION, "",
             f"`scripts/bench_prune.py` on {machine(info)}: the default spec "
             f"(`shapes_resnet18.txt`) trained to its end (step {info['base_step']}, in "
             f"{info['precision']}), pruned by `--task prune` at each threshold "
             "(TAO's defaults otherwise: union, granularity 8, at least 16 filters; the "
             "threshold column names the normalizer: a filter's L2 norm over the max of its "
             "layer's, TAO's default, or over the L2 norm of its layer's norms), evaluated on "
             f"its {info['images']} validation images before and after "
             f"retraining {args.retrain_steps} steps (pruned_model_path, learning rate 0.002, "
             "batch 4; the unpruned model retrained the same way is the control). GFLOPs at "
             f"{info['size']['image_height']}x{info['size']['image_width']} with "
             f"{info['size']['rois']} RoIs and {info['size']['detections']} detections (2 per "
             "multiply-add). CPU: the engine's LibTorch fp32 inference, one image at a time "
             f"(decoding and mask pasting included); {timing_phrase(args)}.", "",
             "| threshold | pruning ratio | parameters | GFLOPs | CPU ms/image | speed-up | bbox AP | "
             "segm AP | bbox AP retrained | segm AP retrained |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        threshold = label(r) + (" (nothing pruned: the unpruned row)" if r.get("same") else "")
        lines.append(
            f"| {threshold} | {r['ratio']:.3f} | {r['params']:,} | {r['gflops']:.2f} | "
            f"{r['ms']:.1f} | {base['ms'] / r['ms']:.2f}x | {r['bbox']:.3f} | {r['segm']:.3f} | "
            f"{r['bbox_retrained']:.3f} | {r['segm_retrained']:.3f} |")
    same = [label(r) for r in rows if r.get("same")]
    if same:
        lines += ["", f"At {', '.join(same)} `--task prune` removed no filter (scored, combined "
                  "in residual groups and rounded to the granularity, every layer keeps all its "
                  "filters): those rows are the unpruned model's."]
    cut = [r for r in rows if r.get("cut")]
    if cut:
        lines += ["", "Where each pruning cut (kept/original filters; every other layer kept "
                  "whole):", ""]
        lines += [f"- {label(r)}: {', '.join(r['cut'])}" for r in cut]
    if any(", retrained, then" in str(r["threshold"]) for r in rows):
        lines += ["", "A row \"A, retrained, then B\" is row A's model after its retraining, "
                  "pruned again at threshold B (a pruned run prunes like any other) and retrained "
                  "the same way; its ratio is against the unpruned model."]
    lines += ["", goal_line(rows)]
    return "\n".join(lines) + "\n"


def label(row):
    """A row's threshold with its normalizer: "0.5 max", "0.07 L2", or "unpruned"."""
    return f"{row['threshold']} {row['normalizer']}" if "normalizer" in row else row["threshold"]


def goal_line(rows):
    """Issue 17's goal read off the table: at a pruning ratio <= 0.5, retrained bbox and segm AP
    within 0.02 of the unpruned model's (or of its control retraining, if higher), and inference
    >= 1.5x faster."""
    base = rows[0]
    # The stricter reference: the unpruned model, or its control retraining if that scored more.
    ref = {k: max(base[k], base.get(k + "_retrained", base[k])) for k in ("bbox", "segm")}
    small = [r for r in rows[1:] if r["ratio"] <= 0.5 and not r.get("same")]
    if not small:
        return f"{GOAL}: **not reached** — no threshold pruned to a ratio of 0.5 or less."
    met = [r for r in small if ref["bbox"] - r["bbox_retrained"] <= 0.02 and
           ref["segm"] - r["segm_retrained"] <= 0.02 and base["ms"] / r["ms"] >= 1.5]
    told = "; ".join(
        f"threshold {label(r)}: ratio {r['ratio']:.3f}, bbox AP {r['bbox_retrained']:.3f} "
        f"vs {ref['bbox']:.3f}, segm AP {r['segm_retrained']:.3f} vs {ref['segm']:.3f}, "
        f"{base['ms'] / r['ms']:.2f}x" for r in small)
    verdict = "**met**" if met else "**not met**"
    return f"{GOAL}: {verdict} ({told})."


def r50_section(rows, info, args):
    base = rows[0]
    lines = [R50_SECTION, "",
             f"`scripts/bench_prune.py` on {machine(info)}: torchvision's maskrcnn_resnet50_fpn "
             "architecture (`specs/coco_torchvision_r50.txt`, 91 classes) with seeded random "
             "weights whose filters were scaled by factors in [0.05, 1] (a trained model's norms differ; a "
             "fresh initialisation's do not), pruned at two thresholds. GFLOPs at "
             f"{info['size']['image_height']}x{info['size']['image_width']} with "
             f"{info['size']['rois']} RoIs and {info['size']['detections']} detections. CPU: "
             f"the {info['images']} tinycoco photos, one at a time (random weights detect little, "
             f"so mask pasting costs less than with a trained model); {timing_phrase(args)}.", "",
             "| threshold | pruning ratio | parameters | GFLOPs | CPU ms/image | speed-up |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['threshold']} | {r['ratio']:.3f} | {r['params']:,} | "
                     f"{r['gflops']:.1f} | {r['ms']:.0f} | {base['ms'] / r['ms']:.2f}x |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", default="/tmp/bench_prune")
    p.add_argument("--base-run")
    p.add_argument("--thresholds", default="0.1,0.3,0.5,0.7")
    p.add_argument("--r50-thresholds", default="0.3,0.5")
    p.add_argument("--l2-thresholds", default="0.05,0.07,0.1",
                   help="the shapes part's thresholds with the L2 normalizer (TAO's -nm L2), "
                        "after --thresholds' with max; the ResNet-50 part keeps max")
    p.add_argument("--chain", default="",
                   help="rows pruned twice: STAGE:NORMALIZER:THRESHOLD,... (a row's retrained "
                        "model, e.g. L2-pth0.07, pruned again and retrained)")
    p.add_argument("--retrain-steps", type=int, default=530)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--workbench", default=str(ROOT / "build/bin/mrcnn-workbench"))
    p.add_argument("--engine", default=str(ROOT / "build/bin/mrcnn-engine"))
    p.add_argument("--bench", default=str(ROOT / "build/bin/bench_backends"))
    p.add_argument("--quiet-load", type=float)
    p.add_argument("--write", action="store_true")
    p.add_argument("--skip-shapes", action="store_true")
    p.add_argument("--skip-r50", action="store_true")
    args = p.parse_args()
    args.thresholds = [float(t) for t in args.thresholds.split(",") if t]
    args.l2_thresholds = [float(t) for t in args.l2_thresholds.split(",") if t]
    args.chain = [c for c in args.chain.split(",") if c]
    args.r50_thresholds = [float(t) for t in args.r50_thresholds.split(",")]
    work = Path(args.work).resolve()  # the spec resolves relative paths against its own folder
    work.mkdir(parents=True, exist_ok=True)
    if not args.skip_shapes:
        rows, info = shapes(args, work)
        text = shapes_section(rows, info, args)
        print(text)
        (work / "shapes_section.md").write_text(text)
        if args.write:
            replace_section(SHAPES_SECTION, text)
    if not args.skip_r50:
        rows, info = r50(args, work)
        text = r50_section(rows, info, args)
        print(text)
        (work / "r50_section.md").write_text(text)
        if args.write:
            replace_section(R50_SECTION, text)


if __name__ == "__main__":
    main()
