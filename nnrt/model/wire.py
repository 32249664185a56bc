"""The model wire format: a finished :class:`Model` as plain msgpack-able data, and back.

A model travels as a map with str keys (``?`` marks optional keys, absent when unset)::

    model     = {"operands": [operand, ...], "operations": [operation, ...],
                 "inputs": [int, ...], "outputs": [int, ...], "relaxed": bool}
    operand   = {"type": OperandType code, "dims": [int, ...], "scale": float,
                 "zero_point": int, "lifetime": OperandLifetime code, "name"?: str,
                 "io_dtype"?: "int64",                 # TENSOR_INT32 model inputs/outputs
                 "dim_names"?: [str | None, ...],      # names of unknown dims, one per dim
                 "value"?: bytes,                      # CONSTANT_COPY / CONSTANT_REFERENCE
                 "ref"?: [pool, offset, length],       # CONSTANT_REFERENCE, instead of value
                 "channel_quant"?: {"channel_dim": int, "scales": [float, ...]},
                 "subgraph"?: model}                   # lifetime SUBGRAPH
    operation = {"type": OperationType code, "inputs": [int, ...], "outputs": [int, ...]}

Constant values are the operand's elements in C order, little-endian.

**Constants by reference.** A CONSTANT_REFERENCE operand of a data type (TENSOR_FLOAT32,
TENSOR_FLOAT16, TENSOR_QUANT*) may carry ``"ref": [pool, offset, length]`` instead of its value:
``length`` bytes at ``offset`` in a shared memory pool both ends have mapped, so the weights
never cross the socket. The writer asks ``place(operand_index)`` (an argument of
:func:`model_to_wire`, for the main graph's operands) where each such operand lives; None sends
the value. Parameter-like types (INT32, UINT32, BOOL, FLOAT32 / FLOAT16 scalars, TENSOR_INT32,
TENSOR_BOOL8) always travel by value: shapes and parameters are validated at prepare and must not
change afterwards, which bytes in a writable pool could. The reader resolves the pool through
``memories(pool_id, path)`` (an argument of :func:`model_from_wire`) and checks the reference like
any untrusted field: three ints, the pool id in ``[1, 2**53)``, offset and length in
``[0, 2**62]``, the offset a multiple of the element size, the length exactly the operand's byte
size and the slice inside the pool. The operand is then set with
``Model.set_operand_value_from_memory``: the model reads the pool in place (zero copy). A
reference counts against no byte budget (it carries no bytes); without ``memories`` a reference is
refused.

:func:`model_from_wire` treats its argument as hostile: it checks every field's type, range and
size, and the bounds below, before rebuilding the model through the public ``Model`` API and
calling ``finish()``. Every problem is a ``BadData`` naming the field, e.g.
``model.operands[3].dims[1]: -1 is out of range [0, 2147483647]``; the Model API's own errors
are prefixed with the model's path. (An op definition that crashes on a model it should reject
still surfaces as ``OpFailed`` from ``finish()``: that is an nnrt bug, not bad data.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.errors import BadData, BadState
from nnrt.model.model import MAX_CONSTANT_COPY_BYTES, Model, check_dim_names, name_dims
from nnrt.model.operand import ConstantMemory, Operand, dtype_of
from nnrt.model.types import OperandLifetime, OperandType, OperationType
from nnrt.model.wire_fields import (
    INT32_RANGE,
    check_code,
    check_float,
    check_int,
    check_ints,
    check_list,
    check_map,
    describe,
)

__all__ = [
    "MAX_CONSTANT_BYTES",
    "MAX_OPERANDS",
    "MAX_OPERATIONS",
    "MAX_SUBGRAPH_DEPTH",
    "REF_TYPES",
    "Placer",
    "MemoryResolver",
    "model_from_wire",
    "model_to_wire",
]

#: ``model_to_wire``'s ``place``: operand index → (pool, offset, length), or None (by value).
Placer = Callable[[int], tuple[int, int, int] | None]
#: ``model_from_wire``'s ``memories``: (pool id, field path) → the mapped pool, or ``BadData``.
MemoryResolver = Callable[[int, str], ConstantMemory]

#: Most operands a wire model may hold, counting every nested subgraph.
MAX_OPERANDS = 1_000_000
#: Most operations a wire model may hold, counting every nested subgraph.
MAX_OPERATIONS = 1_000_000
#: Deepest nesting of SUBGRAPH operands (the top model is level 0).
MAX_SUBGRAPH_DEPTH = 16
#: Most bytes of constant values a wire model may carry, counting every nested subgraph.
MAX_CONSTANT_BYTES = 2 << 30

_MAX_RANK = 16
_MAX_DIM = 2**31 - 1
_MAX_NAME = 64 << 10
_NONE: frozenset[str] = frozenset()
_MODEL_KEYS = frozenset({"operands", "operations", "inputs", "outputs", "relaxed"})
_OPERAND_KEYS = frozenset({"type", "dims", "scale", "zero_point", "lifetime"})
_OPERAND_OPTIONAL = frozenset({"name", "value", "ref", "channel_quant", "subgraph",
                               "io_dtype", "dim_names"})
_OPERATION_KEYS = frozenset({"type", "inputs", "outputs"})
_QUANT_KEYS = frozenset({"channel_dim", "scales"})
_CONSTANT = (OperandLifetime.CONSTANT_COPY, OperandLifetime.CONSTANT_REFERENCE)
_MAX_POOL_ID = 2**53 - 1
_MAX_REF_INT = 2**62

_L = OperandLifetime
_T = OperandType
#: Operand types whose constants may travel by reference (data, not parameters).
REF_TYPES = frozenset({
    _T.TENSOR_FLOAT32, _T.TENSOR_FLOAT16, _T.TENSOR_QUANT8_ASYMM, _T.TENSOR_QUANT8_SYMM,
    _T.TENSOR_QUANT16_ASYMM, _T.TENSOR_QUANT16_SYMM, _T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
    _T.TENSOR_QUANT8_ASYMM_SIGNED,
})


# -- writing ------------------------------------------------------------------------------------

def model_to_wire(model: Model, place: Placer | None = None) -> dict[str, Any]:
    """``model`` (finished) as plain data: str-keyed dicts, lists, ints, floats, str, bytes.

    ``place(operand_index)`` (optional) is asked about each CONSTANT_REFERENCE operand of a data
    type (:data:`REF_TYPES`) in the main graph: a ``(pool, offset, length)`` sends it as a
    ``"ref"``, None by value. Other operands, and nested subgraphs, always go by value.
    """
    if not isinstance(model, Model):
        raise BadData(f"model_to_wire: expected an nnrt.Model, got {type(model).__name__}")
    return _write_model(model, "model", 0, place)


def _write_model(model: Model, path: str, depth: int,
                 place: Placer | None = None) -> dict[str, Any]:
    if not model.finished:
        raise BadState(f"{path}: only a finished model can be sent; call finish() first")
    if depth > MAX_SUBGRAPH_DEPTH:
        raise BadData(f"{path}: subgraphs nest deeper than {MAX_SUBGRAPH_DEPTH} levels")
    operands = [_write_operand(model, i, operand, f"{path}.operands[{i}]", depth, place)
                for i, operand in enumerate(model.operands)]
    operations = [{"type": int(op.type), "inputs": list(op.inputs), "outputs": list(op.outputs)}
                  for op in model.operations]
    return {"operands": operands, "operations": operations, "inputs": list(model.inputs),
            "outputs": list(model.outputs), "relaxed": bool(model.relaxed)}


def _write_operand(model: Model, index: int, operand: Operand, path: str, depth: int,
                   place: Placer | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": int(operand.type), "dims": [int(d) for d in operand.dims],
        "scale": float(operand.scale), "zero_point": int(operand.zero_point),
        "lifetime": int(operand.lifetime),
    }
    if operand.name is not None:
        data["name"] = operand.name
    if operand.io_dtype is not None:
        data["io_dtype"] = operand.io_dtype
    if operand.dim_names is not None:
        data["dim_names"] = list(operand.dim_names)
    ref = (_place(place, index, operand, path) if place is not None
           and operand.lifetime == _L.CONSTANT_REFERENCE and operand.type in REF_TYPES else None)
    if ref is not None:
        data["ref"] = ref
    elif operand.lifetime in _CONSTANT:
        value = model.constant_value(index)  # a pool slice is copied here (see module doc)
        if value is None:
            raise BadData(f"{path}: constant operand has no value")
        data["value"] = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()
    if operand.channel_quant is not None:
        data["channel_quant"] = {"channel_dim": int(operand.channel_quant.channel_dim),
                                 "scales": [float(s) for s in operand.channel_quant.scales]}
    if operand.lifetime == _L.SUBGRAPH and operand.subgraph is not None:
        data["subgraph"] = _write_model(operand.subgraph, f"{path}.subgraph", depth + 1)
    return data


def _place(place: Placer, index: int, operand: Operand, path: str) -> list[int] | None:
    """``place``'s answer for operand ``index`` as a wire ref, after a sanity check."""
    where = place(index)
    if where is None:
        return None
    if not (isinstance(where, tuple | list) and len(where) == 3 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in where)):
        raise BadData(f"{path}: place() must return (pool, offset, length) ints or None, got "
                      f"{describe(where)}")
    if where[2] != operand.byte_size():
        raise BadData(f"{path}: place() gave a length of {where[2]} bytes, the operand has "
                      f"{operand.byte_size()}")
    return [int(v) for v in where]


