"""The cpu driver's bytecode program: kernel calls over a frame of values, as plain data.

A program is what one entry point runs. It is data, never code: the dispatch interprets it over
the fixed kernel table, so loading one from a cache or model file parses and checks a msgpack
map — nothing is compiled or executed to load it::

    {"frame": N,                                   # values 0 .. N-1
     "inputs": [[position, value], ...],           # inputs[position] bound to value
     "outputs": [[position, value], ...],
     "tensors": [[value, tensor name], ...],       # the module's read-only tensors
     "slots": [[value, offset, shape, dtype], ...],  # views of the scratch arena
     "steps": [[kernel, result, [arg, ...]], ...]}

A step calls ``kernel(*args)``; ``result`` (a value, or -1) receives what it returns (views
such as ``view(x, shape)``; kernels that write into their first argument return None).
Arguments are value references (msgpack extension type :data:`REF_CODE`, a big-endian uint32)
or literals: None, bool, int, float, short str, and tuples (msgpack arrays) of arguments.

:func:`load_program` treats the map as hostile: shapes of every field, kernels from the table
only, every value defined once before it is read, scratch slots inside the arena — ``BadData``
naming the entry point, step and field otherwise. At load, literals are placed in the frame and
each step becomes ``(kernel, itemgetter over the frame, result)``, so a run is one list copy and
one C-level gather per kernel call; slot views are made once per arena (:meth:`Program.frame`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any

import msgpack
import numpy as np

from nnrt.drivers.cpu.kernels.basic import slot
from nnrt.drivers.cpu.kernels.typed import typed_slot
from nnrt.errors import BadData

__all__ = ["MAX_FRAME", "MAX_STEPS", "REF_CODE", "Program", "ValueRef", "load_program",
           "pack_default", "unpack_ext"]

#: msgpack extension type code of a value reference.
REF_CODE = 1
#: Most values a program's frame may declare, and most steps it may hold.
MAX_FRAME = 1 << 20
MAX_STEPS = 1 << 20
_MAX_POSITION = 1 << 16
_MAX_LITERAL_ITEMS = 64
_MAX_LITERAL_DEPTH = 4
_MAX_STR = 64
_MAX_RANK = 8
_ARENA_ITEM = 4  # the arena holds float32 words
_SLOT_DTYPES = {"float32": np.dtype(np.float32), "int32": np.dtype(np.int32),
                "bool": np.dtype(np.bool_), "uint8": np.dtype(np.uint8),
                "int8": np.dtype(np.int8)}
_KEYS = {"frame", "inputs", "outputs", "tensors", "slots", "steps"}
_U32 = struct.Struct(">I")
#: Literal argument types (besides tuples, msgpack arrays, of arguments).
_NUMBERS = frozenset({int, float, bool, type(None)})
_PLAIN = _NUMBERS | {str}

Array = np.ndarray[Any, Any]
Getter = Callable[[list[Any]], tuple[Any, ...]]
Step = tuple[Callable[..., Any], Getter, int]


class ValueRef:
    """A reference to frame value ``index`` inside a program's arguments."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ValueRef) and other.index == self.index

    def __hash__(self) -> int:
        return hash((ValueRef, self.index))

    def __repr__(self) -> str:
        return f"ValueRef({self.index})"


def pack_default(obj: Any) -> Any:
    """msgpack ``default`` hook: a :class:`ValueRef` becomes extension :data:`REF_CODE`."""
    if isinstance(obj, ValueRef):
        return msgpack.ExtType(REF_CODE, _U32.pack(obj.index))
    raise TypeError(f"cannot encode {type(obj).__name__} in a cpu program")


def unpack_ext(code: int, data: bytes) -> ValueRef:
    """msgpack ``ext_hook``: extension :data:`REF_CODE` is a :class:`ValueRef`; any other
    extension is refused (``BadData``)."""
    if code != REF_CODE or len(data) != _U32.size:
        raise BadData(f"cpu bytecode: unknown msgpack extension type {code} "
                      f"({len(data)} bytes)")
    return ValueRef(_U32.unpack(data)[0])


def _pack(*items: Any) -> tuple[Any, ...]:
    """The pseudo-kernel that builds a tuple argument holding values (made at run time)."""
    return items


def _no_args(frame: list[Any]) -> tuple[Any, ...]:
    return ()


def _getter(indices: Sequence[int]) -> Getter:
    if not indices:
        return _no_args
    if len(indices) == 1:
        only = indices[0]
        return lambda frame: (frame[only],)
    return itemgetter(*indices)


