"""Message shapes, per-verb schemas, tensors and errors on the wire (protocol version 6).

A request is ``[request_id, verb, body]`` and a response ``[request_id, status, body]``: ids
are positive ints chosen by the requester, verbs short strings, bodies maps of str to plain
values, status an NNAPI result code (0 = success). Every incoming message is checked against the
verb's schema before it is used; a violation is a :class:`ProtocolError` (the connection is
dropped). Semantic problems (unknown handle, invalid model) are error responses instead.

The first request on a connection must be ``hello`` with this protocol version.

Version 2 added shared memory pools: the ``map`` / ``unmap`` verbs, tensor references
``[dtype, shape, pool, offset, length]`` among an execute's ``inputs`` and in its new
``outputs`` field, and outputs written into a pool answered as ``[dtype, shape]``.
Version 3 added driver-managed device buffers: the ``allocate`` / ``free`` / ``copy_from`` /
``copy_to`` verbs and ``["device", token]`` among an execute's ``inputs`` and ``outputs``.
Version 4 added load reports: a client whose ``hello`` sets ``load_reports`` receives, while the
worker is busy, ``[0, 0, {"load": [span, busy, executes]}]`` every few milliseconds (id 0 is
never a request's): the seconds since its previous report, the CPU seconds it spent serving in
them, and the executes it ran (see :func:`check_load_report`).
Version 5 counted prepares per driver in the statistics. Version 6 added models the service
batches across its clients: ``compile_batched`` (a model and its batching options),
``execute_batched`` (one request of such a model: inputs inline or in the client's pools, output
regions in its pools) and ``release_batched`` (see docs/batching-shared.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from nnrt.errors import (
    BadData,
    BadState,
    DeadlineMissed,
    NnrtError,
    OpFailed,
    OutputInsufficientSize,
    ResourceExhausted,
    UnavailableDevice,
    Unmappable,
    Unsupported,
)
from nnrt.ipc.framing import MAX_FDS_PER_MESSAGE, ProtocolError
from nnrt.model.wire_fields import describe

__all__ = [
    "read_deadline",
    "is_shape",
    "DEVICE",
    "PROTOCOL_VERSION",
    "REQUEST_SCHEMAS",
    "LOAD_REPORT_ID",
    "Status",
    "check_load_report",
    "check_request",
    "check_response",
    "TensorRef",
    "decode_ref",
    "decode_tensor",
    "dtype_name",
    "encode_error",
    "encode_tensor",
    "encode_written",
    "error_from",
]

PROTOCOL_VERSION = 6
#: The id of a worker's load report (never a request's: request ids are positive).
LOAD_REPORT_ID = 0
#: The tag of a device-buffer argument ``["device", token]`` in an execute.
DEVICE = "device"
_MAX_ID = 2**53
_MAX_RANK = 16
_MAX_DIM = 2**31
_DTYPES = {"float32", "float16", "int32", "uint32", "uint8", "int8", "int16", "uint16", "bool"}
# dtype.name costs microseconds: look names and dtypes up in tables instead
_DTYPE_OF: dict[str, np.dtype[Any]] = {name: np.dtype(name) for name in _DTYPES}
_NAME_OF: dict[np.dtype[Any], str] = {dt: name for name, dt in _DTYPE_OF.items()}
_ITEMSIZE: dict[str, int] = {name: dt.itemsize for name, dt in _DTYPE_OF.items()}


class Status:
    """NNAPI result codes used as response status."""

    OK = 0
    OUT_OF_MEMORY = 1
    BAD_DATA = 4
    OP_FAILED = 5
    BAD_STATE = 6
    UNMAPPABLE = 7
    OUTPUT_INSUFFICIENT_SIZE = 8
    UNAVAILABLE_DEVICE = 9
    MISSED_DEADLINE = 10
    RESOURCE_EXHAUSTED = 12


# -- schemas ------------------------------------------------------------------------------------
# field -> (accepted Python types, required). bool is never accepted where int is expected.

Schema = Mapping[str, tuple[tuple[type, ...], bool]]
_INT, _NUM, _STR = (int,), (int, float), (str,)
_LIST, _MAP, _BYTES, _BOOL = (list,), (dict,), (bytes,), (bool,)
_OPT_NUM = (int, float, type(None))
_OPT_LIST = (list, type(None))

REQUEST_SCHEMAS: dict[str, Schema] = {
    "hello": {"protocol": (_INT, True), "client": (_STR, True), "pid": (_INT, False),
              "load_reports": (_BOOL, False)},
    "ping": {},
    "info": {},
    "supported": {"model": (_MAP, True), "device": (_STR, False)},
    "prepare": {"model": (_MAP, True), "preference": (_INT, False), "priority": (_INT, False),
                "compiled": (_LIST, False), "cache": (_MAP, False), "nfds": (_INT, False)},
    "release": {"handle": (_INT, True)},
    "execute": {"handle": (_INT, True), "inputs": (_LIST, True), "priority": (_INT, False),
                "deadline": (_OPT_NUM, False), "output_sizes": (_LIST, False),
                "outputs": (_LIST, False), "measure": (_BOOL, False), "nfds": (_INT, False)},
    "cancel": {"target": (_INT, True)},
    "map": {"pool": (_INT, True), "kind": (_STR, True), "size": (_INT, True),
            "writable": (_BOOL, True), "offset": (_INT, False), "name": (_STR, False),
            "nfds": (_INT, False)},
    "unmap": {"pool": (_INT, True)},
    "allocate": {"dims": (_LIST, False), "roles": (_LIST, True)},
    "free": {"token": (_INT, True)},
    "copy_from": {"token": (_INT, True), "source": (_LIST, True)},
    "copy_to": {"token": (_INT, True), "target": (_OPT_LIST, False)},
    # shared-mode service verbs (client -> nnrt serve)
    "compile": {"model": (_MAP, True), "preference": (_INT, False), "priority": (_INT, False),
                "devices": (_LIST, False), "compiled": (_LIST, False), "cache": (_MAP, False),
                "name": (_STR, False)},
    "statistics": {},
    "compile_batched": {"model": (_MAP, True), "batching": (_MAP, True),
                        "preference": (_INT, False), "priority": (_INT, False),
                        "devices": (_LIST, False), "shape_variants": (_INT, False)},
    "execute_batched": {"handle": (_INT, True), "inputs": (_LIST, True), "priority": (_INT, False),
                        "deadline": (_OPT_NUM, False), "outputs": (_LIST, False)},
    "release_batched": {"handle": (_INT, True)},
}


#: Per verb, its required fields.
_REQUIRED: dict[str, tuple[str, ...]] = {
    verb: tuple(key for key, (_, required) in schema.items() if required)
    for verb, schema in REQUEST_SCHEMAS.items()}


def check_request(message: Any) -> tuple[int, str, dict[str, Any]]:
    """Validate a request's envelope and body against its verb's schema.

    Types are compared exactly (what msgpack decodes is never a subclass): a bool is never an
    int, and messages are only built when something is wrong.
    """
    if message.__class__ is not list or len(message) != 3:
        raise ProtocolError("a request must be [id, verb, body]")
    request_id, verb, body = message
    if request_id.__class__ is not int or not 0 < request_id < _MAX_ID:
        raise ProtocolError(f"bad request id {describe(request_id)}")
    schema = REQUEST_SCHEMAS.get(verb) if verb.__class__ is str else None
    if schema is None:
        raise ProtocolError(f"unknown verb {describe(verb)}")
    if body.__class__ is not dict:
        raise ProtocolError(f"request {request_id} ({verb}): body must be a map, got "
                            f"{type(body).__name__}")
    for key, value in body.items():
        spec = schema.get(key)
        if spec is None or value.__class__ not in spec[0]:
            raise ProtocolError(f"request {request_id} ({verb}): " + (
                f"unknown field {describe(key)}" if spec is None else
                f"field {describe(key)} has type {type(value).__name__}"))
    for key in _REQUIRED[verb]:
        if key not in body:
            raise ProtocolError(f"request {request_id} ({verb}): missing field {describe(key)}")
    if "nfds" in body and not 0 <= body["nfds"] <= MAX_FDS_PER_MESSAGE:
        raise ProtocolError(f"request {request_id}: bad nfds")
    return request_id, verb, body


def check_response(message: Any) -> tuple[int, int, dict[str, Any]]:
    """Validate a response's envelope (bodies are checked by whoever reads them).

    Id 0 (:data:`LOAD_REPORT_ID`) passes: it is a load report, whose body the reader checks
    with :func:`check_load_report`.
    """
    if message.__class__ is not list or len(message) != 3:  # exact classes: what msgpack makes
        raise ProtocolError("a response must be [id, status, body]")
    request_id, status, body = message
    if request_id.__class__ is not int or not 0 <= request_id < _MAX_ID:  # (bool is not int)
        raise ProtocolError(f"bad response id {describe(request_id)}")
    if status.__class__ is not int or not 0 <= status < 64:
        raise ProtocolError(f"bad status {describe(status)}")
    if body.__class__ is not dict:
        raise ProtocolError("response body must be a map")
    return request_id, status, body


#: Longest span a load report may cover (a worker asleep for days reports once it wakes).
_MAX_SPAN = 1e9


def check_load_report(status: int, body: dict[str, Any]) -> tuple[float, float, int]:
    """``(span, busy, executes)`` of a load report body ``{"load": [span, busy, executes]}``.

    ``span`` (seconds the report covers) must be positive, ``busy`` (CPU seconds spent serving
    in that span; more than ``span`` when the driver runs threads) and ``executes`` (executes
    run) non-negative; numbers finite. Anything else is a :class:`ProtocolError`.
    """
    load = body.get("load") if status == Status.OK and len(body) == 1 else None
    if load.__class__ is not list or len(load) != 3:
        raise ProtocolError("a load report must be [0, 0, {\"load\": [span, busy, executes]}]")
    span, busy, executes = load
    if not (span.__class__ in (int, float) and busy.__class__ in (int, float)
            and executes.__class__ is int):
        raise ProtocolError("load report fields must be numbers (span, busy) and an int")
    if not (0 < span <= _MAX_SPAN and 0 <= busy <= span * 4096 and 0 <= executes < _MAX_ID):
        raise ProtocolError(f"load report out of range: span {span!r:.20}, busy {busy!r:.20}, "
                            f"executes {executes!r:.20}")
    return float(span), float(busy), executes


# -- tensors ------------------------------------------------------------------------------------

def read_deadline(value: Any, where: str) -> float | None:
    """An execute's ``deadline`` field, given (a monotonic time, schema-checked as a number):
    None for +inf, ``-inf`` for one long past; NaN is ``BadData`` naming ``where``."""
    deadline = float(value)
    if math.isnan(deadline):
        raise BadData(f"{where}: the deadline is NaN")
    if math.isinf(deadline):
        return None if deadline > 0 else -math.inf
    return deadline


def encode_tensor(array: np.ndarray[Any, Any]) -> list[Any]:
    """``[dtype, shape, bytes]`` for ``array`` (any rank, including 0-d)."""
    name = _NAME_OF.get(array.dtype)
    if name is None:
        raise BadData(f"dtype {array.dtype} cannot cross the wire")
    return [name, list(array.shape), array.tobytes()]


def encode_written(array: np.ndarray[Any, Any]) -> list[Any]:
    """``[dtype, shape]`` for an output the worker wrote into a pool (its bytes stay there)."""
    name = _NAME_OF.get(array.dtype)
    if name is None:
        raise BadData(f"dtype {array.dtype} cannot cross the wire")
    return [name, list(array.shape)]


def dtype_of_name(name: str) -> np.dtype[Any]:
    """The dtype a wire name (checked by the caller: one of the wire dtypes) stands for."""
    dtype = _DTYPE_OF.get(name)
    return dtype if dtype is not None else np.dtype(name)


def dtype_name(dtype: np.dtype[Any]) -> str | None:
    """The wire name of ``dtype``, or None if it cannot cross the wire."""
    return _NAME_OF.get(dtype)


class TensorRef(NamedTuple):
    """A decoded ``[dtype, shape, pool, offset, length]`` reference (offset/length unchecked)."""

    dtype: np.dtype[Any]
    shape: list[int]
    pool: int
    offset: int
    length: int


def decode_ref(value: Any, where: str) -> TensorRef:
    """Check the structure of ``[dtype, shape, pool, offset, length]`` (untrusted).

    Wrong types or lengths are a :class:`ProtocolError`; the values (the pool mapped, offset and
    length in range and aligned) are checked by whoever holds the pool, as ``BadData``.
    """
    if not isinstance(value, list) or len(value) != 5:
        raise ProtocolError(f"{where}: a tensor reference must be [dtype, shape, pool, offset, "
                            "length]")
    dtype, shape, pool, offset, length = value
    if not isinstance(dtype, str) or dtype not in _DTYPE_OF:
        raise ProtocolError(f"{where}: unsupported dtype {describe(dtype)}")
    _check_shape(shape, where)
    for name, field in (("pool", pool), ("offset", offset), ("length", length)):
        if field.__class__ is not int:
            raise ProtocolError(f"{where}: {name} must be an int, got {type(field).__name__}")
    return TensorRef(_DTYPE_OF[dtype], shape, pool, offset, length)


def is_shape(value: Any) -> bool:
    """Whether an untrusted reply field is a shape: a list of non-negative ints."""
    return value.__class__ is list and all(d.__class__ is int and d >= 0 for d in value)


def _check_shape(shape: Any, where: str) -> None:
    if shape.__class__ is not list or len(shape) > _MAX_RANK:
        raise ProtocolError(f"{where}: bad shape {describe(shape)}")
    for d in shape:
        if d.__class__ is not int or not 0 <= d < _MAX_DIM:
            raise ProtocolError(f"{where}: bad shape {describe(shape)}")


def decode_tensor(value: Any, where: str, *, writable: bool = False) -> np.ndarray[Any, Any]:
    """Check and decode ``[dtype, shape, bytes]`` (untrusted) into a read-only array view of
    the bytes, or with ``writable`` an array over a copy of them (one ``memcpy``)."""
    if value.__class__ is not list or len(value) != 3:
        raise ProtocolError(f"{where}: a tensor must be [dtype, shape, bytes]")
    dtype, shape, data = value
    dt = _DTYPE_OF.get(dtype) if dtype.__class__ is str else None
    if dt is None:
        raise ProtocolError(f"{where}: unsupported dtype {describe(dtype)}")
    if shape.__class__ is not list or len(shape) > _MAX_RANK:
        raise ProtocolError(f"{where}: bad shape {describe(shape)}")
    for d in shape:
        if d.__class__ is not int or not 0 <= d < _MAX_DIM:
            raise ProtocolError(f"{where}: bad shape {describe(shape)}")
    if data.__class__ is not bytes:
        raise ProtocolError(f"{where}: tensor data must be bytes")
    if len(data) != math.prod(shape) * _ITEMSIZE[dtype]:
        raise ProtocolError(f"{where}: {len(data)} bytes for shape {shape} of {dtype}")
    return np.ndarray(shape, dt, bytearray(data) if writable else data)


# -- errors -------------------------------------------------------------------------------------

_STATUS_OF: list[tuple[type[NnrtError], int]] = [
    (OutputInsufficientSize, Status.OUTPUT_INSUFFICIENT_SIZE),
    (BadData, Status.BAD_DATA),
    (BadState, Status.BAD_STATE),
    (Unmappable, Status.UNMAPPABLE),
    (UnavailableDevice, Status.UNAVAILABLE_DEVICE),
    (DeadlineMissed, Status.MISSED_DEADLINE),
    (ResourceExhausted, Status.RESOURCE_EXHAUSTED),
    (OpFailed, Status.OP_FAILED),
]
_ERROR_OF: dict[int, type[NnrtError]] = {
    Status.BAD_DATA: BadData,
    Status.BAD_STATE: BadState,
    Status.OP_FAILED: OpFailed,
    Status.UNMAPPABLE: Unmappable,
    Status.UNAVAILABLE_DEVICE: UnavailableDevice,
    Status.MISSED_DEADLINE: DeadlineMissed,
    Status.RESOURCE_EXHAUSTED: ResourceExhausted,
    Status.OUT_OF_MEMORY: ResourceExhausted,
}


def encode_error(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """``(status, body)`` for an exception raised while serving a request."""
    body: dict[str, Any] = {"message": str(exc)}
    if isinstance(exc, Unsupported):
        body["unsupported"] = True
    if isinstance(exc, OutputInsufficientSize):
        body["shapes"] = [list(s) for s in exc.shapes]
    for cls, status in _STATUS_OF:
        if isinstance(exc, cls):
            return status, body
    return Status.OP_FAILED, {"message": f"{type(exc).__name__}: {exc}"}


def error_from(status: int, body: Mapping[str, Any]) -> NnrtError:
    """The nnrt exception for an error response (only nnrt's own classes are ever built)."""
    message = body.get("message")
    text = message if isinstance(message, str) else f"status {status}"
    if status == Status.OUTPUT_INSUFFICIENT_SIZE:
        shapes = body.get("shapes")
        if isinstance(shapes, list) and all(
                isinstance(s, list) and all(isinstance(d, int) for d in s) for s in shapes):
            return OutputInsufficientSize(text, [tuple(s) for s in shapes])
        return OutputInsufficientSize(text, [])
    if status == Status.OP_FAILED and body.get("unsupported") is True:
        return Unsupported(text)
    return _ERROR_OF.get(status, OpFailed)(text)
