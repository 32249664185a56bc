"""``LitertDispatch``: checks a partition's flatbuffer, loads it into LiteRT, runs it.

The bytecode comes from a cache file or a ``.nnrt`` model file, so it is untrusted: ``load``
parses it in Python first (LiteRT's own object API over the flatbuffer; constant buffers stay
numpy views of the bytes) and checks what the native loader would trust — one subgraph,
tensor, buffer and operator-code indices in range, only the builtins the compiler writes,
float32/int32/bool (and float16) tensors of bounded rank whose constant bytes match their
shapes, no field the compiler never writes — then hands LiteRT those same bytes, whose
flatbuffer structure (every offset and length) LiteRT's interpreter verifies before it reads
them. Nothing is copied or re-packed: checking the 64 MiB flatbuffer of a 16 M-parameter model
takes 2 to 4 ms (re-packing it took 200). ``invoke`` copies the inputs in and the outputs out
(one copy each way) around ``Interpreter.invoke``; executables are not shared between threads
at once (a lock per executable).

TENSOR_FLOAT16 is computed in float32: the compiler writes a float16 partition input or output
as a FLOAT32 tensor, and ``invoke`` knows it from the array it is handed (the operand's dtype,
float16): a float16 input is converted as it is copied in (exactly), a float32 result rounded
to the float16 output as it is copied out (to nearest even, overflowing to inf) — the same one
copy each way. Likewise a TENSOR_QUANT8_ASYMM input or output of a partition computed in int8
(:func:`~nnrt.drivers.litert.quantized.signed_partition`: a uint8 array for an INT8 tensor)
is moved by 128 (``q ^ 0x80``) as it is copied.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.flatbuffer import WRITTEN
from nnrt.errors import BadData, OpFailed
from nnrt.hal.plugin import Dispatch
from nnrt.ops.floats import ignoring_float_errors
from nnrt.tflite.schema import ITEMSIZE, stored_bytes, unpack

__all__ = ["DEFAULT_THREADS", "THREADS", "LitertDispatch", "LitertExecutable", "threads"]

Array = np.ndarray[Any, Any]
#: Environment variable: LiteRT (XNNPACK) threads per worker.
THREADS = "NNRT_LITERT_THREADS"
#: One thread per worker: a pool already runs one worker per core, so more threads per worker
#: would only contend with the other workers.
DEFAULT_THREADS = 1
_MAX_THREADS = 64
_FLOAT32 = np.dtype(np.float32)
_INT32 = np.dtype(np.int32)
_MAX_RANK = 6
_MAX_BYTES = 1 << 31
_ALLOWED = WRITTEN
#: The tensor types the compiler writes (FLOAT16 only between the two CASTs rounding a value
#: to float16), and their sizes (the TFLite importer's table, :mod:`nnrt.tflite.schema`).
_ITEMSIZE = {t: ITEMSIZE[t] for t in (fb.TensorType.FLOAT32, fb.TensorType.INT32,
                                      fb.TensorType.BOOL, fb.TensorType.FLOAT16,
                                      fb.TensorType.INT8, fb.TensorType.UINT8)}
#: The tensor types that may carry quantisation parameters (INT32: a quantised bias).
_QUANTIZED = frozenset({fb.TensorType.INT8, fb.TensorType.UINT8, fb.TensorType.INT32})


def threads() -> int:
    """The configured threads per worker (``$NNRT_LITERT_THREADS``, else 1)."""
    text = os.environ.get(THREADS, "").strip()
    if not text:
        return DEFAULT_THREADS
    try:
        count = int(text)
    except ValueError:
        raise BadData(f"${THREADS} must be an int from 1 to {_MAX_THREADS}, got "
                      f"{text!r:.40}") from None
    if not 1 <= count <= _MAX_THREADS:
        raise BadData(f"${THREADS} must be from 1 to {_MAX_THREADS}, got {count}")
    return count


class LitertExecutable:
    """A loaded partition: its interpreter and the indices of its inputs and outputs."""

    def __init__(self, interpreter: Any) -> None:
        self.interpreter = interpreter
        details = interpreter.get_input_details()
        self.inputs = [d["index"] for d in details]
        #: The inputs of TFLite type BOOL (TENSOR_BOOL8 arrives as bytes, uint8).
        self.bools = frozenset(d["index"] for d in details if d["dtype"] == np.bool_)
        #: The inputs of TFLite type INT8 (a TENSOR_QUANT8_ASYMM one, uint8, is moved by -128).
        self.signed = frozenset(d["index"] for d in details if d["dtype"] == np.int8)
        self.outputs = [d["index"] for d in interpreter.get_output_details()]
        #: Per output, the function giving a view of its tensor (LiteRT's ``tensor()``: safe
        #: to hold, unlike the view it returns), made once rather than per execute.
        self.views = [interpreter.tensor(index) for index in self.outputs]
        self.lock = threading.Lock()


class LitertDispatch(Dispatch):
    """The runtime half of the litert compiler plugin."""

    def load(self, bytecode: Any, entry_point: str) -> LitertExecutable:
        """An interpreter for the flatbuffer ``bytecode`` (``BadData`` if it does not check)."""
        from ai_edge_litert.interpreter import Interpreter  # noqa: PLC0415 - worker only

        if entry_point != "main":
            raise BadData(f"litert bytecode has one entry point, 'main'; got {entry_point!r:.40}")
        data = bytes(bytecode) if isinstance(bytecode, bytes | bytearray | memoryview) else None
        if data is None:
            raise BadData("litert bytecode must be bytes")
        checked = _checked(data)
        try:
            with _native_log():
                interpreter = Interpreter(model_content=checked, num_threads=threads())
                interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as exc:
            raise BadData(f"LiteRT refused the partition's flatbuffer: {exc}") from None
        return LitertExecutable(interpreter)

    def invoke(self, executable: Any, inputs: Sequence[Array], outputs: Sequence[Array]) -> None:
        """Copy ``inputs`` in, run, copy every output into ``outputs``."""
        interpreter = executable.interpreter
        with executable.lock:
            for index, value in zip(executable.inputs, inputs, strict=True):
                kind = value.dtype
                if kind is _FLOAT32 or kind is _INT32:  # the common case, in one test
                    interpreter.set_tensor(index, value)
                elif kind == np.float16:
                    _copy_in_float16(interpreter, index, value)
                elif index in executable.bools:  # TENSOR_BOOL8 as bytes: LiteRT's BOOL too
                    interpreter.set_tensor(index, value.view(np.bool_))
                elif index in executable.signed and kind == np.uint8:
                    _copy_in_signed(interpreter, index, value)
                else:
                    interpreter.set_tensor(index, value)
            try:
                interpreter.invoke()
            except RuntimeError as exc:
                raise OpFailed(f"LiteRT failed to run the partition: {exc}") from None
            for view, target in zip(executable.views, outputs, strict=True):
                result = view()
                if result.shape != target.shape:
                    result = result.reshape(target.shape)
                kind = target.dtype
                if kind is result.dtype:
                    np.copyto(target, result)
                elif kind == np.uint8 and result.dtype == np.int8:  # moved back
                    np.bitwise_xor(result.view(np.uint8), np.uint8(0x80), out=target)
                else:
                    # a TENSOR_FLOAT16 output (computed in float32) is rounded as it is
                    # copied; one overflowing is inf, without a warning
                    with ignoring_float_errors():
                        np.copyto(target, result, casting="same_kind")


def _copy_in_float16(interpreter: Any, index: int, value: Array) -> None:
    """Copy a TENSOR_FLOAT16 input into its float32 tensor, converting as it copies (exact:
    every float16 is a float32)."""
    tensor = interpreter.tensor(index)()
    if tensor.dtype != np.float32 or tensor.shape != value.shape:
        raise BadData(f"litert: a float16 input of shape {value.shape} for tensor {index} of "
                      f"type {tensor.dtype} and shape {tensor.shape}")
    np.copyto(tensor, value, casting="same_kind")


def _copy_in_signed(interpreter: Any, index: int, value: Array) -> None:
    """Copy a TENSOR_QUANT8_ASYMM input into its INT8 tensor (a signed partition), moving the
    values by -128 as it copies (``q ^ 0x80``; the compiler moved the zero point alike)."""
    tensor = interpreter.tensor(index)()
    if tensor.shape != value.shape:
        raise BadData(f"litert: a uint8 input of shape {value.shape} for tensor {index} of "
                      f"shape {tensor.shape}")
    np.bitwise_xor(value, np.uint8(0x80), out=tensor.view(np.uint8))


_log = logging.getLogger("nnrt.drivers.litert")


@contextlib.contextmanager
def _native_log() -> Iterator[None]:
    """What LiteRT's native code writes to stderr (fd 2) during the block, taken off the
    terminal: its ``INFO:`` lines ("Created TensorFlow Lite XNNPACK delegate for CPU", one per
    interpreter) dropped, any other line logged as a warning. The capture is a memfd (no
    file on disk); a worker loads one interpreter at a time."""
    sys.stderr.flush()
    saved = os.dup(2)
    capture = os.memfd_create("nnrt-litert-log", os.MFD_CLOEXEC)
    try:
        os.dup2(capture, 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            text = os.pread(capture, 1 << 16, 0).decode(errors="replace")
            for line in text.splitlines():
                if line.strip() and not line.startswith("INFO: "):
                    _log.warning("LiteRT: %s", line)
    finally:
        os.close(saved)
        os.close(capture)


def _checked(data: bytes) -> bytes:
    """``data`` itself, once parsed and checked as a flatbuffer the compiler could have written.

    The object API reads the flatbuffer with bounds-checked Python accessors (garbage offsets
    raise, or yield values the checks refuse); LiteRT's interpreter then runs the flatbuffers
    verifier over the same bytes before its native reader follows any offset.
    """
    model = unpack(data, "litert bytecode")  # identifier, structure: as the TFLite importer
    _check_unwritten(model)
    _check_model(model)
    return data


#: The fields the compiler writes, per table; every other field must hold its default, so
#: that LiteRT reads nothing these checks did not see (quantisation, sparsity, external or
#: offset buffers, custom options, signatures, metadata, ...).
_WRITTEN_FIELDS: dict[type, frozenset[str]] = {
    fb.ModelT: frozenset({"version", "operatorCodes", "subgraphs", "description", "buffers"}),
    fb.OperatorCodeT: frozenset({"deprecatedBuiltinCode", "version", "builtinCode"}),
    fb.SubGraphT: frozenset({"tensors", "inputs", "outputs", "operators", "name"}),
    fb.TensorT: frozenset({"shape", "type", "buffer", "name", "isVariable",  # LSTM states
                           "quantization"}),
    fb.QuantizationParametersT: frozenset({"scale", "zeroPoint", "quantizedDimension"}),
    fb.OperatorT: frozenset({"opcodeIndex", "inputs", "outputs", "builtinOptionsType",
                             "builtinOptions"}),
    fb.BufferT: frozenset({"data"}),
}
_DEFAULTS = {cls: vars(cls()) for cls in _WRITTEN_FIELDS}


def _check_unwritten(model: Any) -> None:
    """``BadData`` naming the first field the compiler never writes that is set."""
    subgraphs = model.subgraphs or []
    tables = [("model", model),
              *((f"operator code {i}", c) for i, c in enumerate(model.operatorCodes or [])),
              *((f"buffer {i}", b) for i, b in enumerate(model.buffers or [])),
              *((f"subgraph {i}", g) for i, g in enumerate(subgraphs))]
    for graph in subgraphs[:1]:
        tables += [(f"tensor {i}", t) for i, t in enumerate(graph.tensors or [])]
        tables += [(f"tensor {i} quantization", t.quantization)
                   for i, t in enumerate(graph.tensors or []) if t.quantization is not None]
        tables += [(f"operator {i}", o) for i, o in enumerate(graph.operators or [])]
    for where, table in tables:
        defaults = _DEFAULTS[type(table)]
        written = _WRITTEN_FIELDS[type(table)]
        for name, value in vars(table).items():
            if name not in written and _is_set(value, defaults.get(name)):
                raise BadData(f"litert bytecode: {where} sets {name}, which the litert "
                              "compiler never writes")


def _is_set(value: Any, default: Any) -> bool:
    return isinstance(value, np.ndarray) or bool(value != default)


def _check_model(model: Any) -> None:
    subgraphs = model.subgraphs or []
    buffers = model.buffers or []
    codes = model.operatorCodes or []
    if len(subgraphs) != 1:
        raise BadData(f"litert bytecode: expected one subgraph, got {len(subgraphs)}")
    for i, code in enumerate(codes):
        if code.builtinCode not in _ALLOWED:
            raise BadData(f"litert bytecode: operator code {i} is builtin {code.builtinCode}, "
                          "which the litert compiler never writes")
        if code.deprecatedBuiltinCode != min(code.builtinCode, 127):  # LiteRT takes the max
            raise BadData(f"litert bytecode: operator code {i} has deprecated builtin code "
                          f"{code.deprecatedBuiltinCode} for builtin {code.builtinCode}")
    subgraph = subgraphs[0]
    tensors = subgraph.tensors or []
    for t, tensor in enumerate(tensors):
        shape = [] if tensor.shape is None else [int(d) for d in tensor.shape]
        if tensor.type not in _ITEMSIZE or len(shape) > _MAX_RANK or any(d < 0 for d in shape):
            raise BadData(f"litert bytecode: tensor {t} has type {tensor.type} and shape "
                          f"{shape}, outside what the compiler writes")
        nbytes = math.prod(shape) * _ITEMSIZE[tensor.type]
        if not 0 <= tensor.buffer < len(buffers) or nbytes > _MAX_BYTES:
            raise BadData(f"litert bytecode: tensor {t} names buffer {tensor.buffer} of "
                          f"{len(buffers)}")
        stored = stored_bytes(buffers[tensor.buffer])
        if tensor.buffer and stored != nbytes:
            raise BadData(f"litert bytecode: tensor {t} of shape {shape} has {stored} bytes, "
                          f"expected {nbytes}")
        if tensor.quantization is not None:
            _check_quantization(t, tensor.type, shape, tensor.quantization)
    for name, indices in (("inputs", subgraph.inputs), ("outputs", subgraph.outputs)):
        _check_indices(f"subgraph {name}", indices, len(tensors))
    for o, operator in enumerate(subgraph.operators or []):
        if not 0 <= operator.opcodeIndex < len(codes):
            raise BadData(f"litert bytecode: operator {o} names operator code "
                          f"{operator.opcodeIndex} of {len(codes)}")
        optional = codes[operator.opcodeIndex].builtinCode in _OPTIONAL_INPUTS
        _check_indices(f"operator {o} inputs", operator.inputs, len(tensors), optional)
        _check_indices(f"operator {o} outputs", operator.outputs, len(tensors))


def _check_quantization(t: int, kind: int, shape: list[int], params: Any) -> None:
    """``BadData`` unless ``params`` are what the compiler writes for a quantised tensor: one
    scale (or one per channel of an axis in range), as many zero points, scales finite and
    positive, zero points in the type's range (0 for per-channel ones)."""
    scales = np.asarray([] if params.scale is None else params.scale, np.float64)
    zeros = np.asarray([] if params.zeroPoint is None else params.zeroPoint, np.int64)
    axis = int(params.quantizedDimension)
    low, high = _ZERO_POINTS.get(kind, (0, 0))
    channels = shape[axis] if 0 <= axis < len(shape) else -1
    ok = (kind in _QUANTIZED and len(scales) == len(zeros) and len(scales) in (1, channels)
          and (axis == 0 or len(scales) == channels)
          and bool(np.all(np.isfinite(scales) & (scales > 0)))
          and bool(np.all((zeros >= low) & (zeros <= high)))
          and (len(scales) == 1 or not zeros.any()))
    if not ok:
        raise BadData(f"litert bytecode: tensor {t} of type {kind} and shape {shape} has "
                      f"quantisation parameters the compiler never writes ({len(scales)} "
                      f"scales, {len(zeros)} zero points, axis {axis})")


#: Zero points per quantised type (a quantised int32, a bias, has 0).
_ZERO_POINTS = {fb.TensorType.INT8: (-128, 127), fb.TensorType.UINT8: (0, 255)}
#: The builtins the compiler writes with omitted (-1) inputs, which their kernels check for.
_OPTIONAL_INPUTS = frozenset({fb.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM})


def _check_indices(where: str, indices: Any, count: int, optional: bool = False) -> None:
    for index in [] if indices is None else indices:
        if not (0 <= int(index) < count or (optional and int(index) == -1)):
            raise BadData(f"litert bytecode: {where} name tensor {int(index)} of {count}")
