"""The graph being imported: ONNX values, the nnrt model they become, and constant folding.

Every ONNX value is a :class:`Value`: either a known array (an initializer, a ``Constant``, or
anything computed only from known arrays) or an operand of the nnrt model being built. Converters
add NNAPI operations with :meth:`Graph.op`; when every input of an operation is known, the
operation is not added but evaluated at once on the reference kernels, so shape sub-graphs
(``Shape -> Gather -> Concat -> Reshape``) fold away at known shapes with exactly NNAPI's
semantics. Known arrays keep their ONNX dtype (``int64`` stays ``int64``) until an operation needs
them as an operand.

ONNX scalars (rank 0) are held by ``[1]`` operands; :attr:`Value.shape` keeps the ONNX shape.

Quantised values (``QuantizeLinear`` outputs, quantised weights) carry their
:class:`~nnrt.onnx.qparams.QParams` and live in NNAPI's quantised operands; an operation on them
either keeps their quantisation (the data-movement operations of :data:`KEEPS_QUANT`) or is
given its output's (:meth:`Graph.op`'s ``quant``). A ``DequantizeLinear`` result remembers the
quantised value it is exact for (:attr:`Value.dequantizes`) and is only computed (NNAPI
DEQUANTIZE) when a float operation reads it, so quantised operations can read the quantised
value instead (:mod:`nnrt.onnx.ops.qdq`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import nnrt.reference
from nnrt.errors import NnrtError
from nnrt.memory import find_memory
from nnrt.model.builder import ModelBuilder, Omitted, Tensor
from nnrt.model.model import Model, refine_dims, truncate
from nnrt.model.operation import operation_name
from nnrt.model.types import OperandType, OperationType
from nnrt.onnx.dtypes import SMALL_INTS, operand_type_for
from nnrt.onnx.errors import NodeUnsupported
from nnrt.onnx.partial import partial_shapes
from nnrt.onnx.qparams import QParams

__all__ = ["KEEPS_QUANT", "Arg", "Checkpoint", "Graph", "Value"]

Array = np.ndarray[Any, Any]
T = OperandType

_INT32 = np.iinfo(np.int32)

#: Operations whose results are values of their inputs (or of an in-range constant), so a
#: small-integer result needs no wrap-around (see :mod:`nnrt.onnx.smallint`).
_KEEPS_RANGE = frozenset({
    OperationType.MAXIMUM, OperationType.MINIMUM, OperationType.SELECT, OperationType.RESHAPE,
    OperationType.TRANSPOSE, OperationType.CONCATENATION, OperationType.SLICE,
    OperationType.STRIDED_SLICE, OperationType.GATHER, OperationType.PAD, OperationType.PAD_V2,
    OperationType.MIRROR_PAD, OperationType.TILE, OperationType.SQUEEZE,
    OperationType.EXPAND_DIMS, OperationType.SPLIT, OperationType.REVERSE,
    OperationType.TOPK_V2, OperationType.DEPTH_TO_SPACE, OperationType.SPACE_TO_DEPTH,
    OperationType.NNRT_GATHER_ND, OperationType.REDUCE_MAX, OperationType.REDUCE_MIN,
    OperationType.MAX_POOL_2D, OperationType.RESIZE_NEAREST_NEIGHBOR, OperationType.IF,
})

#: Operations whose quantised output keeps the quantisation of their quantised inputs (NNAPI
#: requires it): on quantised values they need no ``quant`` of their own.
KEEPS_QUANT = frozenset({
    OperationType.RESHAPE, OperationType.TRANSPOSE, OperationType.SQUEEZE,
    OperationType.EXPAND_DIMS, OperationType.CONCATENATION, OperationType.SLICE,
    OperationType.STRIDED_SLICE, OperationType.GATHER, OperationType.SPLIT, OperationType.PAD,
    OperationType.TILE, OperationType.REVERSE, OperationType.DEPTH_TO_SPACE,
    OperationType.SPACE_TO_DEPTH, OperationType.MAX_POOL_2D, OperationType.AVERAGE_POOL_2D,
    OperationType.MEAN, OperationType.REDUCE_MAX, OperationType.REDUCE_MIN,
    OperationType.RESIZE_NEAREST_NEIGHBOR, OperationType.RESIZE_BILINEAR, OperationType.RELU,
    OperationType.RELU1, OperationType.RELU6,
})

#: Operations reading quantised values into results that are not quantised (given ``dtype``).
_READS_QUANT = frozenset({OperationType.DEQUANTIZE, OperationType.NNRT_SHAPE})


@dataclass(frozen=True)
class Value:
    """One ONNX value: its dtype, its ONNX shape (0 = unknown dim) and where it lives.

    ``const`` (a known array of ``dtype``) or ``tensor`` (an operand of the model) is set, or
    neither for a lazy dequantisation (below). ``hint`` is for a shape computed at execution
    (an integer vector or scalar from ``Shape``): per element, the value where it is a static
    dim, None where it is not. ``quant`` is set on quantised values (uint8 / int8, and int32
    biases): ``const`` holds the quantised integers, ``tensor`` is a quantised operand.
    ``dequantizes`` is set on a float value that is exactly ``DequantizeLinear`` of that
    quantised value; with neither ``const`` nor ``tensor`` it is computed (DEQUANTIZE) only
    when an operation takes it as a float operand (:meth:`Graph.tensor`).
    """

    name: str
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    const: Array | None = None
    tensor: Tensor | None = None
    hint: tuple[int | None, ...] | None = None
    quant: QParams | None = None
    dequantizes: Value | None = None

    @property
    def lazy(self) -> bool:
        """Whether the value is a dequantisation not computed yet."""
        return self.const is None and self.tensor is None and self.dequantizes is not None

    @property
    def known(self) -> bool:
        """Whether the value is known at import time."""
        return self.const is not None

    @property
    def rank(self) -> int:
        """The ONNX rank."""
        return len(self.shape)

    @property
    def static(self) -> bool:
        """Whether every dimension is known."""
        return all(d > 0 for d in self.shape) or (0 in self.shape and self.known)

    def folded(self, array: Any) -> Value:
        """A known value of this value's name and dtype holding ``array`` (a fresh C-ordered
        copy in that dtype; rank 0 stays rank 0): a result folded at import time."""
        arr = np.array(array, self.dtype, order="C")
        return Value(self.name, self.dtype, tuple(arr.shape), const=arr)

    def array(self) -> Array:
        """The known value; ``NodeUnsupported`` when it is only known at execution."""
        if self.const is None:
            raise NodeUnsupported(f"value {self.name or '(unnamed)'} is not known at import "
                                  "time")
        return self.const

    def renamed(self, name: str) -> Value:
        """The same value under another ONNX name."""
        return Value(name, self.dtype, self.shape, self.const, self.tensor, self.hint,
                     self.quant, self.dequantizes)


#: What :meth:`Graph.op` accepts as an operation input.
Arg = Value | Omitted | Array | int | float | bool

#: What :meth:`Graph.checkpoint` returns: the model's operand and operation counts, and the
#: dequantisations computed so far.
Checkpoint = tuple[int, int, dict[int, Tensor]]


class Graph:
    """The nnrt model under construction and the ONNX values defined so far."""

    def __init__(self, opset: int, *, relaxed: bool = False) -> None:
        self.opset = opset
        self.builder = ModelBuilder(relaxed=relaxed)
        self.values: dict[str, Value] = {}
        #: Computes ONNX's inferred shape of every value (0 = unknown dim); run at most once,
        #: and only when NNAPI's inference cannot tell a result's rank (a dynamic batch).
        self.infer_shapes: Callable[[], dict[str, tuple[int, ...]]] | None = None
        self._onnx_shapes: dict[str, tuple[int, ...]] | None = None
        self._inputs: list[int] = []
        #: quantised operand index -> the DEQUANTIZE result computed from it
        self._dequantized: dict[int, Tensor] = {}

    def onnx_shape(self, name: str) -> tuple[int, ...] | None:
        """ONNX's inferred shape of value ``name``, or None when inference cannot tell."""
        if self._onnx_shapes is None:
            self._onnx_shapes = self.infer_shapes() if self.infer_shapes is not None else {}
        return self._onnx_shapes.get(name)

    # -- values -------------------------------------------------------------------------------

    def define(self, value: Value) -> None:
        """Record ``value`` under its name (later definitions shadow earlier ones)."""
        self.values[value.name] = value

    def lookup(self, name: str, *, lazy: bool = False) -> Value:
        """The value called ``name`` (a lazy dequantisation computed, unless ``lazy``)."""
        try:
            value = self.values[name]
        except KeyError:
            raise NodeUnsupported(f"input {name!r} is not defined before its use") from None
        return value if lazy else self.materialized(value)

    def materialized(self, value: Value) -> Value:
        """``value``, computed by a DEQUANTIZE if it is a lazy dequantisation."""
        if not value.lazy:
            return value
        return Value(value.name, value.dtype, value.shape, tensor=self.tensor(value),
                     dequantizes=value.dequantizes)

    def checkpoint(self) -> Checkpoint:
        """The state :meth:`rollback` returns to."""
        model = self.builder.model
        return len(model.operands), len(model.operations), dict(self._dequantized)

    def rollback(self, mark: Checkpoint) -> None:
        """Drop every operand and operation added since ``mark`` was taken."""
        operands, operations, dequantized = mark
        truncate(self.builder.model, operands, operations)
        self._dequantized = dequantized

    def const(self, array: Any, name: str = "") -> Value:
        """A known value."""
        arr = np.asarray(array)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        return Value(name, arr.dtype, tuple(arr.shape), const=arr)

    def add_input(self, name: str, dtype: np.dtype[Any], shape: Sequence[int],
                  dim_names: Sequence[str | None] = (), quant: QParams | None = None) -> Value:
        """Declare a model input (dims of 0 are unknown; ``dim_names`` names them); ``quant``:
        a quantised one (uint8 / int8 per tensor)."""
        dims = tuple(int(d) for d in shape) or (1,)
        labelled = tuple(n if n and not d else d for d, n in zip(
            dims, dim_names, strict=False)) + dims[len(dim_names):]
        if quant is not None and quant.operand_type() is not None and not quant.per_axis:
            tensor = self.builder.input(name, labelled, quant.operand_type() or T.TENSOR_INT32,
                                        scale=quant.scale_value,
                                        zero_point=quant.zero_point_value)
        else:
            quant = None
            tensor = self.builder.input(name, labelled, "int64" if dtype == np.int64 else
                                        operand_type_for(dtype))
        self._inputs.append(tensor.index)
        value = Value(name, np.dtype(dtype), tuple(int(d) for d in shape), tensor=tensor,
                      quant=quant)
        self.define(value)
        return value

    # -- operands -----------------------------------------------------------------------------

    def tensor(self, value: Value) -> Tensor:
        """The operand holding ``value`` (a known value becomes a model constant)."""
        if value.tensor is not None:
            return value.tensor
        if value.lazy and value.dequantizes is not None:
            return self._dequantize(value.dequantizes)
        arr = value.array()
        if value.quant is not None:
            return self._quant_constant(arr, value.quant, value.name)
        pooled = find_memory(arr) if arr.ndim else None
        if pooled is not None and arr.dtype in (np.float32, np.float16):
            memory, offset = pooled  # an initializer in the weight pool: referenced, not copied
            model = self.builder.model
            op_type = operand_type_for(arr.dtype)
            index = model.add_operand(op_type, arr.shape)
            model.set_operand_value_from_memory(index, memory, offset, arr.nbytes)
            return Tensor(index, op_type, tuple(arr.shape))
        return self.builder.constant(_operand_array(arr, value.name))

    def _dequantize(self, source: Value) -> Tensor:
        """DEQUANTIZE of the quantised operand ``source``, computed once."""
        tensor = self.tensor(source)
        if tensor.index not in self._dequantized:
            self._dequantized[tensor.index] = self.op(
                OperationType.DEQUANTIZE, source, dtype=np.float32,
                shape=None if tensor.shape else source.shape).tensor  # type: ignore[assignment]
        return self._dequantized[tensor.index]

    def _quant_constant(self, arr: Array, params: QParams, name: str) -> Tensor:
        """A quantised constant operand holding ``arr`` (rank 0 as [1])."""
        op_type = params.operand_type()
        if op_type is None:
            raise NodeUnsupported(f"value {name or '(constant)'}: NNAPI has no tensor type for "
                                  f"{params.describe()} quantisation with these zero points")
        value = arr.reshape(1) if arr.ndim == 0 else arr
        if params.per_axis:
            tensor = self.builder.constant(value, op_type)
            self.builder.model.set_operand_symm_per_channel_quant_params(
                tensor.index, params.axis or 0, [float(s) for s in params.scale])
            return tensor
        return self.builder.constant(value, op_type, scale=params.scale_value,
                                     zero_point=params.zero_point_value)

    @staticmethod
    def pooled(value: Value) -> bool:
        """Whether ``value`` is a weight living in a shared-memory pool (an initializer)."""
        return value.const is not None and value.const.ndim > 0 and (
            find_memory(value.const) is not None)

    def dims(self, value: Value) -> tuple[int, ...]:
        """The operand dims of ``value`` (``(1,)`` for an ONNX scalar)."""
        return value.shape or (1,)

    # -- operations ---------------------------------------------------------------------------

    def op(self, op_type: OperationType, *args: Arg, dtype: Any = None,
           shape: Sequence[int] | None = None, name: str = "", fold: bool = True,
           quant: QParams | None = None) -> Value:
        """Add one single-output operation; see :meth:`ops`."""
        return self.ops(op_type, *args, dtypes=None if dtype is None else [dtype],
                        shapes=None if shape is None else [shape], name=name, fold=fold,
                        quant=quant)[0]

    def ops(self, op_type: OperationType, *args: Arg, outputs: int = 1,
            dtypes: Sequence[Any] | None = None, shapes: Sequence[Sequence[int] | None]
            | None = None, name: str = "", fold: bool = True,
            quant: QParams | None = None) -> list[Value]:
        """Add operation ``op_type`` (or fold it when every input is known).

        ``args`` are Values, omitted inputs, parameter arrays (TENSOR_INT32 / float) or Python
        scalars (INT32, FLOAT32 — FLOAT16 beside float16 tensors — and BOOL). Output ``k`` has
        ``dtypes[k]`` (default: the first Value's dtype, with int64 held as int32) and the shape
        nnrt infers unless ``shapes[k]`` gives the ONNX shape (for rank-0 results).
        ``quant`` makes every output quantised with these (per-tensor) parameters; on
        quantised inputs an operation of :data:`KEEPS_QUANT` keeps their quantisation without
        it, one of ``DEQUANTIZE`` / ``com.nnrt.SHAPE`` gives ``dtypes``, any other is refused.
        ``fold=False`` keeps the operation even on known inputs: use it to transform a pooled
        weight (:meth:`pooled`) so the model keeps referencing the pool instead of a copy (the
        compiling drivers fold it in the worker).
        """
        first = next((a for a in args if isinstance(a, Value)), None)
        quant = self._output_quant(op_type, args, dtypes, quant)
        out_dtypes = [quant.dtype] * outputs if quant is not None else [
            np.dtype(d) for d in dtypes] if dtypes is not None else [
            _nnapi_dtype(first.dtype) if first is not None else np.dtype(np.float32)] * outputs
        quantised = quant is not None or any(
            isinstance(a, Value) and a.quant is not None for a in args)
        if fold and not quantised and all(not isinstance(a, Value) or a.known for a in args):
            folded = self._fold(op_type, args, out_dtypes)
            if folded is not None:  # small integers wrap around as numpy's astype does
                return [self._shaped(self.const(
                    arr.astype(out_dtypes[k]) if out_dtypes[k] in SMALL_INTS else arr, name),
                    shapes, k) for k, arr in enumerate(folded)]
        small = next((d for d in out_dtypes if d in SMALL_INTS), None)
        if quant is None and small is not None and op_type not in _KEEPS_RANGE and not (
                op_type == OperationType.CAST and first is not None and first.dtype == small):
            raise NodeUnsupported(f"{operation_name(op_type)} on {small} values may leave the "
                                  f"{small} range, and nnrt has no exact import of it here")
        operands = [self.tensor(a) if isinstance(a, Value) else a for a in args]
        types: list[OperandType | tuple[OperandType, float, int]] = [
            operand_type_for(d) for d in out_dtypes] if quant is None else [
            (quant.operand_type() or T.TENSOR_QUANT8_ASYMM, quant.scale_value,
             quant.zero_point_value)] * outputs
        try:
            tensors = self.builder.operation(op_type, *operands, outputs=len(out_dtypes),
                                             output_types=types)
        except NnrtError as exc:
            raise NodeUnsupported(f"{operation_name(op_type)}: {exc}") from None
        tensors = self._refined(tensors)
        return [self._shaped(Value(name, out_dtypes[k], t.shape, tensor=t, quant=quant),
                             shapes, k) for k, t in enumerate(tensors)]

    @staticmethod
    def _output_quant(op_type: OperationType, args: Sequence[Arg],
                      dtypes: Sequence[Any] | None, quant: QParams | None) -> QParams | None:
        """The quantisation of ``op_type``'s outputs: ``quant`` when given, else that of its
        quantised inputs for :data:`KEEPS_QUANT` operations (which must all share it)."""
        if quant is not None:
            if quant.per_axis or quant.dtype not in (np.uint8, np.int8):
                raise NodeUnsupported(f"{operation_name(op_type)}: a result cannot be "
                                      f"{quant.describe()} quantised")
            return quant
        held = [a.quant for a in args if isinstance(a, Value) and a.quant is not None]
        if not held:
            return None
        if op_type in _READS_QUANT and dtypes is not None:
            return None
        if op_type not in KEEPS_QUANT:
            raise NodeUnsupported(f"{operation_name(op_type)} on quantised values "
                                  f"({held[0].describe()}) is not supported here")
        if any(not held[0].same(q) for q in held[1:]):
            raise NodeUnsupported(f"{operation_name(op_type)} on quantised values of different "
                                  f"scales / zero points ({', '.join(q.describe() for q in held)})")
        return held[0]

    def _refined(self, tensors: list[Tensor]) -> list[Tensor]:
        """``tensors`` (one operation's outputs) with the dims NNAPI's inference left unknown
        refined as far as they do not depend on unknown input dims (:mod:`nnrt.onnx.partial`);
        the model's operands get those dims too."""
        if not any(not t.shape for t in tensors):
            return tensors
        model = self.builder.model
        shapes = partial_shapes(model, len(model.operations) - 1)
        if shapes is None:
            return tensors
        refined = []
        for t, dims in zip(tensors, shapes, strict=True):
            if not t.shape and dims:
                refine_dims(model, t.index, dims)
                t = Tensor(t.index, t.type, dims)
            refined.append(t)
        return refined

    def _shaped(self, value: Value, shapes: Sequence[Sequence[int] | None] | None,
                k: int) -> Value:
        if shapes is None or shapes[k] is None:
            return value
        onnx_shape = tuple(int(d) for d in shapes[k])  # type: ignore[union-attr]
        const = value.const.reshape(onnx_shape) if value.const is not None else None
        tensor = value.tensor
        if tensor is not None and not tensor.shape and onnx_shape:  # the dims NNAPI could not
            refine_dims(self.builder.model, tensor.index, onnx_shape)  # tell: given by the caller
            tensor = Tensor(tensor.index, tensor.type, onnx_shape)
        return Value(value.name, value.dtype, onnx_shape, const, tensor, value.hint,
                     value.quant)

    def _fold(self, op_type: OperationType, args: Sequence[Arg],
              out_dtypes: Sequence[np.dtype[Any]]) -> list[Array] | None:
        """Evaluate one operation on known inputs with the reference kernels (None: cannot)."""
        b = ModelBuilder(relaxed=self.builder.model.relaxed)
        operands: list[Any] = []
        for a in args:
            if isinstance(a, Value):
                operands.append(b.constant(_operand_array(a.array(), a.name)))
            else:
                operands.append(a)
        try:
            outs = b.operation(op_type, *operands, outputs=len(out_dtypes),
                               output_types=[operand_type_for(d) for d in out_dtypes])
            b.output(*outs)
            return [np.asarray(r) for r in nnrt.reference.run(b.build(), [])]
        except NnrtError as exc:
            raise NodeUnsupported(f"{operation_name(op_type)} on constant inputs: {exc}") from None

    def finish(self, outputs: Sequence[tuple[str, Value]], wide: Sequence[str] = (),
               dim_names: Mapping[str, Sequence[str | None]] | None = None) -> Model:
        """Declare the graph outputs (known outputs become constant operands) and build;
        those named in ``wide`` are int64 for callers (held as int32); ``dim_names`` gives the
        ONNX names of each output's dims (named where the output's dim stays unknown).

        An output that is known, a model input or an earlier output is copied by a CAST to its
        own type (and quantisation): a model output must be computed by an operation, and an
        operand cannot be two of these (``Identity`` of an input, an ``If`` branch passing a
        value through). A known per-channel quantised output, which no NNAPI operation copies,
        is its plain integers.
        """
        tensors: list[Tensor] = []
        for _, value in outputs:
            if value.known and value.quant is not None and value.quant.per_axis:
                value = Value(value.name, value.dtype, value.shape, const=value.const)
            tensor = self.tensor(value)
            if value.known or tensor.index in self._inputs or tensor in tensors:
                tensor = self.builder.operation(OperationType.CAST, tensor)[0]
            tensors.append(tensor)
        self.builder.output(*tensors, names=[n for n, _ in outputs],
                            io_dtypes=["int64" if n in wide and t.type == T.TENSOR_INT32
                                       else None for (n, _), t in zip(outputs, tensors,
                                                                      strict=True)])
        for (name, _), tensor in zip(outputs, tensors, strict=True):
            self.builder.name_dims(tensor, (dim_names or {}).get(name, ()))
        return self.builder.build()


