#!/usr/bin/env python3
"""Training throughput: our engine's training loop beside torchvision's reference training
loop, with the same model settings, batch size, image size, images and thread count, in the
same run; and the share of our loop spent waiting for data.

    .venv/bin/python scripts/bench_train.py [--spec SPEC]... [--set k=v]... [--warmup 5]
        [--steps 30] [--threads N] [--engine build/bin/mrcnn-engine] [--sides ours,torchvision]
        [--quiet-load 2.5] [--keep] [--write] [--note TEXT] [--out DIR]
    .venv/bin/python scripts/bench_train.py --render OUT/results.json [--note TEXT]

Specs (default: specs/shapes_resnet18.txt and scripts/bench_specs/tinycoco_resnet18.txt); each
--set applies to every spec, as `mrcnn-engine --set` does. Run by hand, not a test.

For each spec:
  1. Settings: `mrcnn-engine --spec S --task validate [--set ...]` prints the spec as it will
     run; the fields the model, the data and the optimiser need are read from it.
  2. Ours: `mrcnn-engine --spec S --task train` in a temporary run directory, with a progress
     event every step (logging_frequency 1), no evaluation and no checkpoint on the way;
     stopped with SIGTERM once step W + S is reported (it finishes the step and writes one
     checkpoint, from which the parameters are counted; no final evaluation, no overlays).
     images/s = S x batch / (time of the progress event of step W+S - that of step W); the
     data-wait share is the engine's per-step share weighted by each step's duration over the
     same steps. Our loop's time includes everything it does per step: waiting for the loader
     (JPEG decoding, resizing, masks run in its worker threads, n_workers of the spec),
     targets, forward, backward, TAO's regularisation, the optimiser, the event line.
  3. torchvision: `torchvision.models.detection.MaskRCNN` built to the same settings (below),
     trained in this process by the loop of torchvision's detection reference
     (references/detection/engine.py train_one_epoch: `loss_dict = model(images, targets)`,
     sum, `zero_grad`, `backward`, `optimizer.step()`, the loss read back with `.item()`),
     SGD with momentum over param groups that reproduce our solver (L2 decay on weights of
     2+ dimensions only, 2x learning rate for biases), the spec's warm-up / step learning rate,
     bf16 autocast on the CPU when the spec asks for it. Its data is loaded AHEAD OF TIME
     (not timed): every training image decoded (PIL), resized as our loader resizes (into the
     spec's canvas, aspect kept, bilinear), its instances' masks from pycocotools (polygons
     and RLE) resized with nearest neighbour, crowds skipped, boxes under 1 px dropped, at
     most max_num_instances; per step only the shuffled batch is picked and flipped at random
     (timed, reported as torchvision's data share). torchvision's side therefore never waits
     for decoding: the comparison is conservative for us.
     images/s = S x batch / (end of step W+S - end of step W), perf_counter.
  Threads: torch.set_num_threads(N) here, OMP_NUM_THREADS=N for the engine (whose log names
  the count it uses; the script stops if they differ); N defaults to the engine's own choice.

torchvision's model, to our settings:
  - ResNet-<nlayers> (torchvision's ResNet class: 10 = TAO's [1,1,1,1] BasicBlock, 18, 34,
    50, 101) with BatchNorm2d (freeze_bn false: trained, as ours) or FrozenBatchNorm2d (eps
    frozen_bn_eps); the blocks of freeze_blocks (0 stem, 1..4 layer1..4) with requires_grad
    off; BackboneWithFPN over layer<min_level-1>..layer4, 256 channels, LastLevelMaxPool
    when max_level is 6 (none when 5).
  - Anchors: anchor_style "torchvision" is torchvision's default generator. anchor_style
    "tao" (the spec lists (width, height) pairs; engine/model/anchor_generator.cpp builds
    per level, per octave s, per pair (w, h) the box base*w x base*h, base = anchor_scale x
    2^level x 2^(s/num_scales), centred at (cell + 0.5) x stride): torchvision's
    AnchorGenerator is made with as many anchors a location and its cell anchors replaced by
    exactly ours, the half-stride folded into them (torchvision shifts by cell x stride), so
    both sides draw the very same anchors.
  - RPN: RPNHead (one 3x3 conv), the spec's fg/bg IoU, batch size per image, positive
    fraction, pre-NMS top-n (per level, as ours) and post-NMS top-n, NMS threshold.
  - RoI heads: MultiScaleRoIAlign over levels min_level..min(max_level, 5) (7x7 for boxes,
    mrcnn_resolution/2 for masks, sampling ratio 2), TwoMLPHead of fast_rcnn_mlp_head_dim,
    FastRCNNPredictor, bbox_reg_weights, fg_thresh / bg_thresh_hi, batch_size_per_im,
    fg_fraction; mask head 4 x conv 256 + MaskRCNNPredictor (deconv 256), as ours.
  - Transform: GeneralizedRCNNTransform's normalisation (ImageNet mean/std, as our loader),
    no resize (the images come at our resized size), and batches padded to our fixed canvas
    (image_size rounded up to 2^max_level), so that both see tensors of the same shape.
  Parameter check: the state dict of our checkpoint is loaded into torchvision's model with
  strict=True (same names, same shapes) and both numbers of elements are printed.

The machine is shared: with --quiet-load L each side waits (up to 10 minutes) until the
1-minute load average is below L; the load before and after each side is recorded. Writes
OUT/results.json (default build/bench-data/train); with --write, replaces the "Training
throughput" section of docs/BENCHMARKS.md.
"""
import argparse
import contextlib
import json
import math
import os
import platform
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torchvision
from bench_doc import cpu_name, load_average, memory_gib, replace_section, wait_quiet
from PIL import Image
from pycocotools.coco import COCO
from torch import nn
from torch.nn import functional as F
from torchvision.models.detection import MaskRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from torchvision.models.detection.rpn import RPNHead
from torchvision.models.detection.transform import GeneralizedRCNNTransform
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet
from torchvision.ops import FrozenBatchNorm2d, MultiScaleRoIAlign
from torchvision.ops.feature_pyramid_network import ExtraFPNBlock, LastLevelMaxPool

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPECS = [ROOT / "specs/shapes_resnet18.txt",
                 ROOT / "scripts/bench_specs/tinycoco_resnet18.txt"]
