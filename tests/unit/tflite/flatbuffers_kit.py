"""Writing small ``.tflite`` files for the tests with LiteRT's object API, and running them on
LiteRT's reference kernels (the oracle)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb

F32 = fb.TensorType.FLOAT32
B = fb.BuiltinOperator


class TfliteFile:
    """Subgraphs built tensor by tensor, operator by operator: :meth:`subgraph` closes one (the
    subgraphs WHILE / IF call: 1, 2, ...), :meth:`finish` the main one, subgraph 0."""

    def __init__(self) -> None:
        self.tensors: list[Any] = []
        self.buffers: list[Any] = [fb.BufferT()]
        self.operators: list[Any] = []
        self.codes: list[tuple[int, bytes | None]] = []
        self.graphs: list[Any] = []

    def subgraph(self, inputs: Sequence[int], outputs: Sequence[int]) -> int:
        """Close the subgraph built so far (its tensors and operators); its index."""
        self.graphs.append(self._graph(inputs, outputs))
        self.tensors, self.operators = [], []
        return len(self.graphs)

    def _graph(self, inputs: Sequence[int], outputs: Sequence[int]) -> Any:
        graph = fb.SubGraphT()
        graph.tensors, graph.operators = self.tensors, self.operators
        graph.inputs = np.asarray(inputs, np.int32)
        graph.outputs = np.asarray(outputs, np.int32)
        return graph

    def tensor(self, shape: Sequence[int], kind: int = F32, data: Any = None, name: str = "",
               scale: Sequence[float] | None = None, zero_point: Sequence[int] | None = None,
               axis: int = 0, signature: Sequence[int] | None = None) -> int:
        t = fb.TensorT()
        t.shape = np.asarray(shape, np.int32)
        if signature is not None:
            t.shapeSignature = np.asarray(signature, np.int32)
        t.type = kind
        t.name = (name or f"t{len(self.tensors)}").encode()
        t.buffer = 0
        if data is not None:
            buf = fb.BufferT()
            buf.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8)
            self.buffers.append(buf)
            t.buffer = len(self.buffers) - 1
        if scale is not None:
            q = fb.QuantizationParametersT()
            q.scale = np.asarray(scale, np.float32)
            q.zeroPoint = np.asarray(zero_point or [0] * len(scale), np.int64)
            q.quantizedDimension = axis
            t.quantization = q
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(self, value: Any, kind: int | None = None, **kw: Any) -> int:
        arr = np.asarray(value)
        kinds = {np.dtype(np.float32): F32, np.dtype(np.int32): fb.TensorType.INT32,
                 np.dtype(np.int64): fb.TensorType.INT64, np.dtype(np.float16):
                 fb.TensorType.FLOAT16, np.dtype(np.int8): fb.TensorType.INT8,
                 np.dtype(np.uint8): fb.TensorType.UINT8}
        return self.tensor(arr.shape, kind if kind is not None else kinds[arr.dtype], arr,
                           **kw)

    def op(self, builtin: int, inputs: Sequence[int], outputs: Sequence[int],
           options: Any = None, custom: bytes | None = None) -> None:
        key = (builtin, custom)
        if key not in self.codes:
            self.codes.append(key)
        op = fb.OperatorT()
        op.opcodeIndex = self.codes.index(key)
        op.inputs = np.asarray(inputs, np.int32)
        op.outputs = np.asarray(outputs, np.int32)
        if options is not None:
            name = type(options).__name__[:-1]
            op.builtinOptionsType = getattr(fb.BuiltinOptions, name)
            op.builtinOptions = options
        self.operators.append(op)

    def model(self, inputs: Sequence[int], outputs: Sequence[int],
              signature: dict[str, Any] | None = None) -> Any:
        model = fb.ModelT()
        model.version = 3
        model.subgraphs = [self._graph(inputs, outputs), *self.graphs]
        model.buffers = self.buffers
        codes = []
        for builtin, custom in self.codes:
            code = fb.OperatorCodeT()
            code.builtinCode = builtin
            code.deprecatedBuiltinCode = min(builtin, 127)
            code.version = 1
            code.customCode = custom
            codes.append(code)
        model.operatorCodes = codes
        if signature is not None:
            sig = fb.SignatureDefT()
            sig.signatureKey = signature["key"].encode()
            sig.subgraphIndex = 0
            sig.inputs = [_map(n, t) for n, t in signature["inputs"].items()]
            sig.outputs = [_map(n, t) for n, t in signature["outputs"].items()]
            model.signatureDefs = [sig]
        return model

    def finish(self, inputs: Sequence[int], outputs: Sequence[int],
               signature: dict[str, Any] | None = None) -> bytes:
        return pack(self.model(inputs, outputs, signature))


def _map(name: str, index: int) -> Any:
    m = fb.TensorMapT()
    m.name, m.tensorIndex = name.encode(), index
    return m


def pack(model: Any) -> bytes:
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def litert_run(data: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:  # type: ignore[type-arg]
    """The outputs of LiteRT's reference kernels on ``inputs``."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(model_content=data,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    for detail, value in zip(interp.get_input_details(), inputs, strict=True):
        interp.resize_tensor_input(detail["index"], value.shape)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), inputs, strict=True):
        interp.set_tensor(detail["index"], value)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]
