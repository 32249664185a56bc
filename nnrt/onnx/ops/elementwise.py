"""Elementwise operators: arithmetic, activations, comparisons, logic, Cast, Where, IsNaN.

ONNX broadcasting is numpy's, as NNAPI's is. Operators without an NNAPI operation are built
from NNAPI operations only where the result is exactly ONNX's: ``Ceil = -floor(-x)``,
``IsNaN = x != x``, ``HardSigmoid = max(0, min(1, alpha * x + beta))``, ``Reciprocal = 1 / x``,
integer ``Div`` truncating toward zero from NNAPI's flooring DIV. ``Erf`` is the extension
operation ``com.nnrt.ERF``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.dtypes import ONNX_NUMPY, SMALL_INTS
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.dynamic import dims_of, filled
from nnrt.onnx.smallint import as_int32, fits, retagged, wrap

Array = np.ndarray[Any, Any]

_BINARY = {"Add": Op.ADD, "Sub": Op.SUB, "Mul": Op.MUL}
_UNARY = {"Sqrt": Op.SQRT, "Exp": Op.EXP, "Log": Op.LOG, "Tanh": Op.TANH,
          "Sigmoid": Op.LOGISTIC, "Abs": Op.ABS, "Neg": Op.NEG, "Floor": Op.FLOOR,
          "Erf": Op.NNRT_ERF, "Sin": Op.SIN}
_COMPARE = {"Equal": Op.EQUAL, "Greater": Op.GREATER, "GreaterOrEqual": Op.GREATER_EQUAL,
            "Less": Op.LESS, "LessOrEqual": Op.LESS_EQUAL}
_BOOL = np.dtype(np.bool_)
_INT32 = np.dtype(np.int32)
_BYTE = 256


def _same_dtype(n: NodeContext, *values: Value) -> None:
    kinds = {np.dtype(v.dtype) for v in values}
    kinds = {np.dtype(np.int64) if k == np.int32 else k for k in kinds}
    if len(kinds) > 1:
        n.fail(f"inputs have different types {sorted(str(k) for k in kinds)}")


def _scalar_like(value: Value, x: float) -> Value:
    """A constant ``x`` of ``value``'s dtype, ONNX-shaped as a scalar."""
    return Value("", value.dtype, (), const=np.asarray(x, value.dtype))


def _broadcast_shape(n: NodeContext, *values: Value) -> tuple[int, ...]:
    """ONNX's broadcast of the values' shapes; an unknown dim (0 in a runtime value) must be 1
    or the other dims' size, so it takes a known size above 1 and stays unknown otherwise."""
    if all(v.static for v in values):
        try:
            return tuple(np.broadcast_shapes(*(v.shape for v in values)))
        except ValueError:
            n.fail(f"input shapes {[list(v.shape) for v in values]} do not broadcast")
    rank = max(v.rank for v in values)
    out = [1] * rank
    for v in values:
        for i, d in enumerate((1,) * (rank - v.rank) + tuple(v.shape)):
            o = out[i]
            if d == 1 or d == o:
                continue
            if o == 1 or (o == 0 and d > 1):
                out[i] = d
            elif d > 1 and o > 1:
                n.fail(f"input shapes {[list(v.shape) for v in values]} do not broadcast")
    return tuple(out)


def binary(n: NodeContext, op: Op, a: Value, b: Value, dtype: Any = None) -> Value:
    """``op(a, b)`` with ONNX broadcasting (activation NONE); rank-0 results stay rank 0."""
    shape = _broadcast_shape(n, a, b)
    return n.graph.op(op, a, b, 0, dtype=dtype, shape=shape if not shape else None) \
        if op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV) else \
        n.graph.op(op, a, b, dtype=dtype, shape=shape if not shape else None)


@converter("Add", "Sub", "Mul")
def arithmetic(n: NodeContext) -> list[Value]:
    """Add, Sub, Mul: NNAPI ADD / SUB / MUL."""
    a, b = n.input(0), n.input(1)
    _same_dtype(n, a, b)
    if a.dtype in SMALL_INTS:
        return [_small_arithmetic(n, a, b)]
    return [binary(n, _BINARY[n.op_type], a, b)]


