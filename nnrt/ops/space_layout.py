"""Helpers shared by the resize and space/depth/batch families: layout flags and NHWC views.

NNAPI's image operations take an optional BOOL ``layout`` input (false: NHWC, the default; true:
NCHW). The kernels work in NHWC: ``to_nhwc`` / ``from_nhwc`` convert shapes and arrays.
"""

from __future__ import annotations

import numpy as np

from nnrt.model.types import OperandType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape
from nnrt.ops.shape_params import QUANT8, Array

__all__ = [
    "QUANT8_TYPES",
    "IMAGE_TYPES",
    "Array",
    "expect_bool_flags",
    "flag",
    "from_nhwc",
    "from_nhwc_array",
    "nhwc_input",
    "nhwc_shape",
    "to_nhwc",
    "to_nhwc_array",
]

T = OperandType

#: The quantised tensor types these families take.
QUANT8_TYPES = QUANT8
#: Every input tensor type NNAPI defines for the resize and space/depth/batch operations.
IMAGE_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, *QUANT8_TYPES)

_TO_NHWC = (0, 2, 3, 1)
_TO_NCHW = (0, 3, 1, 2)


def flag(ctx: OperationContext, i: int) -> bool:
    """Value of the optional BOOL input ``i``: false when absent or omitted (NO_VALUE).

    Raises ``Unknown`` in a static context when the flag is not a constant.
    """
    if ctx.is_omitted(i):
        return False
    return bool(ctx.scalar(i))


def expect_bool_flags(ctx: OperationContext, first: int) -> None:
    """Require inputs ``first`` .. last given to be BOOL scalars (each may be omitted)."""
    for i in range(first, ctx.n_inputs):
        ctx.expect_optional_type(i, T.BOOL)


def nhwc_shape(ctx: OperationContext, layout: int, i: int = 0) -> tuple[bool, Shape]:
    """The layout flag (input ``layout``) and the NHWC shape of the 4-D input ``i``.

    Raises ``Unknown`` while the shape or the flag is not known.
    """
    shape = ctx.shape(i)
    if len(shape) != 4:
        ctx.fail(f"expected rank 4, got {len(shape)}", input=i)
    nchw = flag(ctx, layout)
    return nchw, to_nhwc(shape, nchw)


def nhwc_input(ctx: ExecutionContext, layout: int, i: int = 0) -> tuple[bool, Array]:
    """The layout flag (input ``layout``) and the 4-D input ``i`` as an NHWC array."""
    nchw = flag(ctx, layout)
    return nchw, to_nhwc_array(ctx.tensor(i), nchw)


def to_nhwc(shape: Shape, nchw: bool) -> Shape:
    """A 4-D shape given in the operation's layout, as NHWC."""
    return tuple(shape[k] for k in _TO_NHWC) if nchw else tuple(shape)


def from_nhwc(shape: Shape, nchw: bool) -> Shape:
    """A 4-D NHWC shape, in the operation's layout."""
    return tuple(shape[k] for k in _TO_NCHW) if nchw else tuple(shape)


def to_nhwc_array(x: Array, nchw: bool) -> Array:
    """A 4-D array given in the operation's layout, as NHWC."""
    return np.transpose(x, _TO_NHWC) if nchw else x


def from_nhwc_array(x: Array, nchw: bool) -> Array:
    """A 4-D NHWC array, in the operation's layout."""
    return np.transpose(x, _TO_NCHW) if nchw else x
