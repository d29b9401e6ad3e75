"""What torchvision itself says about the weights our catalogue names, for
tests/weights/test_weights_download.cpp.

    catalogue_oracle.py OUT.json

Writes {"weights": {"ResNet50_Weights.IMAGENET1K_V1": URL, ...}, "coco": [91 names]}: the URL
of every torchvision weights enum our catalogue may name, and torchvision's COCO category names
in its label order (the categories of its COCO detection weights). Nothing is downloaded.

Test-only: the product never runs Python.
"""

import json
import sys

from torchvision.models import ResNet18_Weights, ResNet34_Weights, ResNet50_Weights, ResNet101_Weights
from torchvision.models.detection import (MaskRCNN_ResNet50_FPN_Weights,
                                          MaskRCNN_ResNet50_FPN_V2_Weights)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    weights = {}
    for enum in (ResNet18_Weights, ResNet34_Weights, ResNet50_Weights, ResNet101_Weights,
                 MaskRCNN_ResNet50_FPN_Weights, MaskRCNN_ResNet50_FPN_V2_Weights):
        for w in enum:
            weights[f"{enum.__name__}.{w.name}"] = w.url
    coco = MaskRCNN_ResNet50_FPN_Weights.COCO_V1.meta["categories"]
    with open(sys.argv[1], "w") as f:
        json.dump({"weights": weights, "coco": coco}, f, indent=1)
    print(f"catalogue_oracle: {len(weights)} weights, {len(coco)} COCO labels")


if __name__ == "__main__":
    main()
