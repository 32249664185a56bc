"""The compilation cache: cold compile vs cache hit vs new-worker warm-up, and integrity speed.

Run: .venv/bin/python benchmarks/cache.py [--runs N] [--device cpu|litert]

For the ``cpu`` driver (the default) on an MLP with 16.8 M float32 parameters (4 x FC
2048x2048), on the small CNN of ``benchmarks/cpu_driver.py`` and (with the ``onnx`` extra
installed) on the ResNet-style CNN of ``tests/models/builders.py`` imported from ONNX:

* **HAL, in process** — ``prepare(model)`` (compile, no cache), ``prepare(model, cache=files)``
  (a miss: compile and save), ``prepare_from_cache(model, files)`` (a hit: read, hash, check,
  rebuild); medians of ``--runs`` runs.
* **Stage 2** — the multi-stage path: a miss with ``optimize_after=1``, one execution, and the
  wait until the background optimiser has autotuned stage 2 and saved it in the cache (the cold
  cost of the optimised model), then a hit of that stage-2 entry.
* **Runtime** — ``rt.compile(model, cache_dir=...)`` in a fresh runtime with an empty cache
  directory (cold), then in another fresh runtime (hit); and the warm-up of a second worker of
  the same pool, which prepares from the cache.
* **Integrity** — ``nnrt.cache.cache_digest`` (SHA-256 over the blobs) on 256 MiB: GB/s.

``--device litert``: the ``litert`` driver on two convolutions and the same 4 FCs (16.8 M
parameters, a 64 MiB flatbuffer) and on the small CNN: the HAL columns as above, and
``rt.compile`` **plus the first execution** (so LiteRT's XNNPACK weight packing, which happens
when the interpreter allocates its tensors, counts) in a fresh runtime with an empty cache
directory (cold) and in another fresh runtime (hit), medians of ``--runs`` cold/hit pairs.

Every run uses a private integrity store and cache directory in a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np

import nnrt
from nnrt.cache import CacheDirectory, cache_digest
from nnrt.drivers.cpu import CpuDriver
from nnrt.hal.discovery import load_driver

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests" / "models")]
from cpu_driver import cnn  # noqa: E402

Array = np.ndarray[Any, Any]


def big_mlp() -> tuple[nnrt.Model, list[Array]]:
    """4 x FULLY_CONNECTED 2048x2048 + RELU: 16.8 M float32 parameters (64 MiB)."""
    rng = np.random.default_rng(0)
    b = nnrt.ModelBuilder()
    h = x = b.input("x", (1, 2048))
    for _ in range(4):
        w = (rng.standard_normal((2048, 2048)) * 0.02).astype(np.float32)
        h = b.relu(b.fully_connected(h, w, np.zeros(2048, np.float32)))
    b.output(h)
    del x
    return b.build(), [rng.standard_normal((1, 2048)).astype(np.float32)]


def big_convnet() -> tuple[nnrt.Model, list[Array]]:
    """2 x CONV_2D 3x3x32 + 4 x FULLY_CONNECTED 2048x2048 + RELU: 16.8 M float32 parameters."""
    rng = np.random.default_rng(0)
    b = nnrt.ModelBuilder()
    h = b.input("x", (1, 8, 8, 32))
    for _ in range(2):
        h = b.conv2d(h, (rng.standard_normal((32, 3, 3, 32)) * 0.05).astype(np.float32),
                     np.zeros(32, np.float32), padding="same", activation="relu")
    h = b.reshape(h, (1, 2048))
    for _ in range(4):
        w = (rng.standard_normal((2048, 2048)) * 0.02).astype(np.float32)
        h = b.relu(b.fully_connected(h, w, np.zeros(2048, np.float32)))
    b.output(h)
    return b.build(), [rng.standard_normal((1, 8, 8, 32)).astype(np.float32)]


def _median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def hal(name: str, model: nnrt.Model, root: Path, runs: int, device: str = "cpu"
        ) -> dict[str, float]:
    """Compile / miss / hit at the HAL, in this process."""
    driver = load_driver(device)
    meta = {"driver": device, "version": driver.info().version}
    directory = CacheDirectory(root / f"hal-{device}-{name}")
    counts = driver.cache_files_needed()

    def plain() -> None:
        driver.prepare(model).release()

    def miss() -> None:
        with directory.open(os.urandom(32), counts, meta) as entry:
            driver.prepare(model, cache=entry.files).release()
            entry.commit()

    token = os.urandom(32)
    with directory.open(token, counts, meta) as entry:
        driver.prepare(model, cache=entry.files).release()
        entry.commit()

    def hit() -> None:
        with directory.open(token, counts, meta) as entry:
            assert entry.hit
            driver.prepare_from_cache(model, entry.files).release()

    return {"compile": _median_ms(plain, runs), "miss": _median_ms(miss, runs),
            "hit": _median_ms(hit, runs)}


def stage2(name: str, model: nnrt.Model, inputs: list[Array], root: Path, runs: int
           ) -> dict[str, float]:
    """Cold to the autotuned stage 2 (saved in the cache), then a hit of that entry."""
    driver = CpuDriver(optimize_after=1)
    meta = {"driver": "cpu", "version": driver.info().version}
    directory = CacheDirectory(root / f"stage2-{name}")
    colds = []
    for _ in range(max(1, runs // 2)):
        token = os.urandom(32)
        start = time.perf_counter()
        with directory.open(token, (1, 1), meta) as entry:
            prepared = driver.prepare(model, cache=entry.files)
            entry.commit()
        prepared.execute(inputs)
        assert prepared.wait_optimized(120) and prepared.stage == 2  # type: ignore[attr-defined]
        colds.append(time.perf_counter() - start)
        prepared.release()

    def hit() -> None:
        with directory.open(token, (1, 1), meta) as entry:
            loaded = driver.prepare_from_cache(model, entry.files)
            assert loaded.stage == 2  # type: ignore[attr-defined]
            loaded.release()

    return {"cold": statistics.median(colds) * 1000, "hit": _median_ms(hit, runs)}


async def runtime(name: str, model: nnrt.Model, inputs: list[Array], root: Path
                  ) -> dict[str, float]:
    """rt.compile cold and hit, and a second worker's warm-up from the cache."""
    cache = root / f"rt-{name}"
    found: dict[str, float] = {}
    for label in ("cold", "hit"):
        async with nnrt.Runtime(drivers=["cpu"], workers=2, max_in_flight=1) as rt:
            start = time.perf_counter()
            compiled = await rt.compile(model, cache_dir=cache)
            found[label] = (time.perf_counter() - start) * 1000
            await compiled.execute(inputs)
            if label == "hit":
                pool = rt._core.backend.pools["cpu"]  # type: ignore[attr-defined]
                slot = next(s for s in pool.slots if s.handle_of(compiled.ref.key[0]) is None)
                start = time.perf_counter()
                await slot.ensure_prepared(compiled.ref.key)
                found["new worker"] = (time.perf_counter() - start) * 1000
            stats = rt.statistics()
            assert (stats.cache_hits, stats.cache_misses) == ((2, 0) if label == "hit"
                                                              else (0, 1)), stats
    return found


