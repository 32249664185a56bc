"""The fixed table of numpy kernels generated code may call: :data:`KERNELS`, by name.

The table is assembled here from the family modules, which share the helpers of
:mod:`nnrt.drivers.cpu.kernels.base` and never import this package module:

* :mod:`~nnrt.drivers.cpu.kernels.basic`: views and copies, matrix products, element-wise
  arithmetic and activations, SOFTMAX, MEAN, TRANSPOSE, CONCATENATION;
* :mod:`~nnrt.drivers.cpu.kernels.nn`: convolutions and pooling;
* :mod:`~nnrt.drivers.cpu.kernels.ext`: nnrt's extension operations (ERF, LAYER_NORMALIZATION);
* :mod:`~nnrt.drivers.cpu.kernels.math`: element-wise math, reductions, LOG_SOFTMAX,
  INSTANCE_NORMALIZATION;
* :mod:`~nnrt.drivers.cpu.kernels.data`: data movement (slices, padding, tiling, gathering);
* :mod:`~nnrt.drivers.cpu.kernels.lstm`: UNIDIRECTIONAL_SEQUENCE_LSTM;
* :mod:`~nnrt.drivers.cpu.kernels.typed`: int32 and bool values;
* :mod:`~nnrt.drivers.cpu.kernels.quant`: quantised convolutions, FULLY_CONNECTED, ADD / SUB /
  MUL, pooling and table lookups;
* :mod:`~nnrt.drivers.cpu.kernels.tuned`: the variants the stage-2 autotuner may pick instead of
  a stage-1 kernel (its ``VARIANTS``).

Bytecode names kernels by their key in :data:`KERNELS` (stage-1 and stage-2 code alike).

Every kernel computing a result takes its destination first (``out``, a C-contiguous array of
the result's exact shape) and writes every element of it, using ``out=`` so nothing is
allocated where numpy allows; view kernels (``slot``, ``view``, ``typed_slot``) return an array
instead. Kernels are called by verified generated code only, but the code comes from bytecode
that may be hostile: kernels never build arrays from caller-given strides or addresses, so a
bad argument is an exception, never a bad memory access.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nnrt.drivers.cpu.kernels.basic import BASIC_KERNELS
from nnrt.drivers.cpu.kernels.data import DATA_KERNELS
from nnrt.drivers.cpu.kernels.ext import EXT_KERNELS
from nnrt.drivers.cpu.kernels.lstm import LSTM_KERNELS
from nnrt.drivers.cpu.kernels.math import MATH_KERNELS
from nnrt.drivers.cpu.kernels.nn import NN_KERNELS
from nnrt.drivers.cpu.kernels.quant import QUANT_KERNELS
from nnrt.drivers.cpu.kernels.tuned import TUNED_KERNELS
from nnrt.drivers.cpu.kernels.typed import TYPED_KERNELS

__all__ = ["KERNELS"]

#: Every kernel generated code may call, by name (stage 1 and stage 2).
KERNELS: dict[str, Callable[..., Any]] = {
    **BASIC_KERNELS,
    **NN_KERNELS,
    **EXT_KERNELS,
    **MATH_KERNELS,
    **DATA_KERNELS,
    **LSTM_KERNELS,
    **TYPED_KERNELS,
    **QUANT_KERNELS,
    **TUNED_KERNELS,
}