# -- reading ------------------------------------------------------------------------------------

@dataclass
class _Budget:
    """What the whole wire model (all subgraphs) has used of the bounds so far."""

    operands: int = 0
    operations: int = 0
    constant_bytes: int = 0
    #: Resolves pool references (None: references are refused).
    memories: MemoryResolver | None = None


@dataclass(frozen=True)
class _OperandSpec:
    """An operand's fields, type-checked, ready for the Model API."""

    type: OperandType
    dims: tuple[int, ...]
    scale: float
    zero_point: int
    lifetime: OperandLifetime
    name: str | None
    value: bytes | None
    ref: tuple[ConstantMemory, int, int] | None
    channel_quant: tuple[int, tuple[float, ...]] | None
    subgraph: Model | None
    io_dtype: str | None
    dim_names: tuple[str | None, ...] | None


def model_from_wire(data: Any, memories: MemoryResolver | None = None) -> Model:
    """Rebuild and finish a model from untrusted wire data; any problem raises ``BadData``.

    ``memories(pool_id, path)`` returns the mapped pool a ``"ref"`` names (an object with ``.size``
    and ``.view(offset, length)``) or raises ``BadData`` naming ``path``; without it (None) a
    model carrying a reference is ``BadData`` "pool references are not accepted here".
    """
    return _read_model(data, "model", 0, _Budget(memories=memories))


