"""``nnrt.tflite.load``: a ``.tflite`` model in, an ``nnrt.Model`` out.

The file is mapped (``mmap_fd``; bytes are copied once into a ``memfd``), parsed and checked
(:mod:`nnrt.tflite.schema`); the main subgraph, or a signature's, is converted operator by
operator through :data:`~nnrt.tflite.context.CONVERTERS` (:mod:`nnrt.tflite.ops`). Constants
reference the mapped file in place where NNAPI can (:mod:`nnrt.tflite.tensors`). Every operator
that cannot be converted is reported together in one
:class:`~nnrt.tflite.errors.UnsupportedTfliteModel`.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.errors import BadData
from nnrt.memory import Memory
from nnrt.model.builder import Tensor
from nnrt.model.model import Model
from nnrt.model.types import OperandType, OperationType
from nnrt.tflite import schema
from nnrt.tflite.context import CONVERTERS, CUSTOM_CONVERTERS, OpContext, Subgraph
from nnrt.tflite.errors import OperatorUnsupported, UnsupportedOperator, UnsupportedTfliteModel

__all__ = ["load", "subgraph_model"]

_BUILTIN_NAMES = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}


def load(source: str | os.PathLike[str] | bytes, *,
         input_shapes: Mapping[str, Sequence[int]] | None = None,
         signature: str | None = None) -> Model:
    """Import a TFLite model: a ``.tflite`` path or the file's bytes.

    ``signature`` picks a signature's subgraph (default: the main subgraph, subgraph 0); the
    inputs and outputs are named as the signature names them (subgraph 0's signature, if it
    has one, by default), otherwise after their tensors. ``input_shapes`` maps input names to
    full shapes, fixing the dims ``shape_signature`` leaves dynamic. Raises
    ``UnsupportedTfliteModel`` listing every operator that cannot be imported, ``BadData`` for
    a malformed file.
    """
    memory = _read(source)
    try:
        result = _import(memory, input_shapes or {}, signature)
    except BaseException as exc:
        # the failed frames hold views of the mapping: drop them so that it is unmapped now
        traceback.clear_frames(exc.__traceback__)
        memory.close()
        raise
    if not _references(result, memory):
        memory.close()  # every constant was copied: nothing references the file
    return result


def _references(model: Model, memory: Memory) -> bool:
    """Whether a constant of ``model`` or of a model it refers to (IF / WHILE) is in
    ``memory``."""
    return any((o.location is not None and o.location.memory is memory)
               or (o.subgraph is not None and _references(o.subgraph, memory))
               for o in model.operands)


def subgraph_model(model: Any, memory: Memory, index: int
                   ) -> tuple[Model | None, list[UnsupportedOperator]]:
    """Subgraph ``index`` as a model of its own (what WHILE / IF run), its inputs and
    outputs named after their tensors; or ``None`` and every operator it cannot import."""
    graph = model.subgraphs[index]
    sub = Subgraph(model, graph, memory, index)
    inputs = [int(t) for t in (graph.inputs if graph.inputs is not None else [])]
    outputs = [int(t) for t in (graph.outputs if graph.outputs is not None else [])]
    for t in inputs:
        _declare_input(sub, t, _name(sub, t), None)
    unsupported = _convert(model, sub)
    if unsupported:
        return None, unsupported
    return _finish(sub, inputs, outputs, {}), []


def _read(source: str | os.PathLike[str] | bytes) -> Memory:
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        if not data:
            raise BadData("tflite: the model bytes are empty")
        memory = Memory.create(len(data), name="nnrt-tflite")
        memory.ndarray(np.uint8, len(data))[...] = np.frombuffer(data, np.uint8)
        return memory
    try:
        fd = os.open(os.fspath(source), os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise BadData(f"tflite: cannot open {os.fspath(source)!r}: {exc.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            raise BadData(f"tflite: {os.fspath(source)!r} is empty")
        return Memory.from_fd(fd, 0, size)
    finally:
        os.close(fd)


def _signature(model: Any, key: str | None) -> tuple[int, dict[int, str], dict[int, str]]:
    """The subgraph to import and the names the signature gives its input/output tensors."""
    sigs = model.signatureDefs or []
    keys = [(s.signatureKey or b"").decode(errors="replace") for s in sigs]
    if key is None:
        chosen = next((s for s in sigs if s.subgraphIndex == 0), None)
    elif key in keys:
        chosen = sigs[keys.index(key)]
    else:
        raise BadData(f"tflite: no signature {key!r:.60}; the model has {keys or 'none'}")
    if chosen is None:
        return 0, {}, {}
    names = [{int(m.tensorIndex): (m.name or b"").decode(errors="replace")
              for m in getattr(chosen, field) or []} for field in ("inputs", "outputs")]
    return int(chosen.subgraphIndex), names[0], names[1]


def _import(memory: Memory, input_shapes: Mapping[str, Sequence[int]],
            key: str | None) -> Model:
    model = schema.parse(memory.ndarray(np.uint8, memory.size))
    index, input_names, output_names = _signature(model, key)
    graph = model.subgraphs[index]
    sub = Subgraph(model, graph, memory, index)
    inputs = [int(t) for t in (graph.inputs if graph.inputs is not None else [])]
    outputs = [int(t) for t in (graph.outputs if graph.outputs is not None else [])]
    names = {t: input_names.get(t) or _name(sub, t) for t in inputs}
    unknown = set(input_shapes) - set(names.values())
    if unknown:
        raise BadData(f"tflite: input_shapes names {sorted(unknown)}; the inputs are "
                      f"{list(names.values())}")
    for t in inputs:
        _declare_input(sub, t, names[t], input_shapes.get(names[t]))
    unsupported = _convert(model, sub)
    if unsupported:
        raise UnsupportedTfliteModel(unsupported)
    return _finish(sub, inputs, outputs, output_names)


def _name(sub: Subgraph, t: int) -> str:
    name = sub.tensors[t].name
    return name.decode(errors="replace") if name else f"tensor_{t}"


def _declare_input(sub: Subgraph, t: int, name: str, pinned: Sequence[int] | None) -> None:
    tensor = sub.tensors[t]
    try:
        spec = sub.spec(t)
    except OperatorUnsupported as exc:
        raise BadData(f"tflite: input {name!r}: {exc}") from None
    shape = [int(d) for d in tensor.shape] if tensor.shape is not None else []
    signature = tensor.shapeSignature
    dims = [max(int(d), 0) for d in signature] if signature is not None and len(
        signature) else shape
    if pinned is not None:
        given = [int(d) for d in pinned]
        if len(given) != len(dims) or any(d and g != d for g, d in zip(given, dims,
                                                                         strict=False)):
            raise BadData(f"tflite: input_shapes[{name!r}]: {given} does not fit the input's "
                          f"shape {[d or -1 for d in dims]}")
        dims = given
    dtype: Any = "int64" if spec.io_dtype == "int64" else spec.type
    sub.values[t] = sub.builder.input(name, tuple(dims) or (1,), dtype, scale=spec.scale,
                                      zero_point=spec.zero_point)


def operator_name(model: Any, op: Any) -> str:
    """The builtin's name of ``op``, or ``CUSTOM(<custom_code>)``."""
    code = model.operatorCodes[op.opcodeIndex]
    builtin = schema.builtin_code(code)
    if builtin == fb.BuiltinOperator.CUSTOM:
        return f"CUSTOM({(code.customCode or b'').decode(errors='replace')})"
    return str(_BUILTIN_NAMES.get(builtin, f"builtin {builtin}"))


