"""The cpu dispatch refuses hostile bytecode: malformed modules and programs that do anything
but call kernels of the table on values they defined."""

from __future__ import annotations

import copy
import threading
from typing import Any

import msgpack
import numpy as np
import pytest

import nnrt
from nnrt.drivers.cpu import CpuDispatch, CpuExecutable
from nnrt.drivers.cpu.module import encode_module
from nnrt.drivers.cpu.program import REF_CODE, ValueRef, pack_default

R = ValueRef
#: entry(x0) -> y0: t2 = slot(0, (2,)); add(t2, x0, c0, 0); relu(y0, t2)
GOOD: dict[str, Any] = {
    "frame": 4,
    "inputs": [[0, 0]],
    "outputs": [[0, 1]],
    "tensors": [[3, "c0"]],
    "slots": [[2, 0, [2], "float32"]],
    "steps": [["add", -1, [R(2), R(0), R(3), 0]], ["relu", -1, [R(1), R(2)]]],
}
TENSORS = {"c0": np.array([1.0, -5.0], np.float32)}


def _module(program: dict[str, Any], tensors: dict[str, Any] | None = None,
            entry: str = "entry", scratch: int = 16) -> bytes:
    return encode_module({entry: program}, [entry], TENSORS if tensors is None else tensors,
                         {entry: scratch})


def _changed(**fields: Any) -> dict[str, Any]:
    program = copy.deepcopy(GOOD)
    program.update(fields)
    return program


def _run(program: dict[str, Any], x: list[float], n_out: int = 2) -> np.ndarray:
    dispatch = CpuDispatch()
    executable = dispatch.load(_module(program), "entry")
    out = np.empty(n_out, np.float32)
    dispatch.invoke(executable, [np.array(x, np.float32)], [out])
    return out


def test_a_good_module_loads_and_runs() -> None:
    dispatch = CpuDispatch()
    executable = dispatch.load(_module(GOOD), "entry")
    assert isinstance(executable, CpuExecutable)
    out = np.empty(2, np.float32)
    dispatch.invoke(executable, [np.array([1.0, 2.0], np.float32)], [out])
    assert out.tolist() == [2.0, 0.0]
    dispatch.invoke(executable, [np.array([-3.0, 9.0], np.float32)], [out])  # frame reused
    assert out.tolist() == [0.0, 4.0]


def test_a_tuple_of_values_is_built_at_run_time() -> None:
    program = {"frame": 3, "inputs": [[0, 0], [1, 1]], "outputs": [[0, 2]], "tensors": [],
               "slots": [], "steps": [["concat", -1, [R(2), [R(0), R(1)], 0]]]}
    dispatch = CpuDispatch()
    executable = dispatch.load(_module(program, {}), "entry")
    assert executable.program.kernels == ("pack", "concat")
    out = np.empty(3, np.float32)
    dispatch.invoke(executable, [np.array([1.0], np.float32), np.array([2.0, 3.0], np.float32)],
                    [out])
    assert out.tolist() == [1.0, 2.0, 3.0]


def test_a_view_result_is_a_value_later_steps_read() -> None:
    program = {"frame": 3, "inputs": [[0, 0]], "outputs": [[0, 1]], "tensors": [], "slots": [],
               "steps": [["view", 2, [R(0), [2, 2]]], ["relu", -1, [R(1), R(2)]]]}
    dispatch = CpuDispatch()
    executable = dispatch.load(_module(program, {}), "entry")
    out = np.empty((2, 2), np.float32)
    dispatch.invoke(executable, [np.array([1.0, -2.0, 3.0, -4.0], np.float32)], [out])
    assert out.tolist() == [[1.0, 0.0], [3.0, 0.0]]


@pytest.mark.parametrize(("program", "why"), [
    (_changed(steps=[["exec", -1, ["import os"]]]), "'exec' is not a kernel"),
    (_changed(steps=[["__import__", -1, ["os"]]]), "is not a kernel"),
    (_changed(steps=[["eval", 2, ["1"]]]), "is not a kernel"),
    (_changed(steps=[[b"relu", -1, [R(1), R(0)]]]), "expected [kernel, result, [args]]"),
    (_changed(steps=[["relu", -1, R(1)]]), "expected [kernel, result, [args]]"),
    (_changed(steps=[["relu", -1]]), "expected [kernel, result, [args]]"),
    (_changed(steps=[["relu", -1, [R(1), R(9)]]]), "is not a value of the frame"),
    (_changed(steps=[["relu", -1, [R(1), R(1 << 31)]]]), "is not a value of the frame"),
    (_changed(slots=[], steps=[["relu", -1, [R(1), R(2)]]]), "read before it is defined"),
    (_changed(steps=[["view", 2, [R(0), [2]]]]), "defined twice"),
    (_changed(steps=[["view", 0, [R(0), [2]]]]), "defined twice"),
    (_changed(steps=[["view", 7, [R(0), [2]]]]), "is not a value of the frame"),
    (_changed(steps=[["view", "x", [R(0), [2]]]]), "is not a value of the frame"),
    (_changed(steps=[["relu", -1, [R(1), b"raw"]]]), "bytes argument"),
    (_changed(steps=[["relu", -1, [R(1), {"a": 1}]]]), "dict argument"),
    (_changed(steps=[["relu", -1, [R(1), "x" * 65]]]), "str argument"),
    (_changed(steps=[["add", -1, [R(2), R(0), R(3), [[[[[0]]]]]]]]), "nested deeper"),
    (_changed(steps=[["add", -1, [R(2), R(0), R(3), list(range(65))]]]), "longer than"),
    (_changed(slots=[[2, 15, [2], "float32"]]), "outside the 16-element scratch arena"),
    (_changed(slots=[[2, -1, [2], "float32"]]), "outside"),
    (_changed(slots=[[2, 0, [1 << 30], "float32"]]), "outside"),
    (_changed(slots=[[2, 0, [9], "float64"]]), "dtype"),
    (_changed(slots=[[2, 0, [-2], "float32"]]), "bad shape"),
    (_changed(slots=[[2, 0, [1] * 9, "float32"]]), "bad shape"),
    (_changed(slots=[[2, 0, [2]]]), "expected [value, offset, shape, dtype]"),
    (_changed(slots=[[2, 0, [2], "float32"], [2, 4, [2], "float32"]]), "defined twice"),
    (_changed(tensors=[[3, "c9"]]), "does not name a tensor"),
    (_changed(tensors=[[3, "c0"], [3, "c0"]]), "defined twice"),
    (_changed(inputs=[[0, 0], [0, 2]]), "repeated"),
    (_changed(inputs=[[-1, 0]]), "bad or repeated"),
    (_changed(inputs=[[0, 1]]), "defined twice"),
    (_changed(inputs=[0]), "bad or repeated"),
    (_changed(outputs="y0"), "outputs must be a list"),
    (_changed(frame=-1), "frame must be an int"),
    (_changed(frame=1 << 40), "frame must be an int"),
    (_changed(frame=True), "frame must be an int"),
    (_changed(extra=1), "a program must be a map"),
    ({k: v for k, v in GOOD.items() if k != "steps"}, "a program must be a map"),
    ([1, 2, 3], "a program must be a map"),
])
def test_hostile_programs_are_refused(program: Any, why: str) -> None:
    with pytest.raises(nnrt.BadData, match="cpu bytecode: entry point 'entry'") as info:
        CpuDispatch().load(_module(program), "entry")
    assert why in str(info.value)


