"""Expected values of the RoI heads, from torchvision, for tests/engine/test_roi_heads.cpp.

    roi_heads_parity.py OUT.pt

Builds torchvision's MultiScaleRoIAlign and RoIHeads (box and mask branches) as
maskrcnn_resnet50_fpn configures them, for two cases: 91 classes on 256-channel features
(the real sizes) and 7 classes on 64-channel features with a 256-wide box head. Weights are
seeded random, scaled so that class scores are confident and spread and boxes move; the
inputs are random FPN-shaped features of two images of different sizes, random proposals of
every size (some jittered copies of the ground truth, some exactly on level boundaries) and
ground-truth boxes, labels and masks. Writes with torch.save a dict of, per case: the
weights, the inputs, MultiScaleRoIAlign's output (first channels) and level of each box (7x7, 14x14, and a
single-map 5x5 adaptive pool), the eval-mode detections (boxes, scores, labels, mask
probabilities), and in train mode the sample torchvision's sampler drew (so that C++ can
use the same one), the three losses and the gradients of a few parameters and of the
features. Test-only: the product never runs Python.
"""

import math
import sys

import torch
import torchvision
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from torchvision.models.detection.roi_heads import RoIHeads
from torchvision.ops import MultiScaleRoIAlign

PADDED = (288, 352)  # a multiple of 32
IMAGE_SIZES = [(281, 347), (250, 352)]
FEATMAPS = ["0", "1", "2", "3"]
# To keep the file small: pooled features and feature gradients of the first channels only
# (RoIAlign treats channels independently), parameter gradients of the first rows.
CHANNELS_SAVED = 16
ROWS_SAVED = 64
GRAD_PARAMS = ["box_head.fc6.weight", "box_predictor.cls_score.weight",
               "box_predictor.bbox_pred.weight", "mask_head.0.0.weight",
               "mask_predictor.mask_fcn_logits.weight"]


