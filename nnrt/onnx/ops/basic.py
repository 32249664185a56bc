"""Constant, Identity and Dropout (inference): values pass through, nothing is computed."""

from __future__ import annotations

import numpy as np

from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter


@converter("Constant")
def constant(n: NodeContext) -> list[Value]:
    """Constant: the ``value`` tensor, or one of the ``value_*`` attributes."""
    for name, dtype in (("value", None), ("value_float", np.float32),
                        ("value_floats", np.float32), ("value_int", np.int64),
                        ("value_ints", np.int64)):
        if n.has_attr(name):
            return [n.graph.const(np.asarray(n.attr(name), dtype))]
    n.fail("only value, value_float(s) and value_int(s) constants are supported")


@converter("Identity")
def identity(n: NodeContext) -> list[Value]:
    """Identity: the input itself."""
    return [n.input(0)]


@converter("Dropout")
def dropout(n: NodeContext) -> list[Value]:
    """Dropout at inference: the input itself (and an all-true mask if asked for)."""
    x = n.input(0)
    n.attr("seed")
    if n.opset < 12:
        if n.attr("is_test", 1) == 0 and n.opset < 7:
            n.fail("training-mode Dropout is not supported")
        ratio_ok = True
    else:
        ratio_ok = not n.has_input(2) or (
            n.input(2).const is not None and not bool(n.input(2).const))
    n.attr("ratio")
    if not ratio_ok:
        n.fail("training_mode must be a known false at inference")
    mask = Value("", np.dtype(np.bool_), x.shape, const=np.ones(n.static_shape(x), np.bool_)) \
        if len(n.node.output) > 1 and n.node.output[1] else None
    return [x] if mask is None else [x, mask]
