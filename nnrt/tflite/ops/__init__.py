"""The TFLite builtin converters, one module per family; importing them registers them."""

from nnrt.tflite.ops import control as control
from nnrt.tflite.ops import elementwise as elementwise
from nnrt.tflite.ops import nn as nn
from nnrt.tflite.ops import shape as shape

__all__ = ["control", "elementwise", "nn", "shape"]
