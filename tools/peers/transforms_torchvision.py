#!/usr/bin/env python3
"""Applies torchvision's functional transforms with given parameters, for the peer test of
gradlab's transforms (tests/unit/test_transforms_torchvision.cpp, claim DATA-4).

    transforms_torchvision.py REQUEST.json RESULT.json

REQUEST: {"cases": [CASE, ...]} (one interpreter start for every case: importing torch
takes seconds), each CASE {"shape": [C, H, W], "image": [floats, C*H*W, values in [0, 1]],
          "ops": [{"op": "resized_crop", "box": [top, left, height, width], "size": [h, w], "antialias": false},
                  {"op": "resize", "size": [h, w], "antialias": false},
                  {"op": "center_crop", "size": [h, w]},
                  {"op": "hflip"},
                  {"op": "jitter", "order": [0..3 permuted], "brightness": f, "contrast": f, "saturation": f, "hue": f},
                  {"op": "normalize", "mean": [...], "std": [...]}]}
Each op is applied to the input image on its own (not chained), so a difference points at
one op. RESULT: {"torchvision": VERSION, "cases": [{"results": [{"shape": [...], "values": [...]}, ...]}, ...]}.
Exit status 3 when torch or torchvision cannot be imported (the caller skips).
"""

import json
import sys

try:
    import torch
    import torchvision
    import torchvision.transforms.functional as F
    from torchvision.transforms import InterpolationMode
except ImportError as e:  # the caller skips with this message
    print(f"torchvision is not installed here ({e}); install Debian's python3-torchvision", file=sys.stderr)
    sys.exit(3)


def apply(img, op):
    kind = op["op"]
    if kind == "resized_crop":
        t, l, h, w = op["box"]
        return F.resized_crop(img, t, l, h, w, op["size"], InterpolationMode.BILINEAR, antialias=op["antialias"])
    if kind == "resize":
        return F.resize(img, op["size"], InterpolationMode.BILINEAR, antialias=op["antialias"])
    if kind == "center_crop":
        return F.center_crop(img, op["size"])
    if kind == "hflip":
        return F.hflip(img)
    if kind == "jitter":
        out = img
        for step in op["order"]:
            if step == 0:
                out = F.adjust_brightness(out, op["brightness"])
            elif step == 1:
                out = F.adjust_contrast(out, op["contrast"])
            elif step == 2:
                out = F.adjust_saturation(out, op["saturation"])
            else:
                out = F.adjust_hue(out, op["hue"])
        return out
    if kind == "normalize":
        return F.normalize(img, op["mean"], op["std"])
    raise SystemExit(f"unknown op {kind!r}")


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    with open(sys.argv[1]) as f:
        request = json.load(f)
    cases = []
    for case in request["cases"]:
        img = torch.tensor(case["image"], dtype=torch.float32).reshape(case["shape"])
        results = []
        for op in case["ops"]:
            out = apply(img, op)
            results.append({"shape": list(out.shape), "values": out.flatten().tolist()})
        cases.append({"results": results})
    with open(sys.argv[2], "w") as f:
        json.dump({"torchvision": torchvision.__version__, "cases": cases}, f)


if __name__ == "__main__":
    main()
