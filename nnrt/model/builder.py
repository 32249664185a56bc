"""``ModelBuilder``: a readable way to build the same ``Model`` the low-level API builds.

::

    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 28, 28, 1))
    y = b.conv2d(x, b.constant(w), b.constant(bias), stride=2, padding="same", activation="relu")
    b.output(b.softmax(b.fully_connected(b.reshape(y, (1, -1)), fc_w, fc_b)))
    model = b.build()            # a finished nnrt.Model

Every helper adds one NNAPI operation, validates it on the spot (errors name the operation) and
declares its outputs with the shapes static inference computes. Python scalars become constants
of the type NNAPI expects in that slot's position (INT32, FLOAT32 / FLOAT16, BOOL).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.errors import BadData
from nnrt.model.model import Model, name_dims, refine_dims, rename_operand, set_io_dtype
from nnrt.model.operand import FLOAT_TENSOR_TYPES, is_scalar
from nnrt.model.types import FusedActivation, OperandType, OperationType, PaddingCode

__all__ = ["ModelBuilder", "Omitted", "Tensor"]

T = OperandType
Op = OperationType

_DTYPE_TYPES: dict[str, OperandType] = {
    "float32": T.TENSOR_FLOAT32,
    "float16": T.TENSOR_FLOAT16,
    "int32": T.TENSOR_INT32,
    "bool": T.TENSOR_BOOL8,
    "uint8": T.TENSOR_QUANT8_ASYMM,
    "int8": T.TENSOR_QUANT8_ASYMM_SIGNED,
}
_ACTIVATIONS = {None: 0, "none": 0, "relu": 1, "relu1": 2, "relu6": 3}


@dataclass(frozen=True)
class Tensor:
    """A handle on one operand of the model being built."""

    index: int
    type: OperandType
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Omitted:
    """An omitted optional input of the given operand type (NO_VALUE)."""

    type: OperandType = T.TENSOR_FLOAT32


Arg = Tensor | Omitted | np.ndarray[Any, Any] | int | float | bool


class ModelBuilder:
    """Builds an ``nnrt.Model`` one named operation at a time; :meth:`build` finishes it."""

    def __init__(self, *, relaxed: bool = False) -> None:
        self.model = Model()
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        self._relaxed = relaxed

    # -- operands ---------------------------------------------------------------------------

    def input(self, name: str, shape: Sequence[int | str], dtype: str | OperandType = "float32",
              *, scale: float = 0.0, zero_point: int = 0) -> Tensor:
        """Declare the next model input: 0 in ``shape`` is an unknown dimension, a string an
        unknown one with that name (``("batch", 3, 32, 32)``). ``"int64"`` declares a
        TENSOR_INT32 input that callers feed int64 data (``io_dtype``)."""
        io_dtype = "int64" if isinstance(dtype, str | np.dtype) and np.dtype(
            dtype) == np.int64 else None
        op_type = T.TENSOR_INT32 if io_dtype else _operand_type(dtype)
        dims = tuple(0 if isinstance(d, str) else d for d in shape)
        index = self.model.add_operand(op_type, dims, scale, zero_point, name=name,
                                       io_dtype=io_dtype)
        if any(isinstance(d, str) for d in shape):
            name_dims(self.model, index, [d if isinstance(d, str) else None for d in shape])
        self._inputs.append(index)
        return Tensor(index, op_type, dims)

    def name_dims(self, tensor: Tensor, names: Sequence[str | None]) -> None:
        """Name ``tensor``'s unknown dims (``names``: one per dim; a name given for a known dim,
        or a count that does not match its rank, is ignored). A tensor of unknown rank is
        declared of rank ``len(names)`` (checked when the model is built)."""
        operand = self.model.operands[tensor.index]
        dims = operand.dims
        if not dims and names and not is_scalar(operand.type):
            dims = (0,) * len(names)
            refine_dims(self.model, tensor.index, dims)
        if len(names) != len(dims):
            return
        kept = [n if n and not d else None for n, d in zip(names, dims, strict=True)]
        if any(kept):
            name_dims(self.model, tensor.index, kept)

    def constant(self, value: Any, dtype: str | OperandType | None = None, *,
                 scale: float = 0.0, zero_point: int = 0) -> Tensor:
        """A constant tensor (or scalar, when ``dtype`` is a scalar OperandType)."""
        arr = np.asarray(value)
        op_type = _operand_type(dtype) if dtype is not None else _type_of_array(arr)
        shape = () if op_type in (T.INT32, T.FLOAT32, T.FLOAT16, T.BOOL, T.UINT32) else arr.shape
        index = self.model.add_operand(op_type, shape, scale, zero_point)
        self.model.set_operand_value(index, arr)
        return Tensor(index, op_type, tuple(shape))

    def output(self, *tensors: Tensor, names: Sequence[str] | None = None,
               io_dtypes: Sequence[str | None] | None = None) -> None:
        """Mark ``tensors`` as the next model outputs (``io_dtypes``: per output, "int64" for
        a TENSOR_INT32 one callers get as int64, else None)."""
        for k, t in enumerate(tensors):
            if names is not None:
                rename_operand(self.model, t.index, names[k])
            if io_dtypes is not None and io_dtypes[k] is not None:
                set_io_dtype(self.model, t.index, io_dtypes[k])
            self._outputs.append(t.index)

    def build(self) -> Model:
        """Identify inputs and outputs, finish and return the model."""
        self.model.identify_inputs_and_outputs(self._inputs, self._outputs)
        self.model.relax_computation_float32_to_float16(self._relaxed)
        return self.model.finish()

    # -- the generic operation ----------------------------------------------------------------

    def operation(self, op_type: OperationType, *inputs: Arg, outputs: int = 1,
                  output_types: Sequence[OperandType | tuple[OperandType, float, int]] | None
                  = None) -> list[Tensor]:
        """Add any operation. Outputs default to input 0's type and quantisation."""
        float_type = self._float_scalar_type(inputs)
        indices = [self._operand_for(a, float_type) for a in inputs]
        first = self.model.operand(indices[0]) if indices else None
        out_indices = []
        for j in range(outputs):
            spec: Any = output_types[j] if output_types is not None else None
            if spec is None:
                if first is None:
                    raise BadData(f"{op_type.name}: output_types needed for an op with no inputs")
                spec = (first.type, first.scale, first.zero_point)
            elif isinstance(spec, OperandType):
                spec = (spec, 0.0, 0)
            out_indices.append(self.model.add_operand(spec[0], (), spec[1], spec[2]))
        op_index = self.model.add_operation(op_type, indices, out_indices)
        shapes = self._infer(op_index)
        result = []
        for j, index in enumerate(out_indices):
            shape = shapes[j] if shapes is not None else ()
            refine_dims(self.model, index, shape)
            result.append(Tensor(index, self.model.operand(index).type, shape))
        return result

    def _infer(self, op_index: int) -> list[tuple[int, ...]] | None:
        from nnrt.ops._framework.context import OperationContext, Unknown  # noqa: PLC0415
        from nnrt.ops._framework.inference import infer_output_shapes  # noqa: PLC0415
        from nnrt.ops._framework.registry import lookup  # noqa: PLC0415

        op = self.model.operations[op_index]
        definition = lookup(op.type)
        if definition is None:
            return None
        ctx = OperationContext(self.model.operands, op, op_index, definition,
                               constant=self.model.constant_value)
        with contextlib.suppress(Unknown):
            definition.validate(ctx)
        return infer_output_shapes(ctx, definition)

    def _float_scalar_type(self, inputs: Sequence[Arg]) -> OperandType:
        for a in inputs:
            if isinstance(a, Tensor) and a.type in FLOAT_TENSOR_TYPES:
                return T.FLOAT16 if a.type == T.TENSOR_FLOAT16 else T.FLOAT32
        return T.FLOAT32

    def _operand_for(self, arg: Arg, float_type: OperandType) -> int:
        if isinstance(arg, Tensor):
            return arg.index
        if isinstance(arg, Omitted):
            index = self.model.add_operand(arg.type)
            self.model.set_operand_value(index, None)
            return index
        if isinstance(arg, bool | np.bool_):
            return self.constant(bool(arg), T.BOOL).index
        if isinstance(arg, int | np.integer):
            return self.constant(int(arg), T.INT32).index
        if isinstance(arg, float | np.floating):
            return self.constant(float(arg), float_type).index
        return self.constant(arg).index

    # -- named helpers ------------------------------------------------------------------------

    def _binary(self, op: OperationType, x: Tensor, y: Tensor | Any,
                activation: str | None) -> Tensor:
        y_t = y if isinstance(y, Tensor) else self.constant(np.asarray(y, _np_dtype(x.type)))
        return self.operation(op, x, y_t, _activation(activation))[0]

    def add(self, x: Tensor, y: Tensor | Any, activation: str | None = None) -> Tensor:
        """ADD with NNAPI broadcasting and an optional fused activation."""
        return self._binary(Op.ADD, x, y, activation)

    def sub(self, x: Tensor, y: Tensor | Any, activation: str | None = None) -> Tensor:
        """SUB with broadcasting."""
        return self._binary(Op.SUB, x, y, activation)

    def mul(self, x: Tensor, y: Tensor | Any, activation: str | None = None) -> Tensor:
        """MUL with broadcasting."""
        return self._binary(Op.MUL, x, y, activation)

    def div(self, x: Tensor, y: Tensor | Any, activation: str | None = None) -> Tensor:
        """DIV with broadcasting."""
        return self._binary(Op.DIV, x, y, activation)

    def relu(self, x: Tensor) -> Tensor:
        """RELU."""
        return self.operation(Op.RELU, x)[0]

    def relu6(self, x: Tensor) -> Tensor:
        """RELU6."""
        return self.operation(Op.RELU6, x)[0]

    def logistic(self, x: Tensor) -> Tensor:
        """LOGISTIC (sigmoid)."""
        return self.operation(Op.LOGISTIC, x)[0]

    def tanh(self, x: Tensor) -> Tensor:
        """TANH."""
        return self.operation(Op.TANH, x)[0]

    def softmax(self, x: Tensor, beta: float = 1.0, axis: int = -1) -> Tensor:
        """SOFTMAX along ``axis`` with scaling ``beta``."""
        return self.operation(Op.SOFTMAX, x, float(beta), int(axis))[0]

    def fully_connected(self, x: Tensor, weights: Tensor | Any, bias: Tensor | Any,
                        activation: str | None = None) -> Tensor:
        """FULLY_CONNECTED: ``x @ weights.T + bias`` (weights are [units, input_size])."""
        w, b = self._tensor(weights, x), self._tensor(bias, x)
        return self.operation(Op.FULLY_CONNECTED, x, w, b, _activation(activation))[0]

    def conv2d(self, x: Tensor, filter: Tensor | Any, bias: Tensor | Any, *,
               stride: int | tuple[int, int] = 1,
               padding: str | tuple[int, int, int, int] = "same",
               activation: str | None = None, layout: str = "NHWC",
               dilation: int | tuple[int, int] = 1) -> Tensor:
        """CONV_2D. ``stride``/``dilation`` are ints or (h, w); ``padding`` is "same", "valid"
        or explicit (left, right, top, bottom); filter is [out, h, w, in]."""
        return self._conv(Op.CONV_2D, x, filter, bias, (), stride, padding, activation, layout,
                          dilation)

    def depthwise_conv2d(self, x: Tensor, filter: Tensor | Any, bias: Tensor | Any, *,
                         depth_multiplier: int = 1, stride: int | tuple[int, int] = 1,
                         padding: str | tuple[int, int, int, int] = "same",
                         activation: str | None = None, layout: str = "NHWC",
                         dilation: int | tuple[int, int] = 1) -> Tensor:
        """DEPTHWISE_CONV_2D; filter is [1, h, w, in * depth_multiplier]."""
        return self._conv(Op.DEPTHWISE_CONV_2D, x, filter, bias, (int(depth_multiplier),),
                          stride, padding, activation, layout, dilation)

    def _conv(self, op: OperationType, x: Tensor, filter: Any, bias: Any,
              extra: tuple[int, ...], stride: int | tuple[int, int], padding: Any,
              activation: str | None, layout: str, dilation: int | tuple[int, int]) -> Tensor:
        w, b = self._tensor(filter, x), self._tensor(bias, x, bias=True)
        sh, sw = _pair(stride)
        dh, dw = _pair(dilation)
        args: list[Arg] = [x, w, b, *_padding(padding), sw, sh, *extra, _activation(activation),
                           _layout(layout)]
        if (dh, dw) != (1, 1):
            args += [dw, dh]
        return self.operation(op, *args)[0]

    def max_pool2d(self, x: Tensor, size: int | tuple[int, int], *,
                   stride: int | tuple[int, int] | None = None,
                   padding: str | tuple[int, int, int, int] = "valid",
                   activation: str | None = None, layout: str = "NHWC") -> Tensor:
        """MAX_POOL_2D over ``size`` windows (ints or (h, w)); stride defaults to size."""
        return self._pool(Op.MAX_POOL_2D, x, size, stride, padding, activation, layout)

    def average_pool2d(self, x: Tensor, size: int | tuple[int, int], *,
                       stride: int | tuple[int, int] | None = None,
                       padding: str | tuple[int, int, int, int] = "valid",
                       activation: str | None = None, layout: str = "NHWC") -> Tensor:
        """AVERAGE_POOL_2D (padding elements are not counted)."""
        return self._pool(Op.AVERAGE_POOL_2D, x, size, stride, padding, activation, layout)

    def _pool(self, op: OperationType, x: Tensor, size: int | tuple[int, int],
              stride: int | tuple[int, int] | None, padding: Any, activation: str | None,
              layout: str) -> Tensor:
        fh, fw = _pair(size)
        sh, sw = _pair(stride if stride is not None else size)
        return self.operation(op, x, *_padding(padding), sw, sh, fw, fh, _activation(activation),
                              _layout(layout))[0]

    def reshape(self, x: Tensor, shape: Sequence[int]) -> Tensor:
        """RESHAPE to ``shape`` (one -1 allowed)."""
        return self.operation(Op.RESHAPE, x, np.asarray(shape, np.int32))[0]

    def transpose(self, x: Tensor, perm: Sequence[int]) -> Tensor:
        """TRANSPOSE with permutation ``perm``."""
        return self.operation(Op.TRANSPOSE, x, np.asarray(perm, np.int32))[0]

    def concatenation(self, tensors: Sequence[Tensor], axis: int) -> Tensor:
        """CONCATENATION along ``axis``."""
        return self.operation(Op.CONCATENATION, *tensors, int(axis))[0]

    def mean(self, x: Tensor, axes: Sequence[int], keep_dims: bool = False) -> Tensor:
        """MEAN over ``axes``."""
        return self.operation(Op.MEAN, x, np.asarray(axes, np.int32), int(keep_dims))[0]

    def _tensor(self, value: Tensor | Any, like: Tensor, *, bias: bool = False) -> Tensor:
        if isinstance(value, Tensor):
            return value
        dtype = np.int32 if bias and like.type not in FLOAT_TENSOR_TYPES else _np_dtype(like.type)
        return self.constant(np.asarray(value, dtype))


