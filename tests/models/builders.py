"""Structurally realistic ONNX models built with ``onnx.helper``, random weights, seeded.

* :func:`transformer_block` — a pre-norm transformer encoder block as PyTorch exports it:
  LayerNormalization, Q/K/V projections (MatMul + Add), heads split by a Reshape whose shape
  comes from a ``Shape -> Gather -> Unsqueeze -> Concat`` sub-graph, scaled dot-product attention
  with Softmax, the output projection, residual Adds, and an MLP with GELU written with Erf.
* :func:`resnet_cnn` — a small ResNet: a Conv/BatchNormalization/Relu stem, MaxPool, an
  identity residual block, a down-sampling block with a 1x1 projection shortcut,
  GlobalAveragePool, Flatten and a Gemm classifier.

Both return a ``ModelProto`` (opset 17, IR 8, loadable by onnxruntime) with symbolic batch
(and sequence) dims, to be fixed with ``nnrt.onnx.load(..., input_shapes=...)``. The benchmark
reuses them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["OPSET", "resnet_cnn", "transformer_block"]

OPSET = 17
Array = np.ndarray[Any, Any]


class _Graph:
    """Nodes and initializers under construction, with fresh names."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def name(self, stem: str) -> str:
        self._count += 1
        return f"{stem}_{self._count}"

    def const(self, array: Array, stem: str = "w") -> str:
        name = self.name(stem)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, shape: tuple[int, ...], fan_in: int, stem: str = "w") -> str:
        """He-initialised weights: activations stay O(1) through the network."""
        scale = math.sqrt(2.0 / fan_in)
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32), stem)

    def vector(self, size: int, scale: float = 0.1, offset: float = 0.0, stem: str = "b") -> str:
        values = offset + self.rng.standard_normal(size) * scale
        return self.const(values.astype(np.float32), stem)

    def node(self, op: str, inputs: list[str], outputs: int = 1, **attrs: Any) -> str:
        """Add one node; returns its (first) output name."""
        names = [self.name(op.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=self.name(op), **attrs))
        return names[0]

    def model(self, name: str, inputs: list[onnx.ValueInfoProto], output: str,
              output_shape: list[Any]) -> onnx.ModelProto:
        final = helper.make_node("Identity", [output], ["output"], name="output")
        graph = helper.make_graph(
            [*self.nodes, final], name, inputs,
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, output_shape)],
            self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  ir_version=8, producer_name="nnrt-tests")
        onnx.checker.check_model(model)
        return model


# -- transformer encoder block -------------------------------------------------------------

def _layer_norm(g: _Graph, x: str, d: int) -> str:
    return g.node("LayerNormalization", [x, g.vector(d, 0.1, 1.0, "gamma"), g.vector(d)],
                  axis=-1, epsilon=1e-5)


def _linear(g: _Graph, x: str, d_in: int, d_out: int) -> str:
    y = g.node("MatMul", [x, g.weight((d_in, d_out), d_in)])
    return g.node("Add", [y, g.vector(d_out)])


def _dims(g: _Graph, x: str) -> tuple[str, str]:
    """The batch and sequence dims of ``x`` as [1] int64 tensors (PyTorch's export style)."""
    shape = g.node("Shape", [x])
    axes = g.const(np.array([0], np.int64), "axes")
    batch = g.node("Unsqueeze", [g.node("Gather", [shape, g.const(np.array(0, np.int64))],
                                        axis=0), axes])
    seq = g.node("Unsqueeze", [g.node("Gather", [shape, g.const(np.array(1, np.int64))],
                                      axis=0), axes])
    return batch, seq


