"""The compilation cache through the runtime: hit / miss / no-cache flows with real workers,
rejected loads that recompile, further workers loading from the cache, several processes
compiling into one directory at once, and drivers asking for too many files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from plugin_drivers import VENDOR

import nnrt
from nnrt.model.builder import ModelBuilder
from nnrt.runtime.compile.caching import model_token, step_token

pytestmark = pytest.mark.anyio
HERE = Path(__file__).resolve().parent
SPY = "plugin_drivers:spy"
X = np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def spy_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The spy driver's log, and a private integrity store, for this test's workers."""
    log = tmp_path / "spy.jsonl"
    monkeypatch.setenv("NNRT_TEST_SPY_LOG", str(log))
    monkeypatch.setenv("NNRT_INTEGRITY_DIR", str(tmp_path / "integrity"))
    return log


def calls(log: Path) -> list[tuple[str, int | None, int | None]]:
    if not log.exists():
        return []
    return [(r["call"], r["model"], r["data"]) for r in map(json.loads, log.read_text()
                                                             .splitlines())]


def add_mul_model(scale: float = 2.0) -> nnrt.Model:
    b = ModelBuilder()
    x = b.input("x", (2, 3))
    b.output(b.mul(b.add(x, x), b.constant(np.full((2, 3), scale, np.float32))))
    return b.build()


async def compile_once(model: nnrt.Model, cache: Path | None, *, workers: int = 1,
                       **kwargs: object) -> nnrt.RuntimeStatistics:
    async with nnrt.Runtime(drivers=[SPY], workers=workers) as rt:
        compiled = await rt.compile(model, cache_dir=cache, **kwargs)  # type: ignore[arg-type]
        (y,) = await compiled.execute([X])
        np.testing.assert_array_equal(y, nnrt.reference.run(model, [X])[0])
        return rt.statistics()


async def test_miss_then_hit_then_no_cache(tmp_path: Path, spy_log: Path) -> None:
    cache = tmp_path / "cache"
    stats = await compile_once(add_mul_model(), cache)
    assert calls(spy_log) == [("prepare", 1, 1)]  # a miss: prepare, with the files to save in
    assert (stats.cache_misses, stats.cache_hits) == (1, 0)
    stats = await compile_once(add_mul_model(), cache)
    assert calls(spy_log)[1:] == [("prepare_from_cache", 1, 1)]  # a hit: no compile
    assert (stats.cache_misses, stats.cache_hits) == (0, 1)
    await compile_once(add_mul_model(), None)
    assert calls(spy_log)[2:] == [("prepare", None, None)]  # no cache info: plain prepare
    await compile_once(add_mul_model(scale=3.0), cache)  # another model: another token
    assert calls(spy_log)[3:] == [("prepare", 1, 1)]


@pytest.mark.parametrize("damage", ["flip_model", "append_model", "extend_data",
                                    "swap_model", "forget_store"])
