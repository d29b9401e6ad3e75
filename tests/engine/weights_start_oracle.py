"""Pretrained starts from torchvision files, for tests/engine/test_weights_start.cpp.

    weights_start_oracle.py OUT_DIR

Writes, with seeded random weights (nothing is downloaded):
  resnet50_imagenet.pt  torchvision.models.resnet50(weights=None).state_dict(), batch norm
                        statistics and affine terms randomised: an ImageNet classifier's file
                        (conv1, bn1, layer1..4, fc)
  resnet18_imagenet.pt  the same for resnet18 (BasicBlock)
  coco_shaped.pt        maskrcnn_resnet50_fpn(weights=None, weights_backbone=None).state_dict():
                        torchvision's COCO layout (91 classes), every tensor seeded
  expected.pt           {"r50/photo/<i>": layer<i+1>'s output of resnet50 on a real photo
                         (tinycoco, torchvision's Mask R-CNN transform), "r18/random/<i>" the
                         same of resnet18 on a random batch, "input/photo", "input/random",
                         "coco_labels/person|car|dog": torchvision's COCO label of each name}
Every output is computed by torchvision in eval mode (batch norm with its running statistics).

Test-only: the product never runs Python.
"""

import os
import sys

import torch
import torchvision
from torchvision.models import resnet18, resnet50
from torchvision.models.detection import MaskRCNN_ResNet50_FPN_Weights, maskrcnn_resnet50_fpn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backbone_parity import photo_input, randomise  # noqa: E402  the same photo and statistics


def stage_outputs(model, x):
    """layer1..layer4 of a torchvision ResNet classifier: what a detection backbone's body
    returns."""
    x = model.maxpool(model.relu(model.bn1(model.conv1(x))))
    out = []
    for layer in (model.layer1, model.layer2, model.layer3, model.layer4):
        x = layer(x)
        out.append(x)
    return out


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out_dir = sys.argv[1]
    torch.manual_seed(0)
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(4321)
    expected = {}
    photo, photo_name = photo_input()
    random = torch.randn(2, 3, 96, 128, generator=gen)
    expected["input/photo"] = photo
    expected["input/random"] = random

    for name, build, x, tag in (("resnet50", resnet50, photo, "r50/photo"),
                                ("resnet18", resnet18, random, "r18/random")):
        model = build(weights=None)
        randomise(model, gen)
        model.eval()
        torch.save(model.state_dict(), os.path.join(out_dir, name + "_imagenet.pt"))
        with torch.no_grad():
            for i, y in enumerate(stage_outputs(model, x)):
                expected[f"{tag}/{i}"] = y

    coco = maskrcnn_resnet50_fpn(weights=None, weights_backbone=None)
    randomise(coco, gen)
    with torch.no_grad():  # predictor biases non-zero, so that a copied row is told apart
        for p in coco.roi_heads.box_predictor.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.1)
        for p in coco.roi_heads.mask_predictor.mask_fcn_logits.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.1)
    torch.save(coco.state_dict(), os.path.join(out_dir, "coco_shaped.pt"))
    categories = MaskRCNN_ResNet50_FPN_Weights.COCO_V1.meta["categories"]
    for name in ("person", "car", "dog"):
        expected[f"coco_labels/{name}"] = torch.tensor([categories.index(name)])

    torch.save(expected, os.path.join(out_dir, "expected.pt"))
    print(f"weights_start_oracle: photo {photo_name} as {list(photo.shape)}, torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}")


if __name__ == "__main__":
    main()
