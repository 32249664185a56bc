"""Conformance cases for RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE.

References are computed element by element: every output position is mapped back to the input
position holding its value (row-major order for the reshaping ops, the permutation for
TRANSPOSE), independently of the numpy reshape / transpose the kernels use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, f32, i32, i32s, omitted, out

CASES: list[OpCase] = []


def _gather(x: Any, shape: Sequence[int], source: Callable[[tuple[int, ...]], tuple[int, ...]]
            ) -> Any:
    """Output of ``shape`` whose element at each position is ``x[source(position)]``."""
    result = np.zeros(tuple(shape), dtype=np.asarray(x).dtype)
    for pos in np.ndindex(*shape):
        result[pos] = x[source(pos)]
    return result


def _row_major(x: Any, shape: Sequence[int]) -> Any:
    """``x``'s elements laid out in ``shape`` in row-major order (explicit index arithmetic)."""
    in_shape = np.asarray(x).shape

    def source(pos: tuple[int, ...]) -> tuple[int, ...]:
        flat = 0
        for p, d in zip(pos, shape, strict=True):
            flat = flat * d + p
        index = []
        for d in reversed(in_shape):
            index.append(flat % d)
            flat //= d
        return tuple(reversed(index))

    return _gather(x, shape, source)


def _data(*shape: int) -> Any:
    """Distinct, float16-exact values."""
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float32) * 0.5 - 3.0).reshape(shape)


# -- RESHAPE ----------------------------------------------------------------------------------

for _name, _shape, _target, _out in [
    ("reshape_infer_middle", (2, 6), [3, -1, 2], (3, 2, 2)),
    ("reshape_flatten", (1, 2, 3, 2), [-1], (12,)),
    ("reshape_rank1_to_rank4", (6,), [1, 2, 3, 1], (1, 2, 3, 1)),
    ("reshape_same_rank", (4, 3), [3, 4], (3, 4)),
    ("reshape_infer_leading", (2, 2, 2), [-1, 4], (2, 4)),
]:
    CASES.append(OpCase(
        _name, Op.RESHAPE,
        inputs=(f32(_data(*_shape)), i32(_target)),
        outputs=(out(T.TENSOR_FLOAT32, _out),),
        reference=lambda x, s, o=_out: [_row_major(x, o)],
    ))

# -- SQUEEZE ----------------------------------------------------------------------------------

for _name, _shape, _dims, _out in [
    ("squeeze_all_omitted", (1, 3, 1, 2), None, (3, 2)),
    ("squeeze_listed", (1, 3, 1, 2), [2], (1, 3, 2)),
    ("squeeze_negative_axes", (2, 1, 1), [-1, -2], (2,)),
    ("squeeze_everything_gives_1", (1, 1), None, (1,)),
    ("squeeze_rank1_nothing", (4,), None, (4,)),
    ("squeeze_same_axis_twice", (1, 3), [0, -2], (3,)),
]:
    _dims_arg = omitted(T.TENSOR_INT32) if _dims is None else i32(_dims)
    CASES.append(OpCase(
        _name, Op.SQUEEZE,
        inputs=(f32(_data(*_shape)), _dims_arg),
        outputs=(out(T.TENSOR_FLOAT32, _out),),
        reference=lambda x, d, o=_out: [_row_major(x, o)],
    ))

# -- EXPAND_DIMS ------------------------------------------------------------------------------

for _name, _shape, _axis, _out in [
    ("expand_dims_axis0", (2, 3), 0, (1, 2, 3)),
    ("expand_dims_axis_neg1", (2, 3), -1, (2, 3, 1)),
    ("expand_dims_rank1_end", (4,), 1, (4, 1)),
    ("expand_dims_axis_neg_first", (2, 3), -3, (1, 2, 3)),
    ("expand_dims_rank4_middle", (1, 2, 2, 2), 2, (1, 2, 1, 2, 2)),
]:
    CASES.append(OpCase(
        _name, Op.EXPAND_DIMS,
        inputs=(f32(_data(*_shape)), i32s(_axis)),
        outputs=(out(T.TENSOR_FLOAT32, _out),),
        reference=lambda x, a, o=_out: [_row_major(x, o)],
    ))
CASES.append(OpCase(
    "expand_dims_int32", Op.EXPAND_DIMS,
    inputs=(i32([[1, -2], [30, 4]]), i32s(1)),
    outputs=(out(T.TENSOR_INT32, (2, 1, 2), [[[1, -2]], [[30, 4]]]),),
))

# -- TRANSPOSE --------------------------------------------------------------------------------


def _transpose_ref(x: Any, perm: Any) -> list[Any]:
    """Output dim k is input dim perm[k]: out[o] = x[i] with i[perm[k]] = o[k]."""
    rank = x.ndim
    order = list(range(rank - 1, -1, -1)) if perm is None else [int(p) for p in perm]
    shape = [x.shape[p] for p in order]

    def source(pos: tuple[int, ...]) -> tuple[int, ...]:
        index = [0] * rank
        for k, p in enumerate(order):
            index[p] = pos[k]
        return tuple(index)

    return [_gather(x, shape, source)]


for _name, _shape, _perm, _out in [
    ("transpose_default_rank2", (2, 3), None, (3, 2)),
    ("transpose_default_rank3", (2, 3, 4), None, (4, 3, 2)),
    ("transpose_rank4_nhwc_to_nchw", (1, 2, 3, 2), [0, 3, 1, 2], (1, 2, 2, 3)),
    ("transpose_rank2_explicit", (3, 2), [1, 0], (2, 3)),
    ("transpose_rank3_rotate", (2, 3, 1), [2, 0, 1], (1, 2, 3)),
    ("transpose_rank1_identity", (5,), [0], (5,)),
]:
    _perm_arg = omitted(T.TENSOR_INT32) if _perm is None else i32(_perm)
    CASES.append(OpCase(
        _name, Op.TRANSPOSE,
        inputs=(f32(_data(*_shape)), _perm_arg),
        outputs=(out(T.TENSOR_FLOAT32, _out),),
        reference=_transpose_ref,
    ))