def _read_model(data: Any, path: str, depth: int, budget: _Budget) -> Model:
    if depth > MAX_SUBGRAPH_DEPTH:
        raise BadData(f"{path}: subgraphs nest deeper than {MAX_SUBGRAPH_DEPTH} levels")
    fields = check_map(data, _MODEL_KEYS, _NONE, path)
    raw_operands = check_list(fields["operands"], f"{path}.operands", MAX_OPERANDS)
    raw_operations = check_list(fields["operations"], f"{path}.operations", MAX_OPERATIONS)
    budget.operands += len(raw_operands)
    budget.operations += len(raw_operations)
    if budget.operands > MAX_OPERANDS or budget.operations > MAX_OPERATIONS:
        raise BadData(f"{path}: counting every subgraph, {budget.operands} operands and "
                      f"{budget.operations} operations exceed the limit of {MAX_OPERANDS} each")
    n = len(raw_operands)
    specs = [_read_operand(item, f"{path}.operands[{i}]", depth, budget)
             for i, item in enumerate(raw_operands)]
    operations = [_read_operation(item, f"{path}.operations[{i}]", n)
                  for i, item in enumerate(raw_operations)]
    inputs = _indices(fields["inputs"], f"{path}.inputs", n)
    outputs = _indices(fields["outputs"], f"{path}.outputs", n)
    relaxed = fields["relaxed"]
    if not isinstance(relaxed, bool):
        raise BadData(f"{path}.relaxed: expected a bool, got {describe(relaxed)}")
    _check_lifetimes(specs, inputs, outputs, path)
    return _rebuild(specs, operations, inputs, outputs, relaxed, path)


def _indices(value: Any, path: str, n_operands: int) -> tuple[int, ...]:
    """A list of operand indices, each in range for a model of ``n_operands`` operands."""
    result = check_ints(value, path, *INT32_RANGE, limit=MAX_OPERANDS)
    for k, index in enumerate(result):
        if not 0 <= index < n_operands:
            raise BadData(f"{path}[{k}]: operand index {index} is out of range (the model has "
                          f"{n_operands} operands)")
    return result


