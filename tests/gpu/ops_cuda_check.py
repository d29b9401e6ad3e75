#!/usr/bin/env python3
"""The CUDA kernels of the detection operators (engine/ops/cuda/) against their CPU kernels
and against torchvision's CUDA operators: forward and backward, float32, float16 and
bfloat16, empty and large inputs, non-contiguous inputs, autocast.

    ops_cuda_check.py --library build/lib/libmrcnn_ops.so [--json OUT.json]

Loads our operators into the running torch (torch.ops.load_library) and calls them through
the dispatcher as torch.ops.mrcnn.*, so the kernels checked are the ones the engine runs.
Without a CUDA device it checks that the library loads and registers CUDA kernels, says why
it stops, and exits 77 (ctest's skip code). Exit 1 when any check fails; every check is run
and reported either way. Inputs are random (seeded per check) and never all zeros.

Tolerances, per dtype of the CUDA result against a reference computed in float64 on the CPU
from the same (already rounded) inputs: float32 1e-5 of the reference's scale; float16 and
bfloat16 two units in the last place of the result's dtype at that scale (the kernels
accumulate in float and round once). Test-only: the product never runs Python.
"""

import argparse
import json
import math
import zlib
import sys
import traceback

import torch

SKIP = 77
LOW = (torch.float16, torch.bfloat16)
ULP = {torch.float32: 1.2e-7, torch.float16: 9.8e-4, torch.bfloat16: 7.9e-3}


def tol(dtype):
    return 1e-5 if dtype in (torch.float32, torch.float64) else 2 * ULP[dtype]


def scaled_err(out, ref):
    """max |out - ref| over the reference's largest magnitude (1 when it is all zeros)."""
    out, ref = out.detach().double().cpu(), ref.detach().double().cpu()
    if out.shape != ref.shape:
        raise AssertionError(f"shape {tuple(out.shape)} against {tuple(ref.shape)}")
    if out.numel() == 0:
        return 0.0
    if torch.isnan(out).any() != torch.isnan(ref).any():
        raise AssertionError("NaN where the reference has none (or the reverse)")
    scale = max(ref.abs().max().item(), 1e-30) if ref.abs().max().item() > 0 else 1.0
    return (out - ref).abs().max().item() / scale


def random_boxes(gen, n, size, dtype=torch.float32, device="cpu"):
    xy = torch.rand(n, 2, generator=gen) * size
    wh = torch.rand(n, 2, generator=gen) * size * 0.3 + 1.0
    return torch.cat([xy, xy + wh], 1).to(dtype).to(device)


def random_rois(gen, n, batch, h, w, dtype=torch.float32):
    rois = torch.empty(n, 5)
    rois[:, 0] = torch.randint(0, batch, (n,), generator=gen).float()
    rois[:, 1:] = random_boxes(gen, n, min(h, w))
    rois[::9, 3] = rois[::9, 1]  # zero width
    rois[-1, 1:] = torch.tensor([-3.0 * w, -3.0 * h, -2.0 * w, -2.0 * h])  # wholly outside
    return rois.to(dtype)


def non_contiguous(t):
    """The same values as t in a strided view (every other element of a wider tensor)."""
    wide = torch.empty(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype, device=t.device)
    wide[..., ::2] = t
    wide[..., 1::2] = float("nan")
    view = wide[..., ::2]
    assert t.numel() == 0 or not view.is_contiguous()
    return view


