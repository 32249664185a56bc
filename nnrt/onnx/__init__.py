"""Import ONNX models: ``nnrt.onnx.load(path_or_bytes_or_ModelProto, input_shapes=...)``.

Needs the ``onnx`` extra (``pip install 'nnrt[onnx]'``). ONNX operators map onto NNAPI
operations, decompositions of them where exact, or nnrt's extension operations (``com.nnrt.*``,
reference driver only); anything else is reported, node by node, in one
:class:`UnsupportedOnnxModel`. See ``docs/onnx.md``.
"""

from nnrt.onnx import ops as _ops  # noqa: F401 - registers the converters
from nnrt.onnx.errors import UnsupportedNode as UnsupportedNode
from nnrt.onnx.errors import UnsupportedOnnxModel as UnsupportedOnnxModel
from nnrt.onnx.importer import load as load

__all__ = ["UnsupportedNode", "UnsupportedOnnxModel", "load"]
