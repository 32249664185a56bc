"""Driver-managed device buffers (memory domains): what a buffer is, and who may use it how.

A client asks a driver to allocate a buffer for a set of *roles*: (compiled model, input or
output, index, usage frequency). :func:`check_roles` validates the roles against a
:class:`BufferDesc` and deduces the buffer's :class:`BufferSpec` (type, quantisation, dims);
the client runtime and the worker both run it, the worker being the security boundary.
:class:`DeviceBuffer` is the driver side: public methods keep the state (initialised, current
dims) and check every write; a driver fills the ``_`` hooks (:class:`HostBuffer` is the host
memory one the reference driver uses).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from nnrt.errors import BadData, OpFailed
from nnrt.model.operand import ChannelQuant, Operand, dtype_of, is_tensor
from nnrt.model.types import OperandType

__all__ = [
    "IO",
    "BufferDesc",
    "BufferSpec",
    "DeviceBuffer",
    "HostBuffer",
    "RoleOperand",
    "check_roles",
    "dims_fit",
]

Array = np.ndarray[Any, Any]
IO = Literal["input", "output"]
_MAX_RANK = 16
_MAX_DIM = 2**31


@dataclass(frozen=True)
class BufferDesc:
    """Properties the client requires of a buffer: its ``dims``.

    ``None`` (or ``()``): the rank is unknown; a 0 in a dimension: that dimension is unknown.
    """

    dims: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        dims: Any = self.dims  # checked: the annotation is what callers should pass
        if dims is None:
            return
        if isinstance(dims, str | bytes) or not isinstance(dims, Sequence):
            raise BadData(f"BufferDesc: dims must be a sequence of ints or None, got "
                          f"{type(dims).__name__}")
        if len(dims) > _MAX_RANK or not all(
                isinstance(d, int | np.integer) and not isinstance(d, bool) and 0 <= d < _MAX_DIM
                for d in dims):
            raise BadData(f"BufferDesc: dims must be at most {_MAX_RANK} ints from 0 to 2**31 "
                          f"(0 = unknown), got {list(dims)!r:.80}")
        object.__setattr__(self, "dims", tuple(int(d) for d in dims))


@dataclass(frozen=True)
class RoleOperand:
    """What the checks need about one role, whichever side checks.

    ``where`` names the role in messages; ``key`` identifies the compiled / prepared model;
    ``operand`` is that model's input or output operand at ``index``.
    """

    where: str
    key: Hashable
    io: IO
    index: int
    frequency: float
    operand: Operand


@dataclass(frozen=True)
class BufferSpec:
    """What the roles and the desc deduce: element type, quantisation and dims (None: rank
    unknown; 0: that dimension unknown)."""

    type: OperandType
    scale: float
    zero_point: int
    channel_quant: ChannelQuant | None
    dims: tuple[int, ...] | None

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy dtype of one element."""
        return dtype_of(self.type)

    @property
    def nbytes(self) -> int | None:
        """The size in bytes when every dimension is known, else None."""
        dims = self.dims
        if dims is None or not all(dims):
            return None
        return math.prod(dims) * self.dtype.itemsize


def dims_fit(declared: tuple[int, ...] | None, actual: Sequence[int]) -> bool:
    """Whether a concrete shape ``actual`` fits ``declared`` dims (None = unknown rank)."""
    if declared is None:
        return True
    return len(declared) == len(actual) and all(
        d == 0 or d == a for d, a in zip(declared, actual, strict=True))


def check_roles(desc: BufferDesc, roles: Sequence[RoleOperand]) -> BufferSpec:
    """Validate ``roles`` against ``desc`` and deduce the buffer's spec.

    ``BadData`` naming the role(s) or field for: no role; a frequency not a real number in
    (0, 1]; a scalar operand; the same role twice, or one model named twice in one direction;
    roles disagreeing on type, scale, zero point or per-channel quantisation; dims (of the desc
    and every role) not pairwise compatible. The deduced dims are the most specific combination.
    """
    if not isinstance(desc, BufferDesc):
        raise BadData(f"allocate: desc must be a BufferDesc, got {type(desc).__name__}")
    if not roles:
        raise BadData("allocate: at least one role (input or output) is needed")
    seen: dict[tuple[Hashable, str], RoleOperand] = {}
    for role in roles:
        _check_role(role)
        other = seen.get((role.key, role.io))
        if other is not None:
            what = ("the same role twice" if other.index == role.index else
                    f"one compiled model twice among the {role.io} roles")
            raise BadData(f"allocate: {other.where} and {role.where} name {what}")
        seen[(role.key, role.io)] = role
    first = roles[0]
    for role in roles[1:]:
        _check_same_element(first, role)
    dims = _combine_dims(desc, roles)
    op = first.operand
    return BufferSpec(op.type, op.scale, op.zero_point, op.channel_quant, dims)


