"""Expected values of the whole Mask R-CNN, from torchvision, for tests/engine/test_mask_rcnn.cpp.

    mask_rcnn_parity.py make OUT_DIR
    mask_rcnn_parity.py check OURS.pt REFERENCE.pt

make: builds torchvision's Mask R-CNN as maskrcnn_resnet50_fpn does with its COCO weights
(ResNet-50 + FPN, FrozenBatchNorm2d, trainable_backbone_layers 3, 91 classes) with seeded
random weights, scaled so that proposals and detections are confident and well separated
(random heads otherwise score every class near 1/91, under the 0.05 threshold), and runs it on
two real photos of tinycoco at torchvision's resize (shorter side 800, longer at most 1333).
Writes OUT_DIR/model.pt (the state_dict as torch.save writes it), OUT_DIR/expected.pt with
the transformed batch, the FPN features, the proposals and the detections (boxes, labels,
scores and the masks pasted at the original image size), and in train mode, on the images'
ground truth, the samples both samplers drew, the five losses and the gradients of a few
parameters; OUT_DIR/files.txt names the two photos.

check: loads OURS.pt (a state_dict written by our model) into torchvision's model with
strict=True and compares every tensor with REFERENCE.pt. Test-only: the product never runs
Python.
"""

import glob
import json
import os
import sys

import numpy as np
import torch
import torchvision
from pycocotools import mask as mask_utils
from torch import nn
from torchvision.models import resnet50
from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
from torchvision.models.detection.mask_rcnn import MaskRCNN
from torchvision.ops import FrozenBatchNorm2d

NUM_CLASSES = 91
GRADIENT_KEYS = [
    "backbone.body.layer4.2.conv3.weight",
    "backbone.fpn.layer_blocks.0.0.weight",
    "rpn.head.conv.0.0.weight",
    "rpn.head.cls_logits.weight",
    "roi_heads.box_head.fc6.weight",
    "roi_heads.box_predictor.cls_score.weight",
    "roi_heads.box_predictor.bbox_pred.weight",
    "roi_heads.mask_head.0.0.weight",
    "roi_heads.mask_predictor.mask_fcn_logits.weight",
]


def build():
    backbone = _resnet_fpn_extractor(resnet50(norm_layer=FrozenBatchNorm2d), 3)
    return MaskRCNN(backbone, num_classes=NUM_CLASSES)


def randomise(model, gen):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, FrozenBatchNorm2d):
                n = m.running_mean.numel()
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) * 1.5 + 0.5)
                m.weight.copy_(torch.rand(n, generator=gen) * 0.5 + 0.5)
                m.bias.copy_(torch.randn(n, generator=gen) * 0.1)
        heads = model.roi_heads
        rpn = model.rpn.head
        # Objectness spread over several units so that top-k and NMS never meet ties.
        rpn.cls_logits.weight.normal_(0, 0.3, generator=gen)
        rpn.cls_logits.bias.normal_(0, 0.5, generator=gen)
        rpn.bbox_pred.weight.normal_(0, 0.02, generator=gen)
        # Confident class scores, boxes moved off the proposals a little.
        heads.box_predictor.cls_score.weight.normal_(0, 1.5, generator=gen)
        heads.box_predictor.cls_score.bias.normal_(0, 0.3, generator=gen)
        heads.box_predictor.bbox_pred.weight.normal_(0, 0.02, generator=gen)
        heads.mask_predictor.mask_fcn_logits.weight.normal_(0, 0.05, generator=gen)
        heads.mask_predictor.mask_fcn_logits.bias.normal_(0, 0.5, generator=gen)


def photos():
    root = os.path.join(os.environ["MRCNN_SHARED_DIR"], "data/tinycoco")
    files = sorted(glob.glob(os.path.join(root, "images/val2017/*.jpg")))[:2]
    if len(files) < 2:
        raise SystemExit("need two photos in " + root + "/images/val2017")
    with open(os.path.join(root, "annotations/instances_val2017.json")) as f:
        coco = json.load(f)
    return files, coco


def ground_truth(coco, file_name, height, width):
    image = next(i for i in coco["images"] if i["file_name"] == file_name)
    boxes, labels, masks = [], [], []
    for a in coco["annotations"]:
        if a["image_id"] != image["id"] or a.get("iscrowd", 0):
            continue
        x, y, w, h = a["bbox"]
        if w < 1 or h < 1:
            continue
        seg = a["segmentation"]
        rles = mask_utils.frPyObjects(seg, height, width)
        rle = mask_utils.merge(rles) if isinstance(rles, list) else rles
        boxes.append([x, y, x + w, y + h])
        labels.append(a["category_id"])  # torchvision's 91-class COCO labels are the ids
        masks.append(mask_utils.decode(rle))
    return {
        "boxes": torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4),
        "labels": torch.tensor(labels, dtype=torch.int64),
        "masks": torch.from_numpy(np.stack(masks)) if masks else torch.zeros(0, height, width,
                                                                              dtype=torch.uint8),
    }


