"""Loading a ``.nnrt`` file: :func:`load` (``nnrt.load``); :func:`save` is re-exported here.

:func:`load` maps the whole file once as a read-only ``mmap_fd`` :class:`~nnrt.memory.Memory`,
checks the section table and every section's sha256, and rebuilds the model with its data
constants reading the mapping in place. Files are untrusted input: every flaw is a ``BadData``
naming the file and the field. The layout is in :mod:`nnrt.model.file_format` and
docs/model-file.md.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import stat
from typing import Any

import msgpack

from nnrt.errors import BadData, NnrtError
from nnrt.memory import Memory
from nnrt.model.aot import AotInfo
from nnrt.model.file_format import SECTION_ALIGN, Section, SectionKind, parse_header
from nnrt.model.file_writer import FILE_POOL, os_errors
from nnrt.model.file_writer import save as save
from nnrt.model.model import Model, attach_aot
from nnrt.model.operand import MemoryLocation
from nnrt.model.wire import MAX_OPERANDS, model_from_wire

__all__ = ["load", "save"]

#: Most entries of one msgpack map in a graph or aot section (an operand has 10 fields).
_MAX_MAP = 64


def load(path: str | os.PathLike[str]) -> Model:
    """The finished model stored in the ``.nnrt`` file ``path``.

    The file is mapped once, read-only, as an ``mmap_fd`` :class:`~nnrt.memory.Memory`: data
    constants are CONSTANT_REFERENCE operands reading it in place, and AOT modules (``model.aot``)
    are slices of it. The mapping lives as long as the model does (it is closed when the last
    operand, view or :class:`AotInfo` referring to it is collected). Raises ``BadData`` naming
    the file and field for any flaw (bad magic or version, table out of bounds, sha256
    mismatch, malformed graph or aot section).
    """
    target = os.fspath(path)
    if not isinstance(target, str):
        raise BadData(f"nnrt.load: path must be a str path, got {target!r:.60}")
    where = f"model file {target}"
    memory, sections = _map(target, where)
    try:
        return _read_model(memory, sections, where)
    except BaseException:
        memory.close()
        raise


def _map(target: str, where: str) -> tuple[Memory, dict[SectionKind, Section]]:
    """Open and map the file whole; its checked section table (the fd is closed again)."""
    with os_errors(where, "cannot open"):
        fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        with os_errors(where, "cannot read"):
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise BadData(f"{where}: not a regular file")
            prefix = os.pread(fd, SECTION_ALIGN, 0)
        sections = parse_header(prefix, st.st_size, where)
        memory = Memory.from_fd(fd, 0, st.st_size, mmap.PROT_READ)  # keeps its own dup
    finally:
        os.close(fd)
    return memory, sections


def _read_model(memory: Memory, sections: dict[SectionKind, Section], where: str) -> Model:
    for section in sections.values():
        digest = hashlib.sha256(memory.view(section.offset, section.length)).digest()
        if digest != section.sha256:
            raise BadData(f"{where}: section {section.name}: sha256 mismatch")
    graph = _unpack(memory, sections[SectionKind.GRAPH], where)
    constants = sections.get(SectionKind.CONSTANTS)

    def resolve(pool_id: int, path: str) -> Memory:
        if pool_id != FILE_POOL:
            raise BadData(f"{path}: unknown pool {pool_id}; a model file has only pool "
                          f"{FILE_POOL} (the file itself)")
        if constants is None:
            raise BadData(f"{path}: the file has no constants section")
        return memory

    try:
        model = model_from_wire(graph, memories=resolve)
    except BadData as exc:
        raise BadData(f"{where}: section graph: {exc}") from exc
    _check_references(model, memory, constants, where)
    aot = sections.get(SectionKind.AOT)
    if aot is not None:
        bytecode = sections[SectionKind.BYTECODE]
        info = AotInfo.from_wire(
            _unpack(memory, aot, where), operations=len(model.operations),
            bytecode=MemoryLocation(memory, bytecode.offset, bytecode.length),
            path=f"{where}: section aot")
        attach_aot(model, info)
    return model


def _unpack(memory: Memory, section: Section, where: str) -> Any:
    """The msgpack object filling ``section`` exactly."""
    try:
        return msgpack.unpackb(memory.view(section.offset, section.length), raw=False,
                               strict_map_key=True, max_array_len=MAX_OPERANDS,
                               max_map_len=_MAX_MAP)
    except NnrtError:
        raise
    except Exception as exc:  # msgpack raises many types for malformed input
        raise BadData(f"{where}: section {section.name}: not a msgpack document "
                      f"({type(exc).__name__}: {exc})") from None


def _check_references(model: Model, memory: Memory, constants: Section | None,
                      where: str) -> None:
    """Every reference into the file must lie inside the constants section."""
    for index, operand in enumerate(model.operands):
        loc = operand.location
        if loc is None or loc.memory is not memory or constants is None:
            continue
        if not constants.offset <= loc.offset <= loc.offset + loc.length <= constants.end:
            raise BadData(f"{where}: section graph: model.operands[{index}].ref: bytes "
                          f"[{loc.offset}, {loc.offset + loc.length}) are outside the "
                          f"constants section [{constants.offset}, {constants.end})")
