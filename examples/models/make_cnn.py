"""Writes ``cnn.onnx`` beside this file: the ResNet-style CNN of ``tests/models/builders.py``
(32x32x3 input ``x`` [batch, 3, 32, 32], 8 channels, 10 logits ``output``, weights from a fixed
seed), the small real-looking ONNX model the README and docs/getting-started.md load.

Run: .venv/bin/python examples/models/make_cnn.py   (needs the onnx extra)
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "models"))

from builders import resnet_cnn  # noqa: E402

if __name__ == "__main__":
    model = resnet_cnn(size=32, channels=8)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    (HERE / "cnn.onnx").write_bytes(model.SerializeToString())
    print(f"wrote {HERE / 'cnn.onnx'}")
