"""Element-wise binary arithmetic with broadcasting: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW.

NNAPI signatures:

* ADD, SUB, MUL, DIV: input 0 and 1 tensors of the same type, rank ≤ 4 (≤ 6 with nnrt's
  ``com.nnrt.rank6`` extension, as for POW), broadcastable; input 2
  an INT32 fused-activation code; output 0 of the inputs' type and broadcast shape.
  TENSOR_INT32 (feature level 4) requires activation NONE; integer DIV rounds toward -infinity.
* MAXIMUM, MINIMUM: input 0 and 1 tensors of the same type among TENSOR_FLOAT16 / FLOAT32 /
  INT32 / QUANT8_ASYMM / QUANT8_ASYMM_SIGNED, rank ≥ 1, broadcastable; output 0 of that type
  (quantised inputs and output may each have their own scale and zero point).
* POW: input 0 (base) and input 1 (exponent) TENSOR_FLOAT16 or TENSOR_FLOAT32 of the same type,
  rank ≤ 4 (6), broadcastable; output 0 of that type. Follows C ``pow`` (negative base with a
  non-integer exponent gives NaN, ``0 ** negative`` gives inf).

Float kernels compute in float64 and round once to the output type, except that ADD, SUB, MUL
and DIV compute in their float type directly: those IEEE operations are correctly rounded, and
float64 (float32 for float16) holds more than twice the significand bits, so rounding the wider
result once gives the very same value — without three conversions per operation.

Quantised kernels (TENSOR_QUANT8_ASYMM and _SIGNED) follow NNAPI's CPU executor bit for bit
(every input and the output has its own scale and zero point; scales are float32):

* ADD, SUB: both inputs, offset by their zero points and shifted left by 20 bits, are scaled by
  quantised multipliers ``scale_i / (2 * max(scale1, scale2))`` (SUB negates input 2's), summed
  in int32 and scaled by ``2 * max(scale1, scale2) / (2**20 * output_scale)``; then the output
  zero point and the fused activation's clamp in the quantised domain. NNAPI's kernel fails when
  that last multiplier is not below 1 (``output_scale`` too small): so does nnrt, at execution.
* MUL: ``(q1 - zp1) * (q2 - zp2)`` in int32 scaled by ``scale1 * scale2 / output_scale``
  (float32 product), which must be below 1 — a static rule for TENSOR_QUANT8_ASYMM (NNAPI's
  validation), an execution failure for _SIGNED (NNAPI's kernel).
* MAXIMUM, MINIMUM: each input requantised to the output's scale and zero point
  (:func:`nnrt.ops.quant.change_quantization`), then the larger / smaller value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK, FusedActivation, OperandType, OperationType
from nnrt.ops import parallel
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import OperationDef, Shape, Specialized, add_definition
from nnrt.ops.fused import apply_activation
from nnrt.ops.quant import (
    activation_range,
    change_quantization,
    is_quantized,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    saturate,
)
from nnrt.ops.shapes import broadcast_inputs, expect_typed_pair

T = OperandType

INPUT1, INPUT2, ACTIVATION = 0, 1, 2

_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
          T.TENSOR_QUANT8_ASYMM_SIGNED)
_KERNEL_TYPES = frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32,
                           T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED})
_DIV_KERNEL_TYPES = frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32})
#: ADD and SUB shift their quantised inputs left by this many bits before rescaling them.
ADD_LEFT_SHIFT = 20

Array = np.ndarray[Any, Any]


def _validate(ctx: OperationContext) -> None:
    ctx.expect_counts(3, 1)
    t = expect_typed_pair(ctx, *_TYPES)
    ctx.expect_activation(ACTIVATION)
    ctx.expect_output_like_input(0, INPUT1)
    _check_ranks(ctx)
    if t == T.TENSOR_INT32 and ctx.constant(ACTIVATION) not in (None, FusedActivation.NONE):
        ctx.fail("TENSOR_INT32 requires fused activation NONE", input=ACTIVATION)
    if ctx.op_type == OperationType.DIV and is_quantized(t):
        ctx.fail(f"DIV does not take {t.name}", input=INPUT1)
    if ctx.op_type == OperationType.MUL and t == T.TENSOR_QUANT8_ASYMM:
        s1, s2, so = _scales(ctx)
        if not so > s1 * s2:
            ctx.fail(f"output scale {float(so):g} must exceed the product of the input scales "
                     f"{float(s1):g} * {float(s2):g}", output=0)


def _check_ranks(ctx: OperationContext) -> None:
    for i in (INPUT1, INPUT2):
        ctx.expect_rank_between(i, 1, NNRT_MAX_RANK)


def _prepare(ctx: OperationContext) -> list[Shape]:
    _check_ranks(ctx)
    return broadcast_inputs(ctx)


def _int_div(a: Array, b: Array) -> Array:
    return np.floor_divide(a, b)


_FLOAT_FUNCS: dict[OperationType, np.ufunc] = {
    OperationType.ADD: np.add,
    OperationType.SUB: np.subtract,
    OperationType.MUL: np.multiply,
    OperationType.DIV: np.divide,
}
_INT_FUNCS: dict[OperationType, Callable[[Array, Array], Array]] = {
    OperationType.ADD: np.add,
    OperationType.SUB: np.subtract,
    OperationType.MUL: np.multiply,
    OperationType.DIV: _int_div,
}


def _execute(ctx: ExecutionContext) -> list[Array]:
    a, b = ctx.tensor(INPUT1), ctx.tensor(INPUT2)
    activation = ctx.scalar(ACTIVATION)
    if is_quantized(ctx.input_type(INPUT1)):
        return [_execute_quant8(ctx, a, b, activation)]
    if ctx.input_type(INPUT1) == T.TENSOR_INT32:
        if activation != FusedActivation.NONE:
            ctx.fail("TENSOR_INT32 requires fused activation NONE", input=ACTIVATION)
        if ctx.op_type == OperationType.DIV and np.any(b == 0):
            ctx.fail("integer division by zero", input=INPUT2)
        return [_INT_FUNCS[ctx.op_type](a.astype(np.int64), b.astype(np.int64))
                .astype(np.int32)]
    func = _FLOAT_FUNCS[ctx.op_type]  # correctly rounded: see the module docstring
    dest = ctx.out(0, overlap=True)  # ufuncs handle a destination aliasing a or b
    if dest is None:
        # a and b have one dtype (validated), of 2 or 4 bytes: most outputs are small
        shape = ctx.output_shapes[0]
        size = math.prod(shape)
        if size * 2 < parallel.MIN_BYTES or size * a.itemsize < parallel.MIN_BYTES:
            result = func(a, b)
            return [apply_activation(result, activation) if activation else result]
        dest = np.empty(shape, a.dtype)
    parallel.ufunc_into(func, a, b, dest)  # large outputs: split over threads
    _activate_in_place(dest, activation)
    return [dest]


def _scales(ctx: OperationContext) -> tuple[np.float32, np.float32, np.float32]:
    """The float32 scales of input 1, input 2 and the output (NNAPI holds them as float)."""
    return (np.float32(ctx.operand(INPUT1).scale), np.float32(ctx.operand(INPUT2).scale),
            np.float32(ctx.output_operand(0).scale))


def _below_one(real: float, what: str) -> tuple[int, int]:
    """NNAPI's ``QuantizeMultiplierSmallerThanOneExp``: the kernel fails unless 0 < real < 1."""
    if not 0.0 < real < 1.0:
        raise ValueError(f"the {what} multiplier {real:g} is not in (0, 1): NNAPI's quantised "
                         "kernel cannot represent it (output scale too small for the input "
                         "scales)")
    return quantize_multiplier(real)