def _small_arithmetic(n: NodeContext, a: Value, b: Value) -> Value:
    """Add, Sub, Mul on small integers: in int32, wrapped around into the type's range. A
    uint16 product can pass int32's range, so it is ``(a_lo * b + ((a_hi * b) mod 256) * 256)
    mod 2**16`` with ``a = a_hi * 256 + a_lo`` (every term below 2**25)."""
    dtype, op = a.dtype, _BINARY[n.op_type]
    if dtype == np.uint16 and op == Op.MUL and not (a.known and b.known):
        g = n.graph
        a32, b32, byte = as_int32(a), as_int32(b), _int32_scalar(_BYTE)
        high = binary(n, Op.DIV, a32, byte)
        low = binary(n, Op.SUB, a32, binary(n, Op.MUL, high, byte))
        carried = binary(n, Op.MUL, as_int32(wrap(g, binary(n, Op.MUL, high, b32), np.uint8)),
                         byte)
        total = binary(n, Op.ADD, binary(n, Op.MUL, low, b32), carried)
        return wrap(g, total, dtype, f"{n.op_type} of {dtype} values")
    return wrap(n.graph, binary(n, op, as_int32(a), as_int32(b)), dtype,
                f"{n.op_type} of {dtype} values")


def _int32_scalar(x: int) -> Value:
    return Value("", _INT32, (), const=np.asarray(x, np.int32))


@converter("Div")
def div(n: NodeContext) -> list[Value]:
    """Div: NNAPI DIV; integers truncate toward zero as ONNX does (NNAPI's DIV floors), as
    ``select(sign(a) != sign(b), -(|a| / |b|), |a| / |b|)``."""
    a, b = n.input(0), n.input(1)
    _same_dtype(n, a, b)
    if a.dtype.kind == "f":
        return [binary(n, Op.DIV, a, b)]
    if a.dtype in SMALL_INTS:
        dtype = a.dtype
        if dtype.kind == "u":  # non-negative: flooring is truncating, and |a / b| <= a
            return [retagged(binary(n, Op.DIV, as_int32(a), as_int32(b)), dtype)]
        return [wrap(n.graph, _truncating_div(n, as_int32(a), as_int32(b)), dtype)]
    return [_truncating_div(n, a, b)]


def _truncating_div(n: NodeContext, a: Value, b: Value) -> Value:
    g = n.graph
    shape = _broadcast_shape(n, a, b)
    if any(d <= 0 for d in shape):
        n.fail(f"integer Div needs known shapes, got {[list(a.shape), list(b.shape)]}")
    a, b = expand_to(n, a, shape), expand_to(n, b, shape)
    keep = shape if not shape else None
    magnitude = binary(n, Op.DIV, g.op(Op.ABS, a, shape=keep), g.op(Op.ABS, b, shape=keep))
    zero = _scalar_like(a, 0)
    differ = binary(n, Op.NOT_EQUAL, binary(n, Op.LESS, a, zero, dtype=_BOOL),
                    binary(n, Op.LESS, b, zero, dtype=_BOOL), dtype=_BOOL)
    return g.op(Op.SELECT, differ, g.op(Op.NEG, magnitude, shape=keep), magnitude,
                dtype=magnitude.dtype, shape=keep)


@converter("Sqrt", "Exp", "Log", "Tanh", "Sigmoid", "Abs", "Neg", "Floor", "Erf", "Sin")
def unary(n: NodeContext) -> list[Value]:
    """One NNAPI operation per operator (Erf: com.nnrt.ERF)."""
    x = n.input(0)
    keep = x.shape if not x.shape else None
    if x.dtype in SMALL_INTS and n.op_type in ("Abs", "Neg"):
        if n.op_type == "Abs" and x.dtype.kind == "u":
            return [x]
        y = n.graph.op(_UNARY[n.op_type], as_int32(x), shape=keep)
        return [wrap(n.graph, y, x.dtype, f"{n.op_type} of {x.dtype} values")]
    return [n.graph.op(_UNARY[n.op_type], x, shape=keep)]


@converter("Ceil")
def ceil(n: NodeContext) -> list[Value]:
    """Ceil as ``-floor(-x)`` (exact)."""
    x = n.input(0)
    keep = x.shape if not x.shape else None
    g = n.graph
    return [g.op(Op.NEG, g.op(Op.FLOOR, g.op(Op.NEG, x, shape=keep), shape=keep), shape=keep)]


