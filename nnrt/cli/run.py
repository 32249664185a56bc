"""``nnrt run MODEL``: run a ``.onnx``, ``.tflite`` or ``.nnrt`` model once through the runtime
and print its outputs; ``--output`` saves them, ``--bench N`` times N warm executions,
``--profile`` prints a per-operation time profile (:mod:`nnrt.cli.profile`).

Also the pieces ``compile`` and ``inspect`` share: :func:`load_model_file` (``.onnx`` files go
through :func:`nnrt.onnx.load`, ``.tflite`` files through :func:`nnrt.tflite.load`, both with
``--input-shape`` values; anything else is a ``.nnrt`` file) and the parsers of ``NAME=1x512``
shapes and ``NAME=FILE.npy`` inputs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from nnrt.errors import BadData

if TYPE_CHECKING:
    from nnrt.model.model import Model
    from nnrt.runtime.compile.placement import PlacementReport

__all__ = ["IMPORTED_SUFFIXES", "RunResult", "add_import_arguments", "add_run_parser",
           "imported", "load_model_file", "model_inputs", "parse_inputs", "parse_shapes",
           "run_command", "run_model", "summarize"]

Array = np.ndarray[Any, Any]
#: Values ``nnrt run`` prints of each output.
SHOWN_VALUES = 6
#: Suffixes of the model files imported (dynamic dims fixed at import by ``--input-shape``);
#: any other file is a ``.nnrt`` file, whose shapes are fixed.
IMPORTED_SUFFIXES = (".onnx", ".tflite")


def imported(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a model file :func:`load_model_file` imports (``.onnx``,
    ``.tflite``) rather than a ``.nnrt`` file."""
    return Path(path).suffix.lower() in IMPORTED_SUFFIXES


def parse_shapes(items: Sequence[str] | None) -> dict[str, list[int]]:
    """``["x=1x3x32x32", "sr="]`` -> ``{"x": [1, 3, 32, 32], "sr": []}`` (empty: a scalar)."""
    shapes: dict[str, list[int]] = {}
    for item in items or ():
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise BadData(f"--input-shape {item!r}: expected NAME=DIMS, e.g. input=1x512")
        try:
            dims = [int(d) for d in text.lower().split("x")] if text.strip() else []
        except ValueError:
            raise BadData(f"--input-shape {item!r}: DIMS must be integers joined by 'x', e.g. "
                          "1x3x224x224 (nothing after '=' for a scalar)") from None
        if any(d <= 0 for d in dims):
            raise BadData(f"--input-shape {item!r}: dims must be positive")
        if name in shapes:
            raise BadData(f"--input-shape: {name!r} is given twice")
        shapes[name] = dims
    return shapes


def parse_inputs(items: Sequence[str] | None) -> dict[str, Array]:
    """``["x=x.npy"]`` -> ``{"x": array}`` (``.npy`` files, never unpickled)."""
    arrays: dict[str, Array] = {}
    for item in items or ():
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise BadData(f"--input {item!r}: expected NAME=FILE.npy")
        if name in arrays:
            raise BadData(f"--input: {name!r} is given twice")
        try:
            loaded = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise BadData(f"--input {name}={path}: no such file") from None
        except (ValueError, OSError, EOFError):  # numpy's pickle hint is no help here
            raise BadData(f"--input {name}={path}: not a .npy array file (write one with "
                          "numpy.save)") from None
        if not isinstance(loaded, np.ndarray):
            loaded.close()  # an .npz archive
            raise BadData(f"--input {name}={path}: expected one array (.npy), got an archive")
        arrays[name] = loaded
    return arrays


