"""Conformance cases for SOFTMAX and LOG_SOFTMAX (float64 references written independently)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, f32, f32s, i32s, omitted, out

CASES: list[OpCase] = []


def _slice_softmax(vec: Any, beta: float) -> Any:
    """Softmax of one 1-D slice, straight from the definition (no max shift)."""
    exps = [math.exp(beta * float(v)) for v in vec]
    total = math.fsum(exps)
    return np.array([e / total for e in exps])


def _slice_log_softmax(vec: Any, beta: float) -> Any:
    exps = [math.exp(beta * float(v)) for v in vec]
    log_total = math.log(math.fsum(exps))
    return np.array([beta * float(v) - log_total for v in vec])


def _softmax_ref(x: Any, beta: float, axis: int | None = None) -> list[Any]:
    axis = -1 if axis is None else axis
    return [np.apply_along_axis(_slice_softmax, axis, x, beta)]


def _log_softmax_ref(x: Any, beta: float, axis: int) -> list[Any]:
    return [np.apply_along_axis(_slice_log_softmax, axis, x, beta)]


_X2 = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [-1.0, -2.0, -3.0, -4.0, -5.0]], np.float32)
_X3 = np.linspace(-3.0, 3.0, 24, dtype=np.float32).reshape(2, 3, 4) * np.array(
    [1.0, -0.5, 0.75, 2.0], np.float32)
_X4 = np.linspace(-2.0, 2.5, 24, dtype=np.float32).reshape(1, 2, 3, 4)

CASES += [
    # NNAPI's published example (softmax_float_2): beta 1, last axis, 2-D.
    OpCase("softmax_2d_spec_example", Op.SOFTMAX, (f32(_X2), f32s(1.0)),
           (out(T.TENSOR_FLOAT32, (2, 5),
                [[0.011656231, 0.031684921, 0.086128544, 0.234121657, 0.636408647],
                 [0.636408647, 0.234121657, 0.086128544, 0.031684921, 0.011656231]]),)),
    # softmax_float_1: a tiny beta flattens the distribution.
    OpCase("softmax_tiny_beta", Op.SOFTMAX, (f32([[1.0, 2.0, 10.0, 20.0]]), f32s(1e-6)),
           (out(T.TENSOR_FLOAT32, (1, 4), [[0.25, 0.25, 0.25, 0.25]]),)),
    OpCase("softmax_2d_beta_half_axis_given", Op.SOFTMAX, (f32(_X2), f32s(0.5), i32s(-1)),
           (out(T.TENSOR_FLOAT32, (2, 5)),), reference=_softmax_ref),
    OpCase("softmax_axis_omitted", Op.SOFTMAX, (f32(_X2), f32s(1.5), omitted(T.INT32)),
           (out(T.TENSOR_FLOAT32, (2, 5)),), reference=_softmax_ref),
    OpCase("softmax_rank1", Op.SOFTMAX, (f32([0.5, -1.0, 2.0]), f32s(1.0)),
           (out(T.TENSOR_FLOAT32, (3,)),), reference=_softmax_ref),
    OpCase("softmax_rank3_axis0", Op.SOFTMAX, (f32(_X3), f32s(1.0), i32s(0)),
           (out(T.TENSOR_FLOAT32, (2, 3, 4)),), reference=_softmax_ref),
    OpCase("softmax_rank3_axis_neg3", Op.SOFTMAX, (f32(_X3), f32s(0.75), i32s(-3)),
           (out(T.TENSOR_FLOAT32, (2, 3, 4)),), reference=_softmax_ref),
    OpCase("softmax_rank4_axis1", Op.SOFTMAX, (f32(_X4), f32s(2.0), i32s(1)),
           (out(T.TENSOR_FLOAT32, (1, 2, 3, 4)),), reference=_softmax_ref),
    OpCase("softmax_rank4_last", Op.SOFTMAX, (f32(_X4), f32s(1.0)),
           (out(T.TENSOR_FLOAT32, (1, 2, 3, 4)),), reference=_softmax_ref),
    OpCase("softmax_axis_size1", Op.SOFTMAX, (f32([[3.0], [-7.0]]), f32s(1.0), i32s(1)),
           (out(T.TENSOR_FLOAT32, (2, 1), [[1.0], [1.0]]),)),
    # Large logits: the kernel must subtract the maximum (exp(100) * 1 overflows float16).
    OpCase("softmax_large_logits", Op.SOFTMAX, (f32([[100.0, 101.0, 99.0]]), f32s(1.0)),
           (out(T.TENSOR_FLOAT32, (1, 3), [[0.24472847, 0.66524096, 0.09003057]]),)),
]

CASES += [
    OpCase("log_softmax_2d_last", Op.LOG_SOFTMAX, (f32(_X2), f32s(1.0), i32s(-1)),
           (out(T.TENSOR_FLOAT32, (2, 5)),), reference=_log_softmax_ref),
    OpCase("log_softmax_2d_axis0_beta", Op.LOG_SOFTMAX, (f32(_X2), f32s(0.5), i32s(0)),
           (out(T.TENSOR_FLOAT32, (2, 5)),), reference=_log_softmax_ref),
    OpCase("log_softmax_rank1", Op.LOG_SOFTMAX, (f32([0.0, math.log(3.0)]), f32s(1.0), i32s(0)),
           (out(T.TENSOR_FLOAT32, (2,), [math.log(0.25), math.log(0.75)]),)),
    OpCase("log_softmax_rank3_neg2", Op.LOG_SOFTMAX, (f32(_X3), f32s(1.25), i32s(-2)),
           (out(T.TENSOR_FLOAT32, (2, 3, 4)),), reference=_log_softmax_ref),
    OpCase("log_softmax_rank4_axis3", Op.LOG_SOFTMAX, (f32(_X4), f32s(1.0), i32s(3)),
           (out(T.TENSOR_FLOAT32, (1, 2, 3, 4)),), reference=_log_softmax_ref),
    OpCase("log_softmax_rank5", Op.LOG_SOFTMAX,
           (f32(np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(2, 1, 2, 2, 2)),
            f32s(2.0), i32s(2)),
           (out(T.TENSOR_FLOAT32, (2, 1, 2, 2, 2)),), reference=_log_softmax_ref),
    OpCase("log_softmax_large_logits", Op.LOG_SOFTMAX,
           (f32([[200.0, 201.0]]), f32s(1.0), i32s(1)),
           (out(T.TENSOR_FLOAT32, (1, 2), [[-1.3132616, -0.31326169]]),)),
]
