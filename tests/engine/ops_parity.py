"""Expected values of the detection ops, from torchvision, for tests/engine/test_ops.cpp.

    ops_parity.py OUT.pt

Writes, with torch.save, a dict of op name -> list of cases; a case is a dict of its inputs
(tensors and parameters) and torchvision's outputs. Inputs are random but seeded, so a run
always writes the same file. Test-only: the product never runs Python.
"""

import math
import sys

import torch
import torchvision
from torchvision.models.detection._utils import BoxCoder
from torchvision.ops import batched_nms, box_iou, nms, roi_align


def random_rois(gen, count, batch, img_h, img_w, dtype):
    """RoIs (batch index, x1, y1, x2, y2) in image pixels: most inside, some partly or wholly
    outside, some degenerate (zero or negative size)."""
    rois = torch.empty(count, 5, dtype=torch.float64)
    rois[:, 0] = torch.randint(0, batch, (count,), generator=gen).double()
    x1 = torch.rand(count, generator=gen, dtype=torch.float64) * img_w * 1.3 - 0.2 * img_w
    y1 = torch.rand(count, generator=gen, dtype=torch.float64) * img_h * 1.3 - 0.2 * img_h
    w = torch.rand(count, generator=gen, dtype=torch.float64) * img_w * 0.7
    h = torch.rand(count, generator=gen, dtype=torch.float64) * img_h * 0.7
    w[::7] = 0.0  # degenerate
    h[3::11] = 0.3
    w[5::13] = -2.0  # inverted
    rois[:, 1], rois[:, 2], rois[:, 3], rois[:, 4] = x1, y1, x1 + w, y1 + h
    rois[-1] = torch.tensor([0, -3.0 * img_w, -3.0 * img_h, -2.0 * img_w, -2.0 * img_h])  # outside
    return rois.to(dtype)


def roi_align_cases(gen):
    cases = []
    shapes = [(2, 3, 19, 23, (7, 7)), (1, 2, 12, 9, (5, 4))]
    for dtype in (torch.float32, torch.float64):
        for aligned in (False, True):
            for sampling_ratio in (0, 2):
                for scale in (1.0, 0.25, 0.125):
                    n, c, h, w, pooled = shapes[len(cases) % 2]
                    x = torch.randn(n, c, h, w, generator=gen, dtype=dtype)
                    rois = random_rois(gen, 17, n, h / scale, w / scale, dtype)
                    cases.append(roi_align_case(gen, x, rois, scale, pooled, sampling_ratio, aligned))
    # Empty RoIs.
    x = torch.randn(1, 2, 8, 8, generator=gen)
    cases.append(roi_align_case(gen, x, torch.zeros(0, 5), 0.5, (3, 3), 2, True))
    # A larger, more typical one: a stride-8 map, many RoIs, the mask head's 14x14.
    x = torch.randn(2, 32, 40, 48, generator=gen)
    rois = random_rois(gen, 60, 2, 320, 384, torch.float32)
    cases.append(roi_align_case(gen, x, rois, 0.125, (14, 14), 2, True))
    return cases


def roi_align_case(gen, x, rois, scale, pooled, sampling_ratio, aligned):
    xg = x.clone().requires_grad_(True)
    out = roi_align(xg, rois, pooled, spatial_scale=scale, sampling_ratio=sampling_ratio,
                    aligned=aligned)
    grad_out = torch.randn(out.shape, generator=gen, dtype=x.dtype)
    out.backward(grad_out)
    return {
        "input": x, "rois": rois, "spatial_scale": float(scale),
        "pooled_height": pooled[0], "pooled_width": pooled[1],
        "sampling_ratio": sampling_ratio, "aligned": aligned,
        "output": out.detach(), "grad_output": grad_out, "grad_input": xg.grad,
    }


def random_boxes(gen, count, size, dtype):
    xy = torch.rand(count, 2, generator=gen, dtype=torch.float64) * size
    wh = torch.rand(count, 2, generator=gen, dtype=torch.float64) * size * 0.3 + 1.0
    return torch.cat([xy, xy + wh], dim=1).to(dtype)