def _check_role(role: RoleOperand) -> None:
    if not isinstance(role, RoleOperand):
        raise BadData(f"allocate: a role must be a RoleOperand, got {type(role).__name__}")
    frequency = role.frequency
    if isinstance(frequency, bool) or not isinstance(frequency, int | float) or not (
            0 < frequency <= 1):
        raise BadData(f"allocate: {role.where}: frequency must be a number in (0, 1], got "
                      f"{frequency!r:.40}")
    if not is_tensor(role.operand.type):
        raise BadData(f"allocate: {role.where}: the operand is a {role.operand.type.name}; "
                      "device buffers hold tensors only")


def _check_same_element(first: RoleOperand, role: RoleOperand) -> None:
    a, b = first.operand, role.operand
    for field, x, y in (("type", a.type.name, b.type.name), ("scale", a.scale, b.scale),
                        ("zero point", a.zero_point, b.zero_point),
                        ("per-channel quantisation", a.channel_quant, b.channel_quant)):
        if x != y:
            raise BadData(f"allocate: {first.where} and {role.where} differ in {field} "
                          f"({x} vs {y})")


def _operand_dims(operand: Operand) -> tuple[int, ...] | None:
    return operand.dims or None  # () is an unknown rank for a tensor


def _combine_dims(desc: BufferDesc, roles: Sequence[RoleOperand]) -> tuple[int, ...] | None:
    sources = [("desc", desc.dims or None)]
    sources += [(role.where, _operand_dims(role.operand)) for role in roles]
    combined: tuple[int, ...] | None = None
    for position, (where, dims) in enumerate(sources):
        if dims is None:
            continue
        if combined is not None and not _compatible(combined, dims):
            for other, other_dims in sources[:position]:  # name the pair that disagrees
                if other_dims is not None and not _compatible(other_dims, dims):
                    why = (f"rank {len(other_dims)} vs {len(dims)}"
                           if len(other_dims) != len(dims) else
                           "known dimensions differ; 0 = unknown")
                    raise BadData(f"allocate: {other} dims {list(other_dims)} and {where} dims "
                                  f"{list(dims)} are not compatible ({why})")
            raise BadData(f"allocate: {where} dims {list(dims)} are not compatible with the "
                          f"others ({list(combined)})")  # unreachable: some pair disagrees
        combined = dims if combined is None else tuple(
            a or b for a, b in zip(combined, dims, strict=True))
    return combined