def _read_operand(data: Any, path: str, depth: int, budget: _Budget) -> _OperandSpec:
    fields = check_map(data, _OPERAND_KEYS, _OPERAND_OPTIONAL, path)
    op_type = check_code(fields["type"], OperandType, f"{path}.type")
    dims = check_ints(fields["dims"], f"{path}.dims", 0, _MAX_DIM, _MAX_RANK)
    lifetime = check_code(fields["lifetime"], OperandLifetime, f"{path}.lifetime")
    name = fields.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > _MAX_NAME):
        raise BadData(f"{path}.name: expected a string of at most {_MAX_NAME} characters, got "
                      f"{describe(name)}")
    io_dtype = fields.get("io_dtype")
    if io_dtype is not None and not isinstance(io_dtype, str):
        raise BadData(f"{path}.io_dtype: expected a string, got {describe(io_dtype)}")
    dim_names = fields.get("dim_names")
    if dim_names is not None:
        if not isinstance(dim_names, list):
            raise BadData(f"{path}.dim_names: expected a list, got {describe(dim_names)}")
        dim_names = check_dim_names(dim_names, dims, f"{path}.dim_names")
    value = fields.get("value")
    raw_ref = fields.get("ref")
    ref = None
    if value is not None:
        if raw_ref is not None:
            raise BadData(f"{path}: an operand carries a 'value' or a 'ref', not both")
        value = _read_value(value, op_type, dims, lifetime, f"{path}.value", budget)
    elif raw_ref is not None:
        ref = _read_ref(raw_ref, op_type, dims, lifetime, f"{path}.ref", budget.memories)
    elif lifetime == _L.CONSTANT_REFERENCE:
        raise BadData(f"{path}: a CONSTANT_REFERENCE operand needs a 'value' or a 'ref'")
    elif lifetime in _CONSTANT:
        raise BadData(f"{path}: a {lifetime.name} operand needs a 'value'")
    quant = fields.get("channel_quant")
    if quant is not None:
        quant = _read_channel_quant(quant, f"{path}.channel_quant")
    subgraph = fields.get("subgraph")
    if subgraph is not None:
        if lifetime != _L.SUBGRAPH:
            raise BadData(f"{path}.subgraph: only an operand of lifetime SUBGRAPH has one, this "
                          f"one is {lifetime.name}")
        subgraph = _read_model(subgraph, f"{path}.subgraph", depth + 1, budget)
    elif lifetime == _L.SUBGRAPH:
        raise BadData(f"{path}: a SUBGRAPH operand needs a 'subgraph'")
    return _OperandSpec(op_type, dims, check_float(fields["scale"], f"{path}.scale"),
                        check_int(fields["zero_point"], f"{path}.zero_point", *INT32_RANGE),
                        lifetime, name, value, ref, quant, subgraph, io_dtype, dim_names)


def _read_value(value: Any, op_type: OperandType, dims: tuple[int, ...],
                lifetime: OperandLifetime, path: str, budget: _Budget) -> bytes:
    if lifetime not in _CONSTANT:
        raise BadData(f"{path}: only CONSTANT_COPY / CONSTANT_REFERENCE operands carry a value, "
                      f"this one is {lifetime.name}")
    if not isinstance(value, bytes):
        raise BadData(f"{path}: expected bytes, got {type(value).__name__}")
    if op_type == OperandType.SUBGRAPH:
        raise BadData(f"{path}: a SUBGRAPH operand cannot have a constant value")
    budget.constant_bytes += len(value)
    if budget.constant_bytes > MAX_CONSTANT_BYTES:
        raise BadData(f"{path}: constant values exceed the limit of {MAX_CONSTANT_BYTES} bytes")
    needed = dtype_of(op_type).itemsize * math.prod(dims)
    if len(value) != needed:
        raise BadData(f"{path}: {len(value)} bytes, but {op_type.name} with dims {list(dims)} "
                      f"needs {needed}")
    if lifetime == _L.CONSTANT_COPY and len(value) > MAX_CONSTANT_COPY_BYTES:
        raise BadData(f"{path}: a CONSTANT_COPY value holds at most {MAX_CONSTANT_COPY_BYTES} "
                      f"bytes, got {len(value)}")
    if dtype_of(op_type).kind == "b" and value.translate(None, b"\0\1"):
        raise BadData(f"{path}: boolean values must be bytes 0 or 1")
    return value