def nms_cases(gen):
    cases = []
    def add(boxes, scores, threshold):
        cases.append({"boxes": boxes, "scores": scores, "iou_threshold": float(threshold),
                      "keep": nms(boxes, scores, threshold)})
    # Ties: scores on a coarse grid, so many boxes share a score.
    boxes = random_boxes(gen, 300, 100, torch.float32)
    add(boxes, torch.randint(0, 8, (300,), generator=gen).float() / 8, 0.5)
    add(boxes.double(), torch.randint(0, 8, (300,), generator=gen).double() / 8, 0.3)
    # IoU exactly at the threshold is kept, just above is suppressed: [0,0,2,1] vs [0,0,1,1]
    # is 0.5 exactly, [0,0,4,1] vs [0,0,1,1] is 0.25.
    exact = torch.tensor([[0, 0, 2, 1], [0, 0, 1, 1], [0, 0, 4, 1], [10, 10, 12, 11],
                          [10, 10, 11, 11]], dtype=torch.float32)
    exact_scores = torch.tensor([0.9, 0.8, 0.7, 0.6, 0.6])
    for threshold in (0.5, 0.25, 0.4999, 0.2499):
        add(exact, exact_scores, threshold)
    # Empty input.
    add(torch.zeros(0, 4), torch.zeros(0), 0.5)
    # Many boxes, distinct and tied scores.
    many = random_boxes(gen, 5000, 1000, torch.float32)
    add(many, torch.rand(5000, generator=gen), 0.7)
    add(many, torch.randint(0, 50, (5000,), generator=gen).float(), 0.5)
    return cases


def batched_nms_cases(gen):
    cases = []
    for count, classes in ((300, 5), (2000, 7), (40, 3)):  # 2000 boxes take the per-class path
        boxes = random_boxes(gen, count, 200, torch.float32)
        scores = torch.randint(0, 20, (count,), generator=gen).float() / 20
        idxs = torch.randint(0, classes, (count,), generator=gen)
        cases.append({"boxes": boxes, "scores": scores, "idxs": idxs, "iou_threshold": 0.5,
                      "keep": batched_nms(boxes, scores, idxs, 0.5)})
    empty = torch.zeros(0, 4)
    cases.append({"boxes": empty, "scores": torch.zeros(0), "idxs": torch.zeros(0, dtype=torch.int64),
                  "iou_threshold": 0.5,
                  "keep": batched_nms(empty, torch.zeros(0), torch.zeros(0, dtype=torch.int64), 0.5)})
    return cases


def box_iou_cases(gen):
    cases = []
    for dtype in (torch.float32, torch.float64):
        a = random_boxes(gen, 50, 100, dtype)
        b = random_boxes(gen, 70, 100, dtype)
        b[3] = torch.tensor([5, 5, 5, 9], dtype=dtype)  # zero area
        cases.append({"boxes1": a, "boxes2": b, "iou": box_iou(a, b)})
    cases.append({"boxes1": torch.zeros(0, 4), "boxes2": b.float(),
                  "iou": box_iou(torch.zeros(0, 4), b.float())})
    return cases


def box_coder_cases(gen):
    cases = []
    for dtype, weights in ((torch.float32, (10.0, 10.0, 5.0, 5.0)), (torch.float32, (1.0, 1.0, 1.0, 1.0)),
                           (torch.float64, (10.0, 10.0, 5.0, 5.0))):
        coder = BoxCoder(weights)
        proposals = random_boxes(gen, 400, 800, dtype)
        reference = random_boxes(gen, 400, 800, dtype)
        classes = 3
        rel_codes = torch.randn(400, 4 * classes, generator=gen, dtype=dtype)
        rel_codes[::9, 2] = 30.0 * weights[2]  # beyond the clamp
        rel_codes[1::9, 3] = 6.0 * weights[3]
        rel_codes[2::9, 7] = -40.0
        cases.append({
            "reference_boxes": reference, "proposals": proposals, "rel_codes": rel_codes,
            "weights": torch.tensor(weights, dtype=torch.float64),
            "bbox_xform_clip": coder.bbox_xform_clip,
            "encoded": coder.encode_single(reference, proposals),
            "decoded": coder.decode_single(rel_codes, proposals),
        })
    return cases


def main():
    out = sys.argv[1]
    gen = torch.Generator().manual_seed(20240601)
    torch.set_num_threads(2)
    data = {
        "versions": {"torch": str(torch.__version__), "torchvision": str(torchvision.__version__)},
        "log_1000_16": math.log(1000.0 / 16),
        "roi_align": roi_align_cases(gen),
        "nms": nms_cases(gen),
        "batched_nms": batched_nms_cases(gen),
        "box_iou": box_iou_cases(gen),
        "box_coder": box_coder_cases(gen),
    }
    torch.save(data, out)
    print(f"wrote {out}: torch {torch.__version__}, torchvision {torchvision.__version__}")


if __name__ == "__main__":
    main()
