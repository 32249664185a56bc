"""Writing a ``.nnrt`` file: :func:`save` (re-exported as ``nnrt.save``).

The data constants are streamed from their arrays or pool views into the constants section, the
AOT modules into the bytecode section; the graph refers to the constants by file offset (pool
:data:`FILE_POOL`). The layout is in :mod:`nnrt.model.file_format` and docs/model-file.md.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO, Any

import msgpack
import numpy as np

from nnrt.errors import BadData, NnrtError, ResourceExhausted
from nnrt.model.aot import MODULE_ALIGN, AotInfo
from nnrt.model.file_format import SECTION_ALIGN, Section, SectionKind, align, encode_header
from nnrt.model.model import Model
from nnrt.model.operand import MemoryLocation
from nnrt.model.types import OperandLifetime
from nnrt.model.wire import REF_TYPES, model_to_wire

__all__ = ["CONSTANT_ALIGN", "FILE_POOL", "os_errors", "save"]

#: Every constant starts at a multiple of this many bytes inside the constants section.
CONSTANT_ALIGN = 64
#: The pool id the graph's constant references use for the file itself.
FILE_POOL = 1
#: Where the writer puts the constants section (the first page after the header).
_CONSTANTS_AT = SECTION_ALIGN
_EXHAUSTED = frozenset({errno.ENOSPC, errno.EDQUOT, errno.ENOMEM, errno.EMFILE, errno.ENFILE})
_ZEROS = bytes(SECTION_ALIGN)


def save(model: Model, path: str | os.PathLike[str], *, aot: AotInfo | None = None,
         modules: Sequence[bytes] = ()) -> None:
    """Write the finished ``model`` to ``path`` as a ``.nnrt`` file, atomically (mode 0644).

    ``aot`` adds the AOT dispatch records; ``modules`` are the bytecode modules their
    ``module`` fields index (when empty, the bytes of ``aot.modules`` are used, so a loaded
    model's AOT partitions can be saved again). The file is written to a temporary file in the
    same directory, synced and renamed over ``path``: readers see the old or the new file.
    """
    if not isinstance(model, Model):
        raise BadData(f"nnrt.save: expected an nnrt.Model, got {type(model).__name__}")
    target = os.fspath(path)
    if not isinstance(target, str):
        raise BadData(f"nnrt.save: path must be a str path, got {target!r:.60}")
    where = f"model file {target}"
    layout = _constant_layout(model)
    graph = msgpack.packb(model_to_wire(model, place=layout.get))
    aot_bytes, module_data = _aot_parts(model, aot, modules, where)
    with os_errors(where, "cannot write"):
        _write_atomically(target, model, layout, graph, aot_bytes, module_data)


def _constant_layout(model: Model) -> dict[int, tuple[int, int, int]]:
    """Operand index → (pool, file offset, length) of every data constant of the main graph."""
    layout: dict[int, tuple[int, int, int]] = {}
    cursor = _CONSTANTS_AT
    for index, operand in enumerate(model.operands):
        if operand.lifetime == OperandLifetime.CONSTANT_REFERENCE and operand.type in REF_TYPES:
            cursor = align(cursor, CONSTANT_ALIGN)
            layout[index] = (FILE_POOL, cursor, operand.byte_size())
            cursor += operand.byte_size()
    return layout


def _aot_parts(model: Model, aot: AotInfo | None, modules: Sequence[bytes], where: str
               ) -> tuple[bytes | None, list[memoryview]]:
    """The packed aot section and the module buffers, after checking both like a reader."""
    if isinstance(modules, bytes | bytearray | memoryview | str) or not isinstance(
            modules, Sequence):
        raise BadData(f"{where}: modules must be a sequence of bytes, got "
                      f"{type(modules).__name__}")
    if aot is None:
        if len(modules):
            raise BadData(f"{where}: modules were given without aot records")
        return None, []
    if not isinstance(aot, AotInfo):
        raise BadData(f"{where}: aot must be an AotInfo, got {type(aot).__name__}")
    if len(modules):
        buffers = [_bytes_view(m, f"{where}: modules[{k}]")
                   for k, m in enumerate(modules)]
    else:
        buffers = [aot.module_bytes(k) for k in range(len(aot.modules))]
    spans, cursor = [], 0
    for buffer in buffers:
        cursor = align(cursor, MODULE_ALIGN)
        spans.append((cursor, len(buffer)))
        cursor += len(buffer)
    wire = aot.to_wire(spans)
    # the reader's checks, on what we are about to write (the memory is never read here)
    AotInfo.from_wire(wire, operations=len(model.operations),
                      bytecode=MemoryLocation(_NoBytes(), 0, cursor), path="nnrt.save: aot")
    return msgpack.packb(wire), buffers


def _bytes_view(value: Any, where: str) -> memoryview:
    """``value`` (bytes, bytearray, memoryview) as a flat byte view."""
    if not isinstance(value, bytes | bytearray | memoryview):
        raise BadData(f"{where}: expected bytes, got {type(value).__name__}")
    view = memoryview(value)
    if not view.c_contiguous:
        raise BadData(f"{where}: the buffer is not contiguous")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


class _NoBytes:
    """A stand-in memory for checking aot records before any file exists."""

    size = 0

    def view(self, offset: int, length: int) -> memoryview:
        raise BadData("the bytecode is not written yet")


class _SectionWriter:
    """Appends one section to the file, hashing as it goes."""

    def __init__(self, out: IO[bytes], kind: SectionKind) -> None:
        """Start a section of ``kind`` at the next page boundary of ``out``."""
        here = out.tell()
        out.write(_ZEROS[:align(here, SECTION_ALIGN) - here])
        self._out = out
        self.kind = kind
        self.offset = out.tell()
        self.length = 0
        self._sha = hashlib.sha256()

    def write(self, data: bytes | memoryview) -> None:
        self._out.write(data)
        self._sha.update(data)
        self.length += len(data)

    def pad_to(self, alignment: int) -> None:
        """Zero bytes up to the next multiple of ``alignment`` (relative to the section)."""
        self.write(_ZEROS[:align(self.length, alignment) - self.length])

    def finish(self) -> Section:
        """The section's table entry."""
        return Section(self.kind, self.offset, self.length, self._sha.digest())


def _write_atomically(target: str, model: Model, layout: dict[int, tuple[int, int, int]],
                      graph: bytes, aot: bytes | None, modules: list[memoryview]) -> None:
    directory = os.path.dirname(os.path.abspath(target))
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(_ZEROS)  # the header page, written last
            constants = _write_constants(out, model, layout)
            sections = [constants] if constants.length else []
            if aot is not None:
                sections.append(_write_modules(out, modules))
            for kind, data in ((SectionKind.GRAPH, graph), (SectionKind.AOT, aot)):
                if data is not None:
                    writer = _SectionWriter(out, kind)
                    writer.write(data)
                    sections.append(writer.finish())
            out.seek(0)
            out.write(encode_header(sections))
            out.flush()
            os.fchmod(out.fileno(), 0o644)
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    _sync_directory(directory)


def _write_constants(out: IO[bytes], model: Model, layout: dict[int, tuple[int, int, int]]
                     ) -> Section:
    """Stream every placed constant from its array or pool view into the constants section."""
    writer = _SectionWriter(out, SectionKind.CONSTANTS)
    for index, (_, offset, length) in layout.items():
        writer.pad_to(CONSTANT_ALIGN)
        if writer.offset + writer.length != offset:
            raise BadData(f"operand {index}: constant layout mismatch (nnrt bug)")
        value = model.constant_value(index)
        if value is None:
            raise BadData(f"operand {index}: constant operand has no value")
        little = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
        data = little.reshape(-1).view(np.uint8).data
        if len(data) != length:
            raise BadData(f"operand {index}: value has {len(data)} bytes, expected {length}")
        writer.write(data)
    return writer.finish()


def _write_modules(out: IO[bytes], modules: list[memoryview]) -> Section:
    writer = _SectionWriter(out, SectionKind.BYTECODE)
    for module in modules:
        writer.pad_to(MODULE_ALIGN)
        writer.write(module)
    return writer.finish()


def _sync_directory(directory: str) -> None:
    """fsync ``directory`` so the rename survives a crash (best effort where unsupported)."""
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def os_errors(where: str, action: str) -> Iterator[None]:
    """OS errors as ``ResourceExhausted`` (space, memory, descriptors) or ``BadData``."""
    try:
        yield
    except NnrtError:
        raise
    except OSError as exc:
        message = f"{where}: {action}: {exc.strerror or exc}"
        if exc.errno in _EXHAUSTED:
            raise ResourceExhausted(message) from exc
        raise BadData(message) from exc
