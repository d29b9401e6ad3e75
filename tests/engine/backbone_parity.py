"""Expected values of the backbone (ResNet + FPN), from torchvision, for
tests/engine/test_backbone.cpp.

    backbone_parity.py make OUT_DIR
        Builds torchvision backbones with random (seeded) weights and non-trivial batch norm
        statistics, saves their state_dicts with torch.save as users do, and their outputs on a
        real photo (torchvision's Mask R-CNN transform: normalised, shorter side 800, padded to
        32) and on random inputs, in OUT_DIR/expected.pt.
    backbone_parity.py check STATE KIND REFERENCE [STATE KIND REFERENCE ...]
        Loads each STATE (written by the C++ side in torchvision's key names, under "backbone.")
        into a fresh torchvision backbone of KIND with load_state_dict(strict=True) and checks
        that every tensor equals REFERENCE's.

Test-only: the product never runs Python.
"""

import glob
import os
import sys
from collections import OrderedDict

import torch
import torchvision
from torch import nn
from torchvision.models import resnet
from torchvision.models.detection import maskrcnn_resnet50_fpn
from torchvision.models.detection._utils import overwrite_eps
from torchvision.models.detection.transform import GeneralizedRCNNTransform
from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor, resnet_fpn_backbone
from torchvision.ops import FrozenBatchNorm2d