def feature_shapes():
    h, w = PADDED
    shapes = [(h // s, w // s) for s in (4, 8, 16, 32)]
    p5 = shapes[-1]
    shapes.append(((p5[0] + 1) // 2, (p5[1] + 1) // 2))  # FPN's max-pool level
    return shapes


def random_gt(gen, size, count, num_classes):
    h, w = size
    xy = torch.rand(count, 2, generator=gen) * torch.tensor([w * 0.7, h * 0.7])
    wh = torch.rand(count, 2, generator=gen) * torch.tensor([w * 0.3, h * 0.3]) + 12.0
    boxes = torch.cat([xy, xy + wh], dim=1)
    boxes[:, 2].clamp_(max=w)
    boxes[:, 3].clamp_(max=h)
    labels = torch.randint(1, num_classes, (count,), generator=gen)
    # An ellipse inscribed in each box, at the image's size.
    ys = torch.arange(h, dtype=torch.float32)[:, None] + 0.5
    xs = torch.arange(w, dtype=torch.float32)[None, :] + 0.5
    masks = []
    for x1, y1, x2, y2 in boxes.tolist():
        cx, cy, rx, ry = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / 2, (y2 - y1) / 2
        masks.append((((xs - cx) / rx) ** 2 + ((ys - cy) / ry) ** 2 <= 1.0).to(torch.uint8))
    return boxes, labels, torch.stack(masks)


def random_proposals(gen, size, gt, count, copies):
    h, w = size
    # Log-uniform sides from 40 to 320 pixels: boxes on every level the image sizes allow
    # (levels 2..4; level 5 takes a sqrt(area) of 448).
    sides = torch.exp(torch.rand(count, 2, generator=gen) * math.log(8.0)) * 40.0
    centres = torch.rand(count, 2, generator=gen) * torch.tensor([w, h])
    boxes = torch.cat([centres - sides / 2, centres + sides / 2], dim=1)
    # Jittered ground truth: IoUs around the foreground threshold.
    reps = gt.repeat(copies, 1)
    wh = (reps[:, 2:] - reps[:, :2]).repeat(1, 2)
    jittered = reps + (torch.rand(reps.shape, generator=gen) - 0.5) * 0.5 * wh
    # Exactly on level boundaries: sqrt(area) 224, 112, 56 (levels 4, 3, 2).
    # Large: level 4.
    large = torch.rand(count // 10, 4, generator=gen) * torch.tensor([20.0, 20.0, 30.0, 30.0])
    large[:, 2:] += torch.tensor([w - 30.0, h - 30.0])
    exact = torch.tensor([[10.0, 20.0, 206.0, 276.0], [30.0, 40.0, 128.0, 168.0],
                          [50.0, 60.0, 99.0, 124.0]])
    boxes = torch.cat([boxes, jittered, large, exact])
    boxes[:, 0::2] = boxes[:, 0::2].clamp(0, w)
    boxes[:, 1::2] = boxes[:, 1::2].clamp(0, h)
    keep = ((boxes[:, 2] - boxes[:, 0]) > 1.0) & ((boxes[:, 3] - boxes[:, 1]) > 1.0)
    return boxes[keep]


def build_heads(gen, num_classes, channels, representation, cls_gain):
    heads = RoIHeads(
        MultiScaleRoIAlign(FEATMAPS, 7, 2),
        TwoMLPHead(channels * 7 * 7, representation),
        FastRCNNPredictor(representation, num_classes),
        # maskrcnn_resnet50_fpn's settings.
        fg_iou_thresh=0.5, bg_iou_thresh=0.5, batch_size_per_image=512, positive_fraction=0.25,
        bbox_reg_weights=None, score_thresh=0.05, nms_thresh=0.5, detections_per_img=100,
        mask_roi_pool=MultiScaleRoIAlign(FEATMAPS, 14, 2),
        mask_head=MaskRCNNHeads(channels, (256, 256, 256, 256), 1),
        mask_predictor=MaskRCNNPredictor(256, 256, num_classes))
    # Gains over 1/sqrt(fan in): confident, spread class scores; boxes that move.
    gains = {"box_head.fc6.weight": 3.0, "box_head.fc7.weight": 2.0,
             "box_predictor.cls_score.weight": cls_gain, "box_predictor.bbox_pred.weight": 1.5,
             "mask_predictor.mask_fcn_logits.weight": 3.0}
    with torch.no_grad():
        for name, p in heads.named_parameters():
            if name.endswith(".weight"):
                std = gains.get(name, 1.5) / math.sqrt(p[0].numel())
            else:
                std = 0.1
            p.copy_(torch.randn(p.shape, generator=gen) * std)
    return heads


def roi_heads_case(gen, num_classes, channels, representation, cls_gain, num_random, copies):
    heads = build_heads(gen, num_classes, channels, representation, cls_gain)
    names = FEATMAPS + ["pool"]
    features = {n: torch.randn(2, channels, h, w, generator=gen)
                for n, (h, w) in zip(names, feature_shapes())}
    gts = [random_gt(gen, s, c, num_classes) for s, c in zip(IMAGE_SIZES, (5, 4))]
    proposals = [random_proposals(gen, s, g[0], num_random, copies) for s, g in zip(IMAGE_SIZES, gts)]
    targets = [{"boxes": b, "labels": l, "masks": m} for b, l, m in gts]

    # MultiScaleRoIAlign alone.
    pool7 = MultiScaleRoIAlign(FEATMAPS, 7, 2)
    pool14 = MultiScaleRoIAlign(FEATMAPS, 14, 2)
    single = MultiScaleRoIAlign(["1"], 5, 0)
    with torch.no_grad():
        pooled7 = pool7(features, proposals, IMAGE_SIZES)[:, :CHANNELS_SAVED].clone()
        pooled14 = pool14(features, proposals, IMAGE_SIZES)[:, :CHANNELS_SAVED].clone()
        pooled_single = single(features, proposals, IMAGE_SIZES)[:, :CHANNELS_SAVED].clone()
        levels = pool7.map_levels(proposals)

    heads.eval()
    with torch.no_grad():
        detections, _ = heads(features, proposals, IMAGE_SIZES)

    heads.train()
    drawn = []
    sampler = heads.fg_bg_sampler

    def recording_sampler(labels):
        pos, neg = sampler(labels)
        drawn.extend(zip(pos, neg))
        return pos, neg

    heads.fg_bg_sampler = recording_sampler
    grad_features = {n: f.clone().requires_grad_(n in FEATMAPS) for n, f in features.items()}
    torch.manual_seed(11)
    _, losses = heads(grad_features, proposals, IMAGE_SIZES, targets)
    (losses["loss_classifier"] + losses["loss_box_reg"] + losses["loss_mask"]).backward()
    params = dict(heads.named_parameters())

    return {
        "num_classes": num_classes,
        "in_channels": channels,
        "representation_size": representation,
        "weights": {k: v.detach().clone() for k, v in heads.state_dict().items()},
        "features": list(features.values()),
        "padded": list(PADDED),
        "image_sizes": [list(s) for s in IMAGE_SIZES],
        "proposals": proposals,
        "gt_boxes": [t["boxes"] for t in targets],
        "gt_labels": [t["labels"] for t in targets],
        "gt_masks": [t["masks"] for t in targets],
        "pooled7": pooled7,
        "pooled14": pooled14,
        "pooled_single": pooled_single,
        "levels": levels,
        "det_boxes": [d["boxes"] for d in detections],
        "det_scores": [d["scores"] for d in detections],
        "det_labels": [d["labels"] for d in detections],
        "det_masks": [d["masks"] for d in detections],
        "sampled_positive": [p for p, _ in drawn],
        "sampled_negative": [n for _, n in drawn],
        "loss_classifier": losses["loss_classifier"].detach(),
        "loss_box_reg": losses["loss_box_reg"].detach(),
        "loss_mask": losses["loss_mask"].detach(),
        "channels_saved": CHANNELS_SAVED,
        "rows_saved": ROWS_SAVED,
        "grads": {k: params[k].grad[:ROWS_SAVED].clone() for k in GRAD_PARAMS},
        "feature_grads": [grad_features[n].grad[:, :CHANNELS_SAVED].clone() for n in FEATMAPS],
    }


def main():
    out = sys.argv[1]
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(20261122)
    # The second case has few proposals and less confident scores: fewer than 100 detections,
    # the score threshold at work.
    cases = [roi_heads_case(gen, 91, 256, 1024, cls_gain=2.5, num_random=260, copies=12),
             roi_heads_case(gen, 7, 64, 256, cls_gain=0.8, num_random=10, copies=4)]
    data = {
        "versions": {"torch": str(torch.__version__), "torchvision": str(torchvision.__version__)},
        "cases": cases,
    }
    torch.save(data, out)
    print(f"wrote {out}: torch {torch.__version__}, torchvision {torchvision.__version__}")
    for c in cases:
        print(f"  {c['num_classes']} classes: proposals {[len(p) for p in c['proposals']]}, "
              f"levels {torch.bincount(c['levels'], minlength=4).tolist()}; detections "
              f"{[len(b) for b in c['det_boxes']]}, scores "
              f"{[round(float(s.min()), 3) if len(s) else None for s in c['det_scores']]}.."
              f"{[round(float(s.max()), 3) if len(s) else None for s in c['det_scores']]}; "
              f"sampled positives {[int(p.sum()) for p in c['sampled_positive']]}, negatives "
              f"{[int(n.sum()) for n in c['sampled_negative']]}; losses "
              f"{float(c['loss_classifier']):.5f}, {float(c['loss_box_reg']):.5f}, "
              f"{float(c['loss_mask']):.5f}")


if __name__ == "__main__":
    main()
