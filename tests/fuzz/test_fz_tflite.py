"""Fuzzing ``nnrt.tflite.load`` with hostile ``.tflite`` files.

Seeds are small valid files (built with ``tests/unit/tflite/flatbuffers_kit``: an ADD with a
constant, a FULLY_CONNECTED with a signature and a dynamic batch, an IF over two subgraphs),
one small MediaPipe model from the test cache when it is there, and the saved findings
(``corpus/tflite``). Mutations are

* byte level: flips, overwrites with edge values, truncation, insertion, deletion;
* flatbuffer level: a 4-byte word (an offset, a vector length) set to an edge value;
* structure aware (on LiteRT's object API, then packed again): tensor shapes to huge or
  negative dims, buffer indices, buffer offset/size fields, operator-code and tensor indices,
  vectors cut or grown, and the subgraph indices of WHILE / IF options pointed back up the call
  path (cycles).

Every input either loads to a finished model or raises ``BadData`` or the unsupported-model
error (:func:`fuzz_kit.check_error`), within a bounded time and bounded peak memory.
"""

from __future__ import annotations

import copy
import random
import struct
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb
from fuzz_kit import CORPUS, budget, check_error, corpus_files, count
from hostile import EDGE_INTS
from hypothesis import given
from hypothesis import strategies as st

import nnrt
import nnrt.tflite
from tests.unit.tflite.flatbuffers_kit import B, TfliteFile, pack

#: Seconds one load may take, and bytes of peak Python memory it may allocate.
_MAX_SECONDS = 5.0
_MAX_PEAK = 64 << 20
_MEDIAPIPE = (Path.home() / ".cache" / "nnrt" / "test-models" / "mediapipe-0.10.14" /
              "mediapipe" / "modules" / "holistic_landmark" / "hand_recrop.tflite")


def _add() -> Any:
    f = TfliteFile()
    x, y = f.tensor((2, 3), name="x"), f.tensor((2, 3), name="y")
    f.op(B.ADD, [x, f.const(np.ones((2, 3), np.float32))], [y], fb.AddOptionsT())
    return f.model([x], [y])


def _fc() -> Any:
    f = TfliteFile()
    x = f.tensor((1, 8), name="x", signature=(-1, 8))
    w = f.const(np.arange(32, dtype=np.float32).reshape(4, 8), name="w")
    y = f.tensor((1, 4), name="y", signature=(-1, 4))
    f.op(B.FULLY_CONNECTED, [x, w, -1], [y], fb.FullyConnectedOptionsT())
    return f.model([x], [y], {"key": "serving_default", "inputs": {"input": x},
                              "outputs": {"output": y}})


def _branch(builtin: int) -> Any:
    f = TfliteFile()
    x, y = f.tensor((2, 3), name="x"), f.tensor((2, 3), name="y")
    f.op(builtin, [x], [y])
    return f.model([x], [y]).subgraphs[0], f.codes[0][0]


def _if() -> Any:
    """``IF(cond, x)`` over a RELU subgraph and a RELU6 one."""
    f = TfliteFile()
    cond = f.tensor((), fb.TensorType.BOOL, name="cond")
    x, y = f.tensor((2, 3), name="x"), f.tensor((2, 3), name="y")
    options = fb.IfOptionsT()
    options.thenSubgraphIndex, options.elseSubgraphIndex = 1, 2
    f.op(B.IF, [cond, x], [y], options)
    model = f.model([cond, x], [y])
    for builtin in (B.RELU, B.RELU6):
        graph, _ = _branch(builtin)
        code = fb.OperatorCodeT()
        code.builtinCode = code.deprecatedBuiltinCode = builtin
        code.version = 1
        graph.operators[0].opcodeIndex = len(model.operatorCodes)
        model.operatorCodes.append(code)
        model.subgraphs.append(graph)
    return model


_BUILT = {"add": _add, "fc": _fc, "if": _if}


def _seeds() -> dict[str, bytes]:
    seeds = {name: pack(build()) for name, build in _BUILT.items()}
    seeds.update((p.name, p.read_bytes()) for p in corpus_files("tflite"))
    return seeds


SEEDS = _seeds()
_NAMES = sorted(SEEDS)


