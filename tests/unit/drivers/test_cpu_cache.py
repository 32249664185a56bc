"""The cpu driver's cache split (code vs constants), hostile blobs, and stage 2 in the cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import msgpack
import numpy as np
import pytest
from cpu_models import benchmark_module, random_graph

import nnrt
from nnrt.cache import CacheFiles
from nnrt.drivers.cpu import CpuDispatch, CpuDriver, CpuPlugin
from nnrt.drivers.cpu.module import decode_module, encode_module
from nnrt.drivers.cpu.program import pack_default, unpack_ext
from nnrt.drivers.cpu.split import ALIGN
from nnrt.drivers.cpu.stages import CpuPreparedModel

BENCH = benchmark_module()
#: A program that does nothing.
EMPTY = {"frame": 0, "inputs": [], "outputs": [], "tensors": [], "slots": [], "steps": []}
PLUGIN = CpuPlugin()


def _module(make: str = "cnn") -> bytes:
    model, _ = getattr(BENCH, make)(1)
    return CpuDriver().compile_partitions([model]).modules[0]


@pytest.mark.parametrize("make", ["mlp", "cnn", "transformer"])
def test_split_then_join_gives_the_module_back(make: str) -> None:
    module = _module(make)
    code, constants = PLUGIN.split_module(module)
    joined = PLUGIN.join_module(code, constants)
    decoded = decode_module(module)
    assert (joined.programs, joined.entry_points, joined.scratch, joined.stage) == (
        decoded.programs, decoded.entry_points, decoded.scratch, decoded.stage)
    assert list(joined.tensors) == list(decoded.tensors)
    for name, tensor in joined.tensors.items():
        np.testing.assert_array_equal(tensor, decoded.tensors[name])
        assert tensor.dtype == decoded.tensors[name].dtype and not tensor.flags.writeable
    assert len(code) < 4096 < len(constants)  # the weights went to the data cache
    assert sum(t.nbytes for t in decoded.tensors.values()) <= len(constants)
    assert not any(t.tobytes() in code for t in decoded.tensors.values() if t.nbytes > 64)


def test_split_keeps_the_stage_and_choices() -> None:
    tensors = {"c0": np.arange(3, dtype=np.float32), "c1": np.ones((2, 2), np.int32)}
    module = encode_module({"entry": EMPTY}, ["entry"], tensors, {"entry": 16}, stage=2,
                           choices=[(0, "fc_dot"), (3, "conv")])
    code, constants = PLUGIN.split_module(module)
    assert len(constants) == ALIGN + 16  # c0 (12 bytes) padded to 64, then c1
    joined = PLUGIN.join_module(code, constants)
    assert joined.stage == 2 and joined.choices == ((0, "fc_dot"), (3, "conv"))
    np.testing.assert_array_equal(joined.tensors["c1"], tensors["c1"])


def test_split_refuses_a_module_that_is_not_one() -> None:
    with pytest.raises(nnrt.BadData, match="cpu bytecode"):
        PLUGIN.split_module(b"\x93\x01\x02\x03")


def _code_fields(code: bytes) -> dict[str, object]:
    fields: dict[str, object] = msgpack.unpackb(code, raw=False, ext_hook=unpack_ext)
    return fields


def _hostile() -> Iterator[tuple[str, bytes, bytes]]:
    code, constants = PLUGIN.split_module(_module("cnn"))
    fields = _code_fields(code)
    tensors = fields["tensors"]
    assert isinstance(tensors, dict)
    first = next(iter(tensors))

    def changed(**kw: object) -> bytes:
        return msgpack.packb({**fields, **kw}, use_bin_type=True, default=pack_default)

    yield "truncated constants", code, constants[:-1]
    yield "extra constants", code, constants + b"\0"
    yield "no constants", code, b""
    yield "lying length", changed(constants=len(constants) + 4), constants + bytes(4)
    yield "garbage code", b"\xc1\xc1", constants
    yield "a module as code", _module("cnn"), constants
    yield "code not a map", msgpack.packb([1, 2]), constants
    yield "bad dtype", changed(tensors={**tensors, first: ["float64", tensors[first][1]]}), \
        constants
    yield "bigger shape", changed(tensors={**tensors, first: ["float32", [10 ** 9]]}), \
        constants
    yield "negative dim", changed(tensors={**tensors, first: ["float32", [-1]]}), constants
    yield "descriptor with data", changed(tensors={**tensors, first: [*tensors[first], b""]}), \
        constants
    yield "dunder tensor", changed(tensors={"__class__": ["float32", [1]]}, constants=4), \
        bytes(4)
    yield "missing programs", msgpack.packb(
        {k: v for k, v in fields.items() if k != "programs"}, default=pack_default), constants
    yield "programs not per entry point", changed(programs={"other": EMPTY}), constants
    yield "old format (source)", changed(format=1, source="def partition_0(): pass"), constants
    yield "unknown extension type", code.replace(b"\xd6\x01", b"\xd6\x07", 1), constants
    yield "bad stage", changed(stage=3, choices=[]), constants
    yield "stage without choices", changed(stage=2), constants
    yield "bad choice", changed(stage=2, choices=[[0, "exec("]]), constants
    yield "huge scratch", changed(scratch={"partition_0": 1 << 40}), constants


@pytest.mark.parametrize(("what", "code", "constants"), list(_hostile()),
                         ids=[h[0] for h in _hostile()])
def test_join_refuses_hostile_blobs(what: str, code: bytes, constants: bytes) -> None:
    with pytest.raises(nnrt.CacheError, match="cpu cache"):
        PLUGIN.join_module(code, constants)


def test_join_refuses_non_zero_padding() -> None:
    tensors = {"c0": np.arange(3, dtype=np.float32), "c1": np.ones(2, np.float32)}
    code, constants = PLUGIN.split_module(encode_module({"entry": EMPTY}, ["entry"], tensors,
                                                        {"entry": 0}))
    tampered = constants[:20] + b"\1" + constants[21:]
    with pytest.raises(nnrt.CacheError, match="padding before tensor 'c1' is not zero"):
        PLUGIN.join_module(code, tampered)


# -- the cache files end to end -------------------------------------------------------------


@pytest.fixture
def cache_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CacheFiles]:
    """One model and one data cache file (real files), and an integrity store in tmp_path."""
    monkeypatch.setenv("NNRT_INTEGRITY_DIR", str(tmp_path / "integrity"))
    fds = [os.open(tmp_path / name, os.O_RDWR | os.O_CREAT, 0o600) for name in ("m", "d")]
    try:
        yield CacheFiles(b"t" * 32, (fds[0],), (fds[1],))
    finally:
        for fd in fds:
            os.close(fd)


def test_the_cache_holds_code_and_constants_apart(cache_files: CacheFiles) -> None:
    model, inputs = BENCH.mlp(1)
    want = nnrt.reference.run(model, inputs)
    with CpuDriver(optimize_after=0).prepare(model, cache=cache_files) as prepared:
        assert isinstance(prepared, CpuPreparedModel) and prepared.optimization == "off"
    model_size = os.fstat(cache_files.model[0]).st_size
    data_size = os.fstat(cache_files.data[0]).st_size
    assert 0 < model_size < 4096 and data_size > 2_000_000
    with CpuDriver().prepare_from_cache(model, cache_files) as loaded:
        assert isinstance(loaded, CpuPreparedModel) and loaded.stage == 1
        np.testing.assert_allclose(loaded.execute(inputs).outputs[0], want[0], atol=1e-5)


def test_a_tampered_data_cache_is_refused(cache_files: CacheFiles) -> None:
    model, _ = random_graph(3)
    CpuDriver(optimize_after=0).prepare(model, cache=cache_files).release()
    fd = cache_files.data[0]
    os.pwrite(fd, b"\xff\xff\xff\x7f", 0)
    with pytest.raises(nnrt.CacheError, match="corrupt or tampered"):
        CpuDriver().prepare_from_cache(model, cache_files)


def test_stage_two_is_saved_and_loaded_from_the_cache(cache_files: CacheFiles) -> None:
    model, inputs = BENCH.cnn(1)
    driver = CpuDriver(optimize_after=2)
    with driver.prepare(model, cache=cache_files) as prepared:
        assert isinstance(prepared, CpuPreparedModel)
        first = prepared.execute(inputs).outputs[0]
        stage1_code = os.pread(cache_files.model[0], 1 << 16, 0)
        prepared.execute(inputs)
        assert prepared.wait_optimized(30)
        assert prepared.optimization == "done" and prepared.stage == 2
        choices = prepared.choices
    assert os.pread(cache_files.model[0], 1 << 16, 0) != stage1_code
    fresh = CpuDriver(optimize_after=1)
    with fresh.prepare_from_cache(model, cache_files) as loaded:
        assert isinstance(loaded, CpuPreparedModel)
        assert loaded.stage == 2 and loaded.choices == choices
        assert loaded.optimization == "off"
        for _ in range(3):
            np.testing.assert_allclose(loaded.execute(inputs).outputs[0], first, atol=1e-5)
        assert loaded.optimization == "off" and loaded.wait_optimized(0)
    assert fresh.compile_count == 0


def test_a_read_only_cache_leaves_stage_two_running(tmp_path: Path,
                                                    cache_files: CacheFiles) -> None:
    model, inputs = random_graph(5)
    CpuDriver(optimize_after=0).prepare(model, cache=cache_files).release()
    paths = [tmp_path / "m", tmp_path / "d"]
    fds = [os.open(p, os.O_RDONLY) for p in paths]
    try:
        files = CacheFiles(cache_files.token, (fds[0],), (fds[1],))
        with CpuDriver(optimize_after=1).prepare_from_cache(model, files) as loaded:
            assert isinstance(loaded, CpuPreparedModel)
            loaded.execute(inputs)
            assert loaded.wait_optimized(30)
            assert loaded.optimization == "done" and loaded.stage == 2
    finally:
        for fd in fds:
            os.close(fd)
    with CpuDriver(optimize_after=0).prepare_from_cache(model, cache_files) as again:
        assert isinstance(again, CpuPreparedModel) and again.stage == 1


def test_aot_bytecode_still_loads() -> None:
    module = _module("mlp")
    model, inputs = BENCH.mlp(1)
    with CpuDriver(optimize_after=0).prepare_compiled(model, module, "partition_0") as p:
        assert p.execute(inputs).outputs[0].shape == (1, 10)
    assert CpuDispatch().load(module, "partition_0").stage == 1