def quant8_multipliers(op_type: OperationType, s1: float, s2: float,
                       so: float) -> list[tuple[int, int]]:
    """The quantised multipliers and shifts of a quant8 ADD / SUB (input 1, input 2, output;
    SUB's input 2 negated) or MUL (output only), computed from the float32 scales as NNAPI's
    ``addQuant8`` / ``subQuant8`` / ``mulQuant8`` do; ``ValueError`` when one is not in (0, 1).
    """
    f1, f2, fo = np.float32(s1), np.float32(s2), np.float32(so)
    if op_type == OperationType.MUL:
        product_scale = f1 * f2  # float32, as in C
        return [_below_one(float(product_scale) / float(fo), "output")]
    twice_max = np.float32(2) * max(f1, f2)
    m1 = _below_one(float(f1) / float(twice_max), "input 1")
    m2 = _below_one(float(f2) / float(twice_max), "input 2")
    if op_type == OperationType.SUB:
        m2 = (-m2[0], m2[1])  # subQuant8 runs the ADD kernel with input 2's multiplier negated
    real_out = float(twice_max) / float(np.float32(1 << ADD_LEFT_SHIFT) * fo)
    return [m1, m2, _below_one(real_out, "output")]


def _execute_quant8(ctx: ExecutionContext, a: Array, b: Array, activation: int) -> Array:
    """ADD, SUB, MUL of quant8 tensors: NNAPI's ``addQuant8`` / ``subQuant8`` / ``mulQuant8``."""
    t = ctx.input_type(INPUT1)
    zp1, zp2 = ctx.operand(INPUT1).zero_point, ctx.operand(INPUT2).zero_point
    out = ctx.output_operand(0)
    try:
        multipliers = quant8_multipliers(ctx.op_type, ctx.operand(INPUT1).scale,
                                         ctx.operand(INPUT2).scale, out.scale)
    except ValueError as exc:
        ctx.fail(str(exc), output=0)
        raise
    x1 = a.astype(np.int64) - zp1
    x2 = b.astype(np.int64) - zp2
    if ctx.op_type == OperationType.MUL:
        raw = multiply_by_quantized_multiplier(x1 * x2, *multipliers[0])
    else:
        (m1, shift1), (m2, shift2), (mo, shift_o) = multipliers
        total = (multiply_by_quantized_multiplier(x1 << ADD_LEFT_SHIFT, m1, shift1)
                 + multiply_by_quantized_multiplier(x2 << ADD_LEFT_SHIFT, m2, shift2))
        raw = multiply_by_quantized_multiplier(total, mo, shift_o)
    low, high = activation_range(activation, out.scale, out.zero_point, t)
    return saturate(raw + out.zero_point, t, low, high)