def _heads(g: _Graph, x: str, dims: tuple[str, str], heads: int, d: int,
           perm: list[int]) -> str:
    """[B, S, D] -> [B, S, H, D/H] (shape from the dims sub-graph) -> transposed by ``perm``."""
    split = g.const(np.array([heads, d // heads], np.int64), "heads")
    shape = g.node("Concat", [dims[0], dims[1], split], axis=0)
    return g.node("Transpose", [g.node("Reshape", [x, shape])], perm=perm)


def _attention(g: _Graph, h: str, dims: tuple[str, str], heads: int, d: int) -> str:
    q = _heads(g, _linear(g, h, d, d), dims, heads, d, [0, 2, 1, 3])   # [B, H, S, Dh]
    k = _heads(g, _linear(g, h, d, d), dims, heads, d, [0, 2, 3, 1])   # [B, H, Dh, S]
    v = _heads(g, _linear(g, h, d, d), dims, heads, d, [0, 2, 1, 3])   # [B, H, S, Dh]
    scale = g.const(np.array(1.0 / math.sqrt(d // heads), np.float32), "scale")
    scores = g.node("Mul", [g.node("MatMul", [q, k]), scale])
    context = g.node("MatMul", [g.node("Softmax", [scores], axis=-1), v])
    merged = g.node("Transpose", [context], perm=[0, 2, 1, 3])      # [B, S, H, Dh]
    back = g.node("Concat", [dims[0], dims[1], g.const(np.array([d], np.int64), "d")], axis=0)
    return _linear(g, g.node("Reshape", [merged, back]), d, d)


def _gelu(g: _Graph, x: str) -> str:
    """0.5 * x * (1 + erf(x / sqrt(2))), as torch.nn.GELU exports before opset 20."""
    erf = g.node("Erf", [g.node("Div", [x, g.const(np.array(math.sqrt(2.0), np.float32))])])
    one_plus = g.node("Add", [erf, g.const(np.array(1.0, np.float32), "one")])
    return g.node("Mul", [g.node("Mul", [x, one_plus]),
                          g.const(np.array(0.5, np.float32), "half")])


def transformer_block(d: int = 64, heads: int = 4, *, seed: int = 0) -> onnx.ModelProto:
    """A pre-norm encoder block on ``x`` [batch, seq, d] -> ``output`` [batch, seq, d]."""
    if d % heads:
        raise ValueError(f"d={d} is not a multiple of heads={heads}")
    g = _Graph(seed)
    x = "x"
    dims = _dims(g, x)
    attended = g.node("Add", [x, _attention(g, _layer_norm(g, x, d), dims, heads, d)])
    hidden = _gelu(g, _linear(g, _layer_norm(g, attended, d), d, 4 * d))
    out = g.node("Add", [attended, _linear(g, hidden, 4 * d, d)])
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", d])]
    return g.model("transformer_block", inputs, out, ["batch", "seq", d])


# -- ResNet-style CNN ------------------------------------------------------------------------

def _conv_bn(g: _Graph, x: str, c_in: int, c_out: int, kernel: int, stride: int,
             relu: bool) -> str:
    pad = kernel // 2
    w = g.weight((c_out, c_in, kernel, kernel), c_in * kernel * kernel)
    y = g.node("Conv", [x, w], kernel_shape=[kernel, kernel], strides=[stride, stride],
               pads=[pad, pad, pad, pad])
    variance = g.const((0.5 + g.rng.random(c_out)).astype(np.float32), "var")
    y = g.node("BatchNormalization", [y, g.vector(c_out, 0.1, 1.0, "scale"), g.vector(c_out),
                                      g.vector(c_out, 0.1, 0.0, "mean"), variance],
               epsilon=1e-5)
    return g.node("Relu", [y]) if relu else y


def _block(g: _Graph, x: str, c_in: int, c_out: int, stride: int) -> str:
    y = _conv_bn(g, x, c_in, c_out, 3, stride, relu=True)
    y = _conv_bn(g, y, c_out, c_out, 3, 1, relu=False)
    shortcut = x if stride == 1 and c_in == c_out else _conv_bn(g, x, c_in, c_out, 1, stride,
                                                                relu=False)
    return g.node("Relu", [g.node("Add", [y, shortcut])])


def resnet_cnn(size: int = 32, channels: int = 16, classes: int = 10, *,
               seed: int = 0) -> onnx.ModelProto:
    """``x`` [batch, 3, size, size] -> ``output`` [batch, classes] logits."""
    g = _Graph(seed)
    y = _conv_bn(g, "x", 3, channels, 3, 1, relu=True)
    y = g.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = _block(g, y, channels, channels, 1)
    y = _block(g, y, channels, 2 * channels, 2)
    y = g.node("Flatten", [g.node("GlobalAveragePool", [y])], axis=1)
    logits = g.node("Gemm", [y, g.weight((classes, 2 * channels), 2 * channels),
                             g.vector(classes)], transB=1)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, size, size])]
    return g.model("resnet_cnn", inputs, logits, ["batch", classes])