@converter("Reciprocal")
def reciprocal(n: NodeContext) -> list[Value]:
    """Reciprocal as ``1 / x``."""
    x = n.input(0)
    return [binary(n, Op.DIV, _scalar_like(x, 1), x)]


@converter("Relu")
def relu(n: NodeContext) -> list[Value]:
    """Relu: NNAPI RELU (float), MAXIMUM with 0 (integers)."""
    x = n.input(0)
    if x.dtype.kind == "f":
        return [n.graph.op(Op.RELU, x, shape=x.shape if not x.shape else None)]
    return [binary(n, Op.MAXIMUM, x, _scalar_like(x, 0))]


@converter("LeakyRelu")
def leaky_relu(n: NodeContext) -> list[Value]:
    """LeakyRelu: NNAPI PRELU with a one-element alpha."""
    x = n.input(0)
    alpha = Value("", x.dtype, (1,), const=np.asarray([n.attr("alpha", 0.01)], x.dtype))
    return [n.graph.op(Op.PRELU, x, alpha, shape=x.shape if not x.shape else None)]


@converter("HardSigmoid")
def hard_sigmoid(n: NodeContext) -> list[Value]:
    """HardSigmoid: ``max(0, min(1, alpha * x + beta))``."""
    x = n.input(0)
    y = binary(n, Op.MUL, x, _scalar_like(x, n.attr("alpha", 0.2)))
    y = binary(n, Op.ADD, y, _scalar_like(x, n.attr("beta", 0.5)))
    return [binary(n, Op.MAXIMUM, binary(n, Op.MINIMUM, y, _scalar_like(x, 1)),
                   _scalar_like(x, 0))]


@converter("Clip")
def clip(n: NodeContext) -> list[Value]:
    """Clip: MAXIMUM with min, then MINIMUM with max (opset < 11: attributes)."""
    x = n.input(0)
    if n.opset < 11:
        lo: Value | None = _scalar_like(x, n.attr("min", -np.inf))
        hi: Value | None = _scalar_like(x, n.attr("max", np.inf))
    else:
        lo = n.input(1) if n.has_input(1) else None
        hi = n.input(2) if n.has_input(2) else None
    y = x
    if lo is not None:
        y = binary(n, Op.MAXIMUM, y, lo)
    if hi is not None:
        y = binary(n, Op.MINIMUM, y, hi)
    return [y]


@converter("Max", "Min")
def max_min(n: NodeContext) -> list[Value]:
    """Max, Min over any number of inputs: a chain of MAXIMUM / MINIMUM."""
    op = Op.MAXIMUM if n.op_type == "Max" else Op.MINIMUM
    values = [n.input(i) for i in range(n.n_inputs)]
    _same_dtype(n, *values)
    y = values[0]
    for v in values[1:]:
        y = binary(n, op, y, v)
    return [y]


@converter("Pow")
def power(n: NodeContext) -> list[Value]:
    """Pow: NNAPI POW (float bases; an integer exponent is converted to the base's type)."""
    base, exponent = n.input(0), n.input(1)
    if base.dtype.kind != "f":
        n.fail(f"integer base ({base.dtype}) is not supported (NNAPI POW is float only)")
    if exponent.dtype != base.dtype and exponent.const is None:
        if exponent.dtype.kind not in "iu":
            n.fail(f"exponent of type {exponent.dtype} with a {base.dtype} base")
        # an integer exponent as a float: exact below 2**24, and beyond that pow over/underflows
        keep = exponent.shape if not exponent.shape else None
        exponent = n.graph.op(Op.CAST, exponent, dtype=base.dtype, shape=keep)
    if exponent.dtype != base.dtype:
        known = exponent.array()
        converted = known.astype(base.dtype)
        if not np.array_equal(converted.astype(known.dtype), known):
            n.fail("exponent values change when converted to the base's type")
        exponent = Value(exponent.name, base.dtype, exponent.shape, const=converted)
    return [binary(n, Op.POW, base, exponent)]


@converter("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual")
def compare(n: NodeContext) -> list[Value]:
    """Comparisons: NNAPI EQUAL / GREATER / ... with a TENSOR_BOOL8 result."""
    a, b = n.input(0), n.input(1)
    _same_dtype(n, a, b)
    return [binary(n, _COMPARE[n.op_type], a, b, dtype=_BOOL)]