def _specialize(ctx: OperationContext) -> Specialized | None:
    """ADD, SUB, MUL, DIV of float tensors whose fixed output is small: the ufunc itself (then
    the activation), what :func:`_execute` runs for them without a destination."""
    if ctx.input_type(INPUT1) not in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
        return None
    activation = ctx.constant(ACTIVATION)
    if activation.__class__ is not int:  # given at execution time: the general kernel
        return None
    size = math.prod(broadcast_inputs(ctx)[0])
    if size * 4 >= parallel.MIN_BYTES:
        return None  # large: the general kernel may split it over threads
    func = _FLOAT_FUNCS[ctx.op_type]
    if activation == FusedActivation.NONE:
        return func, (INPUT1, INPUT2)

    def run(a: Array, b: Array) -> Array:
        return apply_activation(func(a, b), activation)

    return run, (INPUT1, INPUT2)


def _activate_in_place(x: Array, code: int) -> None:
    """``apply_activation`` computed into ``x`` itself (same values, NaN included)."""
    if code == FusedActivation.RELU:
        np.maximum(x, 0, out=x)
    elif code == FusedActivation.RELU1:
        np.clip(x, -1, 1, out=x)
    elif code == FusedActivation.RELU6:
        np.clip(x, 0, 6, out=x)
    elif code != FusedActivation.NONE:
        raise ValueError(f"invalid fused activation code {code}")


for _op in (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV):
    add_definition(OperationDef(
        type=_op, validate=_validate, prepare=_prepare, execute=_execute,
        inputs=("input1", "input2", "activation"),
        kernel_types=_DIV_KERNEL_TYPES if _op == OperationType.DIV else _KERNEL_TYPES,
        specialize=_specialize, nnapi_max_rank=4,
    ))


# -- MAXIMUM, MINIMUM, POW --------------------------------------------------------------------

_POW_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)


def _check_max_min_ranks(ctx: OperationContext) -> None:
    for i in (INPUT1, INPUT2):
        ctx.expect_rank_at_least(i, 1)


def _validate_max_min(ctx: OperationContext) -> None:
    ctx.expect_counts(2, 1)
    expect_typed_pair(ctx, *_TYPES)
    ctx.expect_output_like_input(0, INPUT1)
    _check_max_min_ranks(ctx)


def _prepare_max_min(ctx: OperationContext) -> list[Shape]:
    _check_max_min_ranks(ctx)
    return broadcast_inputs(ctx)


def _execute_max_min(ctx: ExecutionContext) -> list[Array]:
    a, b = ctx.tensor(INPUT1), ctx.tensor(INPUT2)
    pick = np.maximum if ctx.op_type == OperationType.MAXIMUM else np.minimum
    t = ctx.input_type(INPUT1)
    if is_quantized(t):
        out = ctx.output_operand(0)
        a, b = (change_quantization(x, ctx.operand(i).scale, ctx.operand(i).zero_point,
                                    out.scale, out.zero_point, t)
                for i, x in ((INPUT1, a), (INPUT2, b)))
        return [pick(a, b)]
    if t == T.TENSOR_INT32:
        return [pick(a, b).astype(np.int32)]
    # NaN in either input propagates to the output.
    return [pick(a.astype(np.float64), b.astype(np.float64))]


def _check_pow_ranks(ctx: OperationContext) -> None:
    for i in (INPUT1, INPUT2):
        ctx.expect_rank_between(i, 0, NNRT_MAX_RANK)


def _validate_pow(ctx: OperationContext) -> None:
    ctx.expect_counts(2, 1)
    expect_typed_pair(ctx, *_POW_TYPES)
    ctx.expect_output_like_input(0, INPUT1)
    _check_pow_ranks(ctx)


def _prepare_pow(ctx: OperationContext) -> list[Shape]:
    _check_pow_ranks(ctx)
    return broadcast_inputs(ctx)


def _execute_pow(ctx: ExecutionContext) -> list[Array]:
    base = ctx.tensor(INPUT1).astype(np.float64)
    exponent = ctx.tensor(INPUT2).astype(np.float64)
    # Round to the output type here, under the kernel's errstate: POW may overflow float16.
    return [np.power(base, exponent).astype(ctx.output_dtype(0))]


for _op in (OperationType.MAXIMUM, OperationType.MINIMUM):
    add_definition(OperationDef(
        type=_op, validate=_validate_max_min, prepare=_prepare_max_min,
        execute=_execute_max_min, inputs=("input1", "input2"), kernel_types=frozenset(_TYPES),
    ))

add_definition(OperationDef(
    type=OperationType.POW, validate=_validate_pow, prepare=_prepare_pow, execute=_execute_pow,
    inputs=("base", "exponent"), kernel_types=frozenset(_POW_TYPES), nnapi_max_rank=4,
))