def _load(data: bytes, where: str) -> None:
    """Load ``data``: a finished model or a clean nnrt error, in bounded time and memory."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        model = nnrt.tflite.load(data)
    except Exception as exc:
        check_error(exc, where)
        if not isinstance(exc, nnrt.BadData | nnrt.tflite.UnsupportedTfliteModel):
            raise AssertionError(f"{where}: {type(exc).__name__}: {exc}") from exc
    else:
        count("tflite.valid")
        assert model.finished, where
    finally:
        elapsed = time.monotonic() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < _MAX_SECONDS, f"{where}: took {elapsed:.1f} s"
    assert peak < _MAX_PEAK, f"{where}: peaked at {peak >> 20} MiB"


# -- byte and flatbuffer-word mutations --------------------------------------------------------

def _word(rng: random.Random, size: int) -> int:
    return rng.choice((*[v for v in EDGE_INTS if 0 <= v < 2**32], size, size - 4, size + 4,
                       rng.randrange(max(size, 1))))


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    kind = rng.choice(("flip", "byte", "word", "word", "truncate", "insert", "delete"))
    at = rng.randrange(len(out)) if out else 0
    if kind == "flip" and out:
        out[at] ^= 1 << rng.randrange(8)
    elif kind == "byte" and out:
        out[at] = rng.choice((0, 1, 0x7F, 0x80, 0xFF))
    elif kind == "word" and len(out) >= 4:  # an offset or a vector length, aligned
        at = rng.randrange(len(out) // 4) * 4
        out[at:at + 4] = struct.pack("<I", _word(rng, len(data)))
    elif kind == "truncate":
        del out[at:]
    elif kind == "insert":
        out[at:at] = rng.randbytes(rng.choice((1, 4, 8)))
    elif kind == "delete":
        del out[at:at + rng.choice((1, 4, 8))]
    return bytes(out)


@budget(ci=120, long=20000)
@given(seed=st.integers(0, 2**32 - 1), name=st.sampled_from(_NAMES), mutations=st.integers(1, 4))
def test_mutated_bytes(seed: int, name: str, mutations: int) -> None:
    count("tflite.bytes")
    rng = random.Random(seed)
    data = SEEDS[name]
    for _ in range(mutations):
        data = _mutate_bytes(rng, data)
    _load(data, f"{name} with {mutations} byte mutation(s) (seed {seed})")


# -- structure-aware mutations -------------------------------------------------------------------

_HUGE = (2**31 - 1, 2**30, 1 << 20, 65536, -1, -2, 0)


def _pick(rng: random.Random, items: list[Any] | None) -> Any:
    return rng.choice(items) if items else None


def _tensor(rng: random.Random, model: Any) -> Any:
    graph = _pick(rng, model.subgraphs)
    return None if graph is None else _pick(rng, graph.tensors)


def _index(rng: random.Random, count: int) -> int:
    return rng.choice((-1, -2, count, count + 1, 2**31 - 1, rng.randrange(max(count, 1))))


def _shape(rng: random.Random, model: Any) -> None:
    tensor = _tensor(rng, model)
    if tensor is not None:
        rank = rng.choice((0, 1, 2, 4, 9, 64))
        tensor.shape = np.asarray([rng.choice((*_HUGE, 1, 2, 3)) for _ in range(rank)], np.int32)
        if rng.random() < 0.3:
            tensor.shapeSignature = np.asarray([rng.choice((-1, 1, 2**31 - 1))
                                                for _ in range(rng.choice((rank, rank + 1)))],
                                               np.int32)


def _buffer_index(rng: random.Random, model: Any) -> None:
    tensor = _tensor(rng, model)
    if tensor is not None:
        tensor.buffer = _index(rng, len(model.buffers or []))


def _buffer_range(rng: random.Random, model: Any) -> None:
    buffer = _pick(rng, model.buffers)
    if buffer is not None:
        buffer.offset = rng.choice((0, 1, 2, 8, 2**32, 2**63 - 1, rng.randrange(4096)))
        buffer.size = rng.choice((0, 1, 4, 24, 2**32, 2**63 - 1, rng.randrange(4096)))
        if rng.random() < 0.5:
            buffer.data = None


def _buffer_data(rng: random.Random, model: Any) -> None:
    buffer = _pick(rng, model.buffers)
    if buffer is not None:
        buffer.data = np.frombuffer(rng.randbytes(rng.choice((0, 1, 3, 24, 96))), np.uint8)


def _operator_index(rng: random.Random, model: Any) -> None:
    graph = _pick(rng, model.subgraphs)
    op = None if graph is None else _pick(rng, graph.operators)
    if op is None:
        return
    field = rng.choice(("opcodeIndex", "inputs", "outputs"))
    if field == "opcodeIndex":
        op.opcodeIndex = _index(rng, len(model.operatorCodes or []))
    else:
        values = getattr(op, field)
        if values is not None and len(values):
            values[rng.randrange(len(values))] = _index(rng, len(graph.tensors or []))


def _graph_index(rng: random.Random, model: Any) -> None:
    graph = _pick(rng, model.subgraphs)
    field = rng.choice(("inputs", "outputs"))
    values = None if graph is None else getattr(graph, field)
    if values is not None and len(values):
        values[rng.randrange(len(values))] = _index(rng, len(graph.tensors or []))


def _vector(rng: random.Random, model: Any) -> None:
    """A vector cut short, emptied, dropped or grown (elements repeated)."""
    graph = _pick(rng, model.subgraphs) or model  # (the model has no field of a subgraph's)
    owner, field = rng.choice(((model, "buffers"), (model, "operatorCodes"),
                               (model, "subgraphs"), (graph, "tensors"), (graph, "operators"),
                               (graph, "inputs"), (graph, "outputs")))
    if not hasattr(owner, field):
        return
    values = getattr(owner, field)
    if values is None:
        return
    how = rng.choice(("cut", "empty", "none", "grow"))
    if how == "cut":
        setattr(owner, field, values[:rng.randrange(len(values) + 1)])
    elif how == "empty":
        setattr(owner, field, values[:0])
    elif how == "none":
        setattr(owner, field, None)
    elif len(values):
        more = [values[-1]] * rng.choice((1, 3))
        grown = np.concatenate([values, more]) if isinstance(values, np.ndarray) else \
            [*values, *(copy.deepcopy(v) for v in more)]
        setattr(owner, field, grown)


def _subgraph_cycle(rng: random.Random, model: Any) -> None:
    """A WHILE / IF / CALL_ONCE whose subgraph indices point back up the call path (or out of
    range), or a new control-flow operator in a called subgraph calling its caller."""
    if not model.subgraphs:
        return
    count_ = len(model.subgraphs)
    index = rng.choice((0, count_, -1, 2**31 - 1, rng.randrange(count_)))
    kind = rng.choice((fb.WhileOptionsT, fb.IfOptionsT, fb.CallOnceOptionsT))
    options = kind()
    for name in vars(options):
        if name.endswith("SubgraphIndex"):
            setattr(options, name, index)
    graph = rng.choice(model.subgraphs)
    builtin = {fb.WhileOptionsT: B.WHILE, fb.IfOptionsT: B.IF,
               fb.CallOnceOptionsT: B.CALL_ONCE}[kind]
    code = fb.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = builtin
    model.operatorCodes = [*(model.operatorCodes or []), code]
    op = fb.OperatorT()
    op.opcodeIndex = len(model.operatorCodes) - 1
    tensors = len(graph.tensors or [])
    op.inputs = np.asarray([0] if tensors else [], np.int32)
    op.outputs = np.asarray([tensors - 1] if tensors else [], np.int32)
    op.builtinOptionsType = getattr(fb.BuiltinOptions, kind.__name__[:-1])
    op.builtinOptions = options
    graph.operators = [*(graph.operators or []), op]


def _options_index(rng: random.Random, model: Any) -> None:
    """An existing control-flow operator's subgraph index changed."""
    for graph in model.subgraphs or []:
        for op in graph.operators or []:
            fields = getattr(op.builtinOptions, "__dict__", {})
            names = [n for n in fields if n.endswith("SubgraphIndex")]
            if names:
                setattr(op.builtinOptions, rng.choice(names), _index(rng, len(model.subgraphs)))
                return
    _subgraph_cycle(rng, model)


