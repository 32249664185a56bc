"""onnxruntime as the oracle, and nnrt's runtime started the way these tests use it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

__all__ = ["TOLERANCE", "assert_close", "ort_session"]

#: nnrt's outputs must be within this of onnxruntime's (absolute, and relative to large values).
TOLERANCE = 1e-4
Array = np.ndarray[Any, Any]


def ort_session(model: str | Path | bytes | onnx.ModelProto) -> ort.InferenceSession:
    """A single-threaded CPU session (its warnings about unused initializers silenced)."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    if isinstance(model, onnx.ModelProto):
        model = model.SerializeToString()
    source = str(model) if isinstance(model, Path) else model
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def assert_close(got: Array, want: Array, what: str) -> None:
    """``got`` equals ``want`` within :data:`TOLERANCE` (shape and dtype kind too)."""
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, onnxruntime {want.shape}"
    assert got.dtype.kind == want.dtype.kind, f"{what}: dtype {got.dtype}, onnxruntime " \
                                              f"{want.dtype}"
    np.testing.assert_allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE, err_msg=what)
