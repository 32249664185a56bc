"""What crosses the network between a client and another node's actor, and how it is checked.

- A model travels once as the bytes of nnrt's own model file (``nnrt.save``; the receiving
  node parses them with ``nnrt.load``, which treats them as untrusted input), put in Ray's
  object store once per compiled model and fetched by each node when it prepares the model
  (``NodeService.prepare``, once per actor process), named by the SHA-256 of the bytes
  (checked on arrival). Executes then name the prepared model by a short handle.
- Tensors (inputs, and outputs in replies) of at least :data:`PUT_BYTES` travel as numpy
  arrays; such inputs are put in the object store once per request, so that a retry on
  another node sends a reference, not the data again, and the receiving node reads them
  zero-copy. Smaller ones travel packed (:func:`pack_tensor`: dtype, shape and raw bytes),
  which Ray sends for ~0.2 ms less per array than an array (its pickling of numpy arrays),
  and are checked when unpacked (:func:`unpack_tensor`).
- A reply is ``("ok", [tensors])`` or ``("error", status, body)``: an nnrt error is sent as
  the wire protocol encodes it for a worker's reply (docs/protocol.md) and raised again by
  the client as one of nnrt's own classes (no exception object crosses).

Ray pickles its own calls (the arguments above and the replies): that is Ray's trust
boundary, the cluster's (docs/cluster.md, "Security").
"""

from __future__ import annotations

import hashlib
import math
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from nnrt.errors import BadData, NnrtError, UnavailableDevice
from nnrt.ipc.messages import encode_error, error_from
from nnrt.model.file import load
from nnrt.model.file_writer import save
from nnrt.model.model import Model

__all__ = ["PUT_BYTES", "check_digest", "error_reply", "model_bytes", "model_from",
           "pack_tensor", "raise_reply", "unpack_tensor"]

#: Inputs at least this large are put in Ray's object store once per request (Ray sends
#: smaller arguments inline with the call).
PUT_BYTES = 100 * 1024
_DIGEST = re.compile(r"[0-9a-f]{64}")
#: The first field of a packed tensor (:func:`pack_tensor`).
_PACKED = "tensor"
#: The element kinds a packed tensor may have: bool, signed and unsigned ints, floats.
_KINDS = frozenset("biuf")
_MAX_RANK = 8


def pack_tensor(array: np.ndarray[Any, Any]) -> Any:
    """``array`` as it crosses to another node: itself from :data:`PUT_BYTES` up, else
    ``("tensor", dtype, shape, bytes)``."""
    if array.nbytes >= PUT_BYTES:
        return array
    return (_PACKED, array.dtype.str, array.shape, array.tobytes())


def unpack_tensor(value: object, where: str, *, writable: bool = False
                  ) -> np.ndarray[Any, Any]:
    """The array of a tensor received from another node (``BadData`` naming ``where``
    unless it is an array or a well-formed packed tensor: a numeric dtype, a shape of
    non-negative ints whose size matches the bytes); ``writable``: a copy of a packed one
    (else a read-only view of its bytes)."""
    if isinstance(value, np.ndarray):
        return value
    if not (isinstance(value, tuple) and len(value) == 4 and value[0] == _PACKED):
        raise BadData(f"{where}: expected a tensor, got {type(value).__name__}")
    _, dtype_str, shape, data = value
    try:
        dtype = np.dtype(dtype_str) if isinstance(dtype_str, str) and len(dtype_str) < 8 \
            else None
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in _KINDS:
        raise BadData(f"{where}: unsupported tensor type {dtype_str!r:.20}")
    if not (isinstance(shape, tuple) and len(shape) <= _MAX_RANK and all(
            d.__class__ is int and 0 <= d < 2**31 for d in shape)):
        raise BadData(f"{where}: a tensor shape is a tuple of at most {_MAX_RANK} dims "
                      f"0..2**31, got {shape!r:.60}")
    if not isinstance(data, bytes) or len(data) != math.prod(shape) * dtype.itemsize:
        raise BadData(f"{where}: {len(data) if isinstance(data, bytes) else 'no'} bytes for "
                      f"a {dtype} tensor of shape {shape}")
    array = np.frombuffer(data, dtype).reshape(shape)
    return array.copy() if writable else array


def model_bytes(model: Model) -> tuple[str, bytes]:
    """``model`` as the bytes of an nnrt model file, with their SHA-256 (hex)."""
    with tempfile.TemporaryDirectory(prefix="nnrt-ship-") as directory:
        path = Path(directory) / "model.nnrt"
        save(model, path)
        data = path.read_bytes()
    return hashlib.sha256(data).hexdigest(), data


def check_digest(digest: object) -> str:
    """A model's digest as received (``BadData`` unless 64 lowercase hex digits)."""
    if not (isinstance(digest, str) and _DIGEST.fullmatch(digest)):
        raise BadData(f"a model digest is 64 hex digits, got {digest!r:.80}")
    return digest


def model_from(data: object, digest: str, directory: str) -> Model:
    """The model of model-file bytes received for ``digest``: checked against it, written into
    ``directory`` (the node service's own) and loaded from there (``nnrt.load``)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise BadData(f"model {digest[:12]}: expected the bytes of an nnrt model file, got "
                      f"{type(data).__name__}")
    if hashlib.sha256(data).hexdigest() != digest:
        raise BadData(f"model {digest[:12]}: the bytes received do not match their digest")
    target = Path(directory) / f"{digest}.nnrt"
    if not target.exists():
        partial = target.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(target)
    return load(target)


def error_reply(exc: NnrtError) -> tuple[str, int, dict[str, Any]]:
    """The reply of an execute that failed with ``exc``: the wire protocol's status and body
    (``nnrt.ipc.messages.encode_error``, as a worker answers over its socket)."""
    return ("error", *encode_error(exc))


def raise_reply(reply: object, where: str) -> list[np.ndarray[Any, Any]]:
    """The outputs of a node's reply, or its error raised again (``where`` names the node;
    only nnrt's own error classes are ever built, as from a worker's reply)."""
    if isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "ok" and isinstance(
            reply[1], list):
        try:
            return [unpack_tensor(value, f"output {k}", writable=True)
                    for k, value in enumerate(reply[1])]
        except BadData as exc:  # the node's fault, not the caller's
            raise UnavailableDevice(f"{where}: malformed reply: {exc}") from None
    if isinstance(reply, tuple) and len(reply) == 3 and reply[0] == "error" and isinstance(
            reply[1], int) and isinstance(reply[2], dict):
        body = dict(reply[2])
        body["message"] = f"{where}: {body.get('message', f'status {reply[1]}')}"
        raise error_from(reply[1], body)
    raise UnavailableDevice(f"{where}: malformed reply ({type(reply).__name__})")
