"""The ``.nnrt`` header and section table: encoding, and checking an untrusted one.

Little-endian. At offset 0::

    magic          8 bytes   b"NNRTMODL"
    version        u32       FORMAT_VERSION (1)
    section_count  u32       1 to MAX_SECTIONS
    section table  section_count entries of 52 bytes:
        kind       u32       1 graph, 2 constants, 3 bytecode, 4 aot
        offset     u64       a multiple of SECTION_ALIGN (4096), at least 4096
        length     u64
        sha256     32 bytes  of the section's bytes [offset, offset + length)

The header fits in the first 4 KiB page; every section starts on a page of its own. See
docs/model-file.md for the sections' contents.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from nnrt.errors import BadData

__all__ = [
    "ENTRY",
    "FORMAT_VERSION",
    "HEADER",
    "MAGIC",
    "MAX_SECTIONS",
    "SECTION_ALIGN",
    "Section",
    "SectionKind",
    "align",
    "encode_header",
    "parse_header",
]

MAGIC = b"NNRTMODL"
FORMAT_VERSION = 1
#: Every section starts at a multiple of this (a page, so sections map on their own pages).
SECTION_ALIGN = 4096
#: magic, version, section count.
HEADER = struct.Struct("<8sII")
#: kind, offset, length, sha256.
ENTRY = struct.Struct("<IQQ32s")


class SectionKind(IntEnum):
    """What a section holds (its ``kind`` code in the table)."""

    GRAPH = 1
    CONSTANTS = 2
    BYTECODE = 3
    AOT = 4


#: A file has at most one section of each kind.
MAX_SECTIONS = len(SectionKind)
_KINDS = ", ".join(f"{int(k)} {k.name.lower()}" for k in SectionKind)


@dataclass(frozen=True)
class Section:
    """One entry of the section table."""

    kind: SectionKind
    offset: int
    length: int
    sha256: bytes

    @property
    def name(self) -> str:
        """The kind's lowercase name, as messages use it (``"constants"``)."""
        return self.kind.name.lower()

    @property
    def end(self) -> int:
        """The offset one past the section's last byte."""
        return self.offset + self.length


def align(value: int, alignment: int) -> int:
    """``value`` rounded up to a multiple of ``alignment``."""
    return -(-value // alignment) * alignment


def encode_header(sections: Sequence[Section]) -> bytes:
    """The header and section table for ``sections`` (the writer's side; not padded)."""
    parts = [HEADER.pack(MAGIC, FORMAT_VERSION, len(sections))]
    parts += [ENTRY.pack(int(s.kind), s.offset, s.length, s.sha256) for s in sections]
    return b"".join(parts)


def parse_header(prefix: bytes, file_size: int, where: str) -> dict[SectionKind, Section]:
    """The checked section table of a file of ``file_size`` bytes whose first bytes (at least
    the first page, or the whole file if smaller) are ``prefix``.

    Checks the magic, the version, the section count, every entry (a known kind at most once,
    an aligned offset after the header page, the section inside the file), that sections do
    not overlap, that there is a graph, and that bytecode and aot come together. Every flaw is
    a ``BadData`` starting with ``where`` (the file) and naming the field.
    """
    if len(prefix) < HEADER.size:
        raise BadData(f"{where}: truncated: the file holds {file_size} bytes, the header alone "
                      f"needs {HEADER.size}")
    magic, version, count = HEADER.unpack_from(prefix)
    if magic != MAGIC:
        raise BadData(f"{where}: header.magic: {magic!r} instead of {MAGIC!r}; this is not an "
                      "nnrt model file")
    if version != FORMAT_VERSION:
        raise BadData(f"{where}: header.version: format version {version} is not supported "
                      f"(this nnrt reads version {FORMAT_VERSION})")
    if not 1 <= count <= MAX_SECTIONS:
        raise BadData(f"{where}: header.section_count: {count} is out of range "
                      f"[1, {MAX_SECTIONS}]")
    table_end = HEADER.size + count * ENTRY.size
    if len(prefix) < table_end:
        raise BadData(f"{where}: truncated: the file holds {file_size} bytes, the section table "
                      f"needs {table_end}")
    sections: dict[SectionKind, Section] = {}
    for i in range(count):
        section = _entry(prefix, i, file_size, where)
        if section.kind in sections:
            raise BadData(f"{where}: sections[{i}].kind: a second {section.name} section")
        sections[section.kind] = section
    _check_overlaps(list(sections.values()), where)
    if SectionKind.GRAPH not in sections:
        raise BadData(f"{where}: the section table has no graph section")
    if (SectionKind.BYTECODE in sections) != (SectionKind.AOT in sections):
        raise BadData(f"{where}: a bytecode section and an aot section come together; this file "
                      f"has only one of them")
    return sections


def _entry(prefix: bytes, i: int, file_size: int, where: str) -> Section:
    """Entry ``i`` of the table, checked on its own."""
    code, offset, length, digest = ENTRY.unpack_from(prefix, HEADER.size + i * ENTRY.size)
    try:
        kind = SectionKind(code)
    except ValueError:
        raise BadData(f"{where}: sections[{i}].kind: unknown section kind {code} (known: "
                      f"{_KINDS})") from None
    field = f"{where}: sections[{i}] ({kind.name.lower()})"
    if offset % SECTION_ALIGN:
        raise BadData(f"{field}.offset: {offset} is not a multiple of {SECTION_ALIGN}")
    if offset < SECTION_ALIGN:
        raise BadData(f"{field}.offset: {offset} lies in the header page; sections start at "
                      f"{SECTION_ALIGN} or later")
    if offset + length > file_size:
        raise BadData(f"{field}.length: bytes [{offset}, {offset + length}) run past the end of "
                      f"the file ({file_size} bytes)")
    return Section(kind, offset, length, digest)


def _check_overlaps(sections: list[Section], where: str) -> None:
    """``BadData`` naming two sections whose byte ranges overlap (empty ones overlap nothing)."""
    spans = sorted((s for s in sections if s.length), key=lambda s: s.offset)
    for before, after in itertools.pairwise(spans):
        if before.end > after.offset:
            raise BadData(f"{where}: section {after.name} at [{after.offset}, {after.end}) "
                          f"overlaps section {before.name} at [{before.offset}, {before.end})")
