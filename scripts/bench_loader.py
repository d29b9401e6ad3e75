#!/usr/bin/env python3
"""The data loader's throughput beside a torchvision-style Python loader, in one run.

For each dataset (tinycoco train: real COCO photos; the embedded shapes train split when
datasets/shapes exists) and each worker count (1 and 2), times training batches (shuffled,
random flips, crowd skipped, instance masks, resized to the COCO recipe's size: TAO's fixed
(832, 1344) canvas, or --mode shorter_side 800/1333) from:
  - ours, json + image folder (bench_loader --json/--images);
  - ours, shards (bench_loader --convert: dataset_convert into 4 shards first, not timed);
  - the peer: a torch.utils.data.DataLoader with the same number of worker processes over a
    Dataset that does what torchvision's detection reference does per image (PIL open and
    RGB convert, pycocotools annToMask, to_tensor, horizontal flip) plus the resize and
    normalisation of GeneralizedRCNNTransform (bilinear image, nearest masks) and the
    batch padding, so both sides deliver the same thing: padded normalised batches + masks.
Each measure skips the first batch (thread/process start-up) and counts --images images.
Prints the table (images/s and our ratio to the peer); writes only temporary files, and with
--write the "### Last result" subsection of docs/BENCHMARKS.md ("## Data loader"): this run's
machine, date and table ($MRCNN_BENCHMARKS_MD names another file to write instead). The
results so far are in that section.

Usage: .venv/bin/python scripts/bench_loader.py [--build-dir build] [--images 64]
       [--mode fixed|shorter_side] [--batch 2] [--write]
bench_loader comes from <build-dir>/bin/bench_loader (built with the project); otherwise this
script compiles
bench/bench_loader.cpp against <build-dir>/dataset/libmrcnn_dataset.a.
"""
import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_doc import load_average, machine_line, write_last_result

ROOT = Path(__file__).resolve().parent.parent
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
SECTION = "## Data loader"


def bench_executable(build_dir: Path) -> Path:
    for target in (build_dir / "bin" / "bench_loader", build_dir / "dataset" / "loader" / "bench_loader"):
        if target.exists():
            return target
    library = build_dir / "dataset" / "libmrcnn_dataset.a"
    if not library.exists():
        sys.exit(f"{library} is missing: build mrcnn_dataset first (ninja -C {build_dir} mrcnn_dataset)")
    out = build_dir / "bench_loader_standalone"
    source = ROOT / "bench" / "bench_loader.cpp"
    if out.exists() and out.stat().st_mtime > max(source.stat().st_mtime, library.stat().st_mtime):
        return out
    command = ["c++", "-O2", "-std=c++20", f"-I{ROOT}", "-isystem", "/usr/include/opencv4", str(source),
               str(library), "-lopencv_imgcodecs", "-lopencv_imgproc", "-lopencv_core", "-lsimdjson",
               "-pthread", "-o", str(out)]
    print("compiling", out, file=sys.stderr)
    subprocess.run(command, check=True)
    return out


def run_ours(exe: Path, args: list[str], workers: int, batch: int, images: int, mode: str) -> dict:
    command = [str(exe), *args, "--workers", str(workers), "--batch", str(batch),
               "--images-count", str(images), "--mode", mode]
    result = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(result.stdout)


# ---- The peer: torchvision-style loading ----


class CocoTrainSet:
    """A map-style dataset as torchvision's detection reference builds it, plus the resize,
    normalisation and flip of GeneralizedRCNNTransform / its transforms."""

    def __init__(self, json_file, image_dir, mode):
        from pycocotools.coco import COCO

        with contextlib.redirect_stdout(io.StringIO()):
            self.coco = COCO(json_file)
        self.image_dir = image_dir
        self.ids = [image["id"] for image in self.coco.dataset["images"]]
        self.labels = {c: i + 1 for i, c in enumerate(sorted(self.coco.getCatIds()))}
        self.mode = mode

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        import numpy as np
        import torch
        import torch.nn.functional as F
        from PIL import Image
        from torchvision.transforms import functional as TF

        image_id = self.ids[index]
        info = self.coco.loadImgs(image_id)[0]
        image = Image.open(os.path.join(self.image_dir, info["file_name"])).convert("RGB")
        anns = [a for a in self.coco.loadAnns(self.coco.getAnnIds(imgIds=image_id)) if not a.get("iscrowd", 0)]
        boxes = torch.tensor([a["bbox"] for a in anns], dtype=torch.float32).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]
        labels = torch.tensor([self.labels[a["category_id"]] for a in anns], dtype=torch.int64)
        masks = torch.from_numpy(np.stack([self.coco.annToMask(a) for a in anns])) if anns else \
            torch.zeros((0, info["height"], info["width"]), dtype=torch.uint8)
        tensor = TF.to_tensor(image)
        if torch.rand(1).item() < 0.5:
            width = tensor.shape[-1]
            tensor = tensor.flip(-1)
            masks = masks.flip(-1)
            boxes = boxes[:, [2, 1, 0, 3]] * torch.tensor([-1, 1, -1, 1]) + torch.tensor([width, 0, width, 0])
        tensor = TF.normalize(tensor, MEAN, STD)
        h, w = tensor.shape[-2:]
        if self.mode == "fixed":
            scale = min(832 / h, 1344 / w)
        else:
            scale = min(800 / min(h, w), 1333 / max(h, w))
        tensor = F.interpolate(tensor[None], scale_factor=scale, mode="bilinear",
                               recompute_scale_factor=True, align_corners=False)[0]
        if len(anns):
            masks = F.interpolate(masks[:, None].float(), size=tensor.shape[-2:])[:, 0].byte()
        ratio = torch.tensor([tensor.shape[-1] / w, tensor.shape[-2] / h] * 2)
        return tensor, {"boxes": boxes * ratio, "labels": labels, "masks": masks}


