"""The converters, one module per family of ONNX operators (importing registers them)."""

from nnrt.onnx.ops import basic as basic
from nnrt.onnx.ops import control as control
from nnrt.onnx.ops import conv as conv
from nnrt.onnx.ops import depth as depth
from nnrt.onnx.ops import elementwise as elementwise
from nnrt.onnx.ops import linear as linear
from nnrt.onnx.ops import normalization as normalization
from nnrt.onnx.ops import pooling as pooling
from nnrt.onnx.ops import qdq as qdq
from nnrt.onnx.ops import qdynamic as qdynamic
from nnrt.onnx.ops import qlinear as qlinear
from nnrt.onnx.ops import ranking as ranking
from nnrt.onnx.ops import recurrent as recurrent
from nnrt.onnx.ops import reduce as reduce
from nnrt.onnx.ops import resize as resize
from nnrt.onnx.ops import shape as shape
from nnrt.onnx.ops import tensor as tensor

__all__ = [
    "basic",
    "control",
    "conv",
    "depth",
    "elementwise",
    "linear",
    "normalization",
    "pooling",
    "qdq",
    "qdynamic",
    "qlinear",
    "ranking",
    "recurrent",
    "reduce",
    "resize",
    "shape",
    "tensor",
]
