"""Models for the cpu driver tests: the three benchmark models and small random graphs."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import nnrt

Array = np.ndarray[Any, Any]

_BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "cpu_driver.py"


def benchmark_module() -> ModuleType:
    """``benchmarks/cpu_driver.py``, whose model builders the tests reuse."""
    spec = importlib.util.spec_from_file_location("cpu_driver_benchmark", _BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def random_graph(seed: int) -> tuple[nnrt.Model, list[Array]]:
    """A random small float32 graph of element-wise, FC, reshape, softmax and mean ops."""
    rng = np.random.default_rng(seed)
    b = nnrt.ModelBuilder()
    rows, cols = int(rng.integers(1, 5)), int(rng.integers(2, 7))
    x = b.input("x", (rows, cols))
    z = b.input("z", (rows, cols))
    values = [x, z]
    for _ in range(int(rng.integers(3, 10))):
        a = values[int(rng.integers(len(values)))]
        kind = int(rng.integers(9))
        if kind < 4:
            other: Any = values[int(rng.integers(len(values)))]
            if rng.random() < 0.3:
                other = rng.standard_normal((cols,)).astype(np.float32)
            helper = (b.add, b.sub, b.mul, b.add)[kind]
            act = ("relu", None, "relu6", None)[int(rng.integers(4))]
            values.append(helper(a, other, act))
        elif kind == 4:
            values.append(b.relu(a))
        elif kind == 5:
            values.append(b.tanh(a))
        elif kind == 6:
            w = rng.standard_normal((cols, cols)).astype(np.float32)
            values.append(b.fully_connected(a, w, rng.standard_normal(cols).astype(np.float32)))
        elif kind == 7:
            values.append(b.softmax(a, float(rng.uniform(0.5, 2.0))))
        else:
            values.append(b.reshape(b.reshape(a, (rows * cols,)), (rows, cols)))
    b.output(values[-1], b.logistic(values[len(values) // 2]))
    inputs = [rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(2)]
    return b.build(), inputs