def _packed(**changes: object) -> bytes:
    raw: dict[str, object] = {"format": 2, "programs": {"entry": GOOD},
                              "entry_points": ["entry"],
                              "tensors": {"c0": ["float32", [2], TENSORS["c0"].tobytes()]},
                              "scratch": {"entry": 16}}
    raw.update(changes)
    return msgpack.packb(raw, use_bin_type=True, default=pack_default)


@pytest.mark.parametrize("data", [
    b"",
    b"\xc1",                                   # never-used msgpack byte
    msgpack.packb([1, 2, 3]),
    _packed(format=1),
    _packed(format=True),
    _packed(programs={"other": GOOD}),
    _packed(programs=[GOOD]),
    _packed(source="def entry(inputs, outputs, scratch):\n    return None\n"),
    _packed(entry_points=[]),
    _packed(entry_points=["entry", "entry"]),
    _packed(entry_points=["__init__"]),
    _packed(entry_points=["not-an-identifier"]),
    _packed(scratch={}),
    _packed(scratch={"entry": -1}),
    _packed(scratch={"entry": 1 << 40}),
    _packed(tensors={"c0": ["float32", [3], TENSORS["c0"].tobytes()]}),
    _packed(tensors={"c0": ["float16", [2], b"\0" * 4]}),
    _packed(tensors={"c0": ["object", [2], b"\0" * 16]}),
    _packed(tensors={"c0": ["float32", [-2], b""]}),
    _packed(tensors={"c0": ["float32", [2]]}),
    _packed(tensors={"__class__": ["float32", [2], TENSORS["c0"].tobytes()]}),
    _packed(tensors={"entry": ["float32", [2], TENSORS["c0"].tobytes()]}),
    _packed(extra=1),
    _packed().replace(bytes([0xd6, REF_CODE]), bytes([0xd6, 9]), 1),   # unknown extension
    _packed().replace(bytes([0xd6, REF_CODE]), bytes([0xd5, REF_CODE]), 1)[:-2],  # 2-byte ref
    msgpack.packb({"format": 2}) + b"trailing",
])
def test_malformed_modules_are_refused(data: bytes) -> None:
    with pytest.raises(nnrt.BadData, match="cpu bytecode"):
        CpuDispatch().load(data, "entry")


def test_an_unknown_entry_point_is_refused() -> None:
    with pytest.raises(nnrt.BadData, match="no entry point 'other'"):
        CpuDispatch().load(_module(GOOD), "other")


def test_tensors_are_read_only_when_a_program_runs() -> None:
    program = _changed(steps=[["relu", -1, [R(3), R(0)]], ["copy", -1, [R(1), R(3)]]])
    dispatch = CpuDispatch()
    executable = dispatch.load(_module(program), "entry")
    with pytest.raises(ValueError, match="read-only"):
        dispatch.invoke(executable, [np.zeros(2, np.float32)], [np.empty(2, np.float32)])


def test_too_few_inputs_at_run_time_are_refused() -> None:
    dispatch = CpuDispatch()
    executable = dispatch.load(_module(GOOD), "entry")
    with pytest.raises(nnrt.BadData, match="expected 1 inputs and 1 outputs"):
        dispatch.invoke(executable, [], [np.empty(2, np.float32)])


def test_each_thread_runs_on_its_own_frame() -> None:
    dispatch = CpuDispatch()
    executable = dispatch.load(_module(GOOD), "entry")
    frames: list[list[Any]] = []
    thread = threading.Thread(target=lambda: frames.append(executable.frame()))
    thread.start()
    thread.join()
    mine = executable.frame()
    assert mine is executable.frame()  # reused by this thread
    assert not np.shares_memory(mine[2], frames[0][2])  # the slot views: different arenas
