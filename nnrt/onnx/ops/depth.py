"""DepthToSpace and SpaceToDepth: NNAPI DEPTH_TO_SPACE / SPACE_TO_DEPTH with the NCHW flag
(mode DCR; CRD reorders the channels with a GATHER). Known inputs are computed at import with
numpy (ONNX semantics); runtime ones without integer kernels are carried exactly
(:func:`~nnrt.onnx.ops.shape.carried`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.shape import carried, shape_of

__all__ = ["depth_to_space", "space_to_depth"]

Array = np.ndarray[Any, Any]


def _blocks(n: NodeContext, x: Value) -> tuple[tuple[int, ...], int]:
    dims = shape_of(n, x)
    block = int(n.attr("blocksize", 0))
    if len(dims) != 4 or block < 1:
        n.fail(f"expected a 4-D NCHW input and blocksize >= 1, got {list(dims)} and {block}")
    return dims, block


@converter("DepthToSpace")
def depth_to_space(n: NodeContext) -> list[Value]:
    """DepthToSpace: NNAPI DEPTH_TO_SPACE (NCHW) is mode DCR; CRD first reorders the channels
    with a GATHER."""
    x = n.input(0)
    (batch, c, h, w), b = _blocks(n, x)
    mode = n.attr("mode", "DCR")
    if mode not in ("DCR", "CRD") or c % (b * b):
        n.fail(f"mode {mode!r} with {c} channels and blocksize {b} is not supported")
    depth = c // (b * b)
    if x.const is not None:
        split = (batch, b, b, depth, h, w) if mode == "DCR" else (batch, depth, b, b, h, w)
        order = (0, 3, 4, 1, 5, 2) if mode == "DCR" else (0, 1, 4, 2, 5, 3)
        return [x.folded(x.const.reshape(split).transpose(order)
                       .reshape(batch, depth, h * b, w * b))]
    # DCR channel (i * b + j) * depth + k holds CRD channel k * b * b + i * b + j
    crd = np.arange(c, dtype=np.int32).reshape(depth, b * b).T.reshape(-1)

    def build(vs: list[Value], _: Any) -> list[Value]:
        y = vs[0] if mode == "DCR" else n.graph.op(Op.GATHER, vs[0], 1, crd)
        return [n.graph.op(Op.DEPTH_TO_SPACE, y, b, True)]

    return carried(n, [x], build)


@converter("SpaceToDepth", newest=28)
def space_to_depth(n: NodeContext) -> list[Value]:
    """SpaceToDepth: NNAPI SPACE_TO_DEPTH with the NCHW flag is mode DCR (the only mode before
    opset 28); CRD then reorders the channels with a GATHER."""
    x = n.input(0)
    (batch, c, h, w), b = _blocks(n, x)
    mode = n.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        n.fail(f"mode {mode!r} is not supported")
    if h % b or w % b:
        n.fail(f"blocksize {b} does not divide height {h} and width {w}")
    if x.const is not None:
        order = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
        return [x.folded(x.const.reshape(batch, c, h // b, b, w // b, b)
                       .transpose(order).reshape(batch, c * b * b, h // b, w // b))]
    # CRD channel k * b * b + i * b + j is DCR channel (i * b + j) * c + k
    crd = np.arange(c * b * b, dtype=np.int32).reshape(b * b, c).T.reshape(-1)

    def build(vs: list[Value], _: Any) -> list[Value]:
        y = n.graph.op(Op.SPACE_TO_DEPTH, vs[0], b, True)
        return [y if mode == "DCR" else n.graph.op(Op.GATHER, y, 1, crd)]

    return carried(n, [x], build)