class Program:
    """A checked program ready to run (made by :func:`load_program`)."""

    def __init__(self, size: int, inputs: tuple[tuple[int, int], ...],
                 outputs: tuple[tuple[int, int], ...], base: list[Any],
                 slots: tuple[tuple[int, int, tuple[int, ...], np.dtype[Any]], ...],
                 steps: tuple[Step, ...], kernels: tuple[str, ...]) -> None:
        self.size = size
        self.inputs = inputs
        self.outputs = outputs
        self._base = base
        self._slots = slots
        self.steps = steps
        #: Each step's kernel name (``"pack"`` for a tuple built at run time).
        self.kernels = kernels
        self._inputs_needed = 1 + max((p for p, _ in inputs), default=-1)
        self._outputs_needed = 1 + max((p for p, _ in outputs), default=-1)

    def frame(self, arena: Array) -> list[Any]:
        """The frame to run with on ``arena`` (float32, as large as the module asked):
        tensors, literals and the scratch slots' views, made once and reused per arena."""
        frame = list(self._base)
        for value, offset, shape, dtype in self._slots:
            frame[value] = (slot(arena, offset, shape) if dtype.name == "float32"
                            else typed_slot(arena, offset, shape, dtype.name))
        return frame

    def run(self, frame: list[Any], inputs: Sequence[Array], outputs: Sequence[Array]) -> None:
        """Run every step on a copy of ``frame`` (from :meth:`frame`)."""
        if len(inputs) < self._inputs_needed or len(outputs) < self._outputs_needed:
            raise BadData(f"cpu program: expected {self._inputs_needed} inputs and "
                          f"{self._outputs_needed} outputs, got {len(inputs)} and "
                          f"{len(outputs)}")
        f = frame.copy()
        for position, value in self.inputs:
            f[value] = inputs[position]
        for position, value in self.outputs:
            f[value] = outputs[position]
        for kernel, get, result in self.steps:
            returned = kernel(*get(f))
            if result >= 0:
                f[result] = returned

    def with_kernels(self, wrap: Callable[[str, Callable[..., Any]], Callable[..., Any]]
                     ) -> Program:
        """A copy whose kernel calls go through ``wrap(name, kernel)`` (profiling tools)."""
        steps = tuple((wrap(name, kernel), get, result) for (kernel, get, result), name
                      in zip(self.steps, self.kernels, strict=True))
        return Program(self.size, self.inputs, self.outputs, self._base, self._slots, steps,
                       self.kernels)