def make_collate(mode):
    def collate(samples):
        import math

        import torch

        if mode == "fixed":
            height, width = 832, 1344
        else:
            height = int(math.ceil(max(s[0].shape[1] for s in samples) / 32) * 32)
            width = int(math.ceil(max(s[0].shape[2] for s in samples) / 32) * 32)
        batch = torch.zeros(len(samples), 3, height, width)
        for i, (image, _) in enumerate(samples):
            batch[i, :, : image.shape[1], : image.shape[2]].copy_(image)
        return batch, [s[1] for s in samples]

    return collate


def run_peer(json_file, image_dir, workers, batch, images, mode) -> dict:
    import torch

    torch.set_num_threads(1)
    dataset = CocoTrainSet(json_file, image_dir, mode)
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, drop_last=True,
                                         num_workers=workers, collate_fn=make_collate(mode),
                                         persistent_workers=True, prefetch_factor=2)
    done = 0
    start = None
    first = 0
    while done < images:
        for tensors, _ in loader:
            if start is None:
                first = tensors.shape[0]
                start = time.perf_counter()
            done += tensors.shape[0]
            if done >= images:
                break
    seconds = time.perf_counter() - start
    return {"images": done, "seconds": seconds, "images_per_s": (done - first) / seconds}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build")
    parser.add_argument("--images", type=int, default=64, help="images timed per measure")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--mode", choices=["fixed", "shorter_side"], default="fixed")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the last result in docs/BENCHMARKS.md")
    args = parser.parse_args()

    exe = bench_executable(args.build_dir.resolve())
    shared = Path(os.environ.get("MRCNN_SHARED_DIR", ROOT.parent / "shared"))
    datasets = [("tinycoco", shared / "data/tinycoco/annotations/instances_train2017.json",
                 shared / "data/tinycoco/images/train2017")]
    shapes = ROOT / "datasets" / "shapes"
    if (shapes / "annotations" / "instances_train.json").exists():
        datasets.append(("shapes", shapes / "annotations/instances_train.json", shapes / "images/train"))

    load_before = load_average()
    header = (f"{machine_line(load_before)}; mode {args.mode}, batch {args.batch}, "
              f"{args.images} images a measure, masks on; images/s:")
    table = ["| dataset | workers | ours, json | ours, shards | torchvision-style | json / peer | shards / peer |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    print(header)
    print("\n".join(table), flush=True)
    with tempfile.TemporaryDirectory() as temp:
        for name, json_file, image_dir in datasets:
            shard_dir = Path(temp) / name
            # Convert once (not timed): the first shard run converts, later ones read.
            subprocess.run([str(exe), "--convert", str(json_file), str(image_dir), str(shard_dir),
                            "--images-count", "1", "--workers", "1"], check=True, capture_output=True)
            for workers in (1, 2):
                ours = run_ours(exe, ["--json", str(json_file), "--images", str(image_dir)], workers,
                                args.batch, args.images, args.mode)
                sharded = run_ours(exe, ["--shards", str(shard_dir / "bench-*-of-*")], workers,
                                   args.batch, args.images, args.mode)
                peer = run_peer(str(json_file), str(image_dir), workers, args.batch, args.images, args.mode)
                table.append(f"| {name} | {workers} | {ours['images_per_s']:.1f} | "
                             f"{sharded['images_per_s']:.1f} | {peer['images_per_s']:.1f} | "
                             f"{ours['images_per_s'] / peer['images_per_s']:.1f}× | "
                             f"{sharded['images_per_s'] / peer['images_per_s']:.1f}× |")
                print(table[-1], flush=True)
    if args.write:
        write_last_result(SECTION, header + "\n\n" + "\n".join(table))
        print(f"docs/BENCHMARKS.md: {SECTION[3:]} / Last result rewritten")

if __name__ == "__main__":
    main()