def _nnapi_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype of an operation result on ``dtype`` values (int64 is held as int32; the
    :data:`SMALL_INTS` keep their ONNX type, their operands being TENSOR_INT32)."""
    return np.dtype(np.int32) if dtype == np.int64 else np.dtype(dtype)


def _operand_array(array: Array, name: str) -> Array:
    """``array`` as an operand value: int64 and uint32 narrowed to int32 (range checked), the
    other small integers widened to int32, scalars as [1]."""
    arr = array
    if arr.dtype == np.uint32:
        if arr.size and arr.max() > _INT32.max:
            raise NodeUnsupported(f"value {name or '(constant)'} holds uint32 values above "
                                  "2**31 - 1, which NNAPI's TENSOR_INT32 cannot hold")
        arr = arr.astype(np.int32)
    elif arr.dtype in SMALL_INTS:
        arr = arr.astype(np.int32)
    elif arr.dtype == np.int64:
        if arr.size and (arr.min() < _INT32.min or arr.max() > _INT32.max):
            raise NodeUnsupported(f"value {name or '(constant)'} holds int64 values outside the "
                                  "int32 range NNAPI tensors can hold")
        arr = arr.astype(np.int32)
    if arr.dtype not in (np.float32, np.float16, np.int32, np.bool_):
        raise NodeUnsupported(f"value {name or '(constant)'}: {arr.dtype} tensors are not "
                              "supported")
    return arr.reshape(1) if arr.ndim == 0 else arr
