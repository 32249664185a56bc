"""Opening each kind of memory: memfd, a user fd (mmap_fd) and a POSIX shared-memory blob.

Every function returns an :class:`Opened` record that owns one fd and one mapping, or raises
having released everything it acquired. OS failures are translated here: a lack of memory or
descriptors is ``ResourceExhausted`` (transient), anything else ``Unmappable``; bad arguments are
``BadData`` naming the argument.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import mmap
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import posix_ipc

from nnrt.errors import BadData, NnrtError, ResourceExhausted, Unmappable
from nnrt.memory.ranges import MAX_SIZE, as_count

__all__ = [
    "BLOB_NAME",
    "MEMFD_SEALS",
    "Opened",
    "create_blob",
    "create_memfd",
    "file_size",
    "map_fd",
    "new_blob_name",
    "open_blob",
]

#: Seals every memfd carries from creation on: its size never changes, the seals neither.
MEMFD_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
#: Blob names the workers accept (a leading slash, then 1 to 200 portable characters).
BLOB_NAME = re.compile(r"/[A-Za-z0-9._-]{1,200}")

_EXHAUSTED = frozenset({errno.ENOMEM, errno.EMFILE, errno.ENFILE, errno.ENOSPC})
_PROTS = {mmap.PROT_READ: "PROT_READ", mmap.PROT_READ | mmap.PROT_WRITE: "PROT_READ|PROT_WRITE"}


@dataclass(frozen=True, slots=True)
class Opened:
    """An fd and its mapping, freshly opened; the :class:`~nnrt.memory.Memory` takes both over.

    ``delta`` is where the usable range starts inside the mapping (non-zero only for an mmap_fd
    whose file offset is not a multiple of ``mmap.ALLOCATIONGRANULARITY``).
    """

    kind: str
    fd: int
    mapping: mmap.mmap
    delta: int
    size: int
    writable: bool
    name: str | None = None
    file_offset: int = 0
    owner: bool = False


def new_blob_name() -> str:
    """A fresh blob name, ``/nnrt-<pid>-<16 hex digits>`` (shown as /dev/shm/nnrt-...)."""
    return f"/nnrt-{os.getpid()}-{secrets.token_hex(8)}"


def file_size(fd: int) -> int | None:
    """The size of the regular file behind ``fd``, or None when it is not a regular file."""
    st = os.fstat(fd)
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def create_memfd(size: object, name: object) -> Opened:
    """A new sealed, writable memfd of ``size`` bytes (SHRINK, GROW and SEAL seals)."""
    nbytes = as_count(size, "Memory.create: size", minimum=1, maximum=MAX_SIZE)
    if not isinstance(name, str) or "\0" in name or len(name.encode()) > 249:
        raise BadData(f"Memory.create: name must be a str of at most 249 bytes without NUL, got "
                      f"{name!r:.60}")
    what = f"Memory.create({nbytes}, name={name!r})"
    try:
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError as exc:
        raise os_failure(exc, what) from exc
    with _closed_on_failure(fd, what):
        os.ftruncate(fd, nbytes)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, MEMFD_SEALS)
        mapping = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    return Opened("memfd", fd, mapping, 0, nbytes, True)


def map_fd(fd: object, offset: object, size: object, prot: object) -> Opened:
    """Map ``size`` bytes of a dup of the caller's ``fd`` at file ``offset`` with ``prot``."""
    number = as_count(fd, "Memory.from_fd: fd")
    start = as_count(offset, "Memory.from_fd: offset", maximum=2**62)
    nbytes = as_count(size, "Memory.from_fd: size", minimum=1, maximum=MAX_SIZE)
    if isinstance(prot, bool) or not isinstance(prot, int) or prot not in _PROTS:
        raise BadData(f"Memory.from_fd: prot must be mmap.PROT_READ or "
                      f"mmap.PROT_READ | mmap.PROT_WRITE, got {prot!r:.40}")
    what = f"Memory.from_fd(fd {number}, offset {start}, size {nbytes}, {_PROTS[prot]})"
    try:
        own = os.dup(number)  # non-inheritable: close-on-exec
    except OSError as exc:
        if exc.errno == errno.EBADF:
            raise BadData(f"{what}: fd {number} is not open") from None
        raise os_failure(exc, what) from exc
    with _closed_on_failure(own, what):
        _check_access(own, prot, what)
        available = file_size(own)
        if available is not None and available < start + nbytes:
            raise BadData(f"{what}: the file holds {available} bytes, fewer than offset + size "
                          f"= {start + nbytes}")
        delta = start % mmap.ALLOCATIONGRANULARITY
        mapping = mmap.mmap(own, delta + nbytes, mmap.MAP_SHARED, prot, offset=start - delta)
    return Opened("mmap_fd", own, mapping, delta, nbytes, prot & mmap.PROT_WRITE != 0,
                  file_offset=start)


