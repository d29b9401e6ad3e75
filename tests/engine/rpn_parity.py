"""Expected values of the RPN, from torchvision, for tests/engine/test_rpn.cpp.

    rpn_parity.py OUT.pt

Builds torchvision's AnchorGenerator, RPNHead and RegionProposalNetwork as
maskrcnn_resnet50_fpn configures them, with seeded random weights (scaled so that the
objectness and the deltas spread), on random FPN-shaped features of two images of different
sizes, and writes with torch.save a dict of: the head's weights, the inputs, the anchors,
the head's outputs, the proposals and scores in eval mode, and in train mode the proposals,
the sample the sampler drew (so that C++ can use the same one), the two losses and the
gradients of the head's parameters. Also torchvision's Matcher on random quality matrices
with ties, and TAO-style anchors computed independently here (numpy, TAO's formula).
Test-only: the product never runs Python.
"""

import sys

import numpy as np
import torch
import torchvision
from torchvision.models.detection._utils import Matcher
from torchvision.models.detection.faster_rcnn import _default_anchorgen
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.rpn import (
    concat_box_prediction_layers, RegionProposalNetwork, RPNHead)

PADDED = (288, 352)  # a multiple of 32; P6 (5 x 6) gets torchvision's strides 57 and 58
IMAGE_SIZES = [(281, 347), (250, 352)]
CHANNELS = 256