def load_model_file(path: str | os.PathLike[str],
                    input_shapes: Mapping[str, Sequence[int]] | None = None, *,
                    quiet: bool = False, signature: str | None = None) -> Model:
    """The model in ``path``: an ONNX file (``.onnx``) imported with ``input_shapes`` (with a
    progress line on a terminal unless ``quiet``), a TFLite file (``.tflite``) imported with
    ``input_shapes`` and its ``signature`` (default: the main subgraph), else a ``.nnrt`` file
    (whose shapes are fixed: ``input_shapes`` and ``signature`` are refused)."""
    suffix = Path(path).suffix.lower()
    if signature is not None and suffix != ".tflite":
        raise BadData(f"{os.fspath(path)}: --signature applies to .tflite models only")
    if suffix == ".onnx":
        import nnrt.onnx  # noqa: PLC0415 - needs the onnx extra
        from nnrt.cli.progress import Progress  # noqa: PLC0415

        bars: list[Progress] = []  # made once the node count is known

        def progress(done: int, total: int) -> None:
            if not bars:
                bars.append(Progress(total, f"importing {Path(path).name}", quiet=quiet))
            bars[0].update(done)

        try:
            return nnrt.onnx.load(path, input_shapes=input_shapes or None, progress=progress)
        finally:
            for bar in bars:
                bar.close()
    if suffix == ".tflite":
        import nnrt.tflite  # noqa: PLC0415 - needs ai-edge-litert (its flatbuffer schema)

        return nnrt.tflite.load(path, input_shapes=input_shapes or None, signature=signature)
    if input_shapes:
        raise BadData(f"{os.fspath(path)}: --input-shape applies to .tflite and .onnx models "
                      "only (a .nnrt model's shapes are fixed)")
    import nnrt  # noqa: PLC0415

    return nnrt.load(path)


def model_inputs(model: Model, given: Mapping[str, Array], *, random: bool,
                 seed: int = 0, shapes: Mapping[str, Sequence[int]] | None = None
                 ) -> list[Array]:
    """The model's inputs in order: from ``given`` by name, else random data when ``random``
    — of the declared shape, or of the one in ``shapes`` (which must fit it: an input of
    unknown dims); ``BadData`` naming the missing or unknown ones otherwise."""
    from nnrt.model.operand import dtype_of  # noqa: PLC0415

    operands = [model.operands[i] for i in model.inputs]
    names = [o.name or f"input{k}" for k, o in enumerate(operands)]
    described = ", ".join(f"{n!r} {o.describe()}" for n, o in zip(names, operands, strict=True))
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise BadData(f"--input {', '.join(unknown)}: not inputs of the model (inputs: "
                      f"{described})")
    rng = np.random.default_rng(seed)
    arrays = []
    for name, operand in zip(names, operands, strict=True):
        if name in given:
            arr = given[name]
            if arr.shape == () and operand.dims == (1,):
                arr = arr.reshape(1)  # an ONNX scalar: held by a [1] operand
            arrays.append(arr)
            continue
        if not random:
            missing = [n for n in names if n not in given]
            raise BadData(f"missing inputs {missing}: give --input NAME=FILE.npy for each, or "
                          f"--random-inputs (inputs: {described})")
        dims = operand.dims
        if shapes and name in shapes:
            wanted = tuple(int(d) for d in shapes[name])
            if (dims and len(wanted) != len(dims)) or any(
                    d and d != w for d, w in zip(dims, wanted, strict=False)):
                raise BadData(f"--input-shape {name}={'x'.join(map(str, wanted))} does not fit "
                              f"the input's dims ({operand.describe()})")
            dims = wanted
        if not dims or not all(d > 0 for d in dims):
            raise BadData(f"input {name!r} ({operand.describe()}) has unknown dims: give it "
                          "with --input (or its shape with --input-shape)")
        dtype = dtype_of(operand.type)
        if dtype.kind == "f":
            arrays.append(rng.standard_normal(dims).astype(dtype))
        else:
            arrays.append(np.zeros(dims, dtype))
    return arrays


def summarize(array: Array) -> str:
    """``float32 [1, 10]  min .. max .. mean ..  [v0, v1, ...]`` for one output."""
    head = f"{array.dtype} {list(array.shape)}"
    if array.size == 0:
        return f"{head}  (empty)"
    flat = array.reshape(-1)
    shown = ", ".join(f"{v:.6g}" if array.dtype.kind == "f" else str(v)
                      for v in flat[:SHOWN_VALUES].tolist())
    more = ", ..." if flat.size > SHOWN_VALUES else ""
    if array.dtype.kind == "b":
        stats = f"true {int(flat.sum())} of {flat.size}"
    else:
        stats = (f"min {flat.min():.6g}  max {flat.max():.6g}  "
                 f"mean {flat.astype(np.float64).mean():.6g}")
    return f"{head}  {stats}  [{shown}{more}]"


@dataclass
class RunResult:
    """What one ``nnrt run`` measured."""

    outputs: list[Array]
    placement: PlacementReport
    first_seconds: float
    bench_seconds: list[float]