def create_blob(size: object, name: object) -> Opened:
    """A new POSIX shared-memory blob of ``size`` bytes, owned (unlinked at close) by the caller."""
    nbytes = as_count(size, "Memory.create_blob: size", minimum=1, maximum=MAX_SIZE)
    blob = new_blob_name() if name is None else _check_blob_name(name, "Memory.create_blob")
    what = f"Memory.create_blob({nbytes}, name={blob!r})"
    try:
        shm = posix_ipc.SharedMemory(blob, posix_ipc.O_CREX, mode=0o600, size=nbytes)
    except posix_ipc.ExistentialError:
        raise BadData(f"{what}: a blob with that name already exists") from None
    except (posix_ipc.Error, OSError) as exc:
        raise _shm_failure(exc, what) from exc
    fd = shm.fd  # shm_open sets FD_CLOEXEC; the SharedMemory object never closes it by itself
    with _closed_on_failure(fd, what, lambda: posix_ipc.unlink_shared_memory(blob)):
        mapping = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    return Opened("blob", fd, mapping, 0, nbytes, True, name=blob, owner=True)


def open_blob(name: object, writable: object) -> Opened:
    """Map an existing blob by name, whole (size from fstat); never its owner."""
    blob = _check_blob_name(name, "Memory.open_blob")
    if not isinstance(writable, bool):
        raise BadData(f"Memory.open_blob: writable must be a bool, got {writable!r:.40}")
    what = f"Memory.open_blob({blob!r}, writable={writable})"
    try:
        shm = posix_ipc.SharedMemory(blob, 0, read_only=not writable)
    except posix_ipc.ExistentialError:
        raise Unmappable(f"{what}: no blob named {blob} exists (/dev/shm{blob})") from None
    except (posix_ipc.Error, OSError) as exc:
        raise _shm_failure(exc, what) from exc
    fd = shm.fd
    with _closed_on_failure(fd, what):
        nbytes = os.fstat(fd).st_size
        if nbytes <= 0:
            raise Unmappable(f"{what}: the blob is empty (0 bytes), nothing to map")
        if nbytes > MAX_SIZE:
            raise Unmappable(f"{what}: the blob holds {nbytes} bytes, over the {MAX_SIZE} limit")
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        mapping = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, prot)
    return Opened("blob", fd, mapping, 0, nbytes, writable, name=blob)


@contextlib.contextmanager
def _closed_on_failure(fd: int, what: str, cleanup: Callable[[], object] | None = None
                       ) -> Iterator[None]:
    """Close ``fd`` (and run ``cleanup``) if the block fails; OS errors become nnrt errors
    naming ``what``, nnrt errors pass as they are."""
    try:
        yield
    except BaseException as exc:
        os.close(fd)
        if cleanup is not None:
            cleanup()
        if isinstance(exc, OSError) and not isinstance(exc, NnrtError):
            raise os_failure(exc, what) from exc
        raise


def os_failure(exc: OSError, what: str) -> NnrtError:
    """``exc`` as ``ResourceExhausted`` (out of memory / descriptors) or ``Unmappable``."""
    message = f"{what}: {exc.strerror or exc}"
    if exc.errno in _EXHAUSTED:
        return ResourceExhausted(message)
    return Unmappable(message)


def _shm_failure(exc: Exception, what: str) -> NnrtError:
    """A posix_ipc failure (which carries no errno) as ``Unmappable`` or ``ResourceExhausted``."""
    if isinstance(exc, OSError):
        return os_failure(exc, what)
    if isinstance(exc, MemoryError):
        return ResourceExhausted(f"{what}: {exc}")
    return Unmappable(f"{what}: {exc}")


def _check_blob_name(name: object, where: str) -> str:
    """``name`` if it is a valid blob name, else ``BadData`` naming ``where``."""
    if not isinstance(name, str) or BLOB_NAME.fullmatch(name) is None:
        raise BadData(f"{where}: name must match /[A-Za-z0-9._-]{{1,200}} (e.g. '/nnrt-model'), "
                      f"got {name!r:.60}")
    if name in ("/.", "/.."):
        raise BadData(f"{where}: name {name!r} is not a usable blob name")
    return name


def _check_access(fd: int, prot: int, what: str) -> None:
    """``BadData`` unless ``fd``'s access mode (F_GETFL) allows mapping it with ``prot``."""
    mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    if mode == os.O_WRONLY:
        raise BadData(f"{what}: the fd is open write-only (O_WRONLY); mapping needs read access")
    if prot & mmap.PROT_WRITE and mode != os.O_RDWR:
        raise BadData(f"{what}: PROT_WRITE needs an fd opened O_RDWR, this one is O_RDONLY")