def feature_shapes():
    shapes = []
    h, w = PADDED
    for stride in (4, 8, 16, 32):
        shapes.append((h // stride, w // stride))
    p5 = shapes[-1]
    shapes.append(((p5[0] + 1) // 2, (p5[1] + 1) // 2))  # FPN's max-pool level (ceil)
    return shapes


def random_gt(gen, size, count):
    h, w = size
    xy = torch.rand(count, 2, generator=gen) * torch.tensor([w * 0.8, h * 0.8])
    wh = torch.rand(count, 2, generator=gen) * torch.tensor([w * 0.4, h * 0.4]) + 8.0
    boxes = torch.cat([xy, xy + wh], dim=1)
    boxes[:, 2].clamp_(max=w)
    boxes[:, 3].clamp_(max=h)
    return boxes


def build_rpn(gen):
    anchor_gen = _default_anchorgen()
    head = RPNHead(CHANNELS, anchor_gen.num_anchors_per_location()[0])
    std = {"conv.0.0.weight": 0.02, "cls_logits.weight": 0.1, "bbox_pred.weight": 0.03}
    with torch.no_grad():
        for name, p in head.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * std.get(name, 0.1))
    # maskrcnn_resnet50_fpn's RPN settings.
    rpn = RegionProposalNetwork(
        anchor_gen, head, fg_iou_thresh=0.7, bg_iou_thresh=0.3, batch_size_per_image=256,
        positive_fraction=0.5, pre_nms_top_n=dict(training=2000, testing=1000),
        post_nms_top_n=dict(training=2000, testing=1000), nms_thresh=0.7, score_thresh=0.0)
    return rpn


def rpn_case(gen):
    rpn = build_rpn(gen)
    features = {str(i): torch.randn(2, CHANNELS, h, w, generator=gen)
                for i, (h, w) in enumerate(feature_shapes())}
    images = ImageList(torch.zeros(2, 3, *PADDED), IMAGE_SIZES)
    gt = [random_gt(gen, IMAGE_SIZES[0], 5), random_gt(gen, IMAGE_SIZES[1], 3)]
    gt[1][2] = torch.tensor([100.0, 120.0, 104.0, 123.0])  # tiny: matched only as low quality

    feats = list(features.values())
    rpn.eval()
    with torch.no_grad():
        logits, deltas = rpn.head(feats)
        anchors = rpn.anchor_generator(images, feats)
        eval_boxes, _ = rpn(images, features)
        # The scores, which forward does not return: the same steps by torchvision's parts.
        n_per_level = [o[0].numel() for o in logits]
        obj, dl = concat_box_prediction_layers(logits, deltas)
        props = rpn.box_coder.decode(dl, anchors).view(2, -1, 4)
        boxes2, eval_scores = rpn.filter_proposals(props, obj, images.image_sizes, n_per_level)
    for a, b in zip(eval_boxes, boxes2):
        assert torch.equal(a, b)

    rpn.train()
    drawn = []
    sampler = rpn.fg_bg_sampler

    def recording_sampler(labels):
        pos, neg = sampler(labels)
        drawn.extend(zip(pos, neg))
        return pos, neg

    rpn.fg_bg_sampler = recording_sampler
    torch.manual_seed(7)
    train_boxes, losses = rpn(images, features, [{"boxes": b} for b in gt])
    (losses["loss_objectness"] + losses["loss_rpn_box_reg"]).backward()

    return {
        "weights": {k: v.detach().clone() for k, v in rpn.head.state_dict().items()},
        "features": feats,
        "padded": list(PADDED),
        "image_sizes": [list(s) for s in IMAGE_SIZES],
        "gt_boxes": gt,
        "anchors": anchors[0],
        "anchors_image1": anchors[1],
        "logits": logits,
        "deltas": deltas,
        "eval_boxes": eval_boxes,
        "eval_scores": eval_scores,
        "train_boxes": [b.detach() for b in train_boxes],
        "sampled_positive": [p for p, _ in drawn],
        "sampled_negative": [n for _, n in drawn],
        "loss_objectness": losses["loss_objectness"].detach(),
        "loss_rpn_box_reg": losses["loss_rpn_box_reg"].detach(),
        "grads": {k: p.grad.clone() for k, p in rpn.head.named_parameters()},
    }


def matcher_cases(gen):
    cases = []
    configs = [(0.7, 0.3, True), (0.7, 0.3, False), (0.5, 0.5, True), (0.6, 0.4, True)]
    for i, (high, low, allow) in enumerate(configs * 2):
        m, n = (3, 40) if i < 4 else (7, 300)
        # Values on a 0.05 grid: many ties, within and across rows.
        q = torch.randint(0, 21, (m, n), generator=gen).float() * 0.05
        if i % 2 == 0:
            q[0] = q[0] * 0.2  # a ground truth whose best is below the low threshold
            q[1, 5] = q[1, 9] = q[1].max()  # ties for a ground truth's best
        cases.append({"quality": q, "high": high, "low": low, "allow_low_quality": allow,
                      "matches": Matcher(high, low, allow)(q.clone())})
    return cases


def tao_anchors(min_level, max_level, num_scales, anchor_scale, aspect_ratios, image_size):
    """TAO's (TPU Mask R-CNN's) anchor formula, independently: (width, height) factor pairs,
    centres at stride / 2 + k * stride, boxes (x1, y1, x2, y2) in float64."""
    out = []
    for level in range(min_level, max_level + 1):
        stride = 2 ** level
        level_boxes = []
        for octave in range(num_scales):
            for aw, ah in aspect_ratios:
                base = anchor_scale * stride * 2 ** (octave / float(num_scales))
                hx, hy = base * aw / 2.0, base * ah / 2.0
                x = np.arange(stride / 2, image_size[1], stride)
                y = np.arange(stride / 2, image_size[0], stride)
                xv, yv = np.meshgrid(x, y)
                xv, yv = xv.reshape(-1), yv.reshape(-1)
                level_boxes.append(np.stack([xv - hx, yv - hy, xv + hx, yv + hy], axis=1)[:, None])
        out.append(np.concatenate(level_boxes, axis=1).reshape(-1, 4))
    return torch.from_numpy(np.concatenate(out, axis=0))


def tao_cases():
    cases = []
    pairs = [(1.0, 1.0), (1.4, 0.7), (0.7, 1.4)]
    for min_level, max_level, num_scales, anchor_scale, size in [
            (2, 6, 1, 8.0, (256, 320)), (3, 7, 2, 4.0, (384, 256))]:
        cases.append({
            "min_level": min_level, "max_level": max_level, "num_scales": num_scales,
            "anchor_scale": anchor_scale, "aspect_pairs": torch.tensor(pairs, dtype=torch.float64),
            "padded": list(size),
            "anchors": tao_anchors(min_level, max_level, num_scales, anchor_scale, pairs, size),
        })
    return cases


def main():
    out = sys.argv[1]
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(20240602)
    data = {
        "versions": {"torch": str(torch.__version__), "torchvision": str(torchvision.__version__)},
        "rpn": rpn_case(gen),
        "matcher": matcher_cases(gen),
        "tao": tao_cases(),
    }
    torch.save(data, out)
    r = data["rpn"]
    print(f"wrote {out}: torch {torch.__version__}, torchvision {torchvision.__version__}; "
          f"proposals {[len(b) for b in r['eval_boxes']]} (eval), "
          f"{[len(b) for b in r['train_boxes']]} (train); positives sampled "
          f"{[int(p.sum()) for p in r['sampled_positive']]}; losses "
          f"{float(r['loss_objectness']):.6f}, {float(r['loss_rpn_box_reg']):.6f}")


if __name__ == "__main__":
    main()