SECTION = "## Training throughput"
IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


# ---------------------------------------------------------------- the spec as the engine runs it

def parse_text_proto(text, origin):
    """The protobuf text that `--task validate` prints: nested messages as dicts; scalars as
    str (quoted), bool, int or float. Comments ('#' outside quotes) are dropped."""
    root, stack = {}, []
    current = root
    token = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*("(?:[^"\\]|\\.)*"|[^\s#]+)|(\{))')
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("}"):
            if not stack:
                raise SystemExit(f"{origin}: line {number}: '}}' without an open message")
            current = stack.pop()
            continue
        m = token.match(line)
        if not m:
            raise SystemExit(f"{origin}: line {number}: cannot read {raw!r}")
        key, value, brace = m.groups()
        if brace:
            child = {}
            current[key] = child
            stack.append(current)
            current = child
        elif value.startswith('"'):
            current[key] = bytes(value[1:-1], "utf-8").decode("unicode_escape")
        elif value in ("true", "false"):
            current[key] = value == "true"
        else:
            try:
                current[key] = int(value)
            except ValueError:
                current[key] = float(value)
    if stack:
        raise SystemExit(f"{origin}: a message is not closed")
    return root


def literal_numbers(text, field):
    """The numbers of a spec literal such as "(256, 320)" or "[(1.0, 1.0), (1.4, 0.7)]"."""
    numbers = [float(x) for x in re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", text)]
    if not numbers and text.strip() not in ("", "[]", "()"):
        raise SystemExit(f"{field}: cannot read {text!r}")
    return numbers


def resolve_spec(engine, spec_path, sets):
    cmd = [str(engine), "--spec", str(spec_path), "--task", "validate"]
    for s in sets:
        cmd += ["--set", s]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}{done.stdout}")
    spec = parse_text_proto(done.stdout, f"{spec_path} (as printed by --task validate)")
    spec_dir = Path(spec_path).resolve().parent
    m, d = spec["maskrcnn_config"], spec["data_config"]
    size = [int(x) for x in literal_numbers(d["image_size"], "data_config.image_size")]
    if len(size) != 2:
        raise SystemExit(f"{spec_path}: data_config.image_size needs (height, width)")
    if d.get("resize_mode", "fixed") != "fixed":
        raise SystemExit(f"{spec_path}: resize_mode {d['resize_mode']!r}: this benchmark feeds "
                         "both sides a fixed canvas; use resize_mode \"fixed\"")
    pairs = literal_numbers(m["aspect_ratios"], "maskrcnn_config.aspect_ratios")
    stride = 1 << int(m["max_level"])
    settings = {
        "spec": str(spec_path), "spec_dir": str(spec_dir), "raw": spec,
        "image_size": size,
        "canvas": [-(-size[0] // stride) * stride, -(-size[1] // stride) * stride],
        "batch": int(spec["train_batch_size"]),
        "accumulation": max(1, int(spec.get("gradient_accumulation_steps", 1))),
        "lr": float(spec["init_learning_rate"]), "momentum": float(spec["momentum"]),
        "l2": float(spec["l2_weight_decay"]), "l1": float(spec.get("l1_weight_decay", 0)),
        "clip": float(spec.get("global_gradient_clip_ratio", 0)),
        "warmup_steps": int(spec.get("warmup_steps", 0)),
        "warmup_lr": float(spec.get("warmup_learning_rate", 0)),
        "lr_steps": [int(x) for x in literal_numbers(spec.get("learning_rate_steps", "[]"),
                                                     "learning_rate_steps")],
        "lr_levels": literal_numbers(spec.get("learning_rate_decay_levels", "[]"),
                                     "learning_rate_decay_levels"),
        "seed": int(spec.get("seed", 0)),
        "amp": spec.get("use_amp", False) and spec.get("amp_dtype", "fp16"),
        "nlayers": int(m["nlayers"]), "arch": m.get("arch", "resnet"),
        "freeze_bn": bool(m["freeze_bn"]), "frozen_bn_eps": float(m.get("frozen_bn_eps", 1e-5)),
        "freeze_blocks": [int(x) for x in literal_numbers(m.get("freeze_blocks", "[]"),
                                                          "freeze_blocks")],
        "min_level": int(m["min_level"]), "max_level": int(m["max_level"]),
        "num_scales": int(m["num_scales"]), "anchor_scale": float(m["anchor_scale"]),
        "aspect_pairs": [(pairs[i], pairs[i + 1]) for i in range(0, len(pairs) - 1, 2)],
        "anchor_style": m.get("anchor_style", "tao"),
        "rpn_fg_iou": float(m["rpn_positive_overlap"]),
        "rpn_bg_iou": float(m["rpn_negative_overlap"]),
        "rpn_batch": int(m["rpn_batch_size_per_im"]), "rpn_fg": float(m["rpn_fg_fraction"]),
        "rpn_pre": int(m["train_rpn_pre_nms_topn"]), "rpn_post": int(m["train_rpn_post_nms_topn"]),
        "rpn_nms": float(m["train_rpn_nms_threshold"]),
        "rpn_pre_test": int(m["test_rpn_pre_nms_topn"]),
        "rpn_post_test": int(m["test_rpn_post_nms_topn"]),
        "box_batch": int(m["batch_size_per_im"]), "box_fg": float(m["fg_fraction"]),
        "fg_thresh": float(m["fg_thresh"]), "bg_thresh_hi": float(m["bg_thresh_hi"]),
        "bg_thresh_lo": float(m.get("bg_thresh_lo", 0)),
        "mlp_dim": int(m["fast_rcnn_mlp_head_dim"]),
        "bbox_reg_weights": literal_numbers(m["bbox_reg_weights"], "bbox_reg_weights"),
        "include_mask": bool(m["include_mask"]), "mrcnn_resolution": int(m["mrcnn_resolution"]),
        "mask_layers": [int(x) for x in literal_numbers(m.get("mask_head_layers",
                                                              "[256, 256, 256, 256]"),
                                                        "mask_head_layers")],
        "num_classes": int(d["num_classes"]),
        "augment": bool(d["augment_input_data"]),
        "skip_crowd": bool(d["skip_crowd_during_training"]),
        "max_instances": int(d["max_num_instances"]), "n_workers": int(d["n_workers"]),
        "category_labels": d.get("category_labels", "contiguous"),
    }
    if settings["arch"] != "resnet":
        raise SystemExit(f"{spec_path}: arch {settings['arch']!r}: only resnet is compared here")
    if len(settings["aspect_pairs"]) * 2 != len(pairs):
        raise SystemExit(f"{spec_path}: aspect_ratios: an odd number of values")
    # The training images and annotations, as the engine finds them.
    if "shapes_dataset" in d and d.get("train_json_file", "") == "":
        root = Path(d["shapes_dataset"]["root"])
        root = root if root.is_absolute() else spec_dir / root
        settings["train_json"] = str(root / "annotations/instances_train.json")
        settings["train_images"] = str(root / "images/train")
        settings["dataset"] = "shapes"
    elif d.get("train_json_file", ""):
        settings["train_json"] = str(spec_dir / d["train_json_file"])
        settings["train_images"] = str(spec_dir / d["train_image_dir"])
        settings["dataset"] = Path(d["train_json_file"]).parent.parent.name or "coco"
    else:
        raise SystemExit(f"{spec_path}: the training data are shards (training_file_pattern); "
                         "this benchmark reads a COCO json and an image folder")
    return settings


def describe(s):
    amp = s["amp"] or "fp32"
    return (f"ResNet-{s['nlayers']} FPN P{s['min_level']}-P{s['max_level']}"
            f"{' frozen BN' if s['freeze_bn'] else ', BN trained'}"
            f"{', frozen blocks ' + str(s['freeze_blocks']) if s['freeze_blocks'] else ''}; "
            f"canvas {s['canvas'][0]}x{s['canvas'][1]} (image_size {s['image_size'][0]}x"
            f"{s['image_size'][1]}); batch {s['batch']}"
            f"{' x ' + str(s['accumulation']) + ' accumulated' if s['accumulation'] > 1 else ''}; "
            f"{len(s['aspect_pairs']) * s['num_scales']} anchors/location ({s['anchor_style']}, "
            f"scale {s['anchor_scale']:g}); RPN {s['rpn_batch']} samples, top-n "
            f"{s['rpn_pre']}/level -> {s['rpn_post']}; RoI {s['box_batch']} samples, "
            f"MLP {s['mlp_dim']}, mask {s['mrcnn_resolution']}x{s['mrcnn_resolution']}; "
            f"{s['num_classes']} classes; {amp}; flips {'on' if s['augment'] else 'off'}; "
            f"loader workers {s['n_workers']}")


# ---------------------------------------------------------------- ours

def run_ours(engine, settings, sets, warmup, steps, threads):
    """Trains with the engine until step warmup + steps is reported, then stops it."""
    last = warmup + steps
    total = max(int(settings["raw"]["total_steps"]), last + 2)
    run_dir = Path(tempfile.mkdtemp(prefix="mrcnn-bench-train-"))
    cmd = [str(engine), "--spec", settings["spec"], "--task", "train", "--run-dir", str(run_dir)]
    for s in list(sets) + [f"total_steps={total}", "logging_frequency=1", "report_frequency=1",
                           f"num_steps_per_eval={total + 1}", f"save_checkpoints_steps={total + 1}",
                           "keep_checkpoint_max=1"]:
        cmd += ["--set", s]
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    stderr = open(run_dir / "engine.stderr", "w")
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    progress, engine_threads, stopped, done, errors = {}, None, False, None, []
    try:
        for line in process.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            kind = event.get("type")
            if kind == "log":
                m = re.search(r"CPU threads: (\d+)", event.get("text", ""))
                if m:
                    engine_threads = int(m.group(1))
            elif kind == "progress":
                step = int(event["step"])
                progress[step] = event
                print(f"    ours step {step}: {event.get('imagesPerSecond', 0):.2f} images/s, "
                      f"data wait {100 * event.get('dataWaitShare', 0):.1f}%", file=sys.stderr,
                      flush=True)
                if step >= last and not stopped:
                    process.send_signal(signal.SIGTERM)
                    stopped = True
            elif kind == "error":
                errors.append(event.get("message", line))
            elif kind == "done":
                done = event
    finally:
        code = process.wait()
        stderr.close()
    if code != 0 or any(s not in progress for s in range(warmup, last + 1)):
        raise SystemExit(f"our engine failed ({code}) in {run_dir}: {' '.join(errors)}\n"
                         f"{' '.join(cmd)}\n{(run_dir / 'engine.stderr').read_text()[-3000:]}")
    t0 = progress[warmup]["time"] if warmup > 0 else None
    if t0 is None:
        raise SystemExit("--warmup must be at least 1: the first measured interval starts at the "
                         "progress event of the last warm-up step")
    t1 = progress[last]["time"]
    wait, previous = 0.0, t0
    for s in range(warmup + 1, last + 1):
        wait += progress[s].get("dataWaitShare", 0.0) * (progress[s]["time"] - previous)
        previous = progress[s]["time"]
    images = steps * settings["batch"] * settings["accumulation"]
    checkpoints = sorted((run_dir / "checkpoints").glob("model.step-*.pt"))
    result = {"images_per_second": images / (t1 - t0), "seconds": t1 - t0,
              "data_wait_share": wait / (t1 - t0),
              "step_seconds": [progress[s]["time"] - progress[s - 1]["time"]
                               for s in range(warmup + 1, last + 1)],
              "threads": engine_threads, "run_dir": str(run_dir),
              "checkpoint": str(checkpoints[-1]) if checkpoints else None,
              "status": done and done.get("status"), "command": " ".join(cmd)}
    return result


def our_state(checkpoint):
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    return {k[len("model."):]: v for k, v in state.items() if k.startswith("model.")}


# ---------------------------------------------------------------- torchvision's model

class NoExtraLevel(ExtraFPNBlock):
    """max_level 5: no pooled level (BackboneWithFPN adds LastLevelMaxPool when given None)."""

    def forward(self, results, x, names):
        return results, names


class FixedCanvasTransform(GeneralizedRCNNTransform):
    """torchvision's transform without its resize (the images come resized as our loader
    resizes them) and with batches padded to our fixed canvas, not to the batch's largest
    image: both sides then run on tensors of the same shape."""

    def __init__(self, canvas):
        super().__init__(min_size=min(canvas), max_size=max(canvas), image_mean=IMAGENET_MEAN,
                         image_std=IMAGENET_STD)
        self.canvas = canvas

    def resize(self, image, target=None):
        return image, target

    def batch_images(self, images, size_divisible=32):
        batch = images[0].new_zeros((len(images), images[0].shape[0], *self.canvas))
        for image, slot in zip(images, batch):
            slot[:, :image.shape[-2], :image.shape[-1]].copy_(image)
        return batch


def tao_cell_anchors(s, level):
    """Ours (engine/model/anchor_generator.cpp, taoCellAnchors), plus half a stride: our
    centres are (cell + 0.5) x stride, torchvision's cell x stride."""
    half = 2.0 ** level / 2
    rows = []
    for octave in range(s["num_scales"]):
        base = s["anchor_scale"] * 2.0 ** level * 2.0 ** (octave / s["num_scales"])
        for w, h in s["aspect_pairs"]:
            rows.append([-base * w / 2 + half, -base * h / 2 + half,
                         base * w / 2 + half, base * h / 2 + half])
    return torch.tensor(rows, dtype=torch.float64).float()


def build_torchvision(s):
    depth = {10: (BasicBlock, [1, 1, 1, 1]), 18: (BasicBlock, [2, 2, 2, 2]),
             34: (BasicBlock, [3, 4, 6, 3]), 50: (Bottleneck, [3, 4, 6, 3]),
             101: (Bottleneck, [3, 4, 23, 3])}
    if s["nlayers"] not in depth:
        raise SystemExit(f"nlayers {s['nlayers']}: not one of {sorted(depth)}")
    block, layers = depth[s["nlayers"]]
    if s["freeze_bn"]:
        eps = s["frozen_bn_eps"]
        norm = lambda c: FrozenBatchNorm2d(c, eps=eps)  # noqa: E731
    else:
        norm = nn.BatchNorm2d
    body = ResNet(block, layers, norm_layer=norm)
    for b in s["freeze_blocks"]:
        modules = [body.conv1, body.bn1] if b == 0 else [getattr(body, f"layer{b}")]
        for module in modules:
            for p in module.parameters():
                p.requires_grad_(False)
    expansion = 4 if block is Bottleneck else 1
    first = s["min_level"] - 1  # level 2 is layer1
    return_layers = {f"layer{k}": str(i) for i, k in enumerate(range(first, 5))}
    in_channels = [64 * 2 ** (k - 1) * expansion for k in range(first, 5)]
    extra = LastLevelMaxPool() if s["max_level"] == 6 else NoExtraLevel()
    backbone = BackboneWithFPN(body, return_layers, in_channels, 256, extra_blocks=extra)

    levels = list(range(s["min_level"], s["max_level"] + 1))
    if s["anchor_style"] == "torchvision":
        anchors = AnchorGenerator()
    else:
        per_location = s["num_scales"] * len(s["aspect_pairs"])
        anchors = AnchorGenerator(sizes=tuple((32,) for _ in levels),
                                  aspect_ratios=tuple((1.0,) * per_location for _ in levels))
        anchors.cell_anchors = [tao_cell_anchors(s, level) for level in levels]
    per_location = anchors.num_anchors_per_location()[0]

    pooled = [str(i) for i in range(min(s["max_level"], 5) - s["min_level"] + 1)]
    box_head = TwoMLPHead(256 * 7 * 7, s["mlp_dim"])
    mask_size = s["mrcnn_resolution"] // 2
    model = MaskRCNN(
        backbone, num_classes=None,
        rpn_anchor_generator=anchors, rpn_head=RPNHead(256, per_location),
        rpn_pre_nms_top_n_train=s["rpn_pre"], rpn_pre_nms_top_n_test=s["rpn_pre_test"],
        rpn_post_nms_top_n_train=s["rpn_post"], rpn_post_nms_top_n_test=s["rpn_post_test"],
        rpn_nms_thresh=s["rpn_nms"], rpn_fg_iou_thresh=s["rpn_fg_iou"],
        rpn_bg_iou_thresh=s["rpn_bg_iou"], rpn_batch_size_per_image=s["rpn_batch"],
        rpn_positive_fraction=s["rpn_fg"],
        box_roi_pool=MultiScaleRoIAlign(pooled, 7, 2), box_head=box_head,
        box_predictor=FastRCNNPredictor(s["mlp_dim"], s["num_classes"]),
        box_fg_iou_thresh=s["fg_thresh"], box_bg_iou_thresh=s["bg_thresh_hi"],
        box_batch_size_per_image=s["box_batch"], box_positive_fraction=s["box_fg"],
        bbox_reg_weights=tuple(s["bbox_reg_weights"]),
        mask_roi_pool=MultiScaleRoIAlign(pooled, mask_size, 2),
        mask_head=MaskRCNNHeads(256, s["mask_layers"], 1),
        mask_predictor=MaskRCNNPredictor(s["mask_layers"][-1], s["mask_layers"][-1],
                                         s["num_classes"]))
    if not s["include_mask"]:
        model.roi_heads.mask_roi_pool = None
        model.roi_heads.mask_head = None
        model.roi_heads.mask_predictor = None
    model.transform = FixedCanvasTransform(s["canvas"])
    return model


def count(tensors):
    return sum(t.numel() for t in tensors)


def weights(state):
    """Elements of a state dict without the batch norms' running statistics: the model's
    weights, counted the same way on both sides (frozen norms' scale and shift included)."""
    skip = ("running_mean", "running_var", "num_batches_tracked")
    return sum(v.numel() for k, v in state.items() if not k.endswith(skip))


# ---------------------------------------------------------------- torchvision's data

def fitted_size(height, width, canvas):
    """dataset/loader/transform.cpp resizedSize, fixed mode."""
    ch, cw = canvas
    if ch * width <= cw * height:
        return ch, max(1, width * ch // height)
    return max(1, height * cw // width), cw


def load_training_set(s):
    """Every training image at our resized size, with its instances: done once, not timed."""
    with contextlib.redirect_stdout(sys.stderr):  # pycocotools' progress lines
        coco = COCO(s["train_json"])
    category_ids = sorted(coco.getCatIds())
    if s["category_labels"] == "contiguous":
        label_of = {c: i + 1 for i, c in enumerate(category_ids)}
    else:
        label_of = {c: c for c in category_ids}
    samples = []
    for image_id in sorted(coco.getImgIds()):
        info = coco.loadImgs(image_id)[0]
        path = Path(s["train_images"]) / info["file_name"]
        with Image.open(path) as im:
            pixels = np.array(im.convert("RGB"))
        oh, ow = pixels.shape[:2]
        h, w = fitted_size(oh, ow, s["image_size"])
        image = torch.from_numpy(pixels).permute(2, 0, 1).float().div_(255)
        image = F.interpolate(image[None], size=(h, w), mode="bilinear",
                              align_corners=False)[0].contiguous()
        boxes, labels, masks = [], [], []
        for a in coco.loadAnns(coco.getAnnIds(imgIds=image_id, iscrowd=None)):
            if len(boxes) >= s["max_instances"] > 0:
                break
            if s["skip_crowd"] and a.get("iscrowd", 0):
                continue
            if a["category_id"] not in label_of:
                continue
            x, y, bw, bh = a["bbox"]
            box = [x * w / ow, y * h / oh, (x + bw) * w / ow, (y + bh) * h / oh]
            if box[2] - box[0] < 1 or box[3] - box[1] < 1:
                continue
            boxes.append(box)
            labels.append(label_of[a["category_id"]])
            if s["include_mask"]:
                masks.append(torch.from_numpy(coco.annToMask(a)))
        target = {"boxes": torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4),
                  "labels": torch.tensor(labels, dtype=torch.int64)}
        if s["include_mask"] and masks:
            target["masks"] = F.interpolate(torch.stack(masks)[None].float(), size=(h, w),
                                            mode="nearest")[0].to(torch.uint8)
        elif s["include_mask"]:
            target["masks"] = torch.zeros((0, h, w), dtype=torch.uint8)
        samples.append((image, target))
    return samples


def flipped(image, target):
    w = image.shape[-1]
    t = dict(target)
    b = target["boxes"].clone()
    b[:, [0, 2]] = w - target["boxes"][:, [2, 0]]
    t["boxes"] = b
    if "masks" in t:
        t["masks"] = target["masks"].flip(-1)
    return image.flip(-1), t


class Batches:
    """Shuffled batches of the preloaded samples, epoch after epoch, flipped at random."""

    def __init__(self, samples, batch, augment, seed):
        self.samples, self.batch, self.augment = samples, batch, augment
        self.rng = random.Random(seed)
        self.order = []

    def next(self):
        images, targets = [], []
        for _ in range(self.batch):
            if not self.order:
                self.order = list(range(len(self.samples)))
                self.rng.shuffle(self.order)
            image, target = self.samples[self.order.pop()]
            if self.augment and self.rng.random() < 0.5:
                image, target = flipped(image, target)
            images.append(image)
            targets.append(target)
        return images, targets


def learning_rate(s, step):
    """engine/train/lr_schedule.cpp: linear warm-up, then steps."""
    if step < s["warmup_steps"]:
        return s["warmup_lr"] + (s["lr"] - s["warmup_lr"]) * step / s["warmup_steps"]
    lr = s["lr"]
    for boundary, level in zip(s["lr_steps"], s["lr_levels"]):
        if step >= boundary:
            lr = s["lr"] * level
    return lr


def run_torchvision(s, samples, warmup, steps):
    torch.manual_seed(s["seed"])
    model = build_torchvision(s)
    model.train()
    decayed, plain, biases = [], [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if name.endswith("bias"):
            biases.append(p)
        elif p.dim() >= 2:
            decayed.append(p)
        else:
            plain.append(p)
    groups = [{"params": decayed, "weight_decay": s["l2"], "scale": 1.0},
              {"params": plain, "weight_decay": 0.0, "scale": 1.0},
              {"params": biases, "weight_decay": 0.0, "scale": 2.0}]
    optimizer = torch.optim.SGD([g for g in groups if g["params"]], lr=s["lr"],
                                momentum=s["momentum"])
    batches = Batches(samples, s["batch"], s["augment"], s["seed"])
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(s["amp"])
    ends, data_seconds, last_loss = [], [], None
    for step in range(warmup + steps):
        for g in optimizer.param_groups:
            g["lr"] = learning_rate(s, step) * g["scale"]
        data = 0.0
        for micro in range(s["accumulation"]):
            start = time.perf_counter()
            images, targets = batches.next()
            data += time.perf_counter() - start
            with torch.autocast("cpu", dtype=amp) if amp else contextlib.nullcontext():
                loss_dict = model(images, targets)
            losses = sum(loss for loss in loss_dict.values())
            last_loss = losses.item()
            if not math.isfinite(last_loss):
                raise SystemExit(f"torchvision: the loss is {last_loss} at step {step + 1}")
            if micro == 0:
                optimizer.zero_grad()
            (losses / s["accumulation"]).backward()
        if s["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), s["clip"])
        optimizer.step()
        ends.append(time.perf_counter())
        data_seconds.append(data)
        if step >= warmup:
            print(f"    torchvision step {step + 1}: {ends[-1] - ends[-2]:.2f} s, loss "
                  f"{last_loss:.3f}", file=sys.stderr, flush=True)
    seconds = ends[-1] - ends[warmup - 1]
    images = steps * s["batch"] * s["accumulation"]
    return {"images_per_second": images / seconds, "seconds": seconds,
            "data_share": sum(data_seconds[warmup:]) / seconds,
            "step_seconds": [ends[i] - ends[i - 1] for i in range(warmup, len(ends))],
            "threads": torch.get_num_threads(), "last_loss": last_loss}, model


# ---------------------------------------------------------------- the run

def machine():
    cpu = cpu_name()
    gib = memory_gib()
    mem = f", {gib:.0f} GiB" if gib else ""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True).stdout.strip()
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem, "os": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "commit": commit + (" (with uncommitted changes)" if dirty else "")}


def bench_spec(args, engine, spec_path):
    s = resolve_spec(engine, spec_path, args.set)
    name = f"{Path(spec_path).stem}"
    print(f"\n{name}: {describe(s)}", file=sys.stderr, flush=True)
    row = {"name": name, "dataset": s["dataset"], "settings": describe(s),
           "spec": str(Path(spec_path).resolve().relative_to(ROOT))
           if Path(spec_path).resolve().is_relative_to(ROOT) else str(spec_path)}
    sides = args.sides.split(",")
    if "ours" in sides:
        wait_quiet(args.quiet_load)
        before = load_average()
        ours = run_ours(engine, s, args.set, args.warmup, args.steps, args.threads)
        ours["load"] = [before, load_average()]
        row["ours"] = ours
        threads = args.threads or ours["threads"]
    else:
        threads = args.threads or torch.get_num_threads()
    if "torchvision" in sides:
        if args.threads is None and "ours" in row and ours["threads"] is None:
            raise SystemExit("the engine did not name its thread count: pass --threads")
        torch.set_num_threads(threads)
        start = time.perf_counter()
        samples = load_training_set(s)
        print(f"    torchvision: {len(samples)} training images loaded ahead in "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
        wait_quiet(args.quiet_load)
        before = load_average()
        tv, model = run_torchvision(s, samples, args.warmup, args.steps)
        tv["load"] = [before, load_average()]
        tv["images"] = len(samples)
        row["torchvision"] = tv
        row["parameters"] = {
            "torchvision": weights(model.state_dict()),
            "torchvision_trainable": count(p for p in model.parameters() if p.requires_grad),
            "torchvision_state": count(model.state_dict().values())}
        if row.get("ours", {}).get("checkpoint"):
            state = our_state(row["ours"]["checkpoint"])
            row["parameters"]["ours_state"] = count(state.values())
            row["parameters"]["ours"] = weights(state)
            try:
                model.load_state_dict(state, strict=True)
                row["parameters"]["same_structure"] = True
            except RuntimeError as e:
                row["parameters"]["same_structure"] = False
                row["parameters"]["mismatch"] = str(e)[:2000]
        if "ours" in row and threads != row["ours"]["threads"]:
            raise SystemExit(f"thread counts differ: engine {row['ours']['threads']}, "
                             f"torchvision {threads}")
    if "ours" in row and not args.keep:
        subprocess.run(["rm", "-rf", "--", row["ours"]["run_dir"]], check=False)
    row["threads"] = threads
    return row


def table(rows):
    lines = ["| spec | dataset | threads | ours images/s | torchvision images/s | "
             "ours / torchvision | our data wait | torchvision data share | load (ours; tv) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        o, t = r.get("ours"), r.get("torchvision")
        ours_rate = f"{o['images_per_second']:.3f}" if o else "–"
        tv_rate = f"{t['images_per_second']:.3f}" if t else "–"
        ratio = f"{o['images_per_second'] / t['images_per_second']:.2f}x" if o and t else "–"
        ours_wait = f"{100 * o['data_wait_share']:.1f}%" if o else "–"
        tv_data = f"{100 * t['data_share']:.1f}%" if t else "–"
        loads = "; ".join(f"{x['load'][0]:.2f}..{x['load'][1]:.2f}" for x in (o, t) if x)
        lines.append(f"| {r['name']} | {r['dataset']} | {r['threads']} | {ours_rate} | "
                     f"{tv_rate} | {ratio} | {ours_wait} | {tv_data} | {loads} |")
    return "\n".join(lines)


def section(rows, meta, args):
    reproduce = ("`.venv/bin/python scripts/bench_train.py --warmup "
                 f"{args.warmup} --steps {args.steps}"
                 + "".join(f" --spec {r['spec']}" for r in rows)
                 + "".join(f" --set {s}" for s in args.set)
                 + (f" --threads {args.threads}" if args.threads else "") + " --write`")
    params = []
    for r in rows:
        p = r.get("parameters")
        if not p:
            continue
        same = {True: "our checkpoint loads into torchvision's model with `strict=True`",
                False: "our checkpoint does NOT load into torchvision's model (see results.json)",
                None: "our side not run"}[p.get("same_structure")]
        params.append(f"- {r['name']}: weights (state dict without the batch norms' running "
                      f"statistics) torchvision {p['torchvision']:,}, ours "
                      f"{p.get('ours', 0):,}; whole state dict torchvision "
                      f"{p['torchvision_state']:,}, ours {p.get('ours_state', 0):,}; "
                      f"torchvision's trainable parameters {p['torchvision_trainable']:,}; "
                      f"{same}.")
    settings = "\n".join(f"- {r['name']} (`{r['spec']}`): {r['settings']}." for r in rows)
    waits = [f"{r['name']} {100 * r['ours']['data_wait_share']:.1f}%" for r in rows if "ours" in r]
    over = [r["name"] for r in rows if "ours" in r and r["ours"]["data_wait_share"] >= 0.10]
    verdict = ("Our data-wait share: " + ", ".join(waits) + (
        " — under the 10% target." if not over else
        " — NOT under the 10% target for " + ", ".join(over) + ".")) if waits else ""
    m = meta["machine"]
    note = f"\n{args.note}\n" if args.note else ""  # its own paragraph, before the table
    return f"""{SECTION}

`scripts/bench_train.py` (run by hand with `.venv/bin/python`; needs `mrcnn-engine` built). For
each spec, in one run: our engine trains (`mrcnn-engine --task train`, the spec's own data
loader with its worker threads) and torchvision's reference training loop
(`loss_dict = model(images, targets)`, sum, `zero_grad`, `backward`, `optimizer.step()`, as
in torchvision's `references/detection/engine.py`) trains a `torchvision.models.detection.MaskRCNN`
built to the same settings, on the same training images, at the same canvas, batch size and
thread count; the script reads the settings from `mrcnn-engine --task validate`, so it
follows the specs as they change.

- Measure: W warm-up steps, then S steps; images/s = S × batch / the time between the end of
  step W and the end of step W+S (ours: the times of the engine's per-step progress events;
  torchvision's: `perf_counter` around its loop). Our data-wait share: the engine's own
  per-step `data_wait_share` (time blocked in the loader / step time) weighted over the S
  steps. Target (issue "The engine", Proofs: Throughput): data wait under 10%.
- The same model: ResNet-<nlayers> FPN with the spec's levels, BatchNorm trained or frozen as
  the spec says, the spec's frozen blocks; torchvision's anchor generator given exactly our
  TAO anchors ((width, height) pairs × `anchor_scale` × 2^level, our half-stride centres);
  the spec's RPN and RoI sampling sizes, pre-NMS (per level) and post-NMS top-n, MLP head
  width, mask resolution, box coder weights, classes. Checked by loading our checkpoint into
  torchvision's model with `strict=True` (same names and shapes) and by counting parameters.
- The same optimiser: SGD with momentum, L2 decay on weights only and 2× learning rate for
  biases (our solver's TAO rule, as torchvision param groups), the spec's warm-up schedule;
  bf16 autocast on the CPU when the spec has `use_amp` with `amp_dtype: "bf16"`.
- Data: ours is loaded while training, as in a real run (decoding, resizing, masks in the
  loader's threads, `n_workers` of the spec) and its waits are counted. torchvision's is
  loaded **ahead of time** (PIL, resized into the canvas as our loader does, pycocotools
  masks): only the batch picking and the random flip are in its loop, so torchvision never
  waits for decoding — a conservative comparison for us. No resize in torchvision's transform
  (the images come at our size); its batches are padded to our fixed canvas. Its
  normalisation (ImageNet mean and std) stays in its timed loop, as in torchvision; ours is
  part of the loader.

Settings:
{settings}

Last result — {meta['date']}:
- Machine: {m['cores']} cores (`{m['cpu']}`){m['memory']}, {m['os']}; Python {m['python']},
  torch {m['torch']} (CPU capability {m['cpu_capability']}), torchvision {m['torchvision']};
  commit {m['commit']}.
- W = {args.warmup} warm-up steps, S = {args.steps} measured steps; threads as in the table.
- Load average (1 min) {meta['load'][0]:.2f} before the run, {meta['load'][1]:.2f} after; per
  side in the table. Numbers that count need a quiet machine (load under 2.5).
{note}
{table(rows)}

{verdict}

Parameters:
{chr(10).join(params) if params else '- (not counted: one side was not run)'}

To reproduce: {reproduce}
"""


def write_section(text):
    replace_section(SECTION, text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", action="append", default=None,
                        help="a spec (repeatable); default: the shapes and tinycoco specs")
    parser.add_argument("--set", action="append", default=[],
                        help="path.to.field=value, passed to the engine for every spec")
    parser.add_argument("--engine", default=str(ROOT / "build/bin/mrcnn-engine"))
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads on both sides (default: the engine's choice)")
    parser.add_argument("--sides", default="ours,torchvision")
    parser.add_argument("--quiet-load", type=float, default=None,
                        help="wait before each side until the load average is below")
    parser.add_argument("--keep", action="store_true", help="keep our run directories")
    parser.add_argument("--write", action="store_true",
                        help="replace the Training throughput section of docs/BENCHMARKS.md")
    parser.add_argument("--note", default="",
                        help="a sentence for the section (e.g. the state of the machine)")
    parser.add_argument("--render", default=None, metavar="RESULTS_JSON",
                        help="only rewrite the section from a results.json of an earlier run")
    parser.add_argument("--out", default=str(ROOT / "build/bench-data/train"))
    args = parser.parse_args()
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        meta = saved["meta"]
        args.warmup, args.steps = meta["warmup"], meta["steps"]
        args.set, args.threads = meta.get("set", []), meta.get("threads")
        write_section(section(saved["results"], meta, args))
        print("docs/BENCHMARKS.md: section rewritten from " + args.render)
        return
    if args.warmup < 1 or args.steps < 1:
        raise SystemExit("--warmup and --steps must be at least 1")
    engine = Path(args.engine)
    if not engine.exists():
        raise SystemExit(f"{engine} does not exist: build it (ninja -C build mrcnn-engine)")
    specs = [Path(p) for p in (args.spec or DEFAULT_SPECS)]
    for p in specs:
        if not p.exists():
            raise SystemExit(f"{p}: no such spec")

    meta = {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "machine": machine(),
            "warmup": args.warmup, "steps": args.steps, "set": args.set,
            "threads": args.threads}
    before = load_average()
    rows = [bench_spec(args, engine, p) for p in specs]
    meta["load"] = [before, load_average()]

    print()
    print(table(rows))
    for r in rows:
        if "parameters" in r:
            p = r["parameters"]
            print(f"{r['name']}: weights torchvision {p['torchvision']:,} (trainable "
                  f"{p['torchvision_trainable']:,}, state {p['torchvision_state']:,}); "
                  f"ours {p.get('ours', 0):,} (state {p.get('ours_state', 0):,}); "
                  f"strict load: {p.get('same_structure')}"
                  + (f"\n  {p['mismatch']}" if p.get("mismatch") else ""))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for r in rows:
        for side in ("ours", "torchvision"):
            r.get(side, {}).pop("raw", None)
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": rows}, indent=1))
    print(f"results: {out / 'results.json'}")
    if args.write:
        write_section(section(rows, meta, args))
        print("docs/BENCHMARKS.md: section updated")


if __name__ == "__main__":
    main()
