"""Ahead-of-time compiled partitions carried by a ``.nnrt`` model file (LiteRT's AOT mode).

A plugin compiles partitions of a model on a workstation; the model file then carries the
bytecode modules (the *bytecode* section) and one :class:`DispatchRecord` per partition (the
*aot* section): which driver runs which of the model's operations, with which module and entry
point, compiled by which compiler (:class:`Stamp`). The graph itself keeps every operation, so a
runtime whose drivers do not match the stamps still runs the whole model.

The aot section is msgpack of::

    aot      = {"dispatches": [record, ...], "modules": [[offset, length], ...]}
    record   = {"driver": str, "operations": [int, ...], "module": int,
                "entry_point": str, "stamp": stamp}
    stamp    = {"driver": str, "version": str, "soc": str | nil, "nnrt": str, "python": str}

Module offsets are relative to the bytecode section. :meth:`AotInfo.from_wire` treats the data
as hostile and checks every field (see its docstring); every problem is a ``BadData`` naming it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nnrt.errors import BadData
from nnrt.model.operand import MemoryLocation
from nnrt.model.wire_fields import check_int, check_list, check_map, describe

__all__ = [
    "MAX_MODULES",
    "MAX_TEXT",
    "MODULE_ALIGN",
    "AotInfo",
    "DispatchRecord",
    "Stamp",
]

#: Longest driver name, version, SoC, entry point or other stamp string (characters).
MAX_TEXT = 256
#: Most bytecode modules one file may carry.
MAX_MODULES = 65_536
#: Every module starts at a multiple of this many bytes inside the bytecode section.
MODULE_ALIGN = 64

_STAMP_KEYS = frozenset({"driver", "version", "soc", "nnrt", "python"})
_RECORD_KEYS = frozenset({"driver", "operations", "module", "entry_point", "stamp"})
_AOT_KEYS = frozenset({"dispatches", "modules"})
_NONE: frozenset[str] = frozenset()
_MAX_OFFSET = 2**62


def _text(value: Any, path: str) -> str:
    """``value`` as a non-empty printable str of at most :data:`MAX_TEXT` characters."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_TEXT or not value.isprintable():
        raise BadData(f"{path}: expected a printable string of 1 to {MAX_TEXT} characters, got "
                      f"{describe(value)}")
    return value


@dataclass(frozen=True)
class Stamp:
    """The compatibility stamp of AOT bytecode: who compiled it, for what, under which nnrt.

    A runtime uses the bytecode only when its driver's name, version and SoC model match;
    ``python`` is ``"major.minor"`` (e.g. ``"3.11"``).
    """

    driver: str
    version: str
    soc: str | None
    nnrt: str
    python: str

    @classmethod
    def current(cls, driver: str, version: str, soc: str | None) -> Stamp:
        """A stamp for ``driver`` ``version`` on ``soc``, compiled by this nnrt and Python."""
        from nnrt import __version__  # noqa: PLC0415 - the package is initialised by now

        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        return cls(driver, version, soc, __version__, python)

    def to_wire(self) -> dict[str, Any]:
        """The stamp as a plain msgpack-able map."""
        return {"driver": self.driver, "version": self.version, "soc": self.soc,
                "nnrt": self.nnrt, "python": self.python}

    @classmethod
    def from_wire(cls, data: Any, path: str = "stamp") -> Stamp:
        """A stamp from untrusted data: a map of exactly the five fields, each a printable
        string of 1 to :data:`MAX_TEXT` characters (``soc`` may be nil); ``BadData`` naming
        the field otherwise."""
        fields = check_map(data, _STAMP_KEYS, _NONE, path)
        soc = fields["soc"]
        return cls(_text(fields["driver"], f"{path}.driver"),
                   _text(fields["version"], f"{path}.version"),
                   None if soc is None else _text(soc, f"{path}.soc"),
                   _text(fields["nnrt"], f"{path}.nnrt"),
                   _text(fields["python"], f"{path}.python"))


