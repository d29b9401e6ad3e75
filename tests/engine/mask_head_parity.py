"""Expected values of the mask branch, from torchvision, for tests/engine/test_mask_head.cpp.

    mask_head_parity.py OUT.pt

Writes with torch.save a dict of:
  targets: ground-truth masks of random ellipses and polygons, RoIs (around the objects,
    partly outside the mask, tiny, degenerate, larger than the image) with their matched
    indices, and torchvision's project_masks_on_boxes of them (uint8 masks with float RoIs,
    soft float masks with double RoIs);
  paste: mask probabilities, boxes (inside, partly outside, tiny, inverted, on the border)
    and torchvision's paste_masks_in_image for paddings 1, 0 and 2, float and double;
  timing: 100 masks 28x28 into an 800x1216 image, the per-mask sums and counts above 0.5 of
    paste_masks_in_image and its time with one thread;
  heads: MaskRCNNHeads and MaskRCNNPredictor as maskrcnn_resnet50_fpn builds them (torchvision's
    own initialisation, seeded), their state_dicts, features in and logits out, maskrcnn_loss
    on two images and its gradient with respect to the logits, maskrcnn_inference.
Test-only: the product never runs Python.
"""

import sys
import time

import torch
import torchvision
from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from torchvision.models.detection.roi_heads import (
    maskrcnn_inference, maskrcnn_loss, paste_masks_in_image, project_masks_on_boxes)


def ellipse(gen, h, w):
    cy, cx = torch.rand(2, generator=gen) * torch.tensor([h, w])
    ry, rx = torch.rand(2, generator=gen) * torch.tensor([h / 3, w / 3]) + 2
    angle = float(torch.rand(1, generator=gen)) * 3.1416
    ys, xs = torch.meshgrid(torch.arange(h) + 0.5, torch.arange(w) + 0.5, indexing="ij")
    c, s = torch.cos(torch.tensor(angle)), torch.sin(torch.tensor(angle))
    u = (xs - cx) * c + (ys - cy) * s
    v = -(xs - cx) * s + (ys - cy) * c
    return ((u / rx) ** 2 + (v / ry) ** 2 <= 1).to(torch.uint8)


def polygon(gen, h, w):
    """A random star-shaped polygon, rasterised by the even-odd rule at pixel centres."""
    n = int(torch.randint(3, 9, (1,), generator=gen))
    cy, cx = torch.rand(2, generator=gen) * torch.tensor([h, w])
    angles = torch.sort(torch.rand(n, generator=gen) * 6.2832).values
    radius = torch.rand(n, generator=gen) * min(h, w) / 2.5 + 3
    px, py = cx + radius * torch.cos(angles), cy + radius * torch.sin(angles)
    ys, xs = torch.meshgrid(torch.arange(h) + 0.5, torch.arange(w) + 0.5, indexing="ij")
    inside = torch.zeros(h, w, dtype=torch.bool)
    for i in range(n):
        x1, y1, x2, y2 = px[i], py[i], px[(i + 1) % n], py[(i + 1) % n]
        crosses = (y1 > ys) != (y2 > ys)
        x_at = (x2 - x1) * (ys - y1) / (y2 - y1 + 1e-12) + x1
        inside ^= crosses & (xs < x_at)
    return inside.to(torch.uint8)


def random_masks(gen, count, h, w):
    return torch.stack([ellipse(gen, h, w) if i % 2 else polygon(gen, h, w) for i in range(count)])


def mask_box(mask):
    ys, xs = torch.nonzero(mask, as_tuple=True)
    if len(xs) == 0:
        return torch.tensor([0.0, 0.0, 1.0, 1.0])
    return torch.tensor([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], dtype=torch.float32)


def target_rois(gen, masks, count):
    g, h, w = masks.shape
    matched = torch.randint(0, g, (count,), generator=gen)
    rois = []
    for i, m in enumerate(matched):
        b = mask_box(masks[m])
        size = (b[2:] - b[:2]).repeat(2)
        kind = i % 8
        if kind < 4:  # a proposal around the object
            b = b + (torch.rand(4, generator=gen) - 0.5) * 0.4 * size
        elif kind == 4:  # partly outside the mask's image
            b = b + torch.tensor([-1.0, -1.0, 1.0, 1.0]) * torch.tensor([w, h, w, h]) * 0.3
        elif kind == 5:  # tiny, under a pixel
            b = torch.cat([b[:2] + 1.3, b[:2] + 1.3 + torch.rand(2, generator=gen) * 0.8])
        elif kind == 6:  # degenerate: x2 < x1
            b = torch.stack([b[2], b[1], b[0], b[3]])
        else:  # larger than the image
            b = torch.tensor([-20.0, -15.0, w + 25.0, h + 10.0]) + torch.rand(4, generator=gen)
        rois.append(b)
    return torch.stack(rois), matched


def targets_cases(gen):
    cases = []
    masks = random_masks(gen, 6, 97, 131)
    rois, matched = target_rois(gen, masks, 48)
    cases.append({"gt_masks": masks, "rois": rois, "matched": matched, "M": 28,
                  "expected": project_masks_on_boxes(masks, rois, matched, 28)})
    soft = torch.rand(4, 61, 77, generator=gen)  # float masks, double RoIs
    rois, matched = target_rois(gen, (soft > 0.5).to(torch.uint8), 24)
    rois = rois.double()
    cases.append({"gt_masks": soft, "rois": rois, "matched": matched, "M": 14,
                  "expected": project_masks_on_boxes(soft, rois, matched, 14)})
    return cases