async def run_model(model: Model, arrays: Sequence[Array], drivers: Sequence[str],
                    workers: int, bench: int, threads: int | None = None,
                    cache_dir: str | None = None, quiet: bool = False) -> RunResult:
    """Compile ``model`` through a runtime on ``drivers``, execute it once, then ``bench``
    more times (timed one by one); ``threads`` per worker (None: the runtime's default);
    ``cache_dir``: where the compile caches (None: nowhere); a progress line while
    benchmarking on a terminal unless ``quiet``."""
    import nnrt  # noqa: PLC0415
    from nnrt.cli.progress import Progress  # noqa: PLC0415

    async with nnrt.Runtime(drivers=drivers, workers=workers, threads=threads,
                            cache_dir=cache_dir) as rt:
        compiled = await rt.compile(model)
        started = time.perf_counter()
        outputs = await compiled.execute(list(arrays), copy=True)
        first = time.perf_counter() - started
        times = []
        progress = Progress(bench, "benchmarking", quiet=quiet)
        for k in range(bench):
            started = time.perf_counter()
            await compiled.execute(list(arrays))
            times.append(time.perf_counter() - started)
            progress.update(k + 1)
        progress.close()
        placement = compiled.placement()
        await compiled.release()
    return RunResult(outputs, placement, first, times)


def add_run_parser(commands: Any) -> None:
    """Register ``run`` on ``commands`` (an argparse sub-parsers object)."""
    run = commands.add_parser("run", help="run a .onnx, .tflite or .nnrt model through the "
                              "runtime and print its outputs (--bench, --profile)")
    run.add_argument("model", help="the .onnx, .tflite or .nnrt model file")
    run.add_argument("--input", action="append", metavar="NAME=FILE.npy",
                     help="an input (repeatable); for .onnx and .tflite models its shape also "
                     "fixes the input's dynamic dims")
    add_import_arguments(run)
    run.add_argument("--random-inputs", action="store_true",
                     help="fill inputs not given with random data (floats N(0, 1), else 0)")
    run.add_argument("--driver", action="append", help="driver to run on (repeatable; "
                     "default: every installed built-in driver, litert, cpu, reference, or "
                     "$NNRT_DRIVERS; the reference driver runs what the others do not take)")
    run.add_argument("--workers", type=int, default=1, help="worker processes per driver "
                     "(default 1)")
    run.add_argument("--threads", type=int, default=None, help="threads of each worker's "
                     "kernels: LiteRT's XNNPACK, BLAS, OpenMP (default 1)")
    cache = run.add_mutually_exclusive_group()
    cache.add_argument("--cache", action="store_true", help="cache the compiled model in the "
                       "default cache directory (the one 'nnrt cache' manages: "
                       "$NNRT_CACHE_DIR, else $XDG_CACHE_HOME/nnrt/compiled)")
    cache.add_argument("--cache-dir", metavar="DIR", default=None,
                       help="cache the compiled model in DIR")
    run.add_argument("--output", metavar="OUT.npz", help="save the outputs, by name")
    run.add_argument("--json", action="store_true", help="print JSON: drivers, steps, output "
                     "summaries, timings")
    run.add_argument("--bench", type=int, default=0, metavar="N",
                     help="time N warm executions; print p50 / p90 latency")
    run.add_argument("--profile", action="store_true",
                     help="print a per-operation time profile (the placement replayed in "
                     "this process: cpu kernel calls and reference operations timed)")
    run.add_argument("--profile-runs", type=int, default=10, metavar="N",
                     help="runs the profile averages (default 10)")
    run.set_defaults(func=lambda args: run_command(args, sys.stdout, sys.stderr))


def add_import_arguments(parser: Any) -> None:
    """``--input-shape`` and ``--signature``: how ``run``, ``inspect`` and ``compile`` import a
    ``.onnx`` or ``.tflite`` file."""
    parser.add_argument("--input-shape", action="append", metavar="NAME=DIMS",
                        help="fix a dynamic .onnx / .tflite input shape, e.g. input=1x512 "
                        "(repeatable)")
    parser.add_argument("--signature", default=None, metavar="NAME",
                        help="the .tflite signature to import (default: the main subgraph)")


