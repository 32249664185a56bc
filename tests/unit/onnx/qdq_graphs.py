"""ONNX graphs written as onnxruntime's QDQ quantiser writes them, and small readers of the
imported NNAPI models: shared by ``test_quantized.py`` (structure) and
``test_quantized_numbers.py`` (values against onnxruntime)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import nnrt
from nnrt.model.operand import Operand
from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(26)

class Qdq:
    """An ONNX graph written the way onnxruntime's QDQ quantiser writes one."""

    def __init__(self, act: Any = np.uint8) -> None:
        self.act = np.dtype(act)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def const(self, value: Any, stem: str = "c") -> str:
        name = self.name(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], outputs: int = 1, **attrs: Any) -> list[str]:
        names = [self.name(op.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=self.name(op), **attrs))
        return names

    def qdq(self, x: str, scale: float, zero_point: int, dtype: Any = None) -> str:
        """Q then DQ of activation ``x`` (the same parameters)."""
        kind = np.dtype(dtype or self.act)
        s = self.const(np.float32(scale), "scale")
        z = self.const(np.asarray(zero_point, kind), "zp")
        (q,) = self.node("QuantizeLinear", [x, s, z])
        return self.node("DequantizeLinear", [q, s, z])[0]

    def weight(self, q: Array, scale: Any, zero_point: Any, axis: int | None = None) -> str:
        """DQ of a quantised initializer (per tensor, or per axis with 1-D scale / zp)."""
        attrs = {} if axis is None else {"axis": axis}
        return self.node("DequantizeLinear", [self.const(q, "w"), self.const(
            np.asarray(scale, np.float32), "ws"), self.const(np.asarray(zero_point, q.dtype),
                                                             "wz")], **attrs)[0]

    def model(self, inputs: dict[str, tuple[int, ...]], output: str, opset: int = 13) -> Any:
        infos = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v))
                 for k, v in inputs.items()]
        self.nodes.append(helper.make_node("Identity", [output], ["y"]))
        graph = helper.make_graph(self.nodes, "qdq", infos, [onnx.ValueInfoProto(name="y")],
                                  self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                 ir_version=8)


def ops(model: nnrt.Model) -> list[Op]:
    return [op.type for op in model.operations]


def the(model: nnrt.Model, op_type: Op) -> Any:
    (found,) = [op for op in model.operations if op.type == op_type]
    return found


def operand(model: nnrt.Model, index: int) -> Operand:
    return model.operands[index]


def quant(o: Operand) -> tuple[T, float, int]:
    return o.type, o.scale, o.zero_point


def f32(x: float) -> float:
    return float(np.float32(x))



def conv_model(act: Any, w_q: Array, w_scale: Any, w_zp: Any, axis: int | None,
               group: int = 1, bias: bool = True) -> tuple[Any, float]:
    """x [1, C, 6, 6] -> Q/DQ -> Conv(DQ(w), DQ(b)) -> Q/DQ; returns the model and x_scale."""
    g = Qdq(act)
    zp_x = 3 if np.dtype(act) == np.uint8 else -5
    x = g.qdq("x", 0.05, zp_x)
    out = w_q.shape[0]
    inputs = [x, g.weight(w_q, w_scale, w_zp, axis)]
    if bias:
        b_scale = np.float32(0.05) * np.asarray(w_scale, np.float32)
        b = RNG.integers(-300, 300, out).astype(np.int32)
        inputs.append(g.weight(b, b_scale, np.zeros_like(b_scale, np.int32),
                               0 if axis is not None else None))
    (y,) = g.node("Conv", inputs, kernel_shape=list(w_q.shape[2:]), pads=[1, 1, 1, 1],
                  group=group)
    channels = w_q.shape[1] * group
    return g.model({"x": (1, channels, 6, 6)}, g.qdq(y, 0.1, 7 if zp_x == 3 else -2)), 0.05



def gemm_model(w: Array, scale: Any, zp: Any, axis: int | None, trans_b: int) -> Any:
    g = Qdq(np.int8)
    x = g.qdq("x", 0.04, -1)
    units = w.shape[0] if trans_b else w.shape[1]
    b_scale = np.float32(0.04) * np.asarray(scale, np.float32)
    b = g.weight(RNG.integers(-500, 500, units).astype(np.int32), b_scale,
                 np.zeros_like(b_scale, np.int32), 0 if axis is not None else None)
    (y,) = g.node("Gemm", [x, g.weight(w, scale, zp, axis), b], transB=trans_b)
    k = w.shape[1] if trans_b else w.shape[0]
    return g.model({"x": (2, k)}, g.qdq(y, 0.2, 4))