@converter("Not")
def logical_not(n: NodeContext) -> list[Value]:
    """Not: LOGICAL_NOT."""
    x = n.input(0)
    return [n.graph.op(Op.LOGICAL_NOT, x, shape=x.shape if not x.shape else None)]


@converter("And", "Or", "Xor")
def logical(n: NodeContext) -> list[Value]:
    """And, Or: LOGICAL_AND / LOGICAL_OR; Xor: NOT_EQUAL on booleans."""
    op = {"And": Op.LOGICAL_AND, "Or": Op.LOGICAL_OR, "Xor": Op.NOT_EQUAL}[n.op_type]
    return [binary(n, op, n.input(0), n.input(1), dtype=_BOOL)]


@converter("IsNaN")
def is_nan(n: NodeContext) -> list[Value]:
    """IsNaN as ``x != x`` (exact)."""
    x = n.input(0)
    return [binary(n, Op.NOT_EQUAL, x, x, dtype=_BOOL)]


@converter("Where")
def where(n: NodeContext) -> list[Value]:
    """Where: NNAPI SELECT, after broadcasting the three inputs to one shape (NNAPI's SELECT
    does not broadcast)."""
    cond, x, y = n.input(0), n.input(1), n.input(2)
    _same_dtype(n, x, y)
    shape = _broadcast_shape(n, cond, x, y)
    if any(d <= 0 for d in shape) and not cond.shape == x.shape == y.shape:
        n.fail(f"the broadcast shape {list(shape)} has dynamic dims the inputs do not share "
               "(SELECT does not broadcast); pass input_shapes=")
    if any(d <= 0 for d in shape):  # one shape: SELECT checks the dims agree at execution
        return [n.graph.op(Op.SELECT, cond, x, y, dtype=x.dtype if x.dtype != np.int64 else
                           np.int32, shape=shape)]
    args = [expand_to(n, v, shape) for v in (cond, x, y)]
    return [n.graph.op(Op.SELECT, *args, dtype=x.dtype if x.dtype != np.int64 else np.int32,
                       shape=shape if not shape else None)]


def expand_to(n: NodeContext, value: Value, shape: tuple[int, ...]) -> Value:
    """``value`` broadcast to ``shape`` exactly (a known value with numpy; a tensor by
    multiplying with ones, or AND with true for booleans — both exact)."""
    if value.shape == shape:
        return value
    if value.const is not None:
        return Value(value.name, value.dtype, shape,
                     const=np.ascontiguousarray(np.broadcast_to(value.const, shape)))
    if value.dtype == _BOOL:
        ones = Value("", _BOOL, shape, const=np.ones(shape, np.bool_))
        return binary(n, Op.LOGICAL_AND, value, ones, dtype=_BOOL)
    if value.dtype in SMALL_INTS:  # x * 1 stays in range
        return retagged(expand_to(n, as_int32(value), shape), value.dtype)
    ones = Value("", value.dtype, shape, const=np.ones(shape, value.dtype))
    return binary(n, Op.MUL, value, ones)


@converter("Cast", newest=25)
def cast(n: NodeContext) -> list[Value]:
    """Cast to float32 / float16 / int32 / int64 / bool and the small integers: NNAPI CAST
    (float -> int truncates), then wrapped around into a small integer type's range as
    onnxruntime does. ``round_mode`` (opset 24) only applies to float8e8m0 targets, which nnrt
    has not."""
    to = int(n.attr("to"))
    n.attr("saturate")
    n.attr("round_mode")
    target = ONNX_NUMPY.get(to)
    if target is None:
        n.fail(f"cast to element type {to} is not supported")
    return [cast_to(n, n.input(0), target)]


@converter("CastLike", newest=25)
def cast_like(n: NodeContext) -> list[Value]:
    """CastLike: Cast to the element type of input 1."""
    n.attr("saturate")
    n.attr("round_mode")
    target = n.input(1).dtype
    return [cast_to(n, n.input(0), target)]