@dataclass(frozen=True)
class DispatchRecord:
    """One partition compiled ahead of time.

    ``operations`` are the original operation indices of the partition (the graph keeps them);
    ``module`` indexes :attr:`AotInfo.modules`; ``entry_point`` names the function in it.
    """

    driver: str
    operations: tuple[int, ...]
    module: int
    entry_point: str
    stamp: Stamp

    def to_wire(self) -> dict[str, Any]:
        """The record as a plain msgpack-able map (unchecked: :meth:`AotInfo.from_wire`
        checks)."""
        operations = self.operations
        stamp = self.stamp.to_wire() if isinstance(self.stamp, Stamp) else self.stamp
        return {"driver": self.driver,
                "operations": list(operations) if isinstance(operations, tuple | list)
                else operations,
                "module": self.module, "entry_point": self.entry_point, "stamp": stamp}

    @classmethod
    def from_wire(cls, data: Any, path: str, operations: int, modules: int) -> DispatchRecord:
        """A record from untrusted data for a model of ``operations`` operations and a file of
        ``modules`` modules: operation indices in range and distinct, at least one; the module
        index in range; printable bounded strings; a valid stamp."""
        fields = check_map(data, _RECORD_KEYS, _NONE, path)
        driver = _text(fields["driver"], f"{path}.driver")
        raw = check_list(fields["operations"], f"{path}.operations", operations)
        if not raw:
            raise BadData(f"{path}.operations: a partition needs at least one operation")
        ops = tuple(check_int(v, f"{path}.operations[{k}]", 0, operations - 1)
                    for k, v in enumerate(raw))
        if len(set(ops)) != len(ops):
            raise BadData(f"{path}.operations: operation {_first_repeat(ops)} is listed twice")
        if modules == 0:
            raise BadData(f"{path}.module: the file carries no bytecode modules")
        module = check_int(fields["module"], f"{path}.module", 0, modules - 1)
        entry = _text(fields["entry_point"], f"{path}.entry_point")
        return cls(driver, ops, module, entry, Stamp.from_wire(fields["stamp"], f"{path}.stamp"))


@dataclass(frozen=True)
class AotInfo:
    """The AOT partitions of a model: dispatch records and the bytecode modules they name.

    After :func:`nnrt.load`, ``modules`` are slices of the mapped file (never copied).
    """

    dispatches: tuple[DispatchRecord, ...]
    modules: tuple[MemoryLocation, ...] = ()

    def module_bytes(self, i: int) -> memoryview:
        """The bytes of module ``i`` as a read-only view (``BadData`` if out of range)."""
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.modules):
            raise BadData(f"AotInfo.module_bytes: module {i!r:.40} is out of range (there are "
                          f"{len(self.modules)} modules)")
        loc = self.modules[i]
        return loc.memory.view(loc.offset, loc.length)

    def to_wire(self, spans: Sequence[tuple[int, int]]) -> dict[str, Any]:
        """The aot section's map, with ``spans`` the modules' (offset, length) in the bytecode
        section (the records are written as they are; check them with :meth:`from_wire`)."""
        dispatches = self.dispatches
        records = ([r.to_wire() if isinstance(r, DispatchRecord) else r for r in dispatches]
                   if isinstance(dispatches, tuple | list) else dispatches)
        return {"dispatches": records, "modules": [[int(o), int(n)] for o, n in spans]}

    @classmethod
    def from_wire(cls, data: Any, *, operations: int, bytecode: MemoryLocation,
                  path: str = "aot") -> AotInfo:
        """The aot section from untrusted ``data`` for a model of ``operations`` operations;
        ``bytecode`` is the bytecode section (its memory, offset and length in the file).

        Checks: the map's fields; each module ``[offset, length]`` a pair of ints, the offset a
        multiple of :data:`MODULE_ALIGN`, modules in order without overlap and inside the
        section; each record as :meth:`DispatchRecord.from_wire` says; no operation in two
        records. Modules come back as :class:`MemoryLocation` slices of ``bytecode.memory``.
        """
        fields = check_map(data, _AOT_KEYS, _NONE, path)
        raw_modules = check_list(fields["modules"], f"{path}.modules", MAX_MODULES)
        modules = []
        end = 0
        for k, span in enumerate(raw_modules):
            where = f"{path}.modules[{k}]"
            if not isinstance(span, list) or len(span) != 2:
                raise BadData(f"{where}: expected [offset, length], got {describe(span)}")
            offset = check_int(span[0], f"{where}[0] (offset)", 0, _MAX_OFFSET)
            length = check_int(span[1], f"{where}[1] (length)", 0, _MAX_OFFSET)
            if offset % MODULE_ALIGN:
                raise BadData(f"{where}: offset {offset} is not a multiple of {MODULE_ALIGN}")
            if offset < end:
                raise BadData(f"{where}: offset {offset} overlaps the previous module, which "
                              f"ends at {end}")
            end = offset + length
            if end > bytecode.length:
                raise BadData(f"{where}: bytes [{offset}, {end}) run past the end of the "
                              f"bytecode section ({bytecode.length} bytes)")
            modules.append(MemoryLocation(bytecode.memory, bytecode.offset + offset, length))
        raw = check_list(fields["dispatches"], f"{path}.dispatches", operations)
        records = []
        owner: dict[int, int] = {}
        for k, item in enumerate(raw):
            where = f"{path}.dispatches[{k}]"
            record = DispatchRecord.from_wire(item, where, operations, len(modules))
            for op in record.operations:
                if op in owner:
                    raise BadData(f"{where}.operations: operation {op} is already in "
                                  f"{path}.dispatches[{owner[op]}]")
                owner[op] = k
            records.append(record)
        return cls(tuple(records), tuple(modules))


def _first_repeat(values: Sequence[int]) -> int:
    seen: set[int] = set()
    for v in values:
        if v in seen:
            return v
        seen.add(v)
    raise ValueError("no repeated value")
