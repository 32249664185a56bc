"""Reductions: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd and the composite ones.

Each maps onto one NNAPI reduction (MEAN, REDUCE_SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD),
with an exact element-wise step before or after for the composite reductions: ``ReduceL2 =
sqrt(sum(x * x))``, ``ReduceL1 = sum(|x|)``, ``ReduceSumSquare = sum(x * x)``, ``ReduceLogSum =
log(sum(x))`` and ``ReduceLogSumExp = log(sum(exp(x - m))) + m`` with ``m`` the maximum.

The axes are an attribute before the opset that moved them to an input (13 for ReduceSum, 18 for
the others); no axes reduce every axis, or — with ``noop_with_empty_axes`` — none (the result is
then the reduction of each single element: ``|x|`` for ReduceL2). A known input is reduced in
numpy with ONNX's semantics (any dtype); a runtime input needs a float type (nnrt's reduction
kernels are float only) — boolean ReduceMax / ReduceMin are REDUCE_ANY / REDUCE_ALL. nnrt's
reductions take ranks 1..6 (NNAPI's 1..4, extended by ``com.nnrt.rank6``; a scalar is reduced as
its ``[1]`` operand); higher ranks are unsupported, as RESHAPE cannot merge their axes either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.operation import operation_name
from nnrt.model.types import NNRT_MAX_RANK
from nnrt.model.types import OperationType as Op
from nnrt.onnx.dtypes import operand_type_for
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.elementwise import binary
from nnrt.ops._framework.registry import definitions
from nnrt.ops.reduce import reduced_shape

Array = np.ndarray[Any, Any]

#: The highest rank NNAPI's reductions accept.
MAX_REDUCE_RANK = NNRT_MAX_RANK


def require_kernel(n: NodeContext, op: Op, x: Value) -> None:
    """Fail unless nnrt has a kernel of NNAPI operation ``op`` for ``x``'s type."""
    definition = definitions().get(op)
    if definition is None:
        n.fail(f"nnrt has no {operation_name(op)} kernel")
    try:
        op_type = operand_type_for(x.dtype)
    except ValueError as exc:
        n.fail(f"input {x.name!r}: {exc}")
    if op_type not in definition.kernel_types:
        n.fail(f"{x.dtype} input {x.name!r} is not supported: nnrt's {operation_name(op)} "
               f"kernels take {sorted(t.name for t in definition.kernel_types)}")


def _sum(x: Array, axes: tuple[int, ...]) -> Array:
    return np.asarray(np.sum(x, axis=axes, keepdims=True))


def _log_sum_exp(x: Array, axes: tuple[int, ...]) -> Array:
    if x.size == 0:
        return np.log(_sum(np.exp(x), axes))
    m = np.max(x, axis=axes, keepdims=True)
    return np.asarray(np.log(_sum(np.exp(x - m), axes)) + m)


def _extreme(find: Callable[..., Array], start: str) -> Callable[[Array, tuple[int, ...]], Array]:
    """np.max / np.min that give ONNX's identity element (-inf / +inf) for an empty set."""

    def reduce(x: Array, axes: tuple[int, ...]) -> Array:
        if x.dtype.kind == "f":
            initial: Any = np.inf if start == "max" else -np.inf
        elif x.dtype.kind == "b":
            initial = start == "max"
        else:
            info = np.iinfo(x.dtype)
            initial = info.max if start == "max" else info.min
        return np.asarray(find(x, axis=axes, keepdims=True, initial=initial))

    return reduce


@dataclass(frozen=True)
class _Reduction:
    """One ONNX reduction: its numpy meaning and how it is built from NNAPI operations."""

    #: The NNAPI reduction applied to runtime inputs.
    op: Op
    #: The result on a known input (float64 for floats), ``keepdims`` semantics.
    known: Callable[[Array, tuple[int, ...]], Array]
    #: The opset from which the axes are an input rather than an attribute.
    axes_input_opset: int = 18
    #: Element-wise step before the NNAPI reduction: ``"square"``, ``"abs"`` or none.
    before: str = ""
    #: Element-wise NNAPI operation after it (SQRT, LOG) or none.
    after: Op | None = None
    #: What reducing a single element gives (``noop_with_empty_axes``): ``"abs"``,
    #: ``"square"``, ``"log"`` or the element itself.
    single: str = ""


_REDUCTIONS = {
    "ReduceMean": _Reduction(Op.MEAN, lambda x, a: np.asarray(np.mean(x, axis=a, keepdims=True))),
    "ReduceSum": _Reduction(Op.REDUCE_SUM, _sum, axes_input_opset=13),
    "ReduceMax": _Reduction(Op.REDUCE_MAX, _extreme(np.max, "min")),
    "ReduceMin": _Reduction(Op.REDUCE_MIN, _extreme(np.min, "max")),
    "ReduceProd": _Reduction(Op.REDUCE_PROD,
                             lambda x, a: np.asarray(np.prod(x, axis=a, keepdims=True))),
    "ReduceL2": _Reduction(Op.REDUCE_SUM, lambda x, a: np.sqrt(_sum(x * x, a)), before="square",
                           after=Op.SQRT, single="abs"),
    "ReduceL1": _Reduction(Op.REDUCE_SUM, lambda x, a: _sum(np.abs(x), a), before="abs",
                           single="abs"),
    "ReduceSumSquare": _Reduction(Op.REDUCE_SUM, lambda x, a: _sum(x * x, a), before="square",
                                  single="square"),
    "ReduceLogSum": _Reduction(Op.REDUCE_SUM, lambda x, a: np.log(_sum(x, a)), after=Op.LOG,
                               single="log"),
    "ReduceLogSumExp": _Reduction(Op.REDUCE_SUM, _log_sum_exp),
}


