"""Conformance cases at rank 5 and 6: nnrt's ``com.nnrt.rank6`` extension (operations NNAPI caps
at rank 4, taken up to rank 6) and NNAPI operations without a rank cap used at those ranks.

One or two small cases per operation (at most 64 elements), so every driver's kit exercises the
higher ranks without slowing it down. References compute in float64 from the definitions:
index arithmetic for the data movement (each output position read from its input position),
``math`` per element for the element-wise functions, ``math.fsum`` over the reduced positions.
Parameter tensors (shapes, axes, paddings) are constants, so drivers that need constant
parameters take the base variants.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, b8, bools, f32, f32s, i32, i32s, omitted, out

__all__ = ["CASES"]

CASES: list[OpCase] = []
Array = np.ndarray[Any, Any]
#: The variants the element-wise cases run (the data movement runs every applicable one).
_LIGHT = ("base", "float16", "dynamic_output")


def _data(*shape: int, scale: float = 0.25) -> Array:
    """Distinct float16-exact values around zero."""
    n = math.prod(shape)
    return ((np.arange(n, dtype=np.float32) - n // 2) * scale).reshape(shape)


def _const(values: Any) -> Any:
    """A constant TENSOR_INT32 parameter."""
    return i32(values, role="const")


def _map(shape: Sequence[int], value: Callable[[tuple[int, ...]], Any],
         dtype: Any = np.float64) -> Array:
    """The array of ``shape`` holding ``value(position)`` at each position."""
    result = np.zeros(tuple(shape), dtype=dtype)
    for pos in itertools.product(*(range(d) for d in shape)):
        result[pos] = value(pos)
    return result


def _unravel(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    index = []
    for d in reversed(shape):
        index.append(flat % d)
        flat //= d
    return tuple(reversed(index))


def _ravel(pos: Sequence[int], shape: Sequence[int]) -> int:
    flat = 0
    for p, d in zip(pos, shape, strict=True):
        flat = flat * d + p
    return flat


# -- data movement ----------------------------------------------------------------------------

def _reshaped(x: Array, shape: Sequence[int]) -> Array:
    return _map(shape, lambda pos: x[_unravel(_ravel(pos, shape), x.shape)])


for _name, _shape, _target in [("rank6_reshape_up", (4, 6), (2, 1, 2, 3, 1, 2)),
                               ("rank5_reshape_down", (2, 1, 3, 2, 2), (6, 4))]:
    CASES.append(OpCase(
        _name, Op.RESHAPE, (f32(_data(*_shape)), _const(list(_target))),
        (out(T.TENSOR_FLOAT32, _target),),
        reference=lambda x, s, o=_target: [_reshaped(x, o)]))

for _name, _shape, _perm in [("rank5_transpose", (2, 3, 1, 2, 2), (0, 3, 1, 4, 2)),
                             ("rank6_transpose", (2, 1, 3, 2, 1, 2), (5, 0, 4, 1, 3, 2))]:
    _out_shape = tuple(_shape[k] for k in _perm)

    def _transposed(x: Array, perm: Array, o: tuple[int, ...] = _out_shape) -> list[Array]:
        def source(pos: tuple[int, ...]) -> Any:
            index = [0] * len(pos)
            for i, k in enumerate(perm):
                index[int(k)] = pos[i]
            return x[tuple(index)]
        return [_map(o, source)]

    CASES.append(OpCase(_name, Op.TRANSPOSE, (f32(_data(*_shape)), _const(list(_perm))),
                        (out(T.TENSOR_FLOAT32, _out_shape),), reference=_transposed))


def _concat(a: Array, b: Array, axis: int) -> list[Array]:
    shape = list(a.shape)
    shape[axis] += b.shape[axis]

    def value(pos: tuple[int, ...]) -> Any:
        if pos[axis] < a.shape[axis]:
            return a[pos]
        return b[(*pos[:axis], pos[axis] - a.shape[axis], *pos[axis + 1:])]
    return [_map(shape, value)]


CASES += [
    OpCase("rank5_concatenation_axis3", Op.CONCATENATION,
           (f32(_data(1, 2, 2, 1, 3)), f32(_data(1, 2, 2, 2, 3, scale=0.5)), i32s(3)),
           (out(T.TENSOR_FLOAT32, (1, 2, 2, 3, 3)),), reference=_concat),
    OpCase("rank6_concatenation_last", Op.CONCATENATION,
           (f32(_data(2, 1, 2, 1, 2, 1)), f32(_data(2, 1, 2, 1, 2, 2, scale=0.5)), i32s(5)),
           (out(T.TENSOR_FLOAT32, (2, 1, 2, 1, 2, 3)),), reference=_concat),
]


def _slice(x: Array, begin: Array, size: Array) -> list[Array]:
    shape = [x.shape[i] - int(b) if int(s) == -1 else int(s)
             for i, (b, s) in enumerate(zip(begin, size, strict=True))]
    return [_map(shape, lambda pos: x[tuple(p + int(b) for p, b in zip(pos, begin,
                                                                        strict=True))])]


CASES += [
    OpCase("rank5_slice", Op.SLICE,
           (f32(_data(2, 3, 2, 2, 3)), _const([1, 0, 1, 0, 1]), _const([1, 2, 1, -1, 2])),
           (out(T.TENSOR_FLOAT32, (1, 2, 1, 2, 2)),), reference=_slice),
    OpCase("rank6_slice", Op.SLICE,
           (f32(_data(2, 1, 3, 2, 1, 3)), _const([0, 0, 1, 1, 0, 0]),
            _const([2, 1, 2, 1, 1, -1])),
           (out(T.TENSOR_FLOAT32, (2, 1, 2, 1, 1, 3)),), reference=_slice),
]


def _strided(x: Array, begin: Array, end: Array, strides: Array, begin_mask: int,
             end_mask: int, shrink: int) -> list[Array]:
    """Per dimension a Python slice (``None`` where masked) or an index (shrunk)."""
    index: list[Any] = []
    for i in range(x.ndim):
        if shrink >> i & 1:
            index.append(int(begin[i]))
            continue
        start = None if begin_mask >> i & 1 else int(begin[i])
        stop = None if end_mask >> i & 1 else int(end[i])
        index.append(slice(start, stop, int(strides[i])))
    result = np.asarray(x, np.float64)[tuple(index)]
    return [result.reshape(result.shape or (1,))]


for _name, _x, _begin, _end, _strides, _masks in [
    ("rank5_strided_slice", _data(2, 3, 2, 3, 2), [0, 2, 0, 0, 1], [2, 0, 2, 3, 2],
     [1, -1, 1, 2, 1], (0b00001, 0b00100, 0b10000)),
    ("rank6_strided_slice", _data(2, 1, 3, 2, 2, 2), [1, 0, 0, 0, 1, 1], [2, 1, 3, 2, 0, 2],
     [1, 1, 2, 1, -1, 1], (0, 0b010000, 0b000001)),
]:
    _expected = _strided(_x, np.asarray(_begin), np.asarray(_end), np.asarray(_strides),
                         *_masks)[0]
    CASES.append(OpCase(
        _name, Op.STRIDED_SLICE,
        (f32(_x), _const(_begin), _const(_end), _const(_strides), *map(i32s, _masks)),
        (out(T.TENSOR_FLOAT32, _expected.shape),), reference=_strided))


def _split(x: Array, axis: int, n: int) -> list[Array]:
    step = x.shape[axis] // n
    shape = (*x.shape[:axis], step, *x.shape[axis + 1:])

    def part(k: int) -> Array:
        return _map(shape, lambda pos: x[(*pos[:axis], pos[axis] + k * step, *pos[axis + 1:])])
    return [part(k) for k in range(n)]


CASES.append(OpCase(
    "rank6_split", Op.SPLIT, (f32(_data(2, 1, 4, 1, 2, 2)), i32s(2), i32s(2)),
    (out(T.TENSOR_FLOAT32, (2, 1, 2, 1, 2, 2)), out(T.TENSOR_FLOAT32, (2, 1, 2, 1, 2, 2))),
    reference=_split))


def _gather(x: Array, axis: int, indices: Array) -> list[Array]:
    axis %= x.ndim
    shape = (*x.shape[:axis], *indices.shape, *x.shape[axis + 1:])
    k = indices.ndim

    def value(pos: tuple[int, ...]) -> Any:
        picked = int(indices[pos[axis:axis + k]])
        return x[(*pos[:axis], picked, *pos[axis + k:])]
    return [_map(shape, value)]


CASES += [
    OpCase("rank5_gather", Op.GATHER,
           (f32(_data(2, 1, 3, 2, 2)), i32s(2), _const([2, 0])),
           (out(T.TENSOR_FLOAT32, (2, 1, 2, 2, 2)),), reference=_gather),
    OpCase("rank6_gather_from_rank5", Op.GATHER,
           (f32(_data(1, 3, 2, 2, 2)), i32s(-4), _const([[1, 2], [0, 1]])),
           (out(T.TENSOR_FLOAT32, (1, 2, 2, 2, 2, 2)),), reference=_gather),
]


def _padded(x: Array, pads: Array, value: float | None = None) -> list[Array]:
    shape = [d + int(a) + int(b) for d, (a, b) in zip(x.shape, pads, strict=True)]

    def at(pos: tuple[int, ...]) -> Any:
        inner = tuple(p - int(a) for p, (a, _) in zip(pos, pads, strict=True))
        if all(0 <= q < d for q, d in zip(inner, x.shape, strict=True)):
            return x[inner]
        return value or 0.0
    return [_map(shape, at)]


CASES += [
    OpCase("rank5_pad", Op.PAD,
           (f32(_data(1, 2, 1, 2, 3)), _const([[0, 0], [1, 0], [0, 1], [0, 0], [1, 1]])),
           (out(T.TENSOR_FLOAT32, (1, 3, 2, 2, 5)),), reference=_padded),
    OpCase("rank6_pad_v2", Op.PAD_V2,
           (f32(_data(1, 2, 1, 2, 1, 2)),
            _const([[0, 0], [0, 1], [1, 0], [0, 0], [1, 1], [0, 1]]), f32s(-1.5)),
           (out(T.TENSOR_FLOAT32, (1, 3, 2, 2, 3, 3)),), reference=_padded),
]


def _tiled(x: Array, multiples: Array) -> list[Array]:
    shape = [d * int(m) for d, m in zip(x.shape, multiples, strict=True)]
    return [_map(shape, lambda pos: x[tuple(p % d for p, d in zip(pos, x.shape,
                                                                   strict=True))])]


CASES.append(OpCase(
    "rank5_tile", Op.TILE, (f32(_data(1, 2, 1, 2, 2)), _const([2, 1, 2, 1, 1])),
    (out(T.TENSOR_FLOAT32, (2, 2, 2, 2, 2)),), reference=_tiled))
CASES.append(OpCase(
    "rank6_expand_dims", Op.EXPAND_DIMS, (f32(_data(2, 1, 3, 2, 2)), i32s(-3)),
    (out(T.TENSOR_FLOAT32, (2, 1, 3, 1, 2, 2)),),
    reference=lambda x, axis: [_reshaped(x, (2, 1, 3, 1, 2, 2))]))
CASES += [
    OpCase("rank6_squeeze", Op.SQUEEZE, (f32(_data(2, 1, 3, 1, 2, 1)), _const([1, -1])),
           (out(T.TENSOR_FLOAT32, (2, 3, 1, 2)),),
           reference=lambda x, dims: [_reshaped(x, (2, 3, 1, 2))]),
    OpCase("rank6_squeeze_all", Op.SQUEEZE,
           (f32(_data(1, 2, 1, 3, 1, 2)), omitted(T.TENSOR_INT32)),
           (out(T.TENSOR_FLOAT32, (2, 3, 2)),),
           reference=lambda x, dims: [_reshaped(x, (2, 3, 2))]),
]

# -- element-wise and broadcasting ------------------------------------------------------------


def _broadcast(a: Array, b: Array, fn: Callable[[float, float], Any],
               dtype: Any = np.float64) -> Array:
    rank = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (rank - a.ndim) + a.shape)
    b = b.reshape((1,) * (rank - b.ndim) + b.shape)
    shape = [max(p, q) for p, q in zip(a.shape, b.shape, strict=True)]

    def value(pos: tuple[int, ...]) -> Any:
        pa = tuple(p if d > 1 else 0 for p, d in zip(pos, a.shape, strict=True))
        pb = tuple(p if d > 1 else 0 for p, d in zip(pos, b.shape, strict=True))
        return fn(a[pa].item(), b[pb].item())
    return _map(shape, value, dtype)


_A5, _B5 = _data(2, 1, 3, 1, 2), _data(1, 2, 1, 2, 1, scale=0.75) + 0.125
_A6, _B6 = _data(1, 2, 1, 2, 3, 2), _data(2, 1, 3, 2, scale=-0.5) + 0.375
_Binary = Callable[[float, float], float]
_WITH_ACTIVATION: list[tuple[Op, _Binary, Array, Array]] = [
    (Op.ADD, lambda p, q: p + q, _A5, _B5), (Op.SUB, lambda p, q: p - q, _A6, _B6),
    (Op.MUL, lambda p, q: p * q, _A5, _B5), (Op.DIV, lambda p, q: p / q, _A6, _B6),
]
for _op, _fn, _a, _b in _WITH_ACTIVATION:
    CASES.append(OpCase(
        f"rank{_a.ndim}_{_op.name.lower()}_broadcast", _op, (f32(_a), f32(_b), i32s(0)),
        (out(T.TENSOR_FLOAT32, np.broadcast_shapes(_a.shape, _b.shape)),),
        reference=lambda a, b, act, fn=_fn: [_broadcast(a, b, fn)], variants=_LIGHT))
CASES.append(OpCase(
    "rank6_add_int32", Op.ADD,
    (i32(np.arange(24).reshape(1, 2, 1, 3, 2, 2) - 12), i32([[3], [-4]]), i32s(0)),
    (out(T.TENSOR_INT32, (1, 2, 1, 3, 2, 2)),),
    reference=lambda a, b, act: [_broadcast(a, b, lambda p, q: p + q, np.int64)]))
# MAXIMUM / MINIMUM against a constant (how litert takes them: NaN-safe operand order).
_PLAIN: list[tuple[Op, _Binary, Array, Array, str]] = [
    (Op.MAXIMUM, max, _A5, _B5, "const"), (Op.MINIMUM, min, _A6, _B6, "const"),
    (Op.POW, math.pow, np.abs(_A5) + 0.5, _B5, "auto"),
]
for _op, _fn, _a, _b, _role in _PLAIN:
    CASES.append(OpCase(
        f"rank{_a.ndim}_{_op.name.lower()}_broadcast", _op, (f32(_a), f32(_b, role=_role)),
        (out(T.TENSOR_FLOAT32, np.broadcast_shapes(_a.shape, _b.shape)),),
        reference=lambda a, b, fn=_fn: [_broadcast(a, b, fn)], variants=_LIGHT))


def _relu1(v: float) -> float:
    return min(max(v, -1.0), 1.0)


_UNARY: list[tuple[Op, Callable[[float], float], Array]] = [
    (Op.ABS, abs, _data(2, 1, 2, 3, 2)),
    (Op.EXP, math.exp, _data(1, 2, 1, 2, 3, 2)),
    (Op.SQRT, math.sqrt, np.abs(_data(2, 1, 2, 3, 2))),
    (Op.RSQRT, lambda v: 1.0 / math.sqrt(v), np.abs(_data(1, 2, 1, 2, 3, 2)) + 0.5),
    (Op.NEG, lambda v: -v, _data(2, 1, 2, 3, 2)),
    (Op.LOGISTIC, lambda v: 1.0 / (1.0 + math.exp(-v)), _data(1, 2, 1, 2, 3, 2)),
    (Op.TANH, math.tanh, _data(2, 1, 2, 3, 2)),
    (Op.RELU, lambda v: max(v, 0.0), _data(1, 2, 1, 2, 3, 2)),
    (Op.RELU1, _relu1, _data(2, 1, 2, 3, 2)),
    (Op.RELU6, lambda v: min(max(v, 0.0), 6.0), _data(1, 2, 1, 2, 3, 2, scale=1.0)),
    (Op.FLOOR, math.floor, _data(2, 1, 2, 3, 2, scale=0.375)),
    (Op.NNRT_ERF, math.erf, _data(1, 2, 1, 2, 3, 2)),
]
for _op, _each, _x in _UNARY:
    _lower = _op.name.lower().removeprefix("nnrt_")
    CASES.append(OpCase(
        f"rank{_x.ndim}_{_lower}", _op, (f32(_x),), (out(T.TENSOR_FLOAT32, _x.shape),),
        reference=lambda x, fn=_each: [_map(x.shape, lambda pos: fn(float(x[pos])))],
        variants=_LIGHT))

CASES += [
    OpCase("rank5_cast_int32_to_float", Op.CAST, (i32(np.arange(-12, 12).reshape(2, 1, 3, 2, 2)),),
           (out(T.TENSOR_FLOAT32, (2, 1, 3, 2, 2)),),
           reference=lambda x: [x.astype(np.float64)]),
    OpCase("rank6_greater_broadcast", Op.GREATER, (f32(_A6), f32(_B6)),
           (out(T.TENSOR_BOOL8, np.broadcast_shapes(_A6.shape, _B6.shape)),),
           reference=lambda a, b: [_broadcast(a, b, lambda p, q: p > q, np.bool_)],
           variants=_LIGHT),
    OpCase("rank5_equal_broadcast", Op.EQUAL, (f32(_A5), f32(np.round(_B5))),
           (out(T.TENSOR_BOOL8, np.broadcast_shapes(_A5.shape, _B5.shape)),),
           reference=lambda a, b: [_broadcast(a, b, lambda p, q: p == q, np.bool_)],
           variants=_LIGHT),
    OpCase("rank5_select", Op.SELECT,
           (b8(_data(2, 1, 3, 1, 2) > 0), f32(_data(2, 1, 3, 1, 2)),
            f32(_data(2, 1, 3, 1, 2, scale=-0.5))),
           (out(T.TENSOR_FLOAT32, (2, 1, 3, 1, 2)),),
           reference=lambda c, a, b: [np.where(c, a, b)], variants=_LIGHT),
]

# -- reductions, SOFTMAX, BATCH_MATMUL --------------------------------------------------------


def _reduced(x: Array, axes: Array, keep: bool, fold: Callable[[list[float]], float],
             dtype: Any = np.float64) -> list[Array]:
    rank = x.ndim
    axes_set = {int(a) % rank for a in np.asarray(axes).reshape(-1)}
    shape = [1 if k in axes_set else d for k, d in enumerate(x.shape)]

    def value(pos: tuple[int, ...]) -> Any:
        ranges = [range(x.shape[k]) if k in axes_set else (pos[k],) for k in range(rank)]
        return fold([x[p].item() for p in itertools.product(*ranges)])
    result = _map(shape, value, dtype)
    if not keep:
        result = result.reshape([d for k, d in enumerate(x.shape) if k not in axes_set] or [1])
    return [result]


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def _reduce_case(name: str, op: Op, x: Array, axes: list[int], keep: bool,
                 fold: Callable[[list[float]], float]) -> OpCase:
    keep_arg = i32s(int(keep)) if op == Op.MEAN else bools(keep)
    (expected,) = _reduced(x, np.asarray(axes), keep, fold)
    return OpCase(name, op, (f32(x), _const(axes), keep_arg),
                  (out(T.TENSOR_FLOAT32, expected.shape),),
                  reference=lambda x, a, k, fold=fold: _reduced(x, a, bool(k), fold))


CASES += [
    _reduce_case("rank5_mean_keep_dims", Op.MEAN, _data(2, 1, 3, 2, 2), [2, -1], True, _mean),
    _reduce_case("rank6_reduce_sum", Op.REDUCE_SUM, _data(2, 1, 3, 2, 1, 2), [0, 3], False,
                 math.fsum),
    _reduce_case("rank5_reduce_max", Op.REDUCE_MAX, _data(2, 1, 3, 2, 2), [4], False, max),
    _reduce_case("rank6_reduce_min", Op.REDUCE_MIN, _data(1, 2, 1, 3, 2, 2), [1, 4], True, min),
    _reduce_case("rank5_reduce_prod", Op.REDUCE_PROD, _data(2, 1, 2, 2, 2, scale=0.125) + 1,
                 [2], False, math.prod),
    OpCase("rank5_reduce_any", Op.REDUCE_ANY,
           (b8(_data(2, 1, 3, 2, 2) > 1), _const([2, 3]), bools(False)),
           (out(T.TENSOR_BOOL8, (2, 1, 2)),),
           reference=lambda x, a, k: _reduced(x, a, k, any, np.bool_)),
]


def _arg(x: Array, axis: int, better: Callable[[float, float], bool]) -> list[Array]:
    """The first index along ``axis`` whose value no other beats."""
    axis %= x.ndim
    shape = [d for k, d in enumerate(x.shape) if k != axis]

    def value(pos: tuple[int, ...]) -> int:
        column = [float(x[(*pos[:axis], i, *pos[axis:])]) for i in range(x.shape[axis])]
        best = 0
        for i, v in enumerate(column):
            if better(v, column[best]):
                best = i
        return best
    return [_map(shape, value, np.int64)]


_ARG_X = np.array([3, -1, 2, 7, 0, 5, 5, -2, 1, 4, -3, 6, 2, 2, 8, -5, 0, 1, 9, 4, -1, 3, 6, 0],
                  np.float32)
CASES += [
    OpCase("rank5_argmax", Op.ARGMAX, (f32(_ARG_X.reshape(2, 1, 3, 2, 2)), i32s(2)),
           (out(T.TENSOR_INT32, (2, 1, 2, 2)),), reference=lambda x, a: _arg(x, a, lambda p, q: p > q)),
    OpCase("rank6_argmin", Op.ARGMIN, (f32(_ARG_X.reshape(1, 2, 1, 3, 2, 2)), i32s(-1)),
           (out(T.TENSOR_INT32, (1, 2, 1, 3, 2)),),
           reference=lambda x, a: _arg(x, a, lambda p, q: p < q)),
]


def _softmax(x: Array, beta: float, axis: int | None = None) -> list[Array]:
    axis = x.ndim - 1 if axis is None else axis % x.ndim

    def value(pos: tuple[int, ...]) -> float:
        row = [float(x[(*pos[:axis], i, *pos[axis + 1:])]) for i in range(x.shape[axis])]
        exps = [math.exp(beta * v) for v in row]
        return exps[pos[axis]] / math.fsum(exps)
    return [_map(x.shape, value)]


CASES += [
    OpCase("rank5_softmax_axis2", Op.SOFTMAX, (f32(_data(2, 1, 3, 2, 2)), f32s(1.5), i32s(2)),
           (out(T.TENSOR_FLOAT32, (2, 1, 3, 2, 2)),), reference=_softmax),
    OpCase("rank6_softmax_last", Op.SOFTMAX, (f32(_data(1, 2, 1, 2, 2, 3)), f32s(1.0)),
           (out(T.TENSOR_FLOAT32, (1, 2, 1, 2, 2, 3)),), reference=_softmax),
]


def _matmul(a: Array, b: Array, adj_x: bool | None, adj_y: bool | None) -> list[Array]:
    if adj_x:
        a = np.swapaxes(a, -1, -2)
    if adj_y:
        b = np.swapaxes(b, -1, -2)
    shape = (*a.shape[:-1], b.shape[-1])

    def value(pos: tuple[int, ...]) -> float:
        batch, i, j = pos[:-2], pos[-2], pos[-1]
        return math.fsum(float(a[(*batch, i, k)]) * float(b[(*batch, k, j)])
                         for k in range(a.shape[-1]))
    return [_map(shape, value)]


CASES += [
    OpCase("rank5_batch_matmul", Op.BATCH_MATMUL,
           (f32(_data(2, 1, 2, 2, 3)), f32(_data(2, 1, 2, 3, 2, scale=0.5)),
            bools(False), bools(False)),
           (out(T.TENSOR_FLOAT32, (2, 1, 2, 2, 2)),), reference=_matmul),
    OpCase("rank6_batch_matmul_adj_y", Op.BATCH_MATMUL,
           (f32(_data(1, 2, 1, 2, 2, 3)), f32(_data(1, 2, 1, 2, 2, 3, scale=0.5)),
            bools(False), bools(True)),
           (out(T.TENSOR_FLOAT32, (1, 2, 1, 2, 2, 2)),), reference=_matmul),
]
