"""LiteRT's two Python APIs side by side, for the litert dispatch: per-invoke overhead, and
XNNPACK's weight cache.

Run: .venv/bin/python benchmarks/litert_invoke.py [--runs N]

* **Per invoke** (in process, one thread, best of 5 batches of ``--runs``): a 1x4 RELU (pure
  overhead) and a 3x32x32 CNN, through ``Interpreter`` (``set_tensor``, ``invoke``, copy the
  output: what the dispatch does) and through ``CompiledModel`` (``TensorBuffer.write``,
  ``run_by_index``, ``read``), and ``CompiledModel`` on ``TensorBuffer.create_from_host_memory``
  views of the caller's arrays, bound once or made per call (which binding to the caller's
  arrays of each request needs). LiteRT 2.3's host-memory buffers carry no shape (rank 1), so
  that case uses the CNN with flat input and output.
* **Weight cache** (the 16.8 M-parameter convnet of ``benchmarks/cache.py``): load + first run
  with ``Interpreter``, with ``CompiledModel``, with ``CompiledModel`` writing its XNNPACK weight
  cache and reading it back; then the cache file with its second half zeroed: does LiteRT notice?
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.interpreter import Interpreter
from ai_edge_litert.options import CpuOptions, Options
from ai_edge_litert.tensor_buffer import TensorBuffer
from cache import big_convnet

import nnrt
from nnrt.drivers.litert.flatbuffer import write_partition

Array = np.ndarray[Any, Any]


def _cnn(flat: bool) -> tuple[bytes, Array, tuple[int, ...]]:
    rng = np.random.default_rng(0)
    b = nnrt.ModelBuilder()
    x = b.input("x", (3072,) if flat else (1, 32, 32, 3))
    y = b.reshape(x, (1, 32, 32, 3)) if flat else x
    for cin, cout in ((3, 8), (8, 16)):
        y = b.conv2d(y, (rng.standard_normal((cout, 3, 3, cin)) * 0.1).astype(np.float32),
                     np.zeros(cout, np.float32), padding="same", activation="relu")
        y = b.max_pool2d(y, 2)
    y = b.fully_connected(b.reshape(y, (1, 1024)), (rng.standard_normal((10, 1024)) * 0.1)
                          .astype(np.float32), np.zeros(10, np.float32))
    b.output(b.reshape(y, (10,)) if flat else y)
    shape = (3072,) if flat else (1, 32, 32, 3)
    return write_partition(b.build()), rng.standard_normal(shape).astype(np.float32), (
        (10,) if flat else (1, 10))


def _relu() -> tuple[bytes, Array, tuple[int, ...]]:
    b = nnrt.ModelBuilder()
    b.output(b.relu(b.input("x", (1, 4))))
    return write_partition(b.build()), np.ones((1, 4), np.float32), (1, 4)


def _best_us(fn: Callable[[], object], runs: int) -> float:
    for _ in range(runs // 10):
        fn()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(runs):
            fn()
        best = min(best, (time.perf_counter() - start) / runs * 1e6)
    return best


def _compiled(data: bytes, cache: str = "") -> CompiledModel:
    options = Options(cpu_options=CpuOptions(num_threads=1, xnnpack_weight_cache_path=cache))
    return CompiledModel.from_buffer(data, options=options)


def per_invoke(name: str, data: bytes, x: Array, shape: tuple[int, ...], runs: int) -> None:
    out = np.empty(shape, np.float32)
    interpreter = Interpreter(model_content=data, num_threads=1)
    interpreter.allocate_tensors()
    i_in = interpreter.get_input_details()[0]["index"]
    i_out = interpreter.get_output_details()[0]["index"]

    def interp() -> None:
        interpreter.set_tensor(i_in, x)
        interpreter.invoke()
        np.copyto(out, interpreter.tensor(i_out)().reshape(shape))

    model = _compiled(data)
    ins, outs = model.create_input_buffers(0), model.create_output_buffers(0)

    def buffers() -> None:
        ins[0].write(x)
        model.run_by_index(0, ins, outs)
        out[...] = outs[0].read(out.size, np.float32).reshape(shape)

    cases = [("Interpreter set_tensor + invoke + copy out", interp),
             ("CompiledModel write + run + read", buffers)]
    if len(shape) == 1:
        x_host = TensorBuffer._align_numpy_array(x.copy())  # 64-byte aligned, as LiteRT needs
        out_host = TensorBuffer._align_numpy_array(out.copy())
        bound = ([TensorBuffer.create_from_host_memory(x_host)],
                 [TensorBuffer.create_from_host_memory(out_host)])

        def per_call() -> None:
            given = [TensorBuffer.create_from_host_memory(x_host)]
            taken = [TensorBuffer.create_from_host_memory(out_host)]
            model.run_by_index(0, given, taken)
            given[0].destroy()
            taken[0].destroy()

        cases += [("CompiledModel on host memory bound once",
                   lambda: model.run_by_index(0, *bound)),
                  ("CompiledModel on host memory made per call", per_call)]
    for label, fn in cases:
        print(f"| {name} | {label} | {_best_us(fn, runs):.1f} |", flush=True)


def weight_cache() -> None:
    model, inputs = big_convnet()
    data = write_partition(model)
    x = inputs[0]

    def interp() -> Array:
        interpreter = Interpreter(model_content=data, num_threads=1)
        interpreter.allocate_tensors()
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        return np.asarray(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))

    def compiled(path: str) -> Array:
        cm = _compiled(data, path)
        ins, outs = cm.create_input_buffers(0), cm.create_output_buffers(0)
        ins[0].write(x)
        cm.run_by_index(0, ins, outs)
        return np.asarray(outs[0].read(2048, np.float32))

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "weights.xnn")
        for label, fn in [("Interpreter", interp), ("CompiledModel", lambda: compiled("")),
                          ("CompiledModel, weight cache written", lambda: compiled(path)),
                          ("CompiledModel, weight cache read", lambda: compiled(path))]:
            start = time.perf_counter()
            expected = fn()
            print(f"| {label} | {(time.perf_counter() - start) * 1000:.1f} |", flush=True)
        size = os.path.getsize(path)
        with open(path, "r+b") as file:
            file.seek(size // 2)
            file.write(bytes(size // 4))
        got = compiled(path)
        print(f"\nweight cache of {size / 2**20:.1f} MiB, a quarter of it zeroed: max |difference| "
              f"of the outputs {float(np.abs(got - expected).max()):.3g} (0: not used or "
              "rebuilt; else wrong results, unnoticed)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    print("| model | path | µs per invoke |\n|---|---|---:|")
    per_invoke("RELU 1x4", *_relu(), args.runs)
    per_invoke("CNN 3x32x32", *_cnn(flat=False), args.runs)
    per_invoke("CNN, flat input and output", *_cnn(flat=True), args.runs)
    print("\n| 16.8 M parameters: load + first run | ms |\n|---|---:|")
    weight_cache()


if __name__ == "__main__":
    main()