_STRUCTURE: tuple[Callable[[random.Random, Any], None], ...] = (
    _shape, _buffer_index, _buffer_range, _buffer_data, _operator_index, _graph_index, _vector,
    _subgraph_cycle, _options_index)


@budget(ci=150, long=20000)
@given(seed=st.integers(0, 2**32 - 1), name=st.sampled_from(sorted(_BUILT)),
       mutations=st.integers(1, 3))
def test_structure_mutations(seed: int, name: str, mutations: int) -> None:
    count("tflite.structure")
    rng = random.Random(seed)
    model = _BUILT[name]()
    done = []
    for _ in range(mutations):
        mutation = rng.choice(_STRUCTURE)
        mutation(rng, model)
        done.append(mutation.__name__)
    try:
        data = pack(model)
    except Exception:  # the object API cannot write it (e.g. an int out of its field's range)
        return
    _load(data, f"{name} after {done} (seed {seed})")


@pytest.mark.skipif(not _MEDIAPIPE.is_file(), reason=f"{_MEDIAPIPE.name} is not in the test "
                    "cache (tests/models fetches the mediapipe wheel)")
@budget(ci=10, long=2000)
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_mediapipe_model(seed: int) -> None:
    count("tflite.mediapipe")
    rng = random.Random(seed)
    data = _MEDIAPIPE.read_bytes()
    if seed % 2:  # the head of the file: the root table, vtables, vector lengths
        out = bytearray(data)
        at = rng.randrange(min(len(out), 4096) // 4) * 4
        out[at:at + 4] = struct.pack("<I", _word(rng, len(data)))
        data = bytes(out)
    else:
        data = _mutate_bytes(rng, data)
    _load(data, f"{_MEDIAPIPE.name} mutated (seed {seed})")


def test_seeds_load() -> None:
    """The built seeds are valid: the mutations start from real models."""
    for name in ("add", "fc", "if"):
        assert nnrt.tflite.load(SEEDS[name]).finished, name


def test_corpus_replay() -> None:
    """Saved findings (corpus/tflite) are refused cleanly or load."""
    files = list(corpus_files("tflite"))
    assert files, f"the corpus {CORPUS / 'tflite'} is empty"
    for path in files:
        _load(path.read_bytes(), path.name)