def _convert(model: Any, sub: Subgraph) -> list[UnsupportedOperator]:
    unsupported: list[UnsupportedOperator] = []
    poisoned: set[int] = set()
    for o, op in enumerate(sub.graph.operators or []):
        code = schema.builtin_code(model.operatorCodes[op.opcodeIndex])
        ctx = OpContext(sub, op, o, code)
        if any(t in poisoned for t in ctx.inputs):
            poisoned.update(ctx.outputs)
            continue
        name = operator_name(model, op)
        convert = (CUSTOM_CONVERTERS.get(name[len("CUSTOM("):-1])
                   if code == fb.BuiltinOperator.CUSTOM else CONVERTERS.get(code))
        try:
            if convert is None:
                raise OperatorUnsupported("no NNAPI conversion")
            convert(ctx)
        except OperatorUnsupported as exc:
            unsupported.append(UnsupportedOperator(o, name, str(exc)))
            poisoned.update(ctx.outputs)
        except BadData as exc:  # an operation NNAPI's validation refuses
            unsupported.append(UnsupportedOperator(o, name, str(exc)))
            poisoned.update(ctx.outputs)
        except (IndexError, ValueError) as exc:  # too few inputs, outputs or values
            raise BadData(f"tflite: operators[{o}] ({name}): {len(ctx.inputs)} inputs and "
                          f"{len(ctx.outputs)} outputs do not fit the operator ({exc})") from None
    return unsupported


def _finish(sub: Subgraph, inputs: list[int], outputs: list[int],
            names: dict[int, str]) -> Model:
    tensors: list[Tensor] = []
    io_dtypes: list[str | None] = []
    input_operands = {sub.values[t].index for t in inputs}
    for t in outputs:
        if t not in sub.values and sub.constant_value(t) is None:
            raise BadData(f"tflite: output {sub.where(t)} is neither computed nor a constant")
        tensor = sub.operand(t)
        if tensor.index in input_operands or tensor in tensors or t not in _computed(sub, t):
            tensor = sub.builder.operation(OperationType.CAST, tensor)[0]
        tensors.append(tensor)
        spec = sub.spec(t)
        io_dtypes.append("int64" if spec.io_dtype and tensor.type == OperandType.TENSOR_INT32
                         else None)
    sub.builder.output(*tensors, names=[names.get(t) or _name(sub, t) for t in outputs],
                       io_dtypes=io_dtypes)
    return sub.builder.build()


def _computed(sub: Subgraph, t: int) -> set[int]:
    """``{t}`` when tensor ``t`` is computed by an operation (not a constant)."""
    return set() if sub.constant_value(t) is not None else {t}
