"""The TFLite corpus: each original file vs the flatbuffer the litert driver regenerates from it.

Run: .venv/bin/python benchmarks/tflite_flatbuffer.py [--rounds N] [--models a,b] [--ops]

Separates "our flatbuffer is slower" from "our round trip is": for each corpus model
(``tests/models/litert_oracle.py``), ``nnrt.tflite.load`` then
:func:`nnrt.drivers.litert.flatbuffer.write_partition` (what the litert driver compiles when
the whole model is one partition), and then, in this process, with the same interpreter
settings (LiteRT's default, the XNNPACK delegate, one thread):

* the operators of each file counted by builtin, where the counts differ (``--ops``: all);
* how many partitions XNNPACK made of each (the DELEGATE nodes ``_get_ops_details`` lists after
  ``allocate_tensors``, behind the original operators): 1 when it took the whole graph;
* ``set_tensor`` / ``invoke`` / ``get_tensor`` timed for both, interleaved (one run of each in
  turn, ``--rounds`` x 5), min and median: timings on a shared machine are noisy, so only runs
  side by side in one process compare.

Through-the-runtime times (worker process, transfer, dispatch) are ``tflite_models.py``'s.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb
from ai_edge_litert.interpreter import Interpreter

import nnrt.tflite
from nnrt.drivers.litert.flatbuffer import write_partition

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "models"), str(ROOT)]

from litert_oracle import CORPUS, corpus_modules, inputs_for  # noqa: E402
from timing import litert_runner  # noqa: E402

Array = np.ndarray[Any, Any]
_BUILTIN_NAMES = {value: name for name, value in vars(fb.BuiltinOperator).items()
                  if not name.startswith("_")}


def operator_counts(data: bytes) -> tuple[collections.Counter[str], int]:
    """The main subgraph's operators counted by builtin (custom ones by code), and its tensors."""
    model = fb.ModelT.InitFromObj(fb.Model.GetRootAsModel(data, 0))
    subgraph = model.subgraphs[0]
    counts: collections.Counter[str] = collections.Counter()
    for op in subgraph.operators:
        code = model.operatorCodes[op.opcodeIndex]
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        if builtin == fb.BuiltinOperator.CUSTOM:
            counts[f"CUSTOM({code.customCode.decode()})"] += 1
        else:
            counts[_BUILTIN_NAMES.get(builtin, str(builtin))] += 1
    return counts, len(subgraph.tensors)


def _runner(data: bytes, feeds: dict[str, Array]) -> tuple[Callable[[], list[Array]], int]:
    """A timed run of ``data`` in LiteRT's default interpreter on one thread, and how many of
    XNNPACK partitions (DELEGATE nodes) it has."""
    interpreter = Interpreter(model_content=data, num_threads=1)
    interpreter.allocate_tensors()
    partitions = sum(1 for op in interpreter._get_ops_details() if op["op_name"] == "DELEGATE")
    # by position: the regenerated file names its tensors after operands (the model's inputs
    # keep the original's order)
    return litert_runner(interpreter, list(feeds.values())), partitions


def _interleaved_ms(runs: tuple[Callable[[], Any], ...], rounds: int) -> list[list[float]]:
    for run in runs:
        for _ in range(5):
            run()
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(rounds * 5):
        for run, spent in zip(runs, times, strict=True):
            start = time.perf_counter_ns()
            run()
            spent.append((time.perf_counter_ns() - start) / 1e6)
    return times


def _row(name: str, modules: Path, rounds: int, all_ops: bool) -> str:
    path = modules / CORPUS[name].file
    original = path.read_bytes()
    try:
        regenerated = write_partition(nnrt.tflite.load(path))
    except nnrt.NnrtError as exc:
        first = str(exc).splitlines()[0][:80]
        return f"| {name} | {type(exc).__name__}: {first} | - | - | - | - | - |"
    feeds = inputs_for(path)
    try:
        run_original, left_original = _runner(original, feeds)
    except RuntimeError:
        return f"| {name} | LiteRT cannot run the original | - | - | - | - | - |"
    run_regenerated, left_regenerated = _runner(regenerated, feeds)
    (ops_a, tensors_a), (ops_b, tensors_b) = operator_counts(original), \
        operator_counts(regenerated)
    differ = {k: (ops_a[k], ops_b[k]) for k in sorted(set(ops_a) | set(ops_b))
              if all_ops or ops_a[k] != ops_b[k]}
    ops = "; ".join(f"{k} {a}->{b}" for k, (a, b) in differ.items()) or "same"
    times_a, times_b = _interleaved_ms((run_original, run_regenerated), rounds)
    ratio = statistics.median(times_b) / statistics.median(times_a)
    return (f"| {name} | {sum(ops_a.values())}->{sum(ops_b.values())} ({ops}) | "
            f"{tensors_a}->{tensors_b} | {left_original}/{left_regenerated} | "
            f"{min(times_a):.3f} / {statistics.median(times_a):.3f} | "
            f"{min(times_b):.3f} / {statistics.median(times_b):.3f} | {ratio:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--models", default=",".join(CORPUS), help=f"any of {', '.join(CORPUS)}")
    parser.add_argument("--ops", action="store_true", help="list every builtin, not only diffs")
    args = parser.parse_args()
    modules = corpus_modules()
    if modules is None:
        return
    print("| model | operators original->regenerated (builtins that differ) | tensors | "
          "XNNPACK partitions (orig/regen) | original min / median (ms) | regenerated min / median "
          "(ms) | regen / orig (median) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in args.models.split(","):
        print(_row(name, modules, args.rounds, args.ops), flush=True)


if __name__ == "__main__":
    main()