def _read_ref(data: Any, op_type: OperandType, dims: tuple[int, ...], lifetime: OperandLifetime,
              path: str, memories: MemoryResolver | None) -> tuple[ConstantMemory, int, int]:
    """A checked ``[pool, offset, length]`` reference, resolved to (pool, offset, length)."""
    if lifetime != _L.CONSTANT_REFERENCE:
        raise BadData(f"{path}: only CONSTANT_REFERENCE operands carry a 'ref', this one is "
                      f"{lifetime.name}")
    if op_type not in REF_TYPES:
        raise BadData(f"{path}: {op_type.name} operands travel by value (shapes and parameters "
                      "must not change after prepare); only data tensors may be a 'ref'")
    if not isinstance(data, list) or len(data) != 3:
        raise BadData(f"{path}: expected [pool, offset, length], got {describe(data)}")
    pool_id = check_int(data[0], f"{path}[0] (pool)", 1, _MAX_POOL_ID)
    offset = check_int(data[1], f"{path}[1] (offset)", 0, _MAX_REF_INT)
    length = check_int(data[2], f"{path}[2] (length)", 0, _MAX_REF_INT)
    if memories is None:
        raise BadData(f"{path}: pool references are not accepted here (pool {pool_id})")
    itemsize = dtype_of(op_type).itemsize
    if offset % itemsize:
        raise BadData(f"{path}: offset {offset} is not a multiple of the {op_type.name} element "
                      f"size {itemsize}")
    needed = itemsize * math.prod(dims)
    if length != needed:
        raise BadData(f"{path}: length {length}, but {op_type.name} with dims {list(dims)} "
                      f"needs {needed} bytes")
    pool = memories(pool_id, path)
    if offset + length > pool.size:
        raise BadData(f"{path}: bytes [{offset}, {offset + length}) are outside pool {pool_id} "
                      f"of {pool.size} bytes")
    return pool, offset, length


def _read_channel_quant(data: Any, path: str) -> tuple[int, tuple[float, ...]]:
    fields = check_map(data, _QUANT_KEYS, _NONE, path)
    channel_dim = check_int(fields["channel_dim"], f"{path}.channel_dim", 0, _MAX_RANK - 1)
    raw = check_list(fields["scales"], f"{path}.scales", _MAX_DIM)
    return channel_dim, tuple(check_float(s, f"{path}.scales[{k}]") for k, s in enumerate(raw))


def _read_operation(data: Any, path: str, n_operands: int
                    ) -> tuple[OperationType, tuple[int, ...], tuple[int, ...]]:
    fields = check_map(data, _OPERATION_KEYS, _NONE, path)
    op_type = check_code(fields["type"], OperationType, f"{path}.type")
    inputs = _indices(fields["inputs"], f"{path}.inputs", n_operands)
    outputs = _indices(fields["outputs"], f"{path}.outputs", n_operands)
    return op_type, inputs, outputs


def _check_lifetimes(specs: list[_OperandSpec], inputs: tuple[int, ...],
                     outputs: tuple[int, ...], path: str) -> None:
    """Model inputs must be exactly the SUBGRAPH_INPUT operands, outputs the SUBGRAPH_OUTPUT."""
    for role, indices, lifetime in (("inputs", inputs, _L.SUBGRAPH_INPUT),
                                    ("outputs", outputs, _L.SUBGRAPH_OUTPUT)):
        listed = set(indices)
        for i, spec in enumerate(specs):
            if (spec.lifetime == lifetime) != (i in listed):
                raise BadData(f"{path}.operands[{i}].lifetime: {spec.lifetime.name} does not "
                              f"agree with {path}.{role} {list(indices)}")


def _rebuild(specs: list[_OperandSpec],
             operations: list[tuple[OperationType, tuple[int, ...], tuple[int, ...]]],
             inputs: tuple[int, ...], outputs: tuple[int, ...], relaxed: bool,
             path: str) -> Model:
    """Replay the checked fields through the public Model API, then finish it."""
    model = Model()
    for i, spec in enumerate(specs):
        where = f"{path}.operands[{i}]"
        try:
            model.add_operand(spec.type, spec.dims, spec.scale, spec.zero_point, name=spec.name,
                              io_dtype=spec.io_dtype)
            if spec.dim_names is not None:
                name_dims(model, i, spec.dim_names)
            if spec.channel_quant is not None:
                model.set_operand_symm_per_channel_quant_params(i, *spec.channel_quant)
            if spec.value is not None:
                dtype = dtype_of(spec.type).newbyteorder("<")
                model.set_operand_value(i, np.frombuffer(spec.value, dtype).reshape(spec.dims))
            elif spec.ref is not None:
                model.set_operand_value_from_memory(i, *spec.ref)
            elif spec.lifetime == _L.NO_VALUE:
                model.set_operand_value(i, None)
            elif spec.subgraph is not None:
                model.set_operand_value_from_model(i, spec.subgraph)
        except BadData as exc:
            raise BadData(f"{where}: {exc}") from exc
    for k, (op_type, ins, outs) in enumerate(operations):
        try:
            model.add_operation(op_type, ins, outs)
        except BadData as exc:
            raise BadData(f"{path}.operations[{k}]: {exc}") from exc
    try:
        model.identify_inputs_and_outputs(inputs, outputs)
        model.relax_computation_float32_to_float16(relaxed)
        return model.finish()
    except BadData as exc:
        raise BadData(f"{path}: {exc}") from exc