def randomise(model, gen):
    """Batch norm statistics and affine terms away from 0 and 1, FPN biases non-zero."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, FrozenBatchNorm2d)):
                n = m.running_mean.numel()
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) * 1.5 + 0.5)
                m.weight.copy_(torch.rand(n, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(n, generator=gen) * 0.1)
            elif isinstance(m, nn.Conv2d) and m.bias is not None:
                m.bias.copy_(torch.randn(m.bias.numel(), generator=gen) * 0.1)


def kinds():
    """name -> a function building the torchvision backbone."""
    return {
        # maskrcnn_resnet50_fpn without weights: trainable BatchNorm2d, all layers trainable.
        "r50_bn": lambda: maskrcnn_resnet50_fpn(weights=None, weights_backbone=None).backbone,
        # The FrozenBatchNorm2d backbone with eps 0, as torchvision runs its COCO_V1 weights.
        "r50_frozen": lambda: resnet_fpn_backbone(backbone_name="resnet50", weights=None,
                                                  trainable_layers=3),
        "r18": lambda: resnet_fpn_backbone(backbone_name="resnet18", weights=None,
                                           trainable_layers=3),
        "r18_l3": lambda: resnet_fpn_backbone(backbone_name="resnet18", weights=None,
                                              trainable_layers=3, returned_layers=[2, 3, 4]),
        "r101": lambda: resnet_fpn_backbone(backbone_name="resnet101", weights=None,
                                            trainable_layers=3),
    }


def build(kind):
    model = kinds()[kind]()
    if kind == "r50_frozen":
        overwrite_eps(model, 0.0)
    return model


def photo_input():
    files = sorted(glob.glob(os.path.join(os.environ["MRCNN_SHARED_DIR"],
                                          "data/tinycoco/images/val2017/*.jpg")))
    if not files:
        raise SystemExit("no photo in $MRCNN_SHARED_DIR/data/tinycoco/images/val2017")
    image = torchvision.io.read_image(files[0], torchvision.io.ImageReadMode.RGB)
    # The transform maskrcnn_resnet50_fpn builds.
    transform = GeneralizedRCNNTransform(800, 1333, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    transform.eval()
    with torch.no_grad():
        images, _ = transform([image.float() / 255.0])
    return images.tensors.contiguous(), os.path.basename(files[0])


def make(out_dir):
    torch.manual_seed(0)
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(1234)
    expected = {}
    photo, photo_name = photo_input()
    expected["input/photo"] = photo
    inputs = {
        "photo": photo,
        "random": torch.randn(2, 3, 128, 192, generator=gen),
    }
    expected["input/random"] = inputs["random"]
    runs = {  # kind -> inputs compared in eval mode
        "r50_bn": ["photo", "random"],
        "r50_frozen": ["photo", "random"],
        "r18": ["random"],
        "r18_l3": ["random"],
        "r101": ["random"],
    }
    for kind, names in runs.items():
        model = build(kind)
        randomise(model, gen)
        model.eval()
        state = model.state_dict()
        if kind == "r50_bn":
            # The whole Mask R-CNN state_dict, as a user saves it: keys beyond the backbone.
            full = maskrcnn_resnet50_fpn(weights=None, weights_backbone=None)
            full.backbone.load_state_dict(state)
            torch.save(full.state_dict(), os.path.join(out_dir, kind + ".pt"))
        else:
            prefixed = OrderedDict(("backbone." + k, v) for k, v in state.items())
            if kind == "r18":
                # torchvision's names before FeaturePyramidNetwork version 2.
                prefixed = OrderedDict(
                    (k.replace(".0.weight", ".weight").replace(".0.bias", ".bias")
                     if ".fpn." in k else k, v) for k, v in prefixed.items())
            torch.save(prefixed, os.path.join(out_dir, kind + ".pt"))
        with torch.no_grad():
            for name in names:
                out = model(inputs[name])
                for i, v in enumerate(out.values()):
                    expected[f"{kind}/{name}/{i}"] = v
        if kind == "r50_bn":
            # Train mode with trainable batch norm: batch statistics, running stats updated.
            model.train()
            with torch.no_grad():
                out = model(inputs["random"])
            for i, v in enumerate(out.values()):
                expected[f"{kind}/train/{i}"] = v
            for key in ["body.bn1.running_mean", "body.layer4.2.bn3.running_var",
                        "body.layer2.0.downsample.1.running_mean"]:
                expected[f"{kind}/train_state/{key}"] = model.state_dict()[key].clone()
    # Which parameters torchvision trains, per trainable_layers, with trainable BatchNorm2d.
    for k in range(6):
        bb = _resnet_fpn_extractor(resnet.resnet50(norm_layer=nn.BatchNorm2d), k)
        names = [n for n, p in bb.named_parameters() if p.requires_grad]
        expected[f"trainable/{k}"] = torch.tensor([len(names)])
        with open(os.path.join(out_dir, f"trainable_{k}.txt"), "w") as f:
            f.write("\n".join(names) + "\n")
    torch.save(expected, os.path.join(out_dir, "expected.pt"))
    # Files that are not state_dicts.
    torch.save({"model": {"w": torch.ones(2)}, "epoch": 3}, os.path.join(out_dir, "nested.pt"))
    torch.save([torch.ones(2)], os.path.join(out_dir, "list.pt"))
    # Views (offsets, strides, a storage shared by two tensors), other dtypes, protocol 4.
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    views = OrderedDict([("sliced", base[:, 1:]), ("transposed", base.t()),
                         ("long", torch.arange(5) - 2), ("half", base.half()[1])])
    torch.save(views, os.path.join(out_dir, "views.pt"), pickle_protocol=4)
    torch.save({"w": torch.ones(2)}, os.path.join(out_dir, "legacy.pt"),
               _use_new_zipfile_serialization=False)
    print(f"backbone_parity: photo {photo_name} as {list(photo.shape)}, torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}")


def check(state_path, kind, reference_path):
    ours = torch.load(state_path)
    reference = torch.load(reference_path)
    if not all(k.startswith("backbone.") for k in ours):
        raise SystemExit("keys outside backbone.: " + ", ".join(k for k in ours if not k.startswith("backbone.")))
    model = build(kind)
    result = model.load_state_dict({k[len("backbone."):]: v for k, v in ours.items()}, strict=True)
    if result.missing_keys or result.unexpected_keys:
        raise SystemExit(f"missing {result.missing_keys}, unexpected {result.unexpected_keys}")
    for k, v in model.state_dict().items():
        ref = reference.get("backbone." + k)
        if ref is None:
            ref = reference.get("backbone." + k.replace(".0.weight", ".weight").replace(".0.bias", ".bias"))
        if ref is None:
            if k.endswith("num_batches_tracked"):
                continue
            raise SystemExit(f"{k} not in the reference")
        if not torch.equal(v, ref.to(v.dtype)):
            raise SystemExit(f"{k} differs from the reference")
    print(f"backbone_parity check: {len(ours)} keys loaded strictly into torchvision's {kind}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) >= 5 and len(sys.argv) % 3 == 2 and sys.argv[1] == "check":
        for i in range(2, len(sys.argv), 3):
            check(sys.argv[i], sys.argv[i + 1], sys.argv[i + 2])
    else:
        raise SystemExit(__doc__)
