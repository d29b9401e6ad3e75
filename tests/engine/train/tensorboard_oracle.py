"""TensorBoard's own reader as the oracle of the engine's event files.

  tensorboard_oracle.py DIR OUT.json

Loads every events.out.tfevents.* file of DIR with tensorboard's EventAccumulator (which
checks each record's CRC-32C) and writes {"files": N, "scalars": {tag: [[step, wall_time,
value], ...]}, "tensors": {tag: [[step, plugin name, shape, [values row-major]], ...]},
"images": {tag: [[step, width, height, sha256 of the encoded image], ...]}} in the order read.
"""
import glob
import hashlib
import json
import os
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util


def main():
    directory, out = sys.argv[1], sys.argv[2]
    files = sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*")))
    scalars, tensors, images = {}, {}, {}
    for path in files:
        acc = EventAccumulator(path, size_guidance={"scalars": 0, "tensors": 0, "images": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            scalars.setdefault(tag, []).extend(
                [e.step, e.wall_time, e.value] for e in acc.Scalars(tag))
        for tag in acc.Tags()["images"]:
            images.setdefault(tag, []).extend(
                [e.step, e.width, e.height, hashlib.sha256(e.encoded_image_string).hexdigest()]
                for e in acc.Images(tag))
        for tag in acc.Tags()["tensors"]:
            plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
            for e in acc.Tensors(tag):
                array = tensor_util.make_ndarray(e.tensor_proto)
                tensors.setdefault(tag, []).append(
                    [e.step, plugin, list(array.shape), array.ravel().tolist()])
    with open(out, "w") as f:
        json.dump({"files": len(files), "scalars": scalars, "tensors": tensors,
                   "images": images}, f)


if __name__ == "__main__":
    main()
