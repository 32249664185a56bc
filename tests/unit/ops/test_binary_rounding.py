"""ADD/SUB/MUL/DIV compute in their float type: equal to float64-then-round, bit for bit.

The reference kernels' policy is "compute wide, round once"; binary arithmetic skips the widening
because a correctly rounded IEEE operation in the narrow type gives the same value. This pins
that claim on random and edge-case operands (subnormals, huge, signed zeros, inf, NaN).
"""

from __future__ import annotations

import numpy as np
import pytest

import nnrt

_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


def _operands(dtype: type[np.floating], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    info = np.finfo(dtype)
    edge = np.array([0.0, -0.0, 1.0, -1.0, info.tiny, info.smallest_subnormal, info.max,
                     -info.max, info.eps, np.inf, -np.inf, np.nan, 3.0, 1 / 3], dtype=dtype)
    bits = np.dtype(dtype).itemsize * 8
    raw = rng.integers(0, 2**bits, size=20000, dtype=np.uint64).astype(f"uint{bits}")
    random = raw.view(dtype)
    a = np.concatenate([np.repeat(edge, edge.size), random[:10000]])
    b = np.concatenate([np.tile(edge, edge.size), random[10000:]])
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("name", sorted(_OPS))
def test_native_result_equals_wide_then_rounded(name: str, dtype: type[np.floating]) -> None:
    a, b = _operands(dtype, np.random.default_rng(7))
    with np.errstate(all="ignore"):
        wide = _OPS[name](a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    builder = nnrt.ModelBuilder()
    x = builder.input("x", (a.size,), dtype=np.dtype(dtype))
    y = builder.input("y", (b.size,), dtype=np.dtype(dtype))
    builder.output(getattr(builder, name)(x, y))
    (native,) = nnrt.reference.run(builder.build(), [a, b])
    same = (native.view(f"uint{a.itemsize * 8}") == wide.view(f"uint{a.itemsize * 8}")) | (
        np.isnan(native) & np.isnan(wide))
    assert same.all(), f"{name} {dtype.__name__}: first mismatch at {np.flatnonzero(~same)[:5]}"