def run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run a parsed ``nnrt run``: 0 done, 1 an error (printed to ``err``)."""
    import anyio  # noqa: PLC0415

    from nnrt.cache.directory import default_cache_dir  # noqa: PLC0415
    from nnrt.errors import NnrtError  # noqa: PLC0415
    from nnrt.hal.discovery import default_drivers  # noqa: PLC0415

    try:
        if args.bench < 0 or args.profile_runs < 1 or args.workers < 1:
            raise BadData("--bench must be >= 0, --profile-runs and --workers >= 1")
        given = parse_inputs(args.input)
        shapes = parse_shapes(args.input_shape)
        importing = imported(args.model)
        if importing:
            for name, arr in given.items():
                shapes.setdefault(name, list(arr.shape))  # fixes what it gives
        model = load_model_file(args.model, shapes if importing else None,
                                quiet=getattr(args, "quiet", False), signature=args.signature)
        # an .onnx / .tflite model is imported at those shapes; a .nnrt one gets inputs of them
        arrays = model_inputs(model, given, random=args.random_inputs,
                              shapes=None if importing else shapes)
        drivers = args.driver or default_drivers()
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # shown (stderr), never raised
            cache_dir = (str(default_cache_dir()) if args.cache else args.cache_dir)
            result = anyio.run(run_model, model, arrays, drivers, args.workers, args.bench,
                               args.threads, cache_dir, getattr(args, "quiet", False))
        if args.json:
            if args.profile:
                raise BadData("--json and --profile: choose one")
            print(json.dumps(result_json(model, result), indent=2), file=out)
        else:
            _report(model, result, out)
        if args.output:
            _save(model, result.outputs, args.output)
            print(f"saved {len(result.outputs)} output(s) to {args.output}", file=out)
        if args.profile:
            from nnrt.cli.profile import profile_model  # noqa: PLC0415

            profile = profile_model(model, arrays, result.placement, runs=args.profile_runs)
            print(profile.render(), file=out)
    except (NnrtError, OSError, ImportError) as exc:
        print(f"nnrt run: {exc}", file=err)
        return 1
    return 0


def _names(model: Model, indices: Sequence[int], stem: str) -> list[str]:
    return [model.operands[i].name or f"{stem}{k}" for k, i in enumerate(indices)]


def result_json(model: Model, result: RunResult) -> dict[str, Any]:
    """What ``nnrt run --json`` prints: where it ran, its outputs (summaries) and timings."""
    placement = result.placement
    found: dict[str, Any] = {
        "drivers": placement.drivers(), "steps": len(placement.steps),
        "operations": len(model.operations), "first_ms": result.first_seconds * 1e3,
        "outputs": [{"name": name, "dtype": str(np.asarray(arr).dtype),
                     "shape": list(np.asarray(arr).shape),
                     **({"min": float(np.min(arr)), "max": float(np.max(arr)),
                         "mean": float(np.mean(arr))}
                        if np.asarray(arr).size and np.asarray(arr).dtype.kind in "biuf" else {})}
                    for name, arr in zip(_names(model, model.outputs, "output"), result.outputs,
                                         strict=True)],
    }
    if result.bench_seconds:
        ms = np.array(result.bench_seconds) * 1e3
        found["bench"] = {"runs": len(ms), "p50_ms": float(np.percentile(ms, 50)),
                          "p90_ms": float(np.percentile(ms, 90)), "min_ms": float(ms.min()),
                          "mean_ms": float(ms.mean())}
    return found


def _report(model: Model, result: RunResult, out: TextIO) -> None:
    placement = result.placement
    print(f"ran on {', '.join(placement.drivers())} ({len(placement.steps)} step(s), "
          f"{len(model.operations)} operations); first execution "
          f"{result.first_seconds * 1e3:.2f} ms", file=out)
    for name, arr in zip(_names(model, model.outputs, "output"), result.outputs, strict=True):
        print(f"  {name}: {summarize(np.asarray(arr))}", file=out)
    if result.bench_seconds:
        ms = np.array(result.bench_seconds) * 1e3
        print(f"bench: {len(ms)} warm executions through the runtime: p50 "
              f"{np.percentile(ms, 50):.3f} ms, p90 {np.percentile(ms, 90):.3f} ms (min "
              f"{ms.min():.3f}, mean {ms.mean():.3f})", file=out)


def _save(model: Model, outputs: Sequence[Array], path: str) -> None:
    names = _names(model, model.outputs, "output")
    if len(set(names)) != len(names):
        names = [f"output{k}" for k in range(len(names))]
    arrays: dict[str, Any] = {name: np.asarray(arr) for name, arr in zip(names, outputs,
                                                                          strict=True)}
    with open(path, "wb") as f:
        np.savez(f, **arrays)