class Checks:
    def __init__(self, tv):
        self.tv = tv
        self.results = []

    def run(self, name, fn):
        gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
        try:
            detail = fn(gen) or "ok"
            self.results.append({"check": name, "ok": True, "detail": detail})
        except Exception as e:  # one failing check must not hide the others
            tb = traceback.format_exc(limit=3)
            self.results.append({"check": name, "ok": False, "detail": f"{e}", "trace": tb})

    # ---- roi_align ----

    def roi_align_forward(self, dtype, aligned, sampling, contiguous, channels_last=False):
        def check(gen):
            x = torch.randn(2, 16, 25, 31, generator=gen).to(dtype)
            rois = random_rois(gen, 60, 2, 100, 124, dtype)
            ref = torch.ops.mrcnn.roi_align(x.double(), rois.double(), 0.25, 7, 7, sampling, aligned)
            xc, rc = x.cuda(), rois.cuda()
            if not contiguous:
                xc, rc = xc.transpose(2, 3).contiguous().transpose(2, 3), non_contiguous(rc)
            if channels_last:  # read in place, the result channels-last too
                xc = xc.contiguous(memory_format=torch.channels_last)
            ours = torch.ops.mrcnn.roi_align(xc, rc, 0.25, 7, 7, sampling, aligned)
            torch.cuda.synchronize()
            if ours.dtype != dtype:
                raise AssertionError(f"result dtype {ours.dtype}")
            if channels_last and not ours.is_contiguous(memory_format=torch.channels_last):
                raise AssertionError(f"channels-last maps gave a result of strides {ours.stride()}")
            err = scaled_err(ours, ref)
            if err > tol(dtype):
                raise AssertionError(f"CUDA against float64 CPU: {err:.2e} > {tol(dtype):.1e}")
            cpu = torch.ops.mrcnn.roi_align(x.float(), rois.float(), 0.25, 7, 7, sampling, aligned)
            err_cpu = scaled_err(ours, cpu)
            if err_cpu > 2 * tol(dtype):
                raise AssertionError(f"CUDA against our CPU kernel: {err_cpu:.2e}")
            detail = f"vs float64 {err:.1e}, vs CPU {err_cpu:.1e}"
            try:
                theirs = self.tv.ops.roi_align(x.cuda(), rois.cuda(), (7, 7), 0.25, sampling, aligned)
            except RuntimeError:
                return detail + f"; torchvision has no {dtype} kernel for it"
            err_tv = scaled_err(theirs, ref)
            err_ours_tv = scaled_err(ours, theirs)
            # torchvision's half kernels compute in half: ours must be no worse than it.
            if err > max(tol(dtype), err_tv) or err_ours_tv > max(2 * tol(dtype), 2 * err_tv):
                raise AssertionError(f"against torchvision {err_ours_tv:.2e} (torchvision vs float64 {err_tv:.2e})")
            return detail + f", vs torchvision {err_ours_tv:.1e} (torchvision vs float64 {err_tv:.1e})"

        return check

    def roi_align_backward(self, dtype, aligned, sampling, channels_last=False):
        def check(gen):
            x = torch.randn(2, 8, 19, 23, generator=gen).to(dtype)
            rois = random_rois(gen, 40, 2, 76, 92, dtype)
            go = torch.randn(40, 8, 5, 5, generator=gen).to(dtype)
            xd = x.double().requires_grad_(True)
            torch.ops.mrcnn.roi_align(xd, rois.double(), 0.25, 5, 5, sampling, aligned).backward(go.double())
            fmt = torch.channels_last if channels_last else torch.contiguous_format
            xg = x.cuda().contiguous(memory_format=fmt).requires_grad_(True)
            torch.ops.mrcnn.roi_align(xg, rois.cuda(), 0.25, 5, 5, sampling, aligned).backward(non_contiguous(go.cuda()))
            torch.cuda.synchronize()
            # Gradients sum many terms (atomic adds in any order): a few more units of rounding.
            limit = 4 * tol(dtype) if dtype in LOW else 1e-5
            if channels_last and not xg.grad.is_contiguous(memory_format=torch.channels_last):
                raise AssertionError(f"channels-last maps got a gradient of strides {xg.grad.stride()}")
            err = scaled_err(xg.grad, xd.grad)
            if err > limit:
                raise AssertionError(f"gradient against float64 CPU: {err:.2e} > {limit:.1e}")
            detail = f"grad vs float64 {err:.1e}"
            if dtype == torch.float32:
                xt = x.cuda().requires_grad_(True)
                self.tv.ops.roi_align(xt, rois.cuda(), (5, 5), 0.25, sampling, aligned).backward(go.cuda())
                e = scaled_err(xg.grad, xt.grad)
                if e > 1e-5:
                    raise AssertionError(f"gradient against torchvision: {e:.2e}")
                detail += f", vs torchvision {e:.1e}"
            return detail

        return check

    def roi_align_edges(self, gen):
        x = torch.randn(1, 4, 10, 10, generator=gen).cuda()
        empty = torch.ops.mrcnn.roi_align(x, torch.zeros(0, 5).cuda(), 1.0, 2, 2, 0, True)
        if tuple(empty.shape) != (0, 4, 2, 2):
            raise AssertionError(f"empty rois gave {tuple(empty.shape)}")
        xg = x.clone().requires_grad_(True)
        torch.ops.mrcnn.roi_align(xg, torch.zeros(0, 5).cuda(), 1.0, 2, 2, 0, True).sum().backward()
        if xg.grad is None or xg.grad.abs().max().item() != 0:
            raise AssertionError("empty rois: gradient not zero")
        # Large: an FPN level of a COCO-sized batch and 4000 RoIs, against torchvision.
        big = torch.randn(2, 256, 200, 336, generator=gen).cuda()
        rois = random_rois(gen, 4000, 2, 800, 1344).cuda()
        ours = torch.ops.mrcnn.roi_align(big, rois, 0.25, 7, 7, 2, True)
        theirs = self.tv.ops.roi_align(big, rois, (7, 7), 0.25, 2, True)
        e = scaled_err(ours, theirs)
        if e > 1e-5:
            raise AssertionError(f"large input against torchvision: {e:.2e}")
        # Autocast: float32 inputs under float16 autocast run in float32, as torchvision's.
        with torch.autocast("cuda", dtype=torch.float16):
            auto = torch.ops.mrcnn.roi_align(big[:1, :8].half(), rois[:50], 0.25, 7, 7, 2, True)
        if auto.dtype != torch.float16:
            raise AssertionError(f"autocast result {auto.dtype}, expected the input's float16")
        return f"empty ok; 4000 RoIs x 256 channels vs torchvision {e:.1e}; autocast ok"

    # ---- nms, batched_nms ----

    def nms(self, dtype, contiguous):
        """float32 directly; float16 and bfloat16 as the engine runs them, under autocast
        (boxes and scores cast to float). Scores are distinct in the dtype, so that the order
        is defined: low-precision sizes stop where the dtype runs out of distinct values."""

        def check(gen):
            sizes = (0, 1, 63, 64, 65, 1000, 5000, 20000)
            if dtype == torch.float16:
                sizes = sizes[:6]
            elif dtype == torch.bfloat16:
                sizes = sizes[:5]
            for n in sizes:
                boxes = random_boxes(gen, n, 500).to(dtype)
                scores = torch.linspace(0.05, 1, n)[torch.randperm(n, generator=gen)].to(dtype)
                bc, sc = boxes.cuda(), scores.cuda()
                if not contiguous:
                    bc = non_contiguous(bc)
                for thr in (0.3, 0.5, 0.7):
                    with torch.autocast("cuda", dtype=dtype, enabled=dtype in LOW):
                        ours = torch.ops.mrcnn.nms(bc, sc, thr).cpu()
                    cpu = torch.ops.mrcnn.nms(boxes.float(), scores.float(), thr)
                    if not torch.equal(ours, cpu):
                        raise AssertionError(f"n={n} thr={thr}: {ours.numel()} kept, CPU {cpu.numel()}")
                    if dtype == torch.float32:
                        theirs = self.tv.ops.nms(bc.contiguous(), sc, thr).cpu()
                        if not torch.equal(ours, theirs):
                            raise AssertionError(f"n={n} thr={thr}: {ours.numel()} kept, torchvision {theirs.numel()}")
            return f"n in {sizes}, thresholds 0.3/0.5/0.7: identical indices"

        return check

    def batched_nms(self, gen):
        for n in (0, 10, 3000, 20000):
            boxes = random_boxes(gen, n, 800).cuda()
            scores = (torch.randperm(n, generator=gen).float() / max(n, 1)).cuda()
            idxs = torch.randint(0, 80, (n,), generator=gen).cuda()
            ours = torch.ops.mrcnn.batched_nms(boxes, scores, idxs, 0.5).cpu()
            theirs = self.tv.ops.batched_nms(boxes, scores, idxs, 0.5).cpu()
            cpu = torch.ops.mrcnn.batched_nms(boxes.cpu(), scores.cpu(), idxs.cpu(), 0.5)
            if not (torch.equal(ours, theirs) and torch.equal(ours, cpu)):
                raise AssertionError(f"n={n}: {ours.numel()} kept, torchvision {theirs.numel()}, CPU {cpu.numel()}")
        return "80 classes, n up to 20000: identical to torchvision and the CPU"

    # ---- box_iou, box coder ----

    def nms_keep_mask(self, gen):
        """The batched NMS with its greedy pass on the device: the same mask as our CPU kernel
        and as torchvision's nms run per image and category on the valid boxes."""
        images, n = 3, 10000
        boxes = torch.stack([random_boxes(gen, n, 800) for _ in range(images)])
        scores = torch.rand(images, n, generator=gen)
        categories = torch.randint(0, 5, (images, n), generator=gen)
        valid = torch.rand(images, n, generator=gen) > 0.2
        ours = torch.ops.mrcnn.nms_keep_mask(boxes.cuda(), scores.cuda(), categories.cuda(), valid.cuda(), 0.7)
        cpu = torch.ops.mrcnn.nms_keep_mask(boxes, scores, categories, valid, 0.7)
        if not torch.equal(ours.cpu(), cpu):
            raise AssertionError(f"GPU and CPU masks differ in {(ours.cpu() != cpu).sum().item()} boxes")
        for i in range(images):
            expected = torch.zeros(n, dtype=torch.bool)
            for c in range(5):
                members = torch.nonzero((categories[i] == c) & valid[i]).squeeze(1)
                kept = self.tv.ops.nms(boxes[i][members].cuda(), scores[i][members].cuda(), 0.7).cpu()
                expected[members[kept]] = True
            if not torch.equal(ours[i].cpu(), expected):
                raise AssertionError(f"image {i}: differs from torchvision's per-category nms")
        return f"{images} images of {n} boxes, 5 categories: kept {ours.sum().item()}, equal to CPU and torchvision"

    def box_iou(self, dtype):
        def check(gen):
            a, b = random_boxes(gen, 3000, 800, dtype), random_boxes(gen, 2000, 800, dtype)
            ref = torch.ops.mrcnn.box_iou(a.double(), b.double())
            ours = torch.ops.mrcnn.box_iou(non_contiguous(a.cuda()), b.cuda())
            e = scaled_err(ours, ref)
            if e > tol(dtype):
                raise AssertionError(f"against float64: {e:.2e}")
            theirs = self.tv.ops.box_iou(a.cuda(), b.cuda())
            e_tv = scaled_err(ours, theirs)
            if e_tv > 2 * tol(dtype):
                raise AssertionError(f"against torchvision: {e_tv:.2e}")
            empty = torch.ops.mrcnn.box_iou(torch.zeros(0, 4, dtype=dtype).cuda(), b.cuda())
            if tuple(empty.shape) != (0, 2000):
                raise AssertionError(f"empty gave {tuple(empty.shape)}")
            return f"3000x2000 vs float64 {e:.1e}, vs torchvision {e_tv:.1e}"

        return check

    def box_coder(self, gen):
        from torchvision.models.detection._utils import BoxCoder

        w = (10.0, 10.0, 5.0, 5.0)
        clip = math.log(1000.0 / 16)
        coder = BoxCoder(w, clip)
        props, gt = random_boxes(gen, 5000, 800), random_boxes(gen, 5000, 800)
        enc = torch.ops.mrcnn.encode_boxes(gt.cuda(), non_contiguous(props.cuda()), *w)
        enc_tv = coder.encode_single(gt.cuda(), props.cuda())
        enc_cpu = torch.ops.mrcnn.encode_boxes(gt.double(), props.double(), *w)
        e1, e2 = scaled_err(enc, enc_cpu), scaled_err(enc, enc_tv)
        codes = torch.randn(5000, 4 * 91, generator=gen)
        codes[::7] *= 10  # past the clip
        dec = torch.ops.mrcnn.decode_boxes(non_contiguous(codes.cuda()), props.cuda(), *w, clip)
        dec_tv = coder.decode_single(codes.cuda(), props.cuda())
        dec_cpu = torch.ops.mrcnn.decode_boxes(codes.double(), props.double(), *w, clip)
        e3, e4 = scaled_err(dec, dec_cpu), scaled_err(dec, dec_tv)
        if max(e1, e2, e3, e4) > 1e-5:
            raise AssertionError(f"encode {e1:.1e}/{e2:.1e}, decode {e3:.1e}/{e4:.1e}")
        empty = torch.ops.mrcnn.decode_boxes(torch.zeros(0, 8).cuda(), torch.zeros(0, 4).cuda(), *w, clip)
        if tuple(empty.shape) != (0, 8):
            raise AssertionError("empty decode")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            half = torch.ops.mrcnn.decode_boxes(codes.cuda().bfloat16(), props.cuda().bfloat16(), *w, clip)
        e5 = scaled_err(half, dec_cpu)
        if e5 > 4 * ULP[torch.bfloat16] * 2:
            raise AssertionError(f"bfloat16 decode against float64: {e5:.2e}")
        return f"encode vs CPU {e1:.1e} / torchvision {e2:.1e}; decode {e3:.1e} / {e4:.1e}; bf16 {e5:.1e}"

    # ---- mask targets, paste masks ----

    def mask_targets(self, gen):
        """Against torchvision's CUDA roi_align of the masks (the same float arithmetic, so to
        1e-5) and against our CPU kernel in float64. A bin averages up to (box / 28)^2 samples;
        the float sums of the CPU and the GPU run in different orders, which is why the float32
        CPU result differs from both GPU results by ~1e-5 (seen: 1.6e-5 on an H100)."""
        worst = 0.0
        for g_count, p_count in ((5, 300), (3, 0)):
            masks = (torch.rand(g_count, 120, 160, generator=gen) > 0.5).to(torch.uint8)
            rois = random_boxes(gen, p_count, 120)
            matched = torch.randint(0, g_count, (p_count,), generator=gen)
            ours = torch.ops.mrcnn.mask_targets(masks.cuda(), non_contiguous(rois.cuda()), matched.cuda(), 28)
            rois_tv = torch.cat([matched[:, None].float(), rois], 1).cuda()
            theirs = self.tv.ops.roi_align(masks[:, None].float().cuda(), rois_tv, (28, 28), 1.0)[:, 0]
            exact = torch.ops.mrcnn.mask_targets(masks, rois.double(), matched, 28)
            e1, e2 = scaled_err(ours, theirs), scaled_err(ours, exact)
            worst = max(worst, e2)
            if e1 > 1e-5 or e2 > 5e-5:
                raise AssertionError(f"G={g_count} P={p_count}: vs torchvision {e1:.2e}, vs float64 CPU {e2:.2e}")
        return f"uint8 masks, 300 RoIs and none: vs torchvision's roi_align of the masks <= 1e-5, vs float64 {worst:.1e}"

    def mask_targets_cropped(self, gen):
        """The targets read from the masks' crops (the loader's windows) equal those of the
        whole masks on the GPU bit for bit (the same sampling, only the reads differ), and a
        matched index or a window out of range gives NaN for its RoI (no host check)."""
        g_count, h, w = 6, 90, 130
        masks = torch.zeros(g_count, h, w, dtype=torch.uint8)
        windows, crops, offsets, at = [], [], [], 0
        for g in range(g_count - 1):  # the last mask stays empty: a 0 x 0 window
            y0, x0 = int(torch.randint(0, h - 10, (1,), generator=gen)), int(torch.randint(0, w - 10, (1,), generator=gen))
            ch, cw = int(torch.randint(1, h - y0 + 1, (1,), generator=gen)), int(torch.randint(1, w - x0 + 1, (1,), generator=gen))
            masks[g, y0:y0 + ch, x0:x0 + cw] = (torch.rand(ch, cw, generator=gen) > 0.3).to(torch.uint8)
            windows.append([x0, y0, cw, ch])
            crops.append(masks[g, y0:y0 + ch, x0:x0 + cw].reshape(-1))
            offsets.append(at)
            at += ch * cw
        windows.append([0, 0, 0, 0])
        offsets.append(at)
        data = torch.cat(crops).cuda()
        win = torch.tensor(windows, dtype=torch.int64).cuda()
        off = torch.tensor(offsets, dtype=torch.int64).cuda()
        rois = random_boxes(gen, 400, 130).cuda()
        matched = torch.randint(0, g_count, (400,), generator=gen).cuda()
        ours = torch.ops.mrcnn.mask_targets_cropped(data, win, off, h, w, rois, matched, 28)
        whole = torch.ops.mrcnn.mask_targets(masks.cuda(), rois, matched, 28)
        if not torch.equal(ours, whole):
            raise AssertionError(f"cropped vs whole: max |diff| {(ours - whole).abs().max().item():.2e}")
        bad = matched.clone()
        bad[0] = g_count
        bad_win = win.clone()
        bad_win[int(matched[1])] = torch.tensor([w - 2, 0, 5, 5])
        if not torch.isnan(torch.ops.mrcnn.mask_targets_cropped(data, win, off, h, w, rois, bad, 28)[0]).all():
            raise AssertionError("an index out of range did not give NaN")
        if not torch.isnan(torch.ops.mrcnn.mask_targets_cropped(data, bad_win, off, h, w, rois, matched, 28)[1]).all():
            raise AssertionError("a window outside the image did not give NaN")
        return "400 RoIs on 6 cropped masks (one empty): equal to the whole masks' targets; bad index or window -> NaN"

    def multilevel_roi_align(self, dtype, channels_last):
        """All pyramid levels in one op: forward and each map's gradient against the CPU
        kernels in float64 and, in float32, against torchvision's MultiScaleRoIAlign (which
        pools level by level); a level outside the maps gives NaN (no host check)."""

        def check(gen):
            from collections import OrderedDict

            shapes = [(48, 64), (24, 32), (12, 16), (6, 8)]
            scales = [0.25, 0.125, 0.0625, 0.03125]
            maps = [torch.randn(2, 8, h, w, generator=gen).to(dtype) for h, w in shapes]
            xy = torch.rand(90, 2, generator=gen) * 150
            boxes = torch.cat([xy, xy + 4 + torch.rand(90, 2, generator=gen) ** 2 * 400], 1)
            rois = torch.cat([torch.randint(0, 2, (90, 1), generator=gen).float(), boxes], 1)
            area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
            levels = (torch.floor(4 + torch.log2(area.sqrt() / 224) + 1e-6).clamp(2, 5) - 2).long()
            go = torch.randn(90, 8, 7, 7, generator=gen).to(dtype)
            fmt = torch.channels_last if channels_last else torch.contiguous_format
            md = [m.double().requires_grad_(True) for m in maps]
            ref = torch.ops.mrcnn.multilevel_roi_align(md, rois.double(), levels, scales, 7, 7, 2, False)
            ref.backward(go.double())
            mg = [m.cuda().contiguous(memory_format=fmt).requires_grad_(True) for m in maps]
            ours = torch.ops.mrcnn.multilevel_roi_align(mg, rois.cuda(), levels.cuda(), scales, 7, 7, 2, False)
            ours.backward(go.cuda())
            torch.cuda.synchronize()
            if ours.dtype != dtype or (channels_last and not ours.is_contiguous(memory_format=torch.channels_last)):
                raise AssertionError(f"result {ours.dtype}, strides {ours.stride()}")
            err = scaled_err(ours, ref)
            if err > tol(dtype):
                raise AssertionError(f"forward against float64 CPU: {err:.2e} > {tol(dtype):.1e}")
            limit = 4 * tol(dtype) if dtype in LOW else 1e-5
            grad_err = max(scaled_err(g.grad, d.grad) for g, d in zip(mg, md))
            if grad_err > limit:
                raise AssertionError(f"gradients against float64 CPU: {grad_err:.2e} > {limit:.1e}")
            counts = torch.bincount(levels, minlength=4).tolist()
            detail = f"90 RoIs on 4 maps {counts}: forward {err:.1e}, gradients {grad_err:.1e}"
            if dtype == torch.float32:
                pooler = self.tv.ops.MultiScaleRoIAlign(["p2", "p3", "p4", "p5"], 7, 2)
                feats = OrderedDict((f"p{l + 2}", m.cuda()) for l, m in enumerate(maps))
                image_boxes = [boxes[rois[:, 0] == b].cuda() for b in range(2)]
                theirs = pooler(feats, image_boxes, [(192, 256)] * 2)
                order = torch.cat([torch.nonzero(rois[:, 0] == b).squeeze(1) for b in range(2)])
                e = scaled_err(ours[order.cuda()], theirs)
                if e > 1e-5:
                    raise AssertionError(f"against torchvision's MultiScaleRoIAlign: {e:.2e}")
                detail += f", vs torchvision MultiScaleRoIAlign {e:.1e}"
            bad = levels.cuda().clone()
            bad[0] = 4
            out = torch.ops.mrcnn.multilevel_roi_align(mg, rois.cuda(), bad, scales, 7, 7, 2, False)
            if not torch.isnan(out[0]).all() or torch.isnan(out[1:]).any():
                raise AssertionError("a level outside the maps did not give NaN for its RoI alone")
            return detail

        return check

    def paste_masks(self, dtype):
        def check(gen):
            from torchvision.models.detection.roi_heads import paste_masks_in_image

            n, h, w = 100, 427, 640
            masks = torch.rand(n, 1, 28, 28, generator=gen)
            boxes = random_boxes(gen, n, 420)
            boxes[:, 2].clamp_(max=w - 1)
            boxes[:, 3].clamp_(max=h - 1)
            rounded = masks.to(dtype)  # half and bfloat16 masks are pasted in float
            ref = paste_masks_in_image(rounded.double(), boxes.double(), (h, w), 1)[:, 0]
            ours = torch.ops.mrcnn.paste_masks(rounded.cuda(), boxes.cuda(), h, w, 1)
            theirs = paste_masks_in_image(rounded.float().cuda(), boxes.cuda(), (h, w), 1)[:, 0]
            e1 = scaled_err(ours, ref)
            e2 = scaled_err(ours, theirs)
            if e1 > 1e-5 or e2 > 1e-5:
                raise AssertionError(f"vs float64 {e1:.2e}, vs torchvision CUDA {e2:.2e} (limit 1e-5)")
            binary = torch.ops.mrcnn.paste_masks_binary(masks.cuda(), boxes.cuda(), h, w, 0.5, 1)
            probs = torch.ops.mrcnn.paste_masks(masks.cuda(), boxes.cuda(), h, w, 1)
            if not torch.equal(binary.cpu(), (probs > 0.5).to(torch.uint8).cpu()):
                raise AssertionError("binary paste differs from the thresholded probabilities")
            empty = torch.ops.mrcnn.paste_masks(masks[:0].cuda(), boxes[:0].cuda(), h, w, 1)
            if tuple(empty.shape) != (0, h, w):
                raise AssertionError("empty paste")
            return f"100 masks into 427x640: vs float64 {e1:.1e}, vs torchvision {e2:.1e}"

        return check


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--library", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()

    torch.ops.load_library(args.library)
    names = ["roi_align", "_roi_align_backward", "nms", "box_iou", "encode_boxes", "decode_boxes",
             "mask_targets", "mask_targets_cropped", "paste_masks", "paste_masks_binary",
             "multilevel_roi_align", "_multilevel_roi_align_backward", "nms_keep_mask"]
    missing = [n for n in names if not torch._C._dispatch_has_kernel_for_dispatch_key(f"mrcnn::{n}", "CUDA")]
    report = {"torch": torch.__version__, "library": args.library, "checks": []}
    if missing:
        print(f"FAIL: {args.library} has no CUDA kernel for {', '.join(missing)}")
        return 1
    if not torch.cuda.is_available():
        print(f"SKIP: no CUDA device visible (torch {torch.__version__}); the library loads and "
              "registers CUDA kernels for every operator")
        report["skipped"] = "no CUDA device"
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        return SKIP
    import torchvision

    report["torchvision"] = torchvision.__version__
    report["device"] = torch.cuda.get_device_name(0)
    c = Checks(torchvision)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        d = str(dtype).split(".")[1]
        for aligned in (False, True):
            for sampling in (0, 2):
                c.run(f"roi_align forward {d} aligned={aligned} sampling={sampling}",
                      c.roi_align_forward(dtype, aligned, sampling, contiguous=True))
            c.run(f"roi_align backward {d} aligned={aligned}", c.roi_align_backward(dtype, aligned, 2))
        c.run(f"roi_align forward {d} non-contiguous", c.roi_align_forward(dtype, True, 0, contiguous=False))
        c.run(f"roi_align forward {d} channels-last",
              c.roi_align_forward(dtype, False, 2, contiguous=True, channels_last=True))
        c.run(f"roi_align backward {d} channels-last", c.roi_align_backward(dtype, False, 2, channels_last=True))
        c.run(f"multilevel_roi_align {d}", c.multilevel_roi_align(dtype, channels_last=False))
        c.run(f"multilevel_roi_align {d} channels-last", c.multilevel_roi_align(dtype, channels_last=True))
        c.run(f"nms {d}", c.nms(dtype, contiguous=True))
        c.run(f"paste_masks {d}", c.paste_masks(dtype))
    c.run("nms float32 non-contiguous", c.nms(torch.float32, contiguous=False))
    for dtype in (torch.float32, torch.float64):
        c.run(f"box_iou {str(dtype).split('.')[1]}", c.box_iou(dtype))
    c.run("roi_align empty, large, autocast", c.roi_align_edges)
    c.run("batched_nms", c.batched_nms)
    c.run("nms_keep_mask", c.nms_keep_mask)
    c.run("box coder", c.box_coder)
    c.run("mask_targets", c.mask_targets)
    c.run("mask_targets_cropped", c.mask_targets_cropped)
    report["checks"] = c.results
    failed = [r for r in c.results if not r["ok"]]
    for r in c.results:
        print(f"{'ok  ' if r['ok'] else 'FAIL'} {r['check']}: {r['detail']}")
        if not r["ok"]:
            print(r["trace"])
    print(f"{len(c.results) - len(failed)}/{len(c.results)} CUDA operator checks passed on {report['device']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
