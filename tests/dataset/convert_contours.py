"""Expected values for test_convert's contourExtent test: the extent (min/max x, min/max y)
of skimage.measure.find_contours(mask, 0.5) on small masks, as TAO's dataset_convert measures
a mask against its box. Prints C++ initialisers to paste into test_convert.cpp.

Needs scikit-image, which the project's environment does not hold (TAO's checker is the only
user): run it from an environment that has it, e.g.
  python -m venv --system-site-packages /tmp/sk && /tmp/sk/bin/pip install scikit-image
  /tmp/sk/bin/python tests/dataset/convert_contours.py
"""
import numpy as np
from skimage import measure

HANDMADE = [
    "000000|001100|001100|000000",  # inside: half a pixel outside the foreground
    "110000|110000|000000|000000",  # top-left corner: stops at the pixels
    "111111|111111|000000|000000",  # full rows at the top: half a pixel inside them
    "100000|100000|100000|100000",  # a full column at the left border
    "110000|110000|110000|110000",  # two full columns
    "000001|000001|000011|000000",  # right border, partly
    "000000|000000|000000|111111",  # a full bottom row
    "111111|111111|111111|111110",  # all but one pixel
    "010010|000000|000000|010010",  # separate blobs
    "000000|000000|000000|000000",  # empty: no contour
    "111111|111111|111111|111111",  # full: no contour
    "10|01",
    "11|10",
    "0110|1111|0110",
]


def extent(rows):
    m = np.array([[int(c) for c in r] for r in rows.split("|")], dtype=np.uint8)
    contours = measure.find_contours(m, 0.5)
    if not contours:
        return None
    p = np.concatenate(contours)
    return p[:, 1].min(), p[:, 1].max(), p[:, 0].min(), p[:, 0].max()


def main():
    rng = np.random.default_rng(20240521)
    cases = list(HANDMADE)
    for _ in range(30):
        h, w = rng.integers(2, 8, size=2)
        m = (rng.random((h, w)) < rng.random()).astype(np.uint8)
        if rng.random() < 0.5:  # a rectangle, often touching a border
            m[:] = 0
            y0, y1 = sorted(rng.integers(0, h + 1, 2))
            x0, x1 = sorted(rng.integers(0, w + 1, 2))
            m[y0:y1, x0:x1] = 1
        cases.append("|".join("".join(str(v) for v in row) for row in m))
    for rows in cases:
        e = extent(rows)
        if e is None:
            print(f'    {{"{rows}", false, 0, 0, 0, 0}},')
        else:
            print(f'    {{"{rows}", true, {e[0]:g}, {e[1]:g}, {e[2]:g}, {e[3]:g}}},')


if __name__ == "__main__":
    main()
