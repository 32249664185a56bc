"""Conformance cases for FULLY_CONNECTED and BATCH_MATMUL.

Expected values come from explicit triple loops in float64 (exact integers for TENSOR_INT32),
written independently of nnrt's kernels, plus NNAPI's published fully_connected example.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, bools, f32, i32, i32s, omitted, out

CASES: list[OpCase] = []

_ACT: dict[int, Callable[[float], float]] = {
    0: lambda v: v,
    1: lambda v: max(v, 0.0),
    2: lambda v: min(max(v, -1.0), 1.0),
    3: lambda v: min(max(v, 0.0), 6.0),
}


def _data(shape: tuple[int, ...], seed: int, scale: float = 8.0) -> np.ndarray[Any, Any]:
    """Moderate values on a 1/``scale`` grid, exactly representable in float16."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-16, 17, size=shape) / scale).astype(np.float32)


# -- FULLY_CONNECTED -------------------------------------------------------------------------


def _fc_ref(x: Any, w: Any, bias: Any, act: int) -> list[Any]:
    units, size = w.shape
    flat = np.asarray(x).ravel()
    batch = flat.size // size
    result = np.zeros((batch, units))
    for b in range(batch):
        for u in range(units):
            acc = float(bias[u])
            for k in range(size):
                acc += float(flat[b * size + k]) * float(w[u, k])
            result[b, u] = _ACT[act](acc)
    return [result]


def _fc(name: str, in_shape: tuple[int, ...], *, units: int, size: int, act: int, batch: int,
        seed: int) -> OpCase:
    return OpCase(
        f"fully_connected_{name}", Op.FULLY_CONNECTED,
        (f32(_data(in_shape, seed)), f32(_data((units, size), seed + 100)),
         f32(_data((units,), seed + 200)), i32s(act)),
        (out(T.TENSOR_FLOAT32, (batch, units)),),
        reference=_fc_ref,
    )


CASES += [
    _fc("act0", (2, 3), units=4, size=3, act=0, batch=2, seed=1),
    _fc("act1_relu", (3, 5), units=2, size=5, act=1, batch=3, seed=2),
    _fc("act2_relu1", (2, 4), units=3, size=4, act=2, batch=2, seed=3),
    _fc("act3_relu6", (4, 2), units=5, size=2, act=3, batch=4, seed=4),
    # Rank 3 input flattened to [batch, input_size].
    _fc("rank3", (2, 1, 4), units=3, size=4, act=0, batch=2, seed=5),
    # Rank 4 input whose rows span dimensions: 12 elements, input_size 6 -> batch 2.
    _fc("rank4_reshape", (1, 2, 2, 3), units=2, size=6, act=0, batch=2, seed=6),
    # Rank 4 input flattened to a single row.
    _fc("rank4_single_batch", (1, 2, 2, 2), units=3, size=8, act=1, batch=1, seed=7),
    # Size-1 edge: one batch, one unit, one input.
    _fc("unit_sizes", (1, 1), units=1, size=1, act=0, batch=1, seed=8),
    # NNAPI's fully_connected_float example: [3, 1] x weights [1, 1] + bias.
    OpCase("fully_connected_spec_example", Op.FULLY_CONNECTED,
           (f32([[2.0], [32.0], [16.0]]), f32([[2.0]]), f32([4.0]), i32s(0)),
           (out(T.TENSOR_FLOAT32, (3, 1), [[8.0], [68.0], [36.0]]),)),
]


# -- BATCH_MATMUL ----------------------------------------------------------------------------


def _bmm_ref(a: Any, b: Any, adj_x: bool | None, adj_y: bool | None) -> list[Any]:
    a, b = np.asarray(a), np.asarray(b)
    batch_shape = a.shape[:-2]
    lhs = a.reshape(-1, *a.shape[-2:])
    rhs = b.reshape(-1, *b.shape[-2:])
    rows = lhs.shape[2] if adj_x else lhs.shape[1]
    inner = lhs.shape[1] if adj_x else lhs.shape[2]
    cols = rhs.shape[1] if adj_y else rhs.shape[2]
    integer = a.dtype.kind in "iu"
    result = np.zeros((lhs.shape[0], rows, cols), dtype=np.int64 if integer else np.float64)
    for n in range(lhs.shape[0]):
        for i in range(rows):
            for j in range(cols):
                acc: Any = 0
                for k in range(inner):
                    left = lhs[n, k, i] if adj_x else lhs[n, i, k]
                    right = rhs[n, j, k] if adj_y else rhs[n, k, j]
                    acc += left * right
                result[n, i, j] = acc
    return [result.reshape(*batch_shape, rows, cols)]


