"""Matrix products: MatMul and Gemm; and the reshape / transpose steps converters share.

``MatMul`` has numpy's semantics (1-D operands promoted and the added dim removed again, batch
dims broadcast). A product with a known 2-D (or 1-D) right operand becomes NNAPI
FULLY_CONNECTED with the weights transposed to ``[units, in]`` at import (what the cpu driver
accelerates): the left operand is reshaped to 2-D and the result back. Anything else becomes
BATCH_MATMUL on operands brought to one batch shape (a right operand without batch dims folds
the left one's batch into its rows instead). ``Gemm`` is FULLY_CONNECTED when ``B`` is known and
``alpha = beta = 1`` (a known ``C`` of ``N`` elements is the bias), otherwise the exact
``alpha * (A' B') + beta * C`` from BATCH_MATMUL (its adjoint flags do transA / transB), MUL and
ADD. Runtime products need float operands (NNAPI's FULLY_CONNECTED and nnrt's RESHAPE kernels
are float only); known operands are multiplied in numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK
from nnrt.model.types import OperationType as Op
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.dynamic import dims_like
from nnrt.onnx.qparams import QParams

__all__ = ["gemm", "known_product", "matmul", "matmul_by", "require_float", "reshape",
           "transpose"]

Array = np.ndarray[Any, Any]

#: The highest rank of NNAPI tensors.
_MAX_RANK = NNRT_MAX_RANK


# -- shared data movement --------------------------------------------------------------------


def reshape(n: NodeContext, x: Value, shape: Sequence[int], like: Value | None = None
            ) -> Value:
    """``x`` with ONNX shape ``shape`` (numpy for a known value, NNAPI RESHAPE otherwise).

    One dim of ``shape`` may be 0 (unknown, as in ``Value.shape``): RESHAPE infers it. More
    need ``like``, whose dims at the same positions they are: the target shape is then computed
    at execution (:func:`~nnrt.onnx.ops.dynamic.dims_like`).
    """
    dims = tuple(int(d) for d in shape)
    if x.const is not None:
        return Value("", x.dtype, dims, const=x.const.reshape(dims),
                     quant=_reshaped_quant(n, x, dims))
    if x.shape == dims:
        return x
    if max(x.rank, len(dims)) > _MAX_RANK:
        n.fail(f"reshaping {list(x.shape)} to {list(dims)} at run time is not supported "
               f"(nnrt's RESHAPE takes rank ≤ {_MAX_RANK})")
    if dims.count(0) > 1 and like is not None and len(dims) <= like.rank:
        return n.graph.op(Op.RESHAPE, x, dims_like(n, like, dims), shape=dims)
    if dims.count(0) > 1:
        n.fail(f"reshaping {list(x.shape)} needs more known dims than {list(dims)}; pass "
               "input_shapes= to nnrt.onnx.load")
    target = np.asarray([d or -1 for d in dims] or [1], np.int32)
    return n.graph.op(Op.RESHAPE, x, target, shape=dims if not dims or 0 in dims else None)


def _reshaped_quant(n: NodeContext, x: Value, dims: tuple[int, ...]) -> QParams | None:
    """The quantisation of known ``x`` reshaped to ``dims``: a per-axis one only keeps its
    axis when the dims up to it stay."""
    q = x.quant
    if q is None or q.axis is None:
        return q
    if dims[:q.axis + 1] != x.shape[:q.axis + 1]:
        n.fail(f"reshaping {list(x.shape)} to {list(dims)} moves the axis {q.axis} of its "
               "per-axis quantisation")
    return q


def known_product(dims: Sequence[int]) -> int:
    """The product of ``dims``, or 0 (unknown) when one of them is unknown."""
    return math.prod(dims) if all(d > 0 for d in dims) else 0


def transpose(n: NodeContext, x: Value, perm: Sequence[int]) -> Value:
    """``x`` with its axes permuted (numpy for a known value, NNAPI TRANSPOSE otherwise)."""
    order = [int(p) for p in perm]
    if x.const is not None:
        arr = np.ascontiguousarray(np.transpose(x.const, order))
        quant = x.quant.moved(order.index(x.quant.axis)) if x.quant is not None and (
            x.quant.axis is not None) else x.quant
        return Value("", x.dtype, tuple(arr.shape), const=arr, quant=quant)
    return n.graph.op(Op.TRANSPOSE, x, np.asarray(order, np.int32))


def require_float(n: NodeContext, *values: Value) -> None:
    """Fail unless every value is float32 / float16 (what nnrt's kernels here compute) or
    quantised (whose operations check their quantised variants, :meth:`Graph.ops`)."""
    for v in values:
        if v.dtype not in (np.float32, np.float16) and v.quant is None:
            n.fail(f"{v.dtype} input {v.name!r} is not supported at run time (the NNAPI "
                   "operations used here are float32 / float16 only)")


def _zeros(x: Value, count: int) -> Value:
    return Value("", x.dtype, (count,), const=np.zeros(count, x.dtype))


def _same_dtype(n: NodeContext, *values: Value) -> None:
    if len({v.dtype for v in values}) > 1:
        n.fail(f"inputs have different types {[str(v.dtype) for v in values]}")


# -- MatMul ----------------------------------------------------------------------------------


@converter("MatMul")
def matmul(n: NodeContext) -> list[Value]:
    """MatMul with numpy semantics: FULLY_CONNECTED for a known right operand of rank ≤ 2,
    BATCH_MATMUL otherwise."""
    a, b = n.input(0), n.input(1)
    _same_dtype(n, a, b)
    if a.rank == 0 or b.rank == 0:
        n.fail("MatMul operands must have rank ≥ 1")
    if a.const is not None and b.const is not None:
        return [n.graph.const(np.matmul(a.const, b.const))]
    require_float(n, a, b)
    k_a, k_b = a.shape[-1], b.shape[0] if b.rank == 1 else b.shape[-2]
    if k_a and k_b and k_a != k_b:
        n.fail(f"inner dimensions differ: A is {list(a.shape)}, B is {list(b.shape)}")
    if b.const is not None and b.rank <= 2:
        return [matmul_by(n, a, b.const)]
    return [_batch_matmul(n, a, b)]


def matmul_by(n: NodeContext, a: Value, b: Array) -> Value:
    """``a @ b`` for a known ``b`` of rank 1 or 2, as FULLY_CONNECTED on a 2-D ``a``."""
    k = b.shape[0]
    weights = np.ascontiguousarray(b.reshape(k, -1).T)  # [units, in]
    units = weights.shape[0]
    w = Value("", a.dtype, weights.shape, const=weights)
    out_shape = a.shape[:-1] + b.shape[1:]
    if a.rank == 2 and b.ndim == 2:
        return n.graph.op(Op.FULLY_CONNECTED, a, w, _zeros(a, units), 0)
    rows = known_product(a.shape[:-1])
    y = n.graph.op(Op.FULLY_CONNECTED, reshape(n, a, (rows, k)), w, _zeros(a, units), 0)
    return reshape(n, y, out_shape, like=a)


def _batch_matmul(n: NodeContext, a: Value, b: Value) -> Value:
    """``a @ b`` with BATCH_MATMUL: 1-D operands promoted, batch dims broadcast and merged."""
    a2 = a if a.rank > 1 else reshape(n, a, (1, a.shape[0]))
    b2 = b if b.rank > 1 else reshape(n, b, (b.shape[0], 1))
    if a2.rank == b2.rank <= _MAX_RANK and a2.shape[:-2] == b2.shape[:-2]:
        # batches agree (dynamic batch dims at the same places must be equal at execution:
        # BATCH_MATMUL does not broadcast them, and reports a mismatch)
        y = n.graph.op(Op.BATCH_MATMUL, a2, b2, False, False)
        if a.rank == 1 or b.rank == 1:
            return reshape(n, y, _matmul_shape(a, b, a2.shape[:-2]))
        return y
    n.static_shape(a)
    n.static_shape(b)
    try:
        batch = tuple(np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]))
    except ValueError:
        n.fail(f"batch dimensions of {list(a.shape)} and {list(b.shape)} do not broadcast")
    out_shape = _matmul_shape(a, b, batch)
    if b2.rank == 2:  # one right matrix: the left operand's batch folds into its rows
        rows = math.prod(a2.shape[:-1])
        y = n.graph.op(Op.BATCH_MATMUL, reshape(n, a2, (rows, a2.shape[-1])), b2, False, False)
        return reshape(n, y, out_shape)
    lhs, rhs = _batched(n, a2, batch), _batched(n, b2, batch)
    return reshape(n, n.graph.op(Op.BATCH_MATMUL, lhs, rhs, False, False), out_shape)


def _matmul_shape(a: Value, b: Value, batch: tuple[int, ...]) -> tuple[int, ...]:
    rows = (a.shape[-2],) if a.rank > 1 else ()
    cols = (b.shape[-1],) if b.rank > 1 else ()
    return batch + rows + cols


def _batched(n: NodeContext, x: Value, batch: tuple[int, ...]) -> Value:
    """``x`` (rank ≥ 2) broadcast to ``batch`` + its matrix dims, as a 3-D ``[B, r, c]``."""
    matrix = x.shape[-2:]
    lead = (1,) * (len(batch) - (x.rank - 2)) + x.shape[:-2]
    if lead != batch:
        x = reshape(n, x, lead + matrix)
        if x.const is not None:
            x = Value("", x.dtype, batch + matrix,
                      const=np.ascontiguousarray(np.broadcast_to(x.const, batch + matrix)))
        else:
            multiples = [t // d for t, d in zip(batch, lead, strict=True)] + [1, 1]
            x = n.graph.op(Op.TILE, x, np.asarray(multiples, np.int32))
    return reshape(n, x, (math.prod(batch), *matrix))


# -- Gemm ------------------------------------------------------------------------------------


@converter("Gemm")
def gemm(n: NodeContext) -> list[Value]:
    """Gemm: ``alpha * A' B' + beta * C`` (FULLY_CONNECTED when that is exact)."""
    a, b = n.input(0), n.input(1)
    c = n.input(2) if n.has_input(2) else None
    alpha = float(n.attr("alpha", 1.0))
    beta = float(n.attr("beta", 1.0))
    trans_a, trans_b = bool(n.attr("transA", 0)), bool(n.attr("transB", 0))
    _same_dtype(n, a, b, *([c] if c is not None else []))
    if a.rank != 2 or b.rank != 2:
        n.fail(f"A and B must be 2-D, got {list(a.shape)} and {list(b.shape)}")
    if c is not None and beta == 0:
        c = None  # beta * C vanishes (onnxruntime skips C too)
    units = b.shape[0] if trans_b else b.shape[1]
    if a.const is not None and b.const is not None and (c is None or c.const is not None):
        return [_gemm_known(n, a.const, b.const, None if c is None else c.const, alpha, beta,
                            trans_a, trans_b)]
    require_float(n, a, b)
    if b.const is not None and alpha == 1 and (c is None or beta == 1):
        x = transpose(n, a, (1, 0)) if trans_a else a
        weights = b.const if trans_b else np.ascontiguousarray(b.const.T)
        w = Value("", a.dtype, weights.shape, const=weights)
        bias = _bias(c, units)
        y = n.graph.op(Op.FULLY_CONNECTED, x, w, bias if bias is not None else _zeros(a, units), 0)
        if c is not None and bias is None:
            y = n.graph.op(Op.ADD, y, c, 0)
        return [y]
    y = n.graph.op(Op.BATCH_MATMUL, a, b, trans_a, trans_b)
    if alpha != 1:
        y = n.graph.op(Op.MUL, y, _scalar(a, alpha), 0)
    if c is not None:
        y = n.graph.op(Op.ADD, y, c if beta == 1 else _scaled(n, c, beta), 0)
    return [y]


def _scalar(like: Value, x: float) -> Value:
    return Value("", like.dtype, (1,), const=np.asarray([x], like.dtype))


def _scaled(n: NodeContext, c: Value, beta: float) -> Value:
    """``beta * C`` (in numpy, in C's dtype, for a known C)."""
    if c.const is not None:
        return Value("", c.dtype, c.shape, const=(c.const * c.dtype.type(beta)).astype(c.dtype))
    return n.graph.op(Op.MUL, c, _scalar(c, beta), 0, shape=c.shape if not c.shape else None)


def _bias(c: Value | None, units: int) -> Value | None:
    """A known ``C`` that is one row of ``units`` values as FULLY_CONNECTED's 1-D bias."""
    if c is None or c.const is None or c.const.size not in (1, units) or c.rank > 2 or (
            c.rank == 2 and c.shape[0] != 1):
        return None
    row = np.ascontiguousarray(np.broadcast_to(c.const.reshape(-1), (units,)))
    return Value("", c.dtype, (units,), const=row)


def _gemm_known(n: NodeContext, a: Array, b: Array, c: Array | None, alpha: float, beta: float,
                trans_a: bool, trans_b: bool) -> Value:
    kind = a.dtype.type
    y = (a.T if trans_a else a) @ (b.T if trans_b else b)
    if alpha != 1:
        y = y * kind(alpha)
    if c is not None:
        y = y + (c * kind(beta) if beta != 1 else c)
    return n.graph.const(np.asarray(y, a.dtype))
