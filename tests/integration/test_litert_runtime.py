"""The litert driver through the runtime: its compilation cache (warm compiles, corrupted files
rebuilt), ahead-of-time ``.nnrt`` files (run without compiling; a tampered flatbuffer refused)
and device buffers, with real workers."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import flatbuffers
import numpy as np
import pytest

import nnrt
from nnrt import BufferDesc, BufferRole
from nnrt.hal.plugin import FORBID_COMPILE

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")

from ai_edge_litert import schema_py_generated as fb

pytestmark = pytest.mark.anyio
#: XNNPACK sums in another order than the reference interpreter.
TOL = {"rtol": 1e-4, "atol": 1e-4}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def integrity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private integrity store for this test's workers."""
    monkeypatch.setenv("NNRT_INTEGRITY_DIR", str(tmp_path / "integrity"))


def mlp(width: int = 1024, layers: int = 4) -> tuple[nnrt.Model, np.ndarray]:
    """A conv, then ``layers`` FULLY_CONNECTED width x width + RELU (4.2 M parameters)."""
    rng = np.random.default_rng(11)
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 8, 8, width // 64))
    h = b.conv2d(x, (rng.standard_normal((width // 64, 3, 3, width // 64)) * 0.1).astype(
        np.float32), np.zeros(width // 64, np.float32), padding="same", activation="relu")
    h = b.reshape(h, (1, width))
    for _ in range(layers):
        w = (rng.standard_normal((width, width)) * 0.03).astype(np.float32)
        h = b.relu(b.fully_connected(h, w, np.zeros(width, np.float32)))
    b.output(h)
    return b.build(), rng.standard_normal((1, 8, 8, width // 64)).astype(np.float32)


async def compile_and_run(model: nnrt.Model, x: np.ndarray, cache: Path
                          ) -> tuple[float, np.ndarray, tuple[int, int, int]]:
    """Seconds to compile ``model`` in a new runtime (workers already up) and run it once, and
    what that compile did to the cache: (misses, hits, rejected loads).

    The warm-up step has a cache of its own beside ``cache``: under ``NNRT_FORBID_COMPILE=1``
    it loads from there too, and ``cache`` holds ``model``'s files only."""
    async with nnrt.Runtime(drivers=["litert"], workers=1) as rt:
        b = nnrt.ModelBuilder()
        t = b.input("t", (1, 4))
        b.output(b.relu(t))
        warm_up = await rt.compile(b.build(), cache_dir=cache.with_name(f"{cache.name}-warm-up"))
        await warm_up.execute([np.ones((1, 4), np.float32)])
        before = rt.statistics()
        start = time.perf_counter()
        compiled = await rt.compile(model, cache_dir=cache)
        (y,) = await compiled.execute([x])
        seconds = time.perf_counter() - start
        after = rt.statistics()
        assert compiled.device == "litert"
        return seconds, y, (after.cache_misses - before.cache_misses,
                            after.cache_hits - before.cache_hits,
                            after.cache_load_failures - before.cache_load_failures)


async def test_a_warm_compile_loads_the_cache_and_is_faster_than_a_cold_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, x = mlp()
    expected = nnrt.reference.run(model, [x])[0]
    colds, warms = [], []
    for run in range(3):  # interleaved: a load spike on a shared box slows both kinds alike
        cache = tmp_path / f"cache{run}"
        monkeypatch.delenv(FORBID_COMPILE, raising=False)
        cold, y, counts = await compile_and_run(model, x, cache)
        assert counts == (1, 0, 0)
        np.testing.assert_allclose(y, expected, **TOL)
        colds.append(cold)
        # the mechanism: the workers may not compile, so the step runs on litert only if its
        # flatbuffer came from the cache (a refused compile would leave it on the reference)
        monkeypatch.setenv(FORBID_COMPILE, "1")
        warm, y, counts = await compile_and_run(model, x, cache)
        assert counts == (0, 1, 0)
        np.testing.assert_allclose(y, expected, **TOL)
        warms.append(warm)
    # the time it saves (benchmarks/cache.py shows it for 16 M parameters): here about 0.2 s
    # cold, 0.1 s warm, so the ratio of single runs swings under load; the medians of
    # interleaved runs, with a generous bound, only catch a cache load as slow as a compile
    assert statistics.median(warms) < 0.8 * statistics.median(colds), (colds, warms)


def only(directory: Path, suffix: str) -> Path:
    (found,) = [p for p in directory.iterdir() if p.name.endswith(suffix)]
    return found


@pytest.mark.parametrize("damage", ["flip weights", "flip header", "truncate"])
async def test_a_corrupted_data_cache_flatbuffer_is_rejected_and_rebuilt(
        tmp_path: Path, damage: str) -> None:
    model, x = mlp(256, 2)
    expected = nnrt.reference.run(model, [x])[0]
    cache = tmp_path / "cache"
    await compile_and_run(model, x, cache)
    flatbuffer = only(cache, ".data.0")  # the litert plugin keeps its flatbuffer there
    data = bytearray(flatbuffer.read_bytes())
    assert data[4:8] == b"TFL3"
    if damage == "flip weights":
        data[len(data) // 2] ^= 0x40
    elif damage == "flip header":
        data[4] ^= 0xFF
    else:
        del data[len(data) // 2:]
    flatbuffer.write_bytes(bytes(data))
    _, y, counts = await compile_and_run(model, x, cache)
    assert counts == (1, 0, 1)  # (misses, hits, rejected loads)
    np.testing.assert_allclose(y, expected, **TOL)
    _, y, counts = await compile_and_run(model, x, cache)  # rebuilt: a hit again
    assert counts == (0, 1, 0)
    np.testing.assert_allclose(y, expected, **TOL)


# -- ahead of time -----------------------------------------------------------------------------

def small_cnn() -> tuple[nnrt.Model, np.ndarray]:
    rng = np.random.default_rng(5)
    b = nnrt.ModelBuilder()
    x = b.input("image", (1, 8, 8, 3))
    y = b.conv2d(x, rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
                 rng.standard_normal(4).astype(np.float32), padding="same", activation="relu")
    y = b.max_pool2d(y, 2)
    y = b.reshape(y, (1, 64))
    y = b.fully_connected(y, rng.standard_normal((10, 64)).astype(np.float32),
                          np.zeros(10, np.float32))
    b.output(b.softmax(y))
    return b.build(), rng.standard_normal((1, 8, 8, 3)).astype(np.float32)


@pytest.fixture
def aot_file(tmp_path: Path) -> Path:
    """``nnrt compile --driver litert`` of the small CNN."""
    model, _ = small_cnn()
    nnrt.save(model, tmp_path / "cnn.nnrt")
    done = subprocess.run([sys.executable, "-m", "nnrt", "compile", str(tmp_path / "cnn.nnrt"),
                           "-o", str(tmp_path / "aot.nnrt"), "--driver", "litert"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "for litert" in done.stderr
    return tmp_path / "aot.nnrt"


async def test_an_aot_file_runs_its_embedded_flatbuffer_without_compiling(
        aot_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = nnrt.load(aot_file)
    assert model.aot is not None and [r.driver for r in model.aot.dispatches] == ["litert"]
    assert model.aot.dispatches[0].operations == tuple(range(len(model.operations)))
    location = model.aot.modules[0]
    assert bytes(location.memory.view(location.offset, location.length)[4:8]) == b"TFL3"
    monkeypatch.setenv("NNRT_FORBID_COMPILE", "1")  # the workers may only load bytecode
    _, x = small_cnn()
    async with nnrt.Runtime(drivers=["litert"], workers=1) as rt:
        compiled = await rt.compile(model)
        assert [(s.driver, s.source) for s in compiled.placement().steps] == [("litert", "aot")]
        (y,) = await compiled.execute([x])
    np.testing.assert_allclose(y, nnrt.reference.run(small_cnn()[0], [x])[0], **TOL)


async def test_a_tampered_embedded_flatbuffer_is_refused(aot_file: Path, tmp_path: Path
                                                         ) -> None:
    loaded = nnrt.load(aot_file)
    assert loaded.aot is not None
    location = loaded.aot.modules[0]
    tflite = fb.ModelT.InitFromPackedBuf(bytes(location.memory.view(location.offset,
                                                                     location.length)), 0)
    operator = tflite.subgraphs[0].operators[0]
    operator.inputs = np.array([99, *operator.inputs[1:]], np.int32)  # no such tensor
    builder = flatbuffers.Builder(1024)
    builder.Finish(tflite.Pack(builder), file_identifier=b"TFL3")
    # saved with valid section checksums: only the dispatch's checks can catch it
    nnrt.save(loaded, tmp_path / "tampered.nnrt", aot=loaded.aot,
              modules=[bytes(builder.Output())])
    model = nnrt.load(tmp_path / "tampered.nnrt")
    async with nnrt.Runtime(drivers=["litert"], workers=1) as rt:
        with pytest.raises(nnrt.BadData, match="litert bytecode: operator 0 inputs name "
                                               "tensor 99"):
            await rt.compile(model)


# -- device buffers ----------------------------------------------------------------------------

def state_model() -> nnrt.Model:
    """new_state = relu(state + W x): inputs (x, state), output new_state."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 4))
    state = b.input("state", (1, 4))
    w = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    b.output(b.relu(b.add(state, b.fully_connected(x, w, np.zeros(4, np.float32)))),
             names=["new_state"])
    return b.build()


async def test_device_buffers_feed_and_receive_a_litert_step() -> None:
    model = state_model()
    x = np.array([[1, -2, 3, 0.5]], np.float32)
    async with nnrt.Runtime(drivers=["litert"], workers=2) as rt:
        step = await rt.compile(model)
        other = await rt.compile(model)
        assert step.device == "litert"
        roles = dict(input_roles=[BufferRole(step, 1)], output_roles=[BufferRole(step, 0)])
        a = await rt.allocate(BufferDesc(), **roles)
        b = await rt.allocate(BufferDesc(), **roles)
        assert a.fallback is None and rt.statistics().allocate_fallbacks == 0  # in the worker
        state = np.zeros((1, 4), np.float32)
        await a.copy_from(state)
        for k in range(6):  # ping-pong: a buffer may not be input and output of one request
            src, dst = (a, b) if k % 2 == 0 else (b, a)
            (result,) = await step.execute([x, src], outputs=[dst])
            assert result is dst
            state = nnrt.reference.run(model, [x, state])[0]
        np.testing.assert_allclose(await a.copy_to(), state, **TOL)
        with pytest.raises(nnrt.BadData, match="both an input and an output"):
            await step.execute([x, a], outputs=[a])
        with pytest.raises(nnrt.BadData, match="input 1"):  # a role of another model
            await other.execute([x, a])
        with pytest.raises(nnrt.BadData, match="input 0"):  # not a declared role
            await step.execute([a, x])
        (y,) = await step.execute([x, a])  # a valid use still works
        np.testing.assert_allclose(y, nnrt.reference.run(model, [x, state])[0], **TOL)


# -- float16 ------------------------------------------------------------------------------------

def float16_model() -> nnrt.Model:
    """A float16 conv, pool, classifier and softmax, its logits also cast to float32; and
    new_state = relu(state + W x) in float16."""
    rng = np.random.default_rng(16)
    b = nnrt.ModelBuilder()
    image = b.input("image", (2, 8, 8, 3), "float16")
    x = b.input("x", (1, 4), "float16")
    state = b.input("state", (1, 4), "float16")
    y = b.conv2d(image, (rng.standard_normal((6, 3, 3, 3)) * 0.5).astype(np.float16),
                 np.zeros(6, np.float16), padding="same", activation="relu")
    y = b.reshape(b.average_pool2d(y, 2), (2, -1))
    logits = b.fully_connected(y, (rng.standard_normal((5, 96)) * 0.2).astype(np.float16),
                               np.zeros(5, np.float16))
    widened = b.operation(nnrt.OperationType.CAST, logits,
                          output_types=[nnrt.OperandType.TENSOR_FLOAT32])[0]
    w = (np.arange(16).reshape(4, 4) / 16).astype(np.float16)
    new_state = b.relu(b.add(state, b.fully_connected(x, w, np.zeros(4, np.float16))))
    b.output(b.softmax(logits), widened, new_state)
    return b.build()


async def test_a_float16_model_runs_whole_on_litert_with_float16_arrays() -> None:
    model = float16_model()
    rng = np.random.default_rng(17)
    image = rng.standard_normal((2, 8, 8, 3)).astype(np.float16)
    x = np.array([[1, -2, 3, 0.5]], np.float16)
    state = np.zeros((1, 4), np.float16)
    f16 = {"atol": 5 * 2.0**-10, "rtol": 5 * 2.0**-10}  # the kit's float16 tolerance
    async with nnrt.Runtime(drivers=["litert"], workers=1) as rt:
        compiled = await rt.compile(model)
        assert [s.driver for s in compiled.placement().steps] == ["litert"]
        outputs = await compiled.execute([image, x, state])
        want = nnrt.reference.run(model, [image, x, state])
        assert [o.dtype.name for o in outputs] == ["float16", "float32", "float16"]
        for got, expected in zip(outputs, want, strict=True):
            np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                       **f16)
        # float16 device buffers in the worker: read as an input, computed into as an output
        roles = dict(input_roles=[BufferRole(compiled, 2)], output_roles=[BufferRole(compiled, 2)])
        a = await rt.allocate(BufferDesc(), **roles)
        b = await rt.allocate(BufferDesc(), **roles)
        await a.copy_from(state)
        for k in range(4):
            src, dst = (a, b) if k % 2 == 0 else (b, a)
            await compiled.execute([image, x, src], outputs=[None, None, dst])
            state = nnrt.reference.run(model, [image, x, state])[2]
        got_state = await a.copy_to()
        assert got_state.dtype == np.float16
        np.testing.assert_allclose(got_state.astype(np.float64), state.astype(np.float64), **f16)



def _environ_of(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [entry.split(b"=", 1) for entry in f.read().split(b"\0") if b"=" in entry]
    return {k.decode(): v.decode() for k, v in pairs}


async def test_threads_per_worker_reach_litert() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 32, 32, 16))
    rng = np.random.default_rng(1)
    y = b.conv2d(x, rng.standard_normal((16, 3, 3, 16)).astype(np.float32),
                 np.zeros(16, np.float32), padding="same")
    b.output(b.conv2d(y, rng.standard_normal((16, 3, 3, 16)).astype(np.float32),
                      np.zeros(16, np.float32), padding="same"))
    model = b.build()
    feed = rng.standard_normal((1, 32, 32, 16)).astype(np.float32)
    want = nnrt.reference.run(model, [feed])[0]
    os_threads = {}
    for threads in (1, 3):
        async with nnrt.Runtime(drivers=["litert"], workers=1, threads=threads) as rt:
            compiled = await rt.compile(model)
            (out,) = await compiled.execute([feed])
            np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
            pid = rt._core.backend.pools["litert"].slots[0].process.pid  # type: ignore[union-attr]
            env = _environ_of(pid)
            assert env["NNRT_LITERT_THREADS"] == env["OPENBLAS_NUM_THREADS"] == str(threads)
            os_threads[threads] = len(os.listdir(f"/proc/{pid}/task"))
    # XNNPACK's thread pool: two more OS threads in the worker given three
    assert os_threads[3] >= os_threads[1] + 2, os_threads


@pytest.mark.parametrize("bad", [0, 65, 1.5, "2", True])
async def test_bad_thread_counts_are_refused(bad: object) -> None:
    with pytest.raises(nnrt.BadData, match="threads must be an int from 1 to 64"):
        nnrt.Runtime(threads=bad)  # type: ignore[arg-type]