#: ReduceMax / ReduceMin of booleans (opset 20): any / all.
_BOOL_REDUCTIONS = {Op.REDUCE_MAX: Op.REDUCE_ANY, Op.REDUCE_MIN: Op.REDUCE_ALL}


@converter(*_REDUCTIONS)
def reduce(n: NodeContext) -> list[Value]:
    """ReduceMean / Sum / Max / Min / Prod / L1 / L2 / SumSquare / LogSum / LogSumExp."""
    spec = _REDUCTIONS[n.op_type]
    x = n.input(0)
    keep = bool(n.attr("keepdims", 1))
    axes = _axes(n, spec, x)
    if x.const is not None:
        return [_reduce_known(n, spec, x, axes, keep)]
    op = spec.op
    if x.dtype == np.bool_ and op in _BOOL_REDUCTIONS:
        op = _BOOL_REDUCTIONS[op]
    require_kernel(n, op, x)
    if not axes:
        return [_single(n, spec, x)]
    if n.op_type == "ReduceLogSumExp":
        return [_log_sum_exp_runtime(n, x, axes, keep)]
    y = x
    if spec.before == "square":
        y = binary(n, Op.MUL, x, x)
    elif spec.before == "abs":
        y = n.graph.op(Op.ABS, x, shape=_scalar_shape(x))
    y = _reduce_axes(n, op, y, axes, keep)
    if spec.after is not None:
        y = n.graph.op(spec.after, y, shape=_scalar_shape(y))
    return [y]


def _axes(n: NodeContext, spec: _Reduction, x: Value) -> tuple[int, ...]:
    """The normalised, sorted axes to reduce; () for none (``noop_with_empty_axes``)."""
    if n.opset >= spec.axes_input_opset:
        given = [int(a) for a in n.const_input(1, "axes").reshape(-1)] if n.has_input(1) else []
        noop = bool(n.attr("noop_with_empty_axes", 0))
    else:
        given = [int(a) for a in n.attr("axes", [])]
        noop = False
    if not given:
        return () if noop else tuple(range(x.rank))
    result = set()
    for axis in given:
        if not -x.rank <= axis < x.rank:
            n.fail(f"axis {axis} is out of range for input {x.name!r} of rank {x.rank}")
        result.add(axis % x.rank)
    return tuple(sorted(result))


def _reduce_known(n: NodeContext, spec: _Reduction, x: Value, axes: tuple[int, ...],
                  keep: bool) -> Value:
    known = x.array()
    data = known.astype(np.float64) if x.dtype.kind == "f" else known
    if data.dtype == np.int32:
        data = data.astype(np.int64)
    with np.errstate(all="ignore"):
        result = spec.known(data, axes)
    shape = reduced_shape(x.shape, axes, keep)
    if x.dtype.kind in "iu" and result.dtype.kind == "f":
        if not np.isfinite(result).all():
            n.fail("the integer result is undefined (NaN or infinity)")
        result = np.trunc(result)
    return Value("", x.dtype, shape, const=result.astype(x.dtype).reshape(shape))


def _scalar_shape(x: Value) -> tuple[int, ...] | None:
    """``shape=`` that keeps an ONNX scalar rank 0 through an element-wise operation."""
    return x.shape if not x.shape else None


def _single(n: NodeContext, spec: _Reduction, x: Value) -> Value:
    """The reduction of each single element (``noop_with_empty_axes`` with no axes)."""
    if spec.single == "abs":
        return n.graph.op(Op.ABS, x, shape=_scalar_shape(x))
    if spec.single == "square":
        return binary(n, Op.MUL, x, x)
    if spec.single == "log":
        return n.graph.op(Op.LOG, x, shape=_scalar_shape(x))
    return x


def _keep_arg(op: Op, keep: bool) -> int | bool:
    """MEAN's keep_dims is an INT32, the REDUCE_* operations' a BOOL."""
    return int(keep) if op == Op.MEAN else bool(keep)


def _reduce_axes(n: NodeContext, op: Op, x: Value, axes: Sequence[int], keep: bool) -> Value:
    """NNAPI reduction ``op`` of runtime ``x`` (rank >= 1) over the normalised ``axes``."""
    g = n.graph
    out_shape = reduced_shape(x.shape, axes, keep)
    rank_zero = out_shape if not out_shape else None
    if x.rank > MAX_REDUCE_RANK:
        n.fail(f"input {x.name!r} has rank {x.rank}; nnrt reductions take ranks "
               f"1..{MAX_REDUCE_RANK}")
    return g.op(op, x, np.asarray(axes, np.int32), _keep_arg(op, keep), shape=rank_zero)


def _log_sum_exp_runtime(n: NodeContext, x: Value, axes: tuple[int, ...], keep: bool) -> Value:
    """``log(sum(exp(x - m))) + m`` with ``m`` the maximum over ``axes`` (no overflow)."""
    g = n.graph
    m = _reduce_axes(n, Op.REDUCE_MAX, x, axes, True)
    shifted = g.op(Op.EXP, binary(n, Op.SUB, x, m), shape=_scalar_shape(x))
    total = _reduce_axes(n, Op.REDUCE_SUM, shifted, axes, keep)
    log_total = g.op(Op.LOG, total, shape=_scalar_shape(total))
    if not keep:
        m = _reduce_axes(n, Op.REDUCE_MAX, m, axes, False)  # drops the kept 1s
    return binary(n, Op.ADD, log_total, m)