async def test_a_rejected_load_recompiles(tmp_path: Path, spy_log: Path,
                                          monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    cache = tmp_path / "cache"
    await compile_once(add_mul_model(), cache)
    await compile_once(add_mul_model(scale=5.0), cache)
    entries = {p.name.split(".")[0] for p in cache.glob("*.meta")}
    assert len(entries) == 2
    model = add_mul_model()
    token = step_token(model_token(model), range(2), "com.example.acme", "1.0",
                       nnrt.ExecutionPreference.FAST_SINGLE_ANSWER, nnrt.Priority.MEDIUM).hex()
    assert token in entries
    first = cache / f"{token}.model.0"
    other = next(cache / f"{e}.model.0" for e in entries if e != token)
    if damage == "flip_model":
        raw = bytearray(first.read_bytes())
        raw[len(raw) // 2] ^= 0x01
        first.write_bytes(bytes(raw))
    elif damage == "append_model":
        with first.open("ab") as f:
            f.write(b"\0junk")
    elif damage == "extend_data":
        with (cache / f"{token}.data.0").open("ab") as f:
            f.write(b"\x01")
    elif damage == "swap_model":
        first.write_bytes(other.read_bytes())
    else:
        monkeypatch.setenv("NNRT_INTEGRITY_DIR", str(tmp_path / "new-integrity"))
    before = len(calls(spy_log))
    stats = await compile_once(add_mul_model(), cache)  # still compiles, correctly
    assert calls(spy_log)[before:] == [("prepare_from_cache", 1, 1), ("prepare", 1, 1)]
    assert (stats.cache_load_failures, stats.cache_misses) == (1, 1)
    stats = await compile_once(add_mul_model(), cache)  # the rewritten cache loads again
    assert (stats.cache_hits, stats.cache_load_failures) == (1, 0)


async def test_further_workers_prepare_from_the_cache(tmp_path: Path, spy_log: Path) -> None:
    async with nnrt.Runtime(drivers=[SPY], workers=2, max_in_flight=1) as rt:
        compiled = await rt.compile(add_mul_model(), cache_dir=tmp_path / "cache")
        pool = rt._core.backend.pools[SPY]  # type: ignore[union-attr]
        second = next(slot for slot in pool.slots if slot.handle_of(compiled.ref.key[0]) is None)
        await second.ensure_prepared(compiled.ref.key)
        stats = rt.statistics()
    assert (stats.cache_misses, stats.cache_hits) == (1, 1)
    assert [c for c, _, _ in calls(spy_log)] == ["prepare", "prepare_from_cache"]


async def test_steps_of_a_plan_are_cached_separately(tmp_path: Path, spy_log: Path) -> None:
    b = ModelBuilder()
    x = b.input("x", (2, 3))
    y = b.tanh(b.add(x, x))
    b.output(b.mul(y, x))
    model = b.build()
    for expected in (("prepare", "prepare"), ("prepare_from_cache", "prepare_from_cache")):
        before = len(calls(spy_log))
        async with nnrt.Runtime(drivers=[SPY, "reference"], workers=1) as rt:
            compiled = await rt.compile(model, cache_dir=tmp_path / "cache",
                                        step_cost=0)
            assert compiled.steps == 3
            (out,) = await compiled.execute([X])
            np.testing.assert_allclose(out, nnrt.reference.run(model, [X])[0], rtol=1e-6)
        assert tuple(c for c, _, _ in calls(spy_log)[before:]) == expected


async def test_token_rules(tmp_path: Path, spy_log: Path) -> None:
    cache = tmp_path / "cache"
    token = bytes(range(32))
    await compile_once(add_mul_model(), cache, token=token)
    # the app token names the model: reusing it for another model is a collision, which (as in
    # NNAPI) the driver cannot detect — the cached model runs; choose tokens with care
    async with nnrt.Runtime(drivers=[SPY], workers=1) as rt:
        other = await rt.compile(add_mul_model(scale=9.0), cache_dir=cache, token=token)
        (y,) = await other.execute([X])
    np.testing.assert_array_equal(y, nnrt.reference.run(add_mul_model(), [X])[0])
    assert [c for c, _, _ in calls(spy_log)] == ["prepare", "prepare_from_cache"]
    with pytest.raises(nnrt.BadData, match="32 bytes"):
        await compile_once(add_mul_model(), cache, token=b"short")
    with pytest.raises(nnrt.BadData, match="needs a cache_dir"):
        await compile_once(add_mul_model(), None, token=token)


async def test_a_driver_asking_for_too_many_cache_files_is_refused() -> None:
    with pytest.raises(nnrt.OpFailed, match=r"from 0 to 32, got \(33, 0\)"):
        async with nnrt.Runtime(drivers=["flaky_driver:TooManyCacheFiles"], workers=1):
            pass


def test_four_processes_compile_into_one_directory_at_once(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys, anyio, numpy as np, nnrt
        sys.path[:0] = [{str(HERE)!r}, {VENDOR!r}]
        from test_cache_runtime import add_mul_model, X
        async def main():
            async with nnrt.Runtime(drivers=["cpu"], workers=1) as rt:
                model = add_mul_model()
                compiled = await rt.compile(model, cache_dir={str(tmp_path / "cache")!r})
                (y,) = await compiled.execute([X])
                assert np.allclose(y, nnrt.reference.run(model, [X])[0])
                s = rt.statistics()
                print(s.cache_hits, s.cache_misses, s.cache_load_failures)
        anyio.run(main)
    """)
    env = {**os.environ, "NNRT_INTEGRITY_DIR": str(tmp_path / "integrity")}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        outputs.append(out.split())
    assert all(o[2] == "0" for o in outputs)  # no process ever loaded a torn cache
    assert sum(int(o[1]) for o in outputs) >= 1
    verify = subprocess.run([sys.executable, "-m", "nnrt", "cache", "verify", "--dir",
                             str(tmp_path / "cache")], env=env, capture_output=True, text=True,
                            timeout=60, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr


async def test_a_runtime_cache_dir_is_every_compiles_default(tmp_path: Path,
                                                               spy_log: Path) -> None:
    cache = tmp_path / "cache"
    for expected in ("prepare", "prepare_from_cache"):
        async with nnrt.Runtime(drivers=[SPY], workers=1, cache_dir=cache) as rt:
            compiled = await rt.compile(add_mul_model())  # no cache_dir here: the runtime's
            (y,) = await compiled.execute([X])
        np.testing.assert_array_equal(y, nnrt.reference.run(add_mul_model(), [X])[0])
        assert calls(spy_log)[-1][0] == expected
    with pytest.raises(nnrt.BadData, match="cache_dir must be a path"):
        nnrt.Runtime(cache_dir=True)  # type: ignore[arg-type]


async def test_an_identical_compile_shares_the_prepared_model(spy_log: Path) -> None:
    model = add_mul_model()
    async with nnrt.Runtime(drivers=[SPY], workers=1) as rt:
        first = await rt.compile(model)
        second = await rt.compile(model)  # the same model object, the same options
        assert [c for c, _, _ in calls(spy_log)] == ["prepare"]
        assert second.ref is first.ref
        other = await rt.compile(model, priority=nnrt.Priority.HIGH)  # another option
        assert [c for c, _, _ in calls(spy_log)] == ["prepare", "prepare"]
        await first.release()
        with pytest.raises(nnrt.BadState, match="released"):
            await first.execute([X])
        (y,) = await second.execute([X])  # still prepared for the other holder
        np.testing.assert_array_equal(y, nnrt.reference.run(model, [X])[0])
        await second.release()  # the last holder: freed on the worker
        assert second.ref.released
        third = await rt.compile(model)
        assert [c for c, _, _ in calls(spy_log)] == ["prepare", "prepare", "prepare"]
        for compiled in (third, other):
            (y,) = await compiled.execute([X])
            await compiled.release()


async def test_an_equal_model_with_a_cache_token_shares_the_prepared_model(
        tmp_path: Path, spy_log: Path) -> None:
    # NNAPI-style caching by content: with a cache, the model's token names what is prepared
    async with nnrt.Runtime(drivers=[SPY], workers=1, cache_dir=tmp_path / "cache") as rt:
        first = await rt.compile(add_mul_model())
        second = await rt.compile(add_mul_model())  # another object, the same content
        assert [c for c, _, _ in calls(spy_log)] == ["prepare"]
        assert second.ref is first.ref and second.model is not first.model
        different = await rt.compile(add_mul_model(scale=9.0))
        assert [c for c, _, _ in calls(spy_log)] == ["prepare", "prepare"]
        await first.release()
        (y,) = await second.execute([X])
        np.testing.assert_array_equal(y, nnrt.reference.run(add_mul_model(), [X])[0])
        (y,) = await different.execute([X])
        np.testing.assert_array_equal(y, nnrt.reference.run(add_mul_model(scale=9.0), [X])[0])
        await second.release()
        assert second.ref.released
