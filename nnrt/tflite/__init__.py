"""Import TFLite models: ``nnrt.tflite.load(path_or_bytes, input_shapes=..., signature=...)``.

TFLite builtins map onto NNAPI operations almost one to one (NNAPI was designed as TFLite's
backend); anything else, custom operators included, is reported operator by operator in one
:class:`UnsupportedTfliteModel`. See ``docs/tflite.md``.
"""

from nnrt.tflite import ops as _ops  # noqa: F401 - registers the converters
from nnrt.tflite.errors import UnsupportedOperator as UnsupportedOperator
from nnrt.tflite.errors import UnsupportedTfliteModel as UnsupportedTfliteModel
from nnrt.tflite.importer import load as load

__all__ = ["UnsupportedOperator", "UnsupportedTfliteModel", "load"]