def _bmm(name: str, lhs: tuple[int, ...], rhs: tuple[int, ...], *, adj_x: bool, adj_y: bool,
         out_shape: tuple[int, ...], seed: int) -> OpCase:
    return OpCase(
        f"batch_matmul_{name}", Op.BATCH_MATMUL,
        (f32(_data(lhs, seed)), f32(_data(rhs, seed + 50)), bools(adj_x), bools(adj_y)),
        (out(T.TENSOR_FLOAT32, out_shape),),
        reference=_bmm_ref,
    )


_RNG = np.random.default_rng(42)

CASES += [
    _bmm("rank2", (2, 3), (3, 4), adj_x=False, adj_y=False, out_shape=(2, 4), seed=1),
    _bmm("rank3_adj_x", (2, 3, 2), (2, 3, 4), adj_x=True, adj_y=False, out_shape=(2, 2, 4), seed=2),
    _bmm("rank4_adj_y", (2, 1, 2, 3), (2, 1, 4, 3),
         adj_x=False, adj_y=True, out_shape=(2, 1, 2, 4), seed=3),
    _bmm("rank3_adj_both", (3, 4, 2), (3, 3, 4),
         adj_x=True, adj_y=True, out_shape=(3, 2, 3), seed=4),
    _bmm("rank4_batches", (2, 3, 2, 2), (2, 3, 2, 3),
         adj_x=False, adj_y=False, out_shape=(2, 3, 2, 3), seed=5),
    _bmm("unit_sizes", (1, 1), (1, 1), adj_x=False, adj_y=False, out_shape=(1, 1), seed=6),
    # adj_x / adj_y are optional: NO_VALUE means false.
    OpCase("batch_matmul_flags_omitted", Op.BATCH_MATMUL,
           (f32(_data((2, 2, 3), 7)), f32(_data((2, 3, 2), 8)), omitted(T.BOOL),
            omitted(T.BOOL)),
           (out(T.TENSOR_FLOAT32, (2, 2, 2)),), reference=_bmm_ref),
    OpCase("batch_matmul_int32", Op.BATCH_MATMUL,
           (i32(_RNG.integers(-50, 51, size=(2, 2, 3))), i32(_RNG.integers(-50, 51, (2, 3, 4))),
            bools(False), bools(False)),
           (out(T.TENSOR_INT32, (2, 2, 4)),), reference=_bmm_ref),
    OpCase("batch_matmul_int32_adj_both", Op.BATCH_MATMUL,
           (i32(_RNG.integers(-1000, 1001, size=(3, 2))), i32(_RNG.integers(-1000, 1001, (4, 3))),
            bools(True), bools(True)),
           (out(T.TENSOR_INT32, (2, 4)),), reference=_bmm_ref),
    OpCase("batch_matmul_int32_rank4_adj_y", Op.BATCH_MATMUL,
           (i32(_RNG.integers(-9, 10, size=(1, 2, 2, 2))), i32(_RNG.integers(-9, 10, (1, 2, 3, 2))),
            bools(False), bools(True)),
           (out(T.TENSOR_INT32, (1, 2, 2, 3)),), reference=_bmm_ref),
    # Hand-computed: [[1, 2], [3, 4]] @ [[5, 6], [7, 8]].
    OpCase("batch_matmul_literal", Op.BATCH_MATMUL,
           (f32([[1.0, 2.0], [3.0, 4.0]]), f32([[5.0, 6.0], [7.0, 8.0]]), bools(False),
            bools(False)),
           (out(T.TENSOR_FLOAT32, (2, 2), [[19.0, 22.0], [43.0, 50.0]]),)),
]