def mask_probs(gen, n, m):
    """Smooth probability maps with plenty of values near 0.5 (logits from upsampled noise)."""
    coarse = torch.randn(n, 1, 5, 5, generator=gen) * 3
    logits = torch.nn.functional.interpolate(coarse, size=(m, m), mode="bilinear",
                                             align_corners=False)
    return logits.sigmoid()


def paste_boxes(gen, n, h, w):
    boxes = []
    for i in range(n):
        kind = i % 6
        xy = torch.rand(2, generator=gen) * torch.tensor([w, h])
        wh = torch.rand(2, generator=gen) * torch.tensor([w, h]) * 0.5 + 2
        if kind == 0 or kind == 1:  # inside
            b = torch.cat([xy * 0.6, xy * 0.6 + wh * 0.8])
        elif kind == 2:  # partly outside, top left
            b = torch.cat([-wh * 0.5, -wh * 0.5 + wh])
        elif kind == 3:  # partly outside, bottom right
            b = torch.cat([torch.tensor([w, h]) - wh * 0.5, torch.tensor([w, h]) + wh * 0.5])
        elif kind == 4:  # tiny
            b = torch.cat([xy, xy + torch.rand(2, generator=gen) * 0.9])
        else:  # inverted (x2 < x1, y2 < y1), inside
            b = torch.cat([xy * 0.5 + wh * 0.3, xy * 0.5])
        boxes.append(b)
    boxes.append(torch.tensor([float(w), 10.0, float(w), 30.0]))  # on the right border
    boxes.append(torch.tensor([0.0, 0.0, float(w), float(h)]))  # the whole image
    return torch.stack(boxes)


def paste_cases(gen):
    cases = []
    for n, m, (h, w), padding, dtype in [(24, 28, (120, 157), 1, torch.float32),
                                         (12, 28, (64, 50), 0, torch.float32),
                                         (12, 14, (90, 80), 2, torch.float32),
                                         (12, 28, (70, 90), 1, torch.float64)]:
        masks = mask_probs(gen, n + 2, m).to(dtype)
        boxes = paste_boxes(gen, n, h, w)
        cases.append({"masks": masks, "boxes": boxes, "height": h, "width": w,
                      "padding": padding,
                      "expected": paste_masks_in_image(masks, boxes, (h, w), padding)[:, 0]})
    return cases


def timing_case(gen):
    n, h, w = 100, 800, 1216
    masks = mask_probs(gen, n, 28)
    xy = torch.rand(n, 2, generator=gen) * torch.tensor([w * 0.8, h * 0.8])
    wh = torch.rand(n, 2, generator=gen) * 300 + 10
    boxes = torch.cat([xy, torch.minimum(xy + wh, torch.tensor([w, h]))], dim=1)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    start = time.perf_counter()
    pasted = paste_masks_in_image(masks, boxes, (h, w))[:, 0]
    seconds = time.perf_counter() - start
    torch.set_num_threads(threads)
    return {"masks": masks, "boxes": boxes, "height": h, "width": w, "seconds": seconds,
            "sums": pasted.double().sum(dim=(1, 2)), "above": (pasted > 0.5).sum(dim=(1, 2))}


def heads_case(gen):
    torch.manual_seed(11)
    heads = MaskRCNNHeads(256, [256, 256, 256, 256], 1)
    predictor = MaskRCNNPredictor(256, 256, 91)
    features = torch.randn(6, 256, 14, 14, generator=gen)
    with torch.no_grad():
        head_out = heads(features)
        logits = predictor(head_out)

    sizes = [(90, 120), (70, 100)]
    gt_masks = [random_masks(gen, 3, *sizes[0]), random_masks(gen, 2, *sizes[1])]
    gt_labels = [torch.randint(1, 91, (3,), generator=gen), torch.randint(1, 91, (2,), generator=gen)]
    proposals, matched = [], []
    for masks, count in zip(gt_masks, [4, 2]):
        r, i = target_rois(gen, masks, count)
        proposals.append(r)
        matched.append(i)
    leaf = logits.clone().requires_grad_(True)
    loss = maskrcnn_loss(leaf, proposals, gt_masks, gt_labels, matched)
    loss.backward()
    det_labels = [torch.randint(1, 91, (4,), generator=gen), torch.randint(1, 91, (2,), generator=gen)]
    return {
        "heads_state": dict(heads.state_dict()),
        "predictor_state": dict(predictor.state_dict()),
        "features": features, "head_out": head_out, "logits": logits,
        "gt_masks": gt_masks, "gt_labels": gt_labels, "proposals": proposals, "matched": matched,
        "loss": loss.detach(), "grad": leaf.grad,
        "det_labels": det_labels, "inference": list(maskrcnn_inference(logits, det_labels)),
    }


def main():
    out = sys.argv[1]
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(20240611)
    data = {
        "versions": {"torch": str(torch.__version__), "torchvision": str(torchvision.__version__)},
        "targets": targets_cases(gen),
        "paste": paste_cases(gen),
        "timing": timing_case(gen),
        "heads": heads_case(gen),
    }
    torch.save(data, out)
    print(f"wrote {out}: torch {torch.__version__}, torchvision {torchvision.__version__}; "
          f"mask loss {float(data['heads']['loss']):.6f}; torchvision pastes 100 masks into "
          f"800x1216 in {data['timing']['seconds'] * 1000:.1f} ms (1 thread)")


if __name__ == "__main__":
    main()
