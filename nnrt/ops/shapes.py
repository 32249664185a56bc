"""Shape rules shared by several operations (NNAPI broadcasting)."""

from __future__ import annotations

from nnrt.model.types import OperandType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops._framework.registry import Shape

__all__ = ["broadcast_inputs", "broadcast_shapes", "expect_typed_pair"]


def broadcast_shapes(ctx: OperationContext, a: Shape, b: Shape, *, inputs: tuple[int, int] = (0, 1)
                     ) -> Shape:
    """NNAPI (numpy-style) broadcast of two shapes: trailing dims aligned, equal or 1.

    Raises ``BadData`` naming the two inputs and the mismatching dimensions.
    """
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    out: list[int] = []
    for axis, (x, y) in enumerate(zip(pa, pb, strict=True)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            ctx.fail(f"shapes {tuple(a)} and {tuple(b)} of inputs {inputs[0]} and {inputs[1]} "
                     f"cannot be broadcast (dimension {axis}: {x} vs {y})", input=inputs[1])
    return tuple(out)


def expect_typed_pair(ctx: OperationContext, *types: OperandType) -> OperandType:
    """Inputs 0 and 1 present, of one of ``types``, and of the same type; returns that type."""
    t = ctx.expect_type(0, *types)
    ctx.expect_type(1, *types)
    ctx.expect_same_type(1, 0)
    return t


def broadcast_inputs(ctx: OperationContext) -> list[Shape]:
    """The one output shape of an element-wise binary op: inputs 0 and 1 broadcast."""
    return [broadcast_shapes(ctx, ctx.shape(0), ctx.shape(1))]