class _Loader:
    """Checks one program map and builds its :class:`Program`."""

    def __init__(self, entry: str, kernels: Mapping[str, Callable[..., Any]],
                 tensors: Mapping[str, Array], scratch_elements: int) -> None:
        self.where = f"cpu bytecode: entry point {entry!r}"
        self.kernels = kernels
        self.tensors = tensors
        self.scratch = scratch_elements
        self.size = 0
        self.defined = bytearray()
        self.base: list[Any] = []
        self.steps: list[Step] = []
        self.names: list[str] = []
        self.at: tuple[int, str] = (0, "")

    def fail(self, why: str) -> BadData:
        return BadData(f"{self.where}: {why}")

    def value(self, raw: Any, what: str) -> int:
        if type(raw) is not int or not 0 <= raw < self.size:
            raise self.fail(f"{what}: {raw!r:.40} is not a value of the frame (0 to "
                            f"{self.size - 1})")
        return raw

    def define(self, raw: Any, what: str) -> int:
        value = self.value(raw, what)
        if self.defined[value]:
            raise self.fail(f"{what}: value {value} is defined twice")
        self.defined[value] = 1
        return value

    def pairs(self, raw: Any, field: str) -> tuple[tuple[int, int], ...]:
        if not isinstance(raw, list) or len(raw) > _MAX_POSITION:
            raise self.fail(f"{field} must be a list of [position, value] pairs")
        found = []
        positions = set()
        for pair in raw:
            if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int
                    and 0 <= pair[0] < _MAX_POSITION and pair[0] not in positions):
                raise self.fail(f"{field}: bad or repeated [position, value] {pair!r:.60}")
            positions.add(pair[0])
            found.append((pair[0], self.define(pair[1], f"{field}[{pair[0]}]")))
        return tuple(found)

    def load(self, raw: Any) -> Program:
        if not isinstance(raw, dict) or set(raw) != _KEYS:
            raise self.fail(f"a program must be a map with keys {sorted(_KEYS)}")
        size = raw["frame"]
        if type(size) is not int or not 0 <= size <= MAX_FRAME:
            raise self.fail(f"frame must be an int from 0 to {MAX_FRAME}, got {size!r:.40}")
        self.size = size
        self.defined = bytearray(size)
        self.base = [None] * size
        inputs = self.pairs(raw["inputs"], "inputs")
        outputs = self.pairs(raw["outputs"], "outputs")
        self.bind_tensors(raw["tensors"])
        slots = self.slots(raw["slots"])
        steps = raw["steps"]
        if not isinstance(steps, list) or len(steps) > MAX_STEPS:
            raise self.fail(f"steps must be a list of at most {MAX_STEPS} steps")
        for number, step in enumerate(steps):
            self.step(number, step)
        return Program(len(self.base), inputs, outputs, self.base, slots, tuple(self.steps),
                       tuple(self.names))

    def bind_tensors(self, raw: Any) -> None:
        if not isinstance(raw, list):
            raise self.fail("tensors must be a list of [value, name] pairs")
        for pair in raw:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)
                    and pair[1] in self.tensors):
                raise self.fail(f"tensors: {pair!r:.60} does not name a tensor of the module")
            self.base[self.define(pair[0], f"tensor {pair[1]!r}")] = self.tensors[pair[1]]

    def slots(self, raw: Any) -> tuple[tuple[int, int, tuple[int, ...], np.dtype[Any]], ...]:
        if not isinstance(raw, list):
            raise self.fail("slots must be a list of [value, offset, shape, dtype]")
        found = []
        for spec in raw:
            if not (isinstance(spec, list) and len(spec) == 4):
                raise self.fail(f"slots: expected [value, offset, shape, dtype], got "
                                f"{spec!r:.60}")
            value = self.define(spec[0], "slot")
            offset, shape, dtype = spec[1], spec[2], _SLOT_DTYPES.get(spec[3])
            if not (isinstance(shape, list) and len(shape) <= _MAX_RANK
                    and all(type(d) is int and 0 <= d < 1 << 31 for d in shape)):
                raise self.fail(f"slot of value {value}: bad shape {shape!r:.60}")
            if dtype is None:
                raise self.fail(f"slot of value {value}: dtype {spec[3]!r:.40} is not one of "
                                f"{sorted(_SLOT_DTYPES)}")
            words = -(-math.prod(shape) * dtype.itemsize // _ARENA_ITEM)
            if type(offset) is not int or offset < 0 or offset + words > self.scratch:
                raise self.fail(f"slot of value {value}: [{offset!r:.20}, +{words}) is outside "
                                f"the {self.scratch}-element scratch arena")
            found.append((value, offset, tuple(shape), dtype))
        return tuple(found)

    def step(self, number: int, raw: Any) -> None:
        if not (isinstance(raw, list) and len(raw) == 3 and isinstance(raw[0], str)
                and isinstance(raw[2], list)):
            raise self.fail(f"step {number}: expected [kernel, result, [args]]")
        name, result, args = raw
        kernel = self.kernels.get(name)
        if kernel is None:
            raise self.fail(f"step {number}: {name!r:.40} is not a kernel")
        self.at = (number, name)
        indices = []
        for arg in args:
            kind = type(arg)
            if kind is ValueRef:
                indices.append(self.read(arg))
            elif kind in _PLAIN:
                indices.append(self.literal(self.scalar(arg)))
            else:
                static, payload = self.convert(arg, 0)
                indices.append(self.literal(payload) if static else payload)
        if result != -1:
            result = self.define(result, f"{self.site()}: result")
        self.steps.append((kernel, _getter(indices), result))
        self.names.append(name)

    def site(self) -> str:
        number, name = self.at
        return f"step {number} ({name})"

    def read(self, ref: ValueRef) -> int:
        """The frame index of a value a step reads (defined before it)."""
        value = ref.index
        if not value < self.size:
            raise self.fail(f"{self.site()}: argument: {value} is not a value of the frame (0 "
                            f"to {self.size - 1})")
        if not self.defined[value]:
            raise self.fail(f"{self.site()}: value {value} is read before it is defined")
        return value

    def scalar(self, arg: Any) -> Any:
        if type(arg) is str and len(arg) > _MAX_STR:
            raise self.fail(f"{self.site()}: str argument {arg!r:.40} is longer than "
                            f"{_MAX_STR}")
        return arg

    def convert(self, arg: Any, depth: int) -> tuple[bool, Any]:
        """``(True, literal)`` for an argument known now, ``(False, frame index)`` for one
        made at run time: a value, or a tuple holding values (built by a pack step)."""
        kind = type(arg)
        if kind is ValueRef:
            return False, self.read(arg)
        if kind in _PLAIN:
            return True, self.scalar(arg)
        if kind is not list:
            raise self.fail(f"{self.site()}: {kind.__name__} argument {arg!r:.40} is not "
                            "allowed")
        if depth >= _MAX_LITERAL_DEPTH or len(arg) > _MAX_LITERAL_ITEMS:
            raise self.fail(f"{self.site()}: a tuple argument nested deeper than "
                            f"{_MAX_LITERAL_DEPTH} or longer than {_MAX_LITERAL_ITEMS}")
        if all(type(item) in _NUMBERS for item in arg):  # the common case: a tuple of numbers
            return True, tuple(arg)
        items = [self.convert(item, depth + 1) for item in arg]
        if all(static for static, _ in items):
            return True, tuple(payload for _, payload in items)
        indices = [self.literal(payload) if static else payload for static, payload in items]
        self.base.append(None)
        self.steps.append((_pack, _getter(indices), len(self.base) - 1))
        self.names.append("pack")
        return False, len(self.base) - 1

    def literal(self, value: Any) -> int:
        self.base.append(value)
        return len(self.base) - 1


def load_program(raw: Any, entry: str, kernels: Mapping[str, Callable[..., Any]],
                 tensors: Mapping[str, Array], scratch_elements: int) -> Program:
    """Check the program map ``raw`` of ``entry`` (untrusted) and build it (``BadData``)."""
    return _Loader(entry, kernels, tensors, scratch_elements).load(raw)
