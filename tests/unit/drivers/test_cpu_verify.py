"""The cpu dispatch refuses hostile bytecode: malformed msgpack and unverifiable sources."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

import nnrt
from nnrt.drivers.cpu import CpuDispatch, CpuExecutable
from nnrt.drivers.cpu.module import encode_module

GOOD = """def entry(inputs, outputs, scratch):
    x0 = inputs[0]
    y0 = outputs[0]
    t1 = slot(scratch, 0, (2,))
    add(t1, x0, c0, 0)
    relu(y0, t1)
    return None
"""
TENSORS = {"c0": np.array([1.0, -5.0], np.float32)}


def _module(source: str, tensors: dict | None = None, entry: str = "entry") -> bytes:
    return encode_module(source, [entry], TENSORS if tensors is None else tensors, {entry: 16})


def _body(*lines: str) -> str:
    return "def entry(inputs, outputs, scratch):\n" + "".join(f"    {ln}\n" for ln in lines)


def test_a_good_module_loads_and_runs() -> None:
    dispatch = CpuDispatch()
    executable = dispatch.load(_module(GOOD), "entry")
    assert isinstance(executable, CpuExecutable)
    out = np.empty(2, np.float32)
    dispatch.invoke(executable, [np.array([1.0, 2.0], np.float32)], [out])
    assert out.tolist() == [2.0, 0.0]


@pytest.mark.parametrize(("lines", "why"), [
    (("import os",), "Import"),
    (("from os import system",), "ImportFrom"),
    (("x = inputs.__class__",), "Attribute"),
    (("x = c0.base",), "Attribute"),
    (("x = __class__",), "dunder"),
    (("relu(outputs[0], __builtins__)",), "dunder"),
    (("exec('import os')",), "'exec' is not a kernel"),
    (("eval('1')",), "'eval' is not a kernel"),
    (("x = open",), "not bound"),
    (("for i in (1, 2):", "    relu(outputs[0], inputs[0])"), "For"),
    (("while True:", "    pass"), "While"),
    (("f = lambda: 0",), "Lambda"),
    (("x = [a for a in inputs]",), "ListComp"),
    (("x = scratch[0]",), "inputs[i] and outputs[i]"),
    (("x = inputs[c0]",), "inputs[i] and outputs[i]"),
    (("x = inputs[-1]",), "inputs[i] and outputs[i]"),
    (("x = inputs[0:1]",), "inputs[i] and outputs[i]"),
    (("relu(outputs[0], x=inputs[0])",), "keyword"),
    (("relu(*inputs)",), "Starred"),
    (("x = b'raw'",), "bytes constants"),
    (("x = 1 + 2",), "BinOp"),
    (("slot = inputs[0]",), "reserved"),
    (("inputs[0] = 1",), "one plain name"),
    (("x = relu",), "not bound"),
    (("global c0",), "Global"),
    (("with c0:", "    pass"), "With"),
    (("try:", "    pass", "except Exception:", "    pass"), "Try"),
    (("x = (yield)",), "Yield"),
    (("relu(outputs[0], inputs[0]).base",), "kernel call"),
    (("x = copy(outputs[0], inputs[0])()",), "calls must name a kernel"),
])
def test_the_verifier_rejects_hostile_sources(lines: tuple[str, ...], why: str) -> None:
    with pytest.raises(nnrt.BadData, match="line") as info:
        CpuDispatch().load(_module(_body(*lines)), "entry")
    assert why in str(info.value)


@pytest.mark.parametrize("source", [
    "import os\n" + GOOD,
    GOOD + "x = 1\n",
    GOOD + "def entry(inputs, outputs, scratch):\n    return None\n",
    GOOD + "def other(inputs, outputs, scratch):\n    return None\n",
    "@relu\n" + GOOD,
    GOOD.replace("(inputs, outputs, scratch)", "(inputs, outputs, scratch=None)"),
    GOOD.replace("(inputs, outputs, scratch)", "(inputs, outputs, scratch, *more)"),
    GOOD.replace("(inputs, outputs, scratch)", "(outputs, inputs, scratch)"),
    "class entry:\n    pass\n",
    "def entry(inputs, outputs, scratch:\n",
])
def test_the_verifier_rejects_bad_module_structure(source: str) -> None:
    with pytest.raises(nnrt.BadData, match="cpu bytecode"):
        CpuDispatch().load(_module(source), "entry")


def _packed(**changes: object) -> bytes:
    raw: dict[str, object] = {"format": 1, "source": GOOD, "entry_points": ["entry"],
                              "tensors": {"c0": ["float32", [2], TENSORS["c0"].tobytes()]},
                              "scratch": {"entry": 16}}
    raw.update(changes)
    return msgpack.packb(raw, use_bin_type=True)


@pytest.mark.parametrize("data", [
    b"",
    b"\xc1",                                   # never-used msgpack byte
    msgpack.packb([1, 2, 3]),
    _packed(format=2),
    _packed(format=True),
    _packed(source=b"bytes"),
    _packed(entry_points=[]),
    _packed(entry_points=["entry", "entry"]),
    _packed(entry_points=["__init__"]),
    _packed(entry_points=["not-an-identifier"]),
    _packed(scratch={}),
    _packed(scratch={"entry": -1}),
    _packed(scratch={"entry": 1 << 40}),
    _packed(tensors={"c0": ["float32", [3], TENSORS["c0"].tobytes()]}),
    _packed(tensors={"c0": ["float64", [2], b"\0" * 16]}),
    _packed(tensors={"c0": ["object", [2], b"\0" * 16]}),
    _packed(tensors={"c0": ["float32", [-2], b""]}),
    _packed(tensors={"c0": ["float32", [2]]}),
    _packed(tensors={"__class__": ["float32", [2], TENSORS["c0"].tobytes()]}),
    _packed(tensors={"relu": ["float32", [2], TENSORS["c0"].tobytes()]}),
    _packed(tensors={"entry": ["float32", [2], TENSORS["c0"].tobytes()]}),
    _packed(extra=1),
    msgpack.packb({"format": 1}) + b"trailing",
])
def test_malformed_modules_are_refused(data: bytes) -> None:
    with pytest.raises(nnrt.BadData, match="cpu bytecode"):
        CpuDispatch().load(data, "entry")


def test_an_unknown_entry_point_is_refused() -> None:
    with pytest.raises(nnrt.BadData, match="no entry point 'other'"):
        CpuDispatch().load(_module(GOOD), "other")


def test_tensors_are_read_only_in_generated_code() -> None:
    source = _body("relu(c0, inputs[0])", "copy(outputs[0], c0)", "return None")
    dispatch = CpuDispatch()
    executable = dispatch.load(_module(source), "entry")
    with pytest.raises(ValueError, match="read-only"):
        dispatch.invoke(executable, [np.zeros(2, np.float32)], [np.empty(2, np.float32)])


def test_generated_code_has_no_builtins() -> None:
    source = _body("x = inputs[0]", "return None")
    executable = CpuDispatch().load(_module(source), "entry")
    assert executable.function.__globals__["__builtins__"] == {}