def cast_to(n: NodeContext, x: Value, target: np.dtype[Any]) -> Value:
    """``x`` converted to ``target`` with ONNX's Cast semantics."""
    if x.const is not None:
        return _cast_known(n, x, target)
    if target in SMALL_INTS or x.dtype in SMALL_INTS:
        small = _cast_small(n, x, target)
        if small is not None:
            return small
    same = {np.dtype(np.int64): np.dtype(np.int32)}
    if same.get(target, target) == same.get(x.dtype, x.dtype):
        return Value(x.name, target, x.shape, tensor=x.tensor, hint=x.hint)
    keep = x.shape if not x.shape else None
    if target == _BOOL:  # NNAPI CAST has no bool results: x != 0
        return binary(n, Op.NOT_EQUAL, x, _scalar_like(x, 0), dtype=_BOOL)
    if x.dtype == _BOOL:  # nor bool inputs: select(x, 1, 0)
        kind = same.get(target, target)
        if x.shape and not x.static:  # ones and zeros of x's shape at execution: FILL
            dims = dims_of(n, x, 0, x.rank)
            ones, zeros = (filled(n, dims, v, kind, x.shape) for v in (1, 0))
            return n.graph.op(Op.SELECT, x, ones, zeros, dtype=kind, shape=keep)
        shape = n.static_shape(x) or (1,)
        ones = Value("", kind, shape, const=np.ones(shape, kind))
        zeros = Value("", kind, shape, const=np.zeros(shape, kind))
        return n.graph.op(Op.SELECT, x, ones, zeros, dtype=kind, shape=keep)
    return n.graph.op(Op.CAST, x, dtype=same.get(target, target), shape=keep)


def _cast_small(n: NodeContext, x: Value, target: np.dtype[Any]) -> Value | None:
    """A cast from or to a small integer type held in TENSOR_INT32 (None: a plain CAST).

    Integers keep their operand when every source value is a target value (uint32 values are
    held below 2**31) and are wrapped around otherwise. A float is truncated and reduced modulo
    ``2**bits`` in float arithmetic, exact for every finite value (``t - floor(t / 2**bits) *
    2**bits``: a power-of-two scaling, and a difference of nearby floats), before the CAST to
    int32: onnxruntime's result, which truncates to an integer and keeps its low bits.
    """
    g, keep = n.graph, x.shape if not x.shape else None
    if x.dtype.kind in "iu" and target.kind in "iu":
        if target in (np.int32, np.int64) or fits(x.dtype, target) or (
                x.dtype == np.uint32 and target == np.int32):
            return retagged(x, target)
        return wrap(g, as_int32(x), target, f"Cast of {x.dtype} values to {target}")
    if x.dtype.kind == "f" and target in SMALL_INTS:
        if target == np.uint32:
            n.fail(f"Cast of {x.dtype} values to uint32 may give values above 2**31 - 1, the "
                   "largest nnrt holds (uint32 tensors travel as TENSOR_INT32)")
        zero = _scalar_like(x, 0)
        floored = g.op(Op.FLOOR, g.op(Op.ABS, x, shape=keep), shape=keep)
        negative = binary(n, Op.LESS, x, zero, dtype=_BOOL)
        truncated = g.op(Op.SELECT, negative, g.op(Op.NEG, floored, shape=keep), floored,
                         dtype=x.dtype, shape=keep)
        size = _scalar_like(x, 2.0 ** (8 * target.itemsize))
        turns = g.op(Op.FLOOR, binary(n, Op.DIV, truncated, size), shape=keep)
        low = binary(n, Op.SUB, truncated, binary(n, Op.MUL, turns, size))
        return wrap(g, g.op(Op.CAST, low, dtype=_INT32, shape=keep), target)
    return None  # small integer -> float / bool: a plain CAST / comparison


def _cast_known(n: NodeContext, x: Value, target: np.dtype[Any]) -> Value:
    src = x.array()
    if target.kind in "iu" and src.dtype.kind == "f":
        if not np.isfinite(src).all():
            n.fail("casting NaN or infinity to an integer is undefined")
        src = np.trunc(src)
        if target in SMALL_INTS:  # onnxruntime keeps the integer's low bits
            if np.abs(src).max(initial=0) >= 2.0 ** 63:
                n.fail(f"casting values beyond int64's range to {target} is undefined")
            src = src.astype(np.int64)
    elif target in SMALL_INTS and src.dtype.kind in "iu":
        src = src.astype(np.int64)
    return Value(x.name, target, x.shape, const=src.astype(target))