async def runtime_runs(device: str, model: nnrt.Model, inputs: list[Array], root: Path,
                       runs: int) -> dict[str, float]:
    """Medians of ``runs`` cold / hit pairs of rt.compile plus the first execution, each in a
    fresh runtime whose worker is already up (a tiny model compiled first)."""
    tiny = nnrt.ModelBuilder()
    tiny.output(tiny.relu(tiny.input("t", (1, 4))))
    warm_up = tiny.build()
    times: dict[str, list[float]] = {"cold": [], "hit": []}
    for run in range(runs):
        for label in ("cold", "hit"):
            async with nnrt.Runtime(drivers=[device], workers=1) as rt:
                await (await rt.compile(warm_up)).execute([np.ones((1, 4), np.float32)])
                start = time.perf_counter()
                compiled = await rt.compile(model, cache_dir=root / f"rt-{device}-{run}")
                await compiled.execute(inputs)
                times[label].append((time.perf_counter() - start) * 1000)
                stats = rt.statistics()
                assert (stats.cache_hits, stats.cache_misses) == ((1, 0) if label == "hit"
                                                                  else (0, 1)), stats
    return {label: statistics.median(found) for label, found in times.items()}


def litert(root: Path, runs: int) -> None:
    """The --device litert tables."""
    print("| model | compile (no cache) ms | miss (compile + save) ms | hit ms | hit / miss "
          "| rt.compile + run, cold ms | rt.compile + run, hit ms | hit / cold |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, model, inputs in [("convs + 4 FC, 16.8M params", *big_convnet()),
                                ("CNN", *cnn(1))]:
        key = name.split()[0].rstrip(",")
        h = hal(key, model, root, runs, "litert")
        r = anyio.run(runtime_runs, "litert", model, inputs, root / key, runs)
        print(f"| {name} | {h['compile']:.1f} | {h['miss']:.1f} | {h['hit']:.2f} | "
              f"{h['hit'] / h['miss']:.0%} | {r['cold']:.1f} | {r['hit']:.1f} | "
              f"{r['hit'] / r['cold']:.1%} |", flush=True)


