"""Reading a ``.tflite`` file as untrusted input: parse, then check every index and size.

The flatbuffer is parsed with LiteRT's own object API (``ai_edge_litert.schema_py_generated``)
over the file's bytes held in one :class:`~nnrt.memory.Memory` (a file mapped as ``mmap_fd``,
bytes copied once into a ``memfd``): buffer contents stay numpy views of that memory, so
constants can be referenced in place. Garbage offsets make the bounds-checked accessors raise;
that, a missing ``TFL3`` identifier, a structure that would expand past the file's size (shared
tables), and every out-of-range index, size or shape the importer would follow are
:class:`~nnrt.errors.BadData` naming the field: ``subgraphs[0].tensors[12].buffer: 99 out of
range (7 buffers)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.errors import BadData

__all__ = ["FILE_IDENTIFIER", "ITEMSIZE", "MAX_RANK", "builtin_code", "check_model", "parse",
           "stored_bytes", "unpack"]

FILE_IDENTIFIER = b"TFL3"
#: The largest tensor rank accepted, and the largest tensor (bytes) a shape may describe.
MAX_RANK = 8
_MAX_BYTES = 1 << 40
_T = fb.TensorType
#: Bytes per element of the TFLite types a tensor may have here.
ITEMSIZE = {_T.FLOAT32: 4, _T.FLOAT16: 2, _T.INT32: 4, _T.UINT8: 1, _T.INT64: 8, _T.BOOL: 1,
            _T.INT16: 2, _T.INT8: 1, _T.FLOAT64: 8, _T.UINT32: 4, _T.UINT16: 2, _T.UINT64: 8}
#: Options fields naming subgraphs, per builtin options class.
_SUBGRAPH_FIELDS = {fb.WhileOptionsT: ("condSubgraphIndex", "bodySubgraphIndex"),
                    fb.IfOptionsT: ("thenSubgraphIndex", "elseSubgraphIndex"),
                    fb.CallOnceOptionsT: ("initSubgraphIndex",)}


def parse(data: np.ndarray[Any, Any]) -> Any:
    """The ``fb.ModelT`` of the flatbuffer ``data`` (uint8), checked by :func:`check_model`."""
    model = unpack(data, "tflite")
    check_model(model, int(data.size))
    return model


def unpack(data: np.ndarray[Any, Any] | bytes, what: str) -> Any:
    """The ``fb.ModelT`` of the untrusted flatbuffer ``data``, unchecked beyond its structure:
    ``BadData`` (its message starting with ``what``) unless it has the ``TFL3`` identifier and
    parses without building more tables than its size allows.

    Shared with the litert driver, which parses its bytecode (a cache or ``.nnrt`` file) so.
    """
    size = len(data)
    if size < 8 or bytes(data[4:8]) != FILE_IDENTIFIER:
        found = f"{size} bytes is too short" if size < 8 else \
            f"file identifier {bytes(data[4:8])!r}"
        raise BadData(f"{what}: not a TFLite flatbuffer (no {FILE_IDENTIFIER.decode()} "
                      f"identifier): {found}")
    try:
        _check_expansion(data, what)
        return fb.ModelT.InitFromPackedBuf(data, 0)
    except BadData:
        raise
    except Exception as exc:  # any parse failure of untrusted bytes (truncated, bad offsets)
        raise BadData(f"{what}: does not parse as a TFLite flatbuffer (truncated or corrupt): "
                      f"{exc!r:.200}") from None


def _check_expansion(data: np.ndarray[Any, Any] | bytes, what: str) -> None:
    """Refuse tables shared so often that the object API would build far more objects than the
    file could hold (every vector element takes 4 bytes of its own in an honest file)."""
    size = len(data)
    root = fb.Model.GetRootAs(data, 0)
    total = root.SubgraphsLength() + root.BuffersLength() + root.OperatorCodesLength()
    for i in range(root.SubgraphsLength()):
        graph = root.Subgraphs(i)
        total += graph.TensorsLength() + graph.OperatorsLength()
        if total > size // 4:
            raise BadData(f"{what}: subgraphs[{i}]: more tables than a {size}-byte file "
                          "can hold (shared or corrupt offsets)")


def builtin_code(code: Any) -> int:
    """The builtin operator of an operator code (the deprecated byte or the newer field)."""
    return max(int(code.builtinCode), int(code.deprecatedBuiltinCode))


def check_model(model: Any, size: int) -> None:
    """``BadData`` naming the first out-of-range index, size or shape in ``model``."""
    buffers = model.buffers or []
    subgraphs = model.subgraphs or []
    if not subgraphs:
        raise BadData("tflite: subgraphs: the model has none")
    for b, buffer in enumerate(buffers):
        _check_buffer(f"buffers[{b}]", buffer, size)
    codes = model.operatorCodes or []
    for g, graph in enumerate(subgraphs):
        _check_subgraph(f"subgraphs[{g}]", graph, buffers, len(codes), len(subgraphs))
    for s, sig in enumerate(model.signatureDefs or []):
        where = f"signature_defs[{s}]"
        _index(f"{where}.subgraph_index", sig.subgraphIndex, len(subgraphs), "subgraphs")
        count = len(subgraphs[sig.subgraphIndex].tensors or [])
        for field, maps in (("inputs", sig.inputs), ("outputs", sig.outputs)):
            for m, tmap in enumerate(maps or []):
                _index(f"{where}.{field}[{m}].tensor_index", tmap.tensorIndex, count, "tensors")
    _check_acyclic(subgraphs)


def _check_buffer(where: str, buffer: Any, size: int) -> None:
    outside = buffer.offset > 1 or buffer.size  # data after the flatbuffer, in the file
    if outside and (buffer.offset <= 1 or buffer.offset + buffer.size > size):
        raise BadData(f"{where}: offset {buffer.offset} size {buffer.size} lies outside "
                      f"the file ({size} bytes)")


def _check_subgraph(where: str, graph: Any, buffers: list[Any], codes: int,
                    subgraphs: int) -> None:
    tensors = graph.tensors or []
    for t, tensor in enumerate(tensors):
        _check_tensor(f"{where}.tensors[{t}]", tensor, buffers)
    for field in ("inputs", "outputs"):
        for k, index in enumerate(getattr(graph, field) if getattr(graph, field) is not None
                                  else []):
            _index(f"{where}.{field}[{k}]", index, len(tensors), "tensors")
    for o, op in enumerate(graph.operators or []):
        at = f"{where}.operators[{o}]"
        _index(f"{at}.opcode_index", op.opcodeIndex, codes, "operator codes")
        for field in ("inputs", "outputs"):
            values = getattr(op, field)
            for k, index in enumerate(values if values is not None else []):
                if not (field == "inputs" and index == -1):  # an omitted optional input
                    _index(f"{at}.{field}[{k}]", index, len(tensors), "tensors")
        for name in _SUBGRAPH_FIELDS.get(type(op.builtinOptions), ()):
            _index(f"{at}.builtin_options.{name}", getattr(op.builtinOptions, name), subgraphs,
                   "subgraphs")


def _check_tensor(where: str, tensor: Any, buffers: list[Any]) -> None:
    shape = [] if tensor.shape is None else [int(d) for d in tensor.shape]
    if len(shape) > MAX_RANK:
        raise BadData(f"{where}.shape: rank {len(shape)} above {MAX_RANK}")
    if any(d < 0 for d in shape):
        raise BadData(f"{where}.shape: {shape} has a negative dim")
    itemsize = ITEMSIZE.get(tensor.type, 1)
    if math.prod(shape) * itemsize > _MAX_BYTES:
        raise BadData(f"{where}.shape: {shape} describes more than {_MAX_BYTES} bytes")
    signature = tensor.shapeSignature
    if signature is not None and len(signature):
        dims = [int(d) for d in signature]
        if len(dims) != len(shape) or any(d != -1 and d != s for d, s in zip(dims, shape,
                                                                              strict=False)):
            raise BadData(f"{where}.shape_signature: {dims} does not match shape {shape}")
    _index(f"{where}.buffer", tensor.buffer, len(buffers), "buffers")
    stored = stored_bytes(buffers[tensor.buffer])
    if stored and tensor.type in ITEMSIZE and tensor.sparsity is None:
        expected = math.prod(shape) * itemsize
        if stored != expected:
            raise BadData(f"{where}.buffer: buffer {tensor.buffer} holds {stored} bytes, "
                          f"shape {shape} needs {expected}")


def stored_bytes(buffer: Any) -> int:
    """The bytes ``buffer`` holds: its ``size`` after the flatbuffer (``offset`` > 1), else
    its ``data`` (0: no data, the tensor is not a constant)."""
    if buffer.offset > 1:
        return int(buffer.size)
    return 0 if buffer.data is None else len(buffer.data)


def _index(where: str, index: Any, count: int, what: str) -> None:
    if not 0 <= int(index) < count:
        raise BadData(f"{where}: {int(index)} out of range ({count} {what})")


def _check_acyclic(subgraphs: list[Any]) -> None:
    """``BadData`` when a subgraph calls itself, directly or through others."""
    calls = [sorted({int(getattr(op.builtinOptions, name))
                     for op in graph.operators or []
                     for name in _SUBGRAPH_FIELDS.get(type(op.builtinOptions), ())})
             for graph in subgraphs]
    state = [0] * len(subgraphs)  # 0 unseen, 1 on the path, 2 done
    for start in range(len(subgraphs)):
        stack = [(start, iter(calls[start]))]
        if state[start]:
            continue
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state[child] == 1:
                raise BadData(f"tflite: subgraphs[{node}] calls subgraph {child}, which is "
                              "already on the call path (cyclic subgraph references)")
            elif state[child] == 0:
                state[child] = 1
                stack.append((child, iter(calls[child])))
