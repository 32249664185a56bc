"""MediaPipe's ``Convolution2DTransposeBias`` custom op, against a numpy copy of its kernel
(``transpose_conv_bias.cc``: the output size and SAME crop follow from the input)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb

import nnrt
import nnrt.reference
import nnrt.tflite
from tests.unit.tflite.flatbuffers_kit import B, TfliteFile

Array = np.ndarray  # type: ignore[type-arg]


def _mediapipe(x: Array, w: Array, b: Array, padding: int, stride: int) -> Array:
    """MediaPipe's loop: each input element scatters its filter window, the lead crop half
    of the SAME padding (rounded down)."""
    _, height, width, _ = x.shape
    out_c, kh, kw, _ = w.shape
    pad_h = max(0, kh - (height - 1) % stride - 1) if padding == fb.Padding.SAME else 0
    pad_w = max(0, kw - (width - 1) % stride - 1) if padding == fb.Padding.SAME else 0
    out = np.zeros((1, stride * (height - 1) + kh - pad_h, stride * (width - 1) + kw - pad_w,
                    out_c), np.float64) + b
    full = np.zeros((1, stride * (height - 1) + kh, stride * (width - 1) + kw, out_c))
    for y in range(height):
        for x_ in range(width):
            full[0, y * stride:y * stride + kh, x_ * stride:x_ * stride + kw] += np.einsum(
                "i,ohwi->hwo", x[0, y, x_], w)
    top, left = pad_h // 2, pad_w // 2
    out += full[:, top:top + out.shape[1], left:left + out.shape[2]]
    return out.astype(np.float32)


@pytest.mark.parametrize(("padding", "stride", "kernel", "size"), [
    (fb.Padding.SAME, 2, 2, 4), (fb.Padding.SAME, 2, 3, 5), (fb.Padding.VALID, 2, 3, 4),
    (fb.Padding.SAME, 3, 4, 3)])
def test_convolution2d_transpose_bias(padding: int, stride: int, kernel: int, size: int) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, size, size + 1, 3)).astype(np.float32)
    w = rng.standard_normal((2, kernel, kernel, 3)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    want = _mediapipe(x, w, b, padding, stride)
    f = TfliteFile()
    xt = f.tensor(x.shape, name="x")
    y = f.tensor(want.shape, name="y")
    f.op(B.CUSTOM, [xt, f.const(w), f.const(b)], [y], custom=b"Convolution2DTransposeBias")
    f.operators[-1].customOptions = list(struct.pack("<iii", padding, stride, stride))
    (got,) = nnrt.reference.run(nnrt.tflite.load(f.finish([xt], [y])), {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_short_custom_options_are_reported() -> None:
    f = TfliteFile()
    xt = f.tensor((1, 4, 4, 3), name="x")
    y = f.tensor((1, 8, 8, 2), name="y")
    f.op(B.CUSTOM, [xt, f.const(np.ones((2, 2, 2, 3), np.float32)),
                    f.const(np.zeros(2, np.float32))], [y], custom=b"Convolution2DTransposeBias")
    f.operators[-1].customOptions = [1, 0, 0, 0]
    with pytest.raises(nnrt.tflite.UnsupportedTfliteModel, match="custom_options: 4 bytes"):
        nnrt.tflite.load(f.finish([xt], [y]))