def resnet() -> list[tuple[str, nnrt.Model, list[Array]]]:
    """The ResNet-style CNN (32x32x3, 16 channels) imported from ONNX, if onnx is installed."""
    try:
        from builders import resnet_cnn  # noqa: PLC0415

        import nnrt.onnx  # noqa: PLC0415
    except ImportError:
        return []
    model = nnrt.onnx.load(resnet_cnn(size=32, channels=16), input_shapes={"x": (1, 3, 32, 32)})
    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype(np.float32)
    return [("ResNet-style CNN (ONNX)", model, [x])]


def integrity(size: int = 256 << 20) -> float:
    """SHA-256 integrity digest throughput in GB/s."""
    blob = np.random.default_rng(1).integers(0, 255, size, dtype=np.uint8).tobytes()
    seconds = min(_median_ms(lambda: cache_digest([blob], []), 3) for _ in range(2)) / 1000
    return size / seconds / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--device", choices=("cpu", "litert"), default="cpu")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["NNRT_INTEGRITY_DIR"] = str(root / "integrity")
        os.environ["NNRT_CPU_OPTIMIZE_AFTER"] = "0"
        print(f"machine: Python {platform.python_version()}, numpy {np.__version__}, "
              f"{platform.machine()}, {os.cpu_count()} CPUs")
        if args.device == "litert":
            litert(root, args.runs)
            return
        print("| model | compile (no cache) ms | miss (compile + save) ms | hit ms | hit / miss "
              "| rt.compile cold ms | rt.compile hit ms | new worker (from cache) ms |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        models = [("MLP 16.8M params", *big_mlp()), ("CNN", *cnn(1)), *resnet()]
        tuned = []
        for name, model, inputs in models:
            key = name.split()[0]
            h = hal(key, model, root, args.runs)
            r = anyio.run(runtime, key, model, inputs, root)
            print(f"| {name} | {h['compile']:.1f} | {h['miss']:.1f} | {h['hit']:.2f} | "
                  f"{h['hit'] / h['miss']:.0%} | {r['cold']:.1f} | {r['hit']:.1f} | "
                  f"{r['new worker']:.1f} |", flush=True)
            if name != models[0][0]:
                tuned.append((name, stage2(key, model, inputs, root, args.runs)))
        print("\n| model | cold to stage 2 (compile, save, autotune, save) ms | stage-2 hit ms "
              "| hit / cold |\n|---|---:|---:|---:|")
        for name, t in tuned:
            print(f"| {name} | {t['cold']:.1f} | {t['hit']:.2f} | {t['hit'] / t['cold']:.1%} |")
        print(f"integrity check (SHA-256 over the cache blobs): {integrity():.2f} GB/s")


if __name__ == "__main__":
    main()