def _operand_type(dtype: str | OperandType | Any) -> OperandType:
    if isinstance(dtype, OperandType):
        return dtype
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name not in _DTYPE_TYPES:
        raise BadData(f"unsupported dtype {dtype!r}; use one of {sorted(_DTYPE_TYPES)} or an "
                      "OperandType")
    return _DTYPE_TYPES[name]


def _type_of_array(arr: np.ndarray[Any, Any]) -> OperandType:
    kind = arr.dtype
    if kind == np.float16:
        return T.TENSOR_FLOAT16
    if kind.kind == "f":
        return T.TENSOR_FLOAT32
    if kind.kind in "iu":
        return T.TENSOR_INT32
    if kind.kind == "b":
        return T.TENSOR_BOOL8
    raise BadData(f"cannot make a constant from {arr.dtype} data")


def _np_dtype(op_type: OperandType) -> Any:
    return np.float16 if op_type == T.TENSOR_FLOAT16 else (
        np.int32 if op_type == T.TENSOR_INT32 else np.float32)


def _activation(name: str | None) -> int:
    key = name.lower() if isinstance(name, str) else name
    if key not in _ACTIVATIONS:
        raise BadData(f"unknown activation {name!r}; use one of none, relu, relu1, relu6")
    return int(FusedActivation(_ACTIVATIONS[key]))


def _layout(layout: str) -> bool:
    if layout not in ("NHWC", "NCHW"):
        raise BadData(f"layout must be 'NHWC' or 'NCHW', got {layout!r}")
    return layout == "NCHW"


def _pair(value: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    h, w = value
    return int(h), int(w)


def _padding(padding: str | tuple[int, int, int, int]) -> list[int]:
    if isinstance(padding, str):
        codes = {"same": PaddingCode.SAME, "valid": PaddingCode.VALID}
        if padding.lower() not in codes:
            raise BadData(f"padding must be 'same', 'valid' or (left, right, top, bottom), got "
                          f"{padding!r}")
        return [int(codes[padding.lower()])]
    left, right, top, bottom = padding
    return [int(left), int(right), int(top), int(bottom)]
