#!/usr/bin/env python3
"""ONNX's own checker and ONNX Runtime as the peer of gradlab's ONNX export (claim DEPLOY-1).

Usage: onnx_runtime.py MODEL.onnx [INPUT.f32 OUTPUT.f32]

Checks MODEL.onnx with onnx.checker (full check); with INPUT and OUTPUT, runs the model in
ONNX Runtime on the raw little-endian float32 INPUT (one or more batches shaped as the
model's first input) and writes its first outputs, concatenated, as raw float32 to OUTPUT. Exit status 3 with a line on stderr
when a module is missing, so that callers can skip rather than fail.
"""
import sys


def main(argv):
    try:
        import numpy as np
        import onnx
    except ImportError as e:
        print(f"missing module: {e.name} (install python3-onnx)", file=sys.stderr)
        return 3
    model = onnx.load(argv[1])
    onnx.checker.check_model(model, full_check=True)
    print(f"checker: ok (onnx {onnx.__version__}, opset {model.opset_import[0].version})")
    if len(argv) < 4:
        return 0
    try:
        import onnxruntime as ort
    except ImportError:
        print("missing module: onnxruntime (./gradlab test installs it into build/peer-venv from PyPI)",
              file=sys.stderr)
        return 3
    session = ort.InferenceSession(argv[1], providers=["CPUExecutionProvider"])
    first = session.get_inputs()[0]
    shape = [int(d) for d in first.shape]
    x = np.fromfile(argv[2], dtype="<f4").reshape([-1] + shape[1:])
    # INPUT may hold several batches of the model's (fixed) batch size: run each in turn.
    ys = [session.run(None, {first.name: x[i:i + shape[0]]})[0] for i in range(0, len(x), shape[0])]
    y = np.concatenate(ys)
    y.astype("<f4").tofile(argv[3])
    print(f"onnxruntime {ort.__version__}: {len(ys)} batch(es), output {list(y.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
