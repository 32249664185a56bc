"""Element-wise unary math: ABS, EXP, LOG, SQRT, RSQRT, NEG, SIN, FLOOR.

NNAPI signature (all eight): input 0 a tensor, output 0 a tensor of the same type and shape.

* ABS, NEG: TENSOR_FLOAT16, TENSOR_FLOAT32 or TENSOR_INT32 (ABS on INT32 since feature level 4);
  rank ≥ 1.
* EXP, LOG, SQRT, SIN: TENSOR_FLOAT16 or TENSOR_FLOAT32; rank ≥ 1.
* RSQRT: TENSOR_FLOAT16, TENSOR_FLOAT32, or (feature level 7) TENSOR_QUANT8_ASYMM /
  TENSOR_QUANT8_ASYMM_SIGNED whose output may have its own scale and zero point; rank ≥ 1.
* FLOOR: TENSOR_FLOAT16 or TENSOR_FLOAT32; rank ≤ 4 (≤ 6 with nnrt's ``com.nnrt.rank6``
  extension).

Float kernels follow the C library in float64: LOG(0) = -inf, LOG and SQRT of a negative number
are NaN, RSQRT(+0) = +inf, RSQRT(-0) = -inf. INT32 ABS / NEG wrap around at -2**31 like two's
complement arithmetic. Quantised RSQRT validates but is not implemented by the reference kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK, OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import OperationDef, Shape, add_definition

T = OperandType
Op = OperationType
Array = np.ndarray[Any, Any]

INPUT = 0

_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


@dataclass(frozen=True)
class _Unary:
    """How one unary operation is typed, rank-limited and computed."""

    types: tuple[OperandType, ...]
    float_fn: Callable[[Array], Array]
    int_fn: Callable[[Array], Array] | None = None
    max_rank: int | None = None
    nnapi_max_rank: int | None = None

    @property
    def kernel_types(self) -> frozenset[OperandType]:
        """The types the reference kernel implements (floats, plus INT32 when defined)."""
        kernels = set(_FLOATS)
        if self.int_fn is not None:
            kernels.add(T.TENSOR_INT32)
        return frozenset(kernels)


def _rsqrt(x: Array) -> Array:
    return np.asarray(1.0 / np.sqrt(x))


_UNARY: dict[OperationType, _Unary] = {
    Op.ABS: _Unary((*_FLOATS, T.TENSOR_INT32), np.abs, np.abs),
    Op.EXP: _Unary(_FLOATS, np.exp),
    Op.LOG: _Unary(_FLOATS, np.log),
    Op.SQRT: _Unary(_FLOATS, np.sqrt),
    Op.RSQRT: _Unary((*_FLOATS, *_QUANT8), _rsqrt),
    Op.NEG: _Unary((*_FLOATS, T.TENSOR_INT32), np.negative, np.negative),
    Op.SIN: _Unary(_FLOATS, np.sin),
    Op.FLOOR: _Unary(_FLOATS, np.floor, max_rank=NNRT_MAX_RANK, nnapi_max_rank=4),
}


def _check_rank(ctx: OperationContext) -> None:
    spec = _UNARY[ctx.op_type]
    if spec.max_rank is not None:
        ctx.expect_rank_between(INPUT, 0, spec.max_rank)
    else:
        ctx.expect_rank_at_least(INPUT, 1)


def _validate(ctx: OperationContext) -> None:
    spec = _UNARY[ctx.op_type]
    ctx.expect_counts(1, 1)
    ctx.expect_type(INPUT, *spec.types)
    ctx.expect_output_like_input(0, INPUT)
    _check_rank(ctx)


def _prepare(ctx: OperationContext) -> list[Shape]:
    _check_rank(ctx)
    return [ctx.shape(INPUT)]


def _execute(ctx: ExecutionContext) -> list[Array]:
    spec = _UNARY[ctx.op_type]
    x = ctx.tensor(INPUT)
    if ctx.input_type(INPUT) == T.TENSOR_INT32:
        if spec.int_fn is None:  # unreachable: kernel_types excludes INT32 for this op
            ctx.fail("TENSOR_INT32 is not implemented", input=INPUT)
        # int32 arithmetic wraps: ABS / NEG of -2**31 stay -2**31.
        return [spec.int_fn(x.astype(np.int64)).astype(np.int32)]
    result = np.asarray(spec.float_fn(x.astype(np.float64)))
    # Round to the output type here, under the kernel's errstate: EXP may overflow float16.
    return [result.astype(ctx.output_dtype(0))]


for _op, _spec in _UNARY.items():
    add_definition(OperationDef(
        type=_op, validate=_validate, prepare=_prepare, execute=_execute, inputs=("input",),
        kernel_types=_spec.kernel_types, nnapi_max_rank=_spec.nnapi_max_rank,
    ))