class Recorder:
    """Wraps a sampler to keep what it drew."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.drawn = None

    def __call__(self, labels):
        pos, neg = self.sampler(labels)
        self.drawn = (pos, neg)
        return pos, neg


def train_step(model, images, targets, prefix, expected):
    """One training forward and backward: the batch, its targets, the samples drawn and the
    losses under `prefix`."""
    rpn_sampler, roi_sampler = model.rpn.fg_bg_sampler, model.roi_heads.fg_bg_sampler
    rpn_recorder, roi_recorder = Recorder(rpn_sampler), Recorder(roi_sampler)
    model.rpn.fg_bg_sampler = rpn_recorder
    model.roi_heads.fg_bg_sampler = roi_recorder
    batch, transformed = model.transform(images, [dict(t) for t in targets])
    losses = model(images, targets)
    sum(losses.values()).backward()
    model.rpn.fg_bg_sampler, model.roi_heads.fg_bg_sampler = rpn_sampler, roi_sampler
    expected[prefix + "images"] = batch.tensors.contiguous()
    expected[prefix + "sizes"] = torch.tensor(batch.image_sizes, dtype=torch.int64)
    for i, t in enumerate(transformed):
        expected[f"{prefix}gt_boxes/{i}"] = t["boxes"]
        expected[f"{prefix}gt_labels/{i}"] = t["labels"]
        expected[f"{prefix}gt_masks/{i}"] = t["masks"]
    for name, (pos, neg) in (("rpn", rpn_recorder.drawn), ("roi", roi_recorder.drawn)):
        for i, (p, n) in enumerate(zip(pos, neg)):
            expected[f"{prefix}{name}_positive/{i}"] = p
            expected[f"{prefix}{name}_negative/{i}"] = n
    for k, v in losses.items():
        expected[f"{prefix}loss/{k}"] = v.detach()
    return losses


def make(out_dir):
    torch.manual_seed(0)
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(2024)
    model = build()
    randomise(model, gen)
    torch.save(model.state_dict(), os.path.join(out_dir, "model.pt"))

    files, coco = photos()
    images = [torchvision.io.read_image(f, torchvision.io.ImageReadMode.RGB).float() / 255.0
              for f in files]
    expected = {}
    with open(os.path.join(out_dir, "files.txt"), "w") as f:
        f.write("\n".join(files) + "\n")

    # ---- Inference ----
    model.eval()
    features, proposals = {}, {}
    model.backbone.register_forward_hook(lambda m, i, o: features.update(o))
    model.rpn.register_forward_hook(lambda m, i, o: proposals.update(boxes=o[0]))
    with torch.no_grad():
        batch, _ = model.transform(images)
        detections = model(images)
    expected["input/images"] = batch.tensors.contiguous()
    expected["input/sizes"] = torch.tensor(batch.image_sizes, dtype=torch.int64)
    for i, v in enumerate(features.values()):
        expected[f"eval/features/{i}"] = v
    for i, (p, d) in enumerate(zip(proposals["boxes"], detections)):
        expected[f"eval/proposals/{i}"] = p
        expected[f"eval/boxes/{i}"] = d["boxes"]
        expected[f"eval/labels/{i}"] = d["labels"]
        expected[f"eval/scores/{i}"] = d["scores"]
        expected[f"eval/masks/{i}"] = d["masks"][:, 0].contiguous()
        expected[f"input/original_size/{i}"] = torch.tensor(images[i].shape[-2:])

    # ---- Training, on the photos' ground truth; then with the second image's removed ----
    model.train()
    targets = [ground_truth(coco, os.path.basename(f), img.shape[-2], img.shape[-1])
               for f, img in zip(files, images)]
    losses = train_step(model, images, targets, "train/", expected)
    params = dict(model.named_parameters())
    for k in GRADIENT_KEYS:
        expected[f"train/grad/{k}"] = params[k].grad.clone()
    empty = dict(targets[1])
    empty["boxes"] = targets[1]["boxes"][:0]
    empty["labels"] = targets[1]["labels"][:0]
    empty["masks"] = targets[1]["masks"][:0]
    model.zero_grad()
    empty_losses = train_step(model, images, [targets[0], empty] + targets[2:], "train_empty/",
                              expected)
    torch.save(expected, os.path.join(out_dir, "expected.pt"))
    counts = [len(d["boxes"]) for d in detections]
    print(f"mask_rcnn_parity: {[os.path.basename(f) for f in files]} as {list(batch.tensors.shape)}, "
          f"detections {counts}, losses " + ", ".join(f"{k} {v.item():.4f}" for k, v in losses.items())
          + "; with an image without objects " + ", ".join(f"{k} {v.item():.4f}" for k, v in empty_losses.items())
          + f"; torch {torch.__version__}, torchvision {torchvision.__version__}")


def check(ours_path, reference_path):
    ours = torch.load(ours_path, weights_only=True)
    reference = torch.load(reference_path, weights_only=True)
    model = build()
    result = model.load_state_dict(ours, strict=True)
    if result.missing_keys or result.unexpected_keys:
        raise SystemExit(f"missing {result.missing_keys}, unexpected {result.unexpected_keys}")
    for k, v in model.state_dict().items():
        if k not in reference:
            raise SystemExit(f"{k} not in the reference")
        if not torch.equal(v, reference[k]):
            raise SystemExit(f"{k} differs from the reference")
    print(f"mask_rcnn_parity check: {len(ours)} keys loaded strictly into torchvision's Mask R-CNN")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
