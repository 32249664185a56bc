"""Initializers: ONNX weights as arrays living in shared-memory pools.

Weights stored inside the ``.onnx`` protobuf are copied once into one ``memfd`` pool (the
protobuf holds them in the Python heap; the pool is what workers map). Weights in external-data
files are served by mapping each file once as an ``mmap_fd`` pool and viewing the tensor's
range in place: never copied. The model's CONSTANT_REFERENCE operands point into these pools.

External-data locations are untrusted input: a location must be a relative path that stays
inside the model's directory, and every (offset, length) must lie inside the file and match the
tensor's size.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from nnrt.memory import Memory
from nnrt.onnx.dtypes import onnx_dtype

__all__ = ["POOL_THRESHOLD", "WeightPools", "tensor_array"]

Array = np.ndarray[Any, Any]

#: Initializers of at least this many bytes go to a pool; smaller ones stay plain arrays.
POOL_THRESHOLD = 256
_ALIGN = 64
_EXTERNAL = 1  # TensorProto.EXTERNAL


class WeightPools:
    """The pools holding a model's initializers; keep it alive as long as the model."""

    def __init__(self, base_dir: Path | None) -> None:
        self.base_dir = base_dir
        self.memories: list[Memory] = []
        self._files: dict[Path, Memory] = {}

    def close(self) -> None:
        """Close every pool (a failed import releases its fds at once)."""
        for memory in self.memories:
            memory.close()

    def arrays(self, tensors: Iterable[Any]) -> dict[str, Array]:
        """Every initializer by name: pooled views for large ones, plain arrays otherwise."""
        result: dict[str, Array] = {}
        embedded: list[tuple[str, Array]] = []
        for t in tensors:
            where = f"initializer {t.name!r}"
            if t.data_location == _EXTERNAL:
                result[t.name] = self._external(t, where)
                continue
            arr = tensor_array(t, where)
            if arr.nbytes >= POOL_THRESHOLD and arr.dtype in (np.float32, np.float16):
                embedded.append((t.name, arr))
            else:
                result[t.name] = arr
        result.update(self._pool(embedded))
        return result

    def _pool(self, arrays: list[tuple[str, Array]]) -> dict[str, Array]:
        if not arrays:
            return {}
        offsets = []
        size = 0
        for _, arr in arrays:
            offsets.append(size)
            size += -(-arr.nbytes // _ALIGN) * _ALIGN
        memory = Memory.create(size, name="nnrt-onnx-weights")
        self.memories.append(memory)
        views = {}
        for (name, arr), offset in zip(arrays, offsets, strict=True):
            view = memory.ndarray(arr.dtype, arr.shape, offset)
            view[...] = arr
            view.flags.writeable = False
            views[name] = view
        return views

    def _external(self, t: Any, where: str) -> Array:
        fields = {e.key: e.value for e in t.external_data}
        location = fields.get("location", "")
        if self.base_dir is None:
            raise ValueError(f"{where}: external data {location!r} needs the model's path "
                             "(load it from a file, not from bytes)")
        path = _inside(self.base_dir, location, where)
        dtype = onnx_dtype(t.data_type, where)
        shape = tuple(int(d) for d in t.dims)
        nbytes = dtype.itemsize * math.prod(shape)
        offset = int(fields.get("offset", "0"))
        length = int(fields.get("length", str(nbytes)))
        if length != nbytes:
            raise ValueError(f"{where}: external length {length} does not match {nbytes} bytes "
                             f"of {dtype}{list(shape)}")
        memory = self._map(path, where)
        if offset < 0 or offset + length > memory.size:
            raise ValueError(f"{where}: bytes [{offset}, {offset + length}) lie outside "
                             f"{location!r} ({memory.size} bytes)")
        if offset % dtype.itemsize:  # misaligned: cannot be viewed in place
            raw = memory.view(offset, length).tobytes()
            return np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype).reshape(shape)
        view = memory.ndarray(dtype.newbyteorder("<"), shape, offset)
        return view if view.dtype.isnative else view.astype(dtype)

    def _map(self, path: Path, where: str) -> Memory:
        memory = self._files.get(path)
        if memory is None:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                size = os.fstat(fd).st_size
                if size == 0:
                    raise ValueError(f"{where}: external data file {path.name!r} is empty")
                memory = Memory.from_fd(fd, 0, size)
            finally:
                os.close(fd)
            self._files[path] = memory
            self.memories.append(memory)
        return memory


def _inside(base: Path, location: str, where: str) -> Path:
    relative = Path(location)
    if not location or relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"{where}: external data location {location!r} must be a relative path "
                         "inside the model's directory")
    path = (base / relative).resolve()
    if not path.is_relative_to(base.resolve()):
        raise ValueError(f"{where}: external data location {location!r} leaves the model's "
                         "directory")
    if not path.is_file():
        raise ValueError(f"{where}: external data file {location!r} does not exist")
    return path


def tensor_array(t: Any, where: str) -> Array:
    """The value of an embedded ``TensorProto`` as a numpy array of its ONNX dtype."""
    from onnx import numpy_helper  # noqa: PLC0415 - the onnx extra

    if t.data_type == 11:  # DOUBLE: allowed only for constants that fit float32 exactly
        arr = numpy_helper.to_array(t)
        narrow = arr.astype(np.float32)
        if not np.array_equal(narrow.astype(np.float64), arr, equal_nan=True):
            raise ValueError(f"{where}: DOUBLE values that float32 cannot hold exactly")
        return narrow
    dtype = onnx_dtype(t.data_type, where)
    arr = numpy_helper.to_array(t)
    return np.ascontiguousarray(arr, dtype=dtype).reshape(arr.shape)
