"""``Model``: NNAPI's model builder (``ANeuralNetworksModel_*``), frozen by ``finish()``."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.errors import BadData, BadState
from nnrt.model.operand import (
    IO_DTYPES,
    ChannelQuant,
    ConstantMemory,
    MemoryLocation,
    Operand,
    dtype_of,
    is_scalar,
)
from nnrt.model.operation import Operation
from nnrt.model.signature import TensorInfo, tensor_infos
from nnrt.model.types import OperandLifetime, OperandType, OperationType
from nnrt.model.validation import check_operand, check_operand_type
from nnrt.model.values import coerce_value

if TYPE_CHECKING:
    from nnrt.model.aot import AotInfo

__all__ = ["MAX_CONSTANT_COPY_BYTES", "Model", "attach_aot", "refine_dims", "rename_operand"]

#: Values up to this size are kept in the model itself (NNAPI's
#: ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES); larger ones by reference.
MAX_CONSTANT_COPY_BYTES = 128

# NNAPI's test specs give a per-channel convolution's bias per-channel scales marked ``hide``:
# they only quantise the bias values and never reach the model (NNAPI rejects them too).
_PER_CHANNEL_BIAS_HINT = (" (the INT32 bias of a per-channel convolution takes scale 0 and no "
                          "per-channel parameters: its scales are input_scale * "
                          "filter_scale[c], implied by the filter)")


class Model:
    """A graph of NNAPI operations over operands; immutable once :meth:`finish` succeeds.

    The methods mirror ``ANeuralNetworksModel_*``. Indices are returned by :meth:`add_operand`
    and :meth:`add_operation` in creation order, starting at 0.
    """

    def __init__(self) -> None:
        self._operands: list[Operand] = []
        self._operations: list[Operation] = []
        self._inputs: tuple[int, ...] = ()
        self._outputs: tuple[int, ...] = ()
        self._identified = False
        self._relaxed = False
        self._finished = False
        self._run_order: tuple[int, ...] = ()
        self._inferred_dims: tuple[tuple[int, ...], ...] = ()
        self._extensions: frozenset[str] = frozenset()
        self._frozen_operands: tuple[Operand, ...] = ()
        self._frozen_operations: tuple[Operation, ...] = ()
        self._aot: AotInfo | None = None

    # -- read access -------------------------------------------------------------------------

    @property
    def operands(self) -> Sequence[Operand]:
        """The operands (immutable records), by index."""
        if self._finished:
            return self._frozen_operands
        return tuple(self._operands)

    @property
    def operations(self) -> Sequence[Operation]:
        """The operations, by index."""
        if self._finished:
            return self._frozen_operations
        return tuple(self._operations)

    @property
    def inputs(self) -> tuple[int, ...]:
        """Operand indices of the model inputs, in order."""
        return self._inputs

    @property
    def outputs(self) -> tuple[int, ...]:
        """Operand indices of the model outputs, in order."""
        return self._outputs

    @property
    def input_info(self) -> tuple[TensorInfo, ...]:
        """Each input's name, shape and dtype, in order (:class:`~nnrt.TensorInfo`)."""
        return tensor_infos(self, self._inputs)

    @property
    def output_info(self) -> tuple[TensorInfo, ...]:
        """Each output's name, shape and dtype, in order (:class:`~nnrt.TensorInfo`)."""
        return tensor_infos(self, self._outputs)

    @property
    def relaxed(self) -> bool:
        """Whether FLOAT32 may be computed with FLOAT16 range and precision."""
        return self._relaxed

    @property
    def finished(self) -> bool:
        """Whether :meth:`finish` has succeeded (the model is then immutable)."""
        return self._finished

    @property
    def aot(self) -> AotInfo | None:
        """Ahead-of-time compiled partitions loaded from a .nnrt file, or None."""
        return self._aot

    @property
    def run_order(self) -> tuple[int, ...]:
        """Operation indices in a dependency-respecting order (available after finish)."""
        self._require_finished("run_order")
        return self._run_order

    @property
    def inferred_dims(self) -> tuple[tuple[int, ...], ...]:
        """Per operand, the declared dims refined by static shape inference (after finish)."""
        self._require_finished("inferred_dims")
        return self._inferred_dims

    @property
    def extensions(self) -> frozenset[str]:
        """The nnrt extensions of NNAPI the model uses (after finish), derived from its content:
        ``"com.nnrt"`` when it has extension operations, ``"com.nnrt.rank6"`` when an operation
        has a tensor above NNAPI's rank limit for it (nnrt takes up to rank 6). Empty for a
        strict NNAPI model; a strict-NNAPI driver refuses a model where it is not."""
        self._require_finished("extensions")
        return self._extensions

    def operand(self, index: int) -> Operand:
        """The operand at ``index`` (``BadData`` if out of range)."""
        return self._operands[self._check_index(index, "operand")]

    def constant_value(self, index: int) -> np.ndarray[Any, Any] | None:
        """The value of a constant operand as a read-only array, or None if it has no value."""
        operand = self.operand(index)
        if operand.value is not None:
            return operand.value
        if operand.location is not None:
            loc = operand.location
            raw = loc.memory.view(loc.offset, loc.length)
            return np.frombuffer(raw, dtype=dtype_of(operand.type)).reshape(operand.dims)
        return None

    def find_input(self, name: str) -> int:
        """Position of the model input named ``name`` (``BadData`` listing names if unknown)."""
        for position, index in enumerate(self._inputs):
            if self._operands[index].name == name:
                return position
        known = [self._operands[i].name for i in self._inputs if self._operands[i].name]
        raise BadData(f"model has no input named {name!r}; inputs are named {known}")

    # -- building ----------------------------------------------------------------------------

    def add_operand(
        self,
        type: OperandType | int,
        dims: Iterable[int] = (),
        scale: float = 0.0,
        zero_point: int = 0,
        *,
        name: str | None = None,
        io_dtype: str | None = None,
    ) -> int:
        """Add an operand and return its index. A 0 in ``dims`` is an unknown dimension.

        ``io_dtype`` ("int64", for a TENSOR_INT32 model input or output): the dtype callers
        give and get for it — int64 data held as int32 inside, range-checked on the way in
        (nnrt's extension: NNAPI has no 64-bit integer operands)."""
        self._require_mutable("add_operand")
        index = len(self._operands)
        where = f"operand {index}"
        op_type = check_operand_type(type, where)
        try:
            dims_t = tuple(int(d) for d in dims)
        except (TypeError, ValueError):
            raise BadData(f"{where}: dims must be a sequence of integers, got {dims!r}") from None
        if io_dtype is not None and IO_DTYPES.get(io_dtype) != op_type:
            allowed = ", ".join(f"{k} on {v.name}" for k, v in IO_DTYPES.items())
            raise BadData(f"{where}: io_dtype {io_dtype!r} is not one of a {op_type.name} "
                          f"(allowed: {allowed})")
        operand = Operand(op_type, dims_t, float(scale), int(zero_point), name=name,
                          io_dtype=io_dtype)
        check_operand(operand, where)
        self._operands.append(operand)
        return index

    def set_operand_value(self, index: int, value: Any) -> None:
        """Give operand ``index`` a constant value; ``None`` marks an omitted optional input.

        Values of at most 128 bytes are kept as CONSTANT_COPY, larger ones as CONSTANT_REFERENCE.
        The value is copied: later changes to ``value`` do not affect the model.
        """
        operand = self._settable(index, "set_operand_value")
        where = f"operand {index} ({operand.describe()})"
        if value is None:
            self._update(index, lifetime=OperandLifetime.NO_VALUE, value=None, location=None)
            return
        if operand.type == OperandType.SUBGRAPH:
            raise BadData(f"{where}: use set_operand_value_from_model for SUBGRAPH operands")
        self._require_specified(operand, where)
        arr = coerce_value(operand, value, where)
        if not is_scalar(operand.type):
            if arr.size != math.prod(operand.dims):
                raise BadData(
                    f"{where}: value has {arr.size} elements (shape {arr.shape}), operand needs "
                    f"{math.prod(operand.dims)} (dims {operand.dims})"
                )
            arr = arr.reshape(operand.dims)
        arr = np.array(arr, copy=True, order="C")
        arr.flags.writeable = False
        lifetime = (
            OperandLifetime.CONSTANT_COPY
            if arr.nbytes <= MAX_CONSTANT_COPY_BYTES
            else OperandLifetime.CONSTANT_REFERENCE
        )
        self._update(index, value=arr, location=None, lifetime=lifetime)

    def set_operand_value_from_memory(
        self, index: int, memory: ConstantMemory, offset: int, length: int
    ) -> None:
        """Make operand ``index`` a CONSTANT_REFERENCE to ``length`` bytes of ``memory``."""
        operand = self._settable(index, "set_operand_value_from_memory")
        where = f"operand {index} ({operand.describe()})"
        if not isinstance(memory, ConstantMemory):
            raise BadData(f"{where}: memory must offer .size and .view(offset, length), "
                          f"got {type(memory).__name__}")
        if operand.type == OperandType.SUBGRAPH:
            raise BadData(f"{where}: use set_operand_value_from_model for SUBGRAPH operands")
        self._require_specified(operand, where)
        offset, length = int(offset), int(length)
        if offset < 0 or length < 0 or offset + length > memory.size:
            raise BadData(f"{where}: [{offset}, {offset + length}) is outside the memory "
                          f"(size {memory.size})")
        if length != operand.byte_size():
            raise BadData(f"{where}: length {length} does not match the operand's "
                          f"{operand.byte_size()} bytes")
        itemsize = dtype_of(operand.type).itemsize
        if offset % itemsize:
            raise BadData(f"{where}: offset {offset} is not aligned to the element size "
                          f"{itemsize}")
        self._update(index, value=None, location=MemoryLocation(memory, offset, length),
                     lifetime=OperandLifetime.CONSTANT_REFERENCE)

    def set_operand_symm_per_channel_quant_params(
        self, index: int, channel_dim: int, scales: Sequence[float]
    ) -> None:
        """Set the per-channel scales of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand."""
        operand = self._operand_for("set_operand_symm_per_channel_quant_params", index)
        where = f"operand {index} ({operand.describe()})"
        if operand.type != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            hint = _PER_CHANNEL_BIAS_HINT if operand.type == OperandType.TENSOR_INT32 else ""
            raise BadData(f"{where}: per-channel quantisation needs "
                          f"TENSOR_QUANT8_SYMM_PER_CHANNEL, got {operand.type.name}{hint}")
        quant = ChannelQuant(int(channel_dim), tuple(float(s) for s in scales))
        check_operand(replace(operand, channel_quant=quant), where)
        self._update(index, channel_quant=quant)

    def set_operand_value_from_model(self, index: int, model: Model) -> None:
        """Make SUBGRAPH operand ``index`` refer to ``model`` (finished) for IF / WHILE."""
        operand = self._settable(index, "set_operand_value_from_model")
        where = f"operand {index} ({operand.describe()})"
        if operand.type != OperandType.SUBGRAPH:
            raise BadData(f"{where}: only SUBGRAPH operands take a model value")
        if not isinstance(model, Model):
            raise BadData(f"{where}: expected an nnrt.Model, got {type(model).__name__}")
        if model is self or not model.finished:
            raise BadData(f"{where}: the referenced model must be another, finished model")
        self._update(index, subgraph=model, lifetime=OperandLifetime.SUBGRAPH)

    def add_operation(
        self, type: OperationType | int, inputs: Sequence[int], outputs: Sequence[int]
    ) -> int:
        """Add an operation reading ``inputs`` and writing ``outputs``; returns its index."""
        self._require_mutable("add_operation")
        index = len(self._operations)
        try:
            op_type = OperationType(int(type))
        except (TypeError, ValueError):
            raise BadData(f"operation {index}: unknown operation type {type!r}") from None
        where = f"operation {index} ({op_type.name})"
        ins = tuple(self._check_index(i, f"{where}, input") for i in inputs)
        outs = tuple(self._check_index(i, f"{where}, output") for i in outputs)
        if not outs:
            raise BadData(f"{where}: an operation needs at least one output")
        self._operations.append(Operation(op_type, ins, outs))
        return index

    def identify_inputs_and_outputs(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        """Declare which operands are the model's inputs and outputs, in order."""
        self._require_mutable("identify_inputs_and_outputs")
        ins = tuple(self._check_index(i, "model input") for i in inputs)
        outs = tuple(self._check_index(i, "model output") for i in outputs)
        for role, indices in (("input", ins), ("output", outs)):
            seen: set[int] = set()
            for i in indices:
                if i in seen:
                    raise BadData(f"model {role}: operand {i} is listed twice")
                seen.add(i)
                operand = self._operands[i]
                if operand.lifetime not in (OperandLifetime.TEMPORARY_VARIABLE,
                                            OperandLifetime.SUBGRAPH_INPUT,
                                            OperandLifetime.SUBGRAPH_OUTPUT):
                    raise BadData(f"model {role}: operand {i} already has a value "
                                  f"({operand.lifetime.name})")
        both = set(ins) & set(outs)
        if both:
            raise BadData(f"operand {min(both)} cannot be both a model input and a model output")
        for i in (*self._inputs, *self._outputs):
            self._update(i, lifetime=OperandLifetime.TEMPORARY_VARIABLE)
        for i in ins:
            self._update(i, lifetime=OperandLifetime.SUBGRAPH_INPUT)
        for i in outs:
            self._update(i, lifetime=OperandLifetime.SUBGRAPH_OUTPUT)
        self._inputs, self._outputs = ins, outs
        self._identified = True

    def relax_computation_float32_to_float16(self, flag: bool) -> None:
        """Allow FLOAT32 operations to be computed with FLOAT16 range and precision."""
        self._require_mutable("relax_computation_float32_to_float16")
        self._relaxed = bool(flag)

    def finish(self) -> Model:
        """Validate the whole model (NNAPI rules, op by op) and freeze it; returns ``self``.

        Raises ``BadData`` naming the operation, operand and rule for the first problem found.
        """
        self._require_mutable("finish")
        from nnrt.model.validation import check_graph  # noqa: PLC0415
        from nnrt.ops._framework.extensions import model_extensions  # noqa: PLC0415
        from nnrt.ops._framework.inference import check_operations  # noqa: PLC0415 - ops sit beside model

        if not self._identified:
            raise BadData("model inputs and outputs are not identified: call "
                          "identify_inputs_and_outputs before finish")
        boundary = {*self._inputs, *self._outputs}
        for index, operand in enumerate(self._operands):
            if operand.io_dtype is not None and index not in boundary:
                raise BadData(f"operand {index}: io_dtype {operand.io_dtype!r} is for model "
                              "inputs and outputs only")
        run_order = check_graph(self)
        inferred = check_operations(self, run_order)
        self._run_order = run_order
        self._inferred_dims = inferred
        self._extensions = model_extensions(self, inferred)
        self._frozen_operands = tuple(self._operands)
        self._frozen_operations = tuple(self._operations)
        self._finished = True
        return self

    # -- internals ---------------------------------------------------------------------------

    def _check_index(self, index: int, what: str) -> int:
        if isinstance(index, bool) or not isinstance(index, int | np.integer):
            raise BadData(f"{what}: operand index must be an integer, got {index!r}")
        if not 0 <= int(index) < len(self._operands):
            raise BadData(f"{what}: operand index {index} is out of range "
                          f"(the model has {len(self._operands)} operands)")
        return int(index)

    def _require_mutable(self, method: str) -> None:
        if self._finished:
            raise BadState(f"Model.{method}: the model is finished and can no longer change")

    def _require_finished(self, what: str) -> None:
        if not self._finished:
            raise BadState(f"Model.{what} is only available after finish()")

    def _operand_for(self, method: str, index: int) -> Operand:
        self._require_mutable(method)
        return self._operands[self._check_index(index, f"{method}: operand")]

    def _settable(self, index: int, method: str) -> Operand:
        operand = self._operand_for(method, index)
        if operand.lifetime in (OperandLifetime.SUBGRAPH_INPUT, OperandLifetime.SUBGRAPH_OUTPUT):
            role = "input" if operand.lifetime == OperandLifetime.SUBGRAPH_INPUT else "output"
            raise BadData(f"operand {index}: a model {role} cannot have a constant value")
        return operand

    def _update(self, index: int, **changes: Any) -> None:
        """Replace operand ``index``'s record with one carrying ``changes`` (records are frozen)."""
        self._require_mutable("update")
        self._operands[index] = replace(self._operands[index], **changes)

    @staticmethod
    def _require_specified(operand: Operand, where: str) -> None:
        if not operand.fully_specified:
            raise BadData(f"{where}: a constant needs fully specified dims, got {operand.dims}")

    def __repr__(self) -> str:
        state = "finished" if self._finished else "building"
        return (f"<nnrt.Model {state}: {len(self._operands)} operands, "
                f"{len(self._operations)} operations, inputs {list(self._inputs)}, "
                f"outputs {list(self._outputs)}>")


# -- for the builder and the model-file loader (same package, not Model's public API) ----------

def attach_aot(model: Model, info: AotInfo) -> None:
    """Attach the AOT partitions read from a .nnrt file (on a finished model, once)."""
    model._require_finished("attach_aot")
    if model._aot is not None:
        raise BadState("attach_aot: the model already has AOT partitions")
    model._aot = info


def refine_dims(model: Model, index: int, dims: tuple[int, ...]) -> None:
    """Set the dims of a not-yet-finished operand (the builder's inferred shapes)."""
    model._update(index, dims=tuple(dims))


def set_io_dtype(model: Model, index: int, io_dtype: str | None) -> None:
    """Give a not-yet-finished operand its caller-side dtype (see ``add_operand``)."""
    operand = model._operands[index]
    if io_dtype is not None and IO_DTYPES.get(io_dtype) != operand.type:
        raise BadData(f"operand {index}: io_dtype {io_dtype!r} is not one of a "
                      f"{operand.type.name}")
    model._update(index, io_dtype=io_dtype)


def name_dims(model: Model, index: int, names: Sequence[str | None]) -> None:
    """Name the unknown dims of a not-yet-finished operand (``Operand.dim_names``): one entry
    per dim, None for a known or unnamed one."""
    operand = model._operands[index]
    checked = check_dim_names(names, operand.dims, f"operand {index}: dim_names")
    model._update(index, dim_names=checked)


def check_dim_names(names: Sequence[Any], dims: tuple[int, ...],
                    where: str) -> tuple[str | None, ...] | None:
    """``names`` as ``Operand.dim_names`` (None when none is set), or ``BadData``: one per dim,
    each None or a non-empty string of at most 128 characters naming an unknown (0) dim."""
    if len(names) != len(dims):
        raise BadData(f"{where}: {len(names)} names for {len(dims)} dims")
    for axis, (name, dim) in enumerate(zip(names, dims, strict=True)):
        if name is None:
            continue
        if not isinstance(name, str) or not 0 < len(name) <= _MAX_DIM_NAME:
            raise BadData(f"{where}[{axis}]: expected None or a string of 1 to {_MAX_DIM_NAME} "
                          f"characters, got {name!r:.60}")
        if dim:
            raise BadData(f"{where}[{axis}]: dim {axis} is known ({dim}); only unknown dims "
                          "are named")
    return None if all(n is None for n in names) else tuple(names)


_MAX_DIM_NAME = 128


def rename_operand(model: Model, index: int, name: str) -> None:
    """Name operand ``index`` (the builder names outputs after creating them)."""
    model._update(index, name=name)


def assemble(operands: Sequence[Operand], operations: Sequence[Operation],
             inputs: Sequence[int], outputs: Sequence[int], relaxed: bool) -> Model:
    """A finished model of these records (operands carrying their lifetimes, values and names
    as they are: a model rebuilt from another's, e.g. specialized to concrete input shapes)."""
    model = Model()
    model._operands = list(operands)
    model._operations = list(operations)
    model._inputs, model._outputs = tuple(inputs), tuple(outputs)
    model._identified = True
    model._relaxed = bool(relaxed)
    return model.finish()