def _compatible(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return len(a) == len(b) and all(x == 0 or y == 0 or x == y
                                    for x, y in zip(a, b, strict=True))


class DeviceBuffer(abc.ABC):
    """A driver-managed buffer: its spec, current dims and state; the driver fills the hooks.

    Uninitialised until written; :meth:`read` then fails (``OpFailed``). :meth:`write` checks
    the dtype and shape, resizes when the spec's dims are not all known (if the driver can
    hold that many bytes), and leaves the buffer uninitialised when anything fails.
    """

    def __init__(self, spec: BufferSpec) -> None:
        if not isinstance(spec, BufferSpec):
            raise BadData(f"DeviceBuffer: spec must be a BufferSpec, got {type(spec).__name__}")
        self._spec = spec
        self._dims = spec.dims
        self._initialized = False
        self._released = False

    @property
    def spec(self) -> BufferSpec:
        """What the roles and desc deduced at allocation."""
        return self._spec

    @property
    def dtype(self) -> np.dtype[Any]:
        """The element dtype."""
        return self._spec.dtype

    @property
    def dims(self) -> tuple[int, ...] | None:
        """The current dims: the last written shape, else the spec's dims."""
        return self._dims

    @property
    def initialized(self) -> bool:
        """Whether the buffer holds data (written since allocation or the last failure)."""
        return self._initialized

    @property
    def released(self) -> bool:
        """Whether :meth:`release` has been called."""
        return self._released

    def read(self) -> Array:
        """A read-only view of the contents (``OpFailed`` if uninitialised or released)."""
        self._check_live("read")
        if not self._initialized:
            raise OpFailed("the device buffer is uninitialised: write it (copy_from, or an "
                           "execution's output) before reading it")
        view = self._load().view()
        view.flags.writeable = False
        return view

    def write(self, array: Array) -> None:
        """Store ``array`` (its dtype must be the buffer's, its shape fit the spec's dims).

        ``BadData`` for a wrong dtype or shape, ``OpFailed`` when the driver cannot hold it;
        on any failure the buffer is left uninitialised.
        """
        self._initialized = False
        self._dims = self._spec.dims
        self._check_live("write")
        if not isinstance(array, np.ndarray):
            raise BadData(f"device buffer write: expected an ndarray, got {type(array).__name__}")
        spec = self._spec
        if array.dtype != spec.dtype:
            raise BadData(f"device buffer write: the data is {array.dtype}, the buffer holds "
                          f"{spec.dtype} ({spec.type.name})")
        if not dims_fit(spec.dims, array.shape):
            raise BadData(f"device buffer write: shape {list(array.shape)} does not fit the "
                          f"buffer's dims {list(spec.dims or ())} (0 = unknown)")
        if spec.nbytes is None and not self._can_hold(array.nbytes):
            raise OpFailed(f"the device buffer cannot grow to {array.nbytes} bytes")
        self._store(array)
        self._dims = tuple(array.shape)
        self._initialized = True

    def destination(self, shape: tuple[int, ...]) -> Array | None:
        """Writable storage of ``shape`` an execution may compute its output into, or None.

        The executor offers it to the driver as the output's destination; :meth:`write` of a
        result already in it then stores nothing (no copy). The contents are undefined until
        that write: a failed execution invalidates the buffer anyway.
        """
        self._check_live("destination")
        if not dims_fit(self._spec.dims, shape):
            return None
        storage = self._destination(shape)
        if storage is not None and (storage.shape != shape or storage.dtype != self.dtype
                                    or not storage.flags.c_contiguous
                                    or not storage.flags.writeable):
            return None  # a driver hook returning something unusable: fall back to a copy
        return storage

    def invalidate(self) -> None:
        """Mark the contents undefined (a failed execution or copy): reads fail until written."""
        self._initialized = False
        self._dims = self._spec.dims

    def release(self) -> None:
        """Free the driver memory (idempotent); later reads and writes fail."""
        if not self._released:
            self._released = True
            self._initialized = False
            self._release()

    def _check_live(self, what: str) -> None:
        if self._released:
            raise OpFailed(f"device buffer {what}: the buffer has been freed")

    # -- hooks -------------------------------------------------------------------------------

    def _destination(self, shape: tuple[int, ...]) -> Array | None:
        """Storage of ``shape`` to compute into (None: results are stored by a copy)."""
        return None

    @abc.abstractmethod
    def _load(self) -> Array:
        """The contents (called only when initialised)."""

    @abc.abstractmethod
    def _store(self, array: Array) -> None:
        """Copy ``array`` (checked) into device memory, resizing if its size changed."""

    def _can_hold(self, nbytes: int) -> bool:
        """Whether the buffer can grow to ``nbytes`` (asked only when the size is dynamic)."""
        return True

    def _release(self) -> None:  # noqa: B027 - optional hook
        """Free device memory (called once)."""

    def __repr__(self) -> str:
        state = ("freed" if self._released else
                 "initialised" if self._initialized else "uninitialised")
        dims = "?" if self._dims is None else list(self._dims)
        return f"<{type(self).__name__} {self._spec.type.name} {dims} {state}>"


class HostBuffer(DeviceBuffer):
    """A device buffer in host memory (a numpy array), at most ``max_bytes`` (None: no limit).

    Writes of the current shape copy into the array in place; other shapes replace it.
    """

    def __init__(self, spec: BufferSpec, max_bytes: int | None = None) -> None:
        super().__init__(spec)
        self._max_bytes = max_bytes
        self._data: Array | None = None

    def _load(self) -> Array:
        data = self._data
        if data is None:
            raise OpFailed("the device buffer holds no data")
        return data

    def _store(self, array: Array) -> None:
        data = self._data
        if data is not None and data.shape == array.shape:
            if array.__array_interface__["data"][0] != data.__array_interface__["data"][0]:
                np.copyto(data, array, casting="no")  # (computed in place: nothing to copy)
        else:
            self._data = None
            self._data = np.array(array, order="C", copy=True)

    def _destination(self, shape: tuple[int, ...]) -> Array | None:
        data = self._data
        if data is not None and data.shape == shape:
            return data
        nbytes = math.prod(shape) * self.dtype.itemsize
        if not self._can_hold(nbytes):
            return None
        self._data = None
        self._data = np.empty(shape, self.dtype)
        return self._data

    def _can_hold(self, nbytes: int) -> bool:
        return self._max_bytes is None or nbytes <= self._max_bytes

    def _release(self) -> None:
        self._data = None
