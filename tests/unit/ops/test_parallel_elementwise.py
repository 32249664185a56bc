"""Element-wise kernels split over threads: same bits as one ufunc call, whatever the layout."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt
from nnrt.ops import parallel
from nnrt.ops.parallel import ufunc_into


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "MIN_BYTES", 4096)  # split small arrays too
    monkeypatch.setattr(parallel, "THREADS", 3)


@pytest.mark.parametrize(("shape_a", "shape_b"), [
    ((4096,), (4096,)),
    ((4096,), (1,)),
    ((1,), (64, 64)),
    ((64, 64), (1, 64)),
    ((64, 64), (64, 1)),
    ((2, 3, 32, 16), (3, 1, 16)),
    ((2, 40, 40), ()),
    ((5, 2000), (5, 2000)),
])
@pytest.mark.parametrize("func", [np.add, np.subtract, np.multiply, np.divide])
def test_same_bits_as_one_call(shape_a: tuple[int, ...], shape_b: tuple[int, ...],
                               func: np.ufunc) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    expected = func(a, b)
    out = np.full(expected.shape, np.nan, np.float32)
    ufunc_into(func, a, b, out)
    assert out.tobytes() == expected.tobytes()


def test_blocks_cover_the_output_once() -> None:
    a = np.arange(10_000, dtype=np.float32)
    out = np.empty_like(a)
    blocks = parallel._blocks(a, np.float32(1).reshape(1), out)
    assert blocks is not None and len(blocks) > 1
    address = out.__array_interface__["data"][0]
    for _, _, block in blocks:  # consecutive slices of out, end to end
        assert block.__array_interface__["data"][0] == address
        address += block.nbytes
    assert address == out.__array_interface__["data"][0] + out.nbytes


def test_in_place_on_an_input_is_split_and_right() -> None:
    a = np.arange(8192, dtype=np.float32)
    expected = a * 3
    assert parallel._blocks(a, np.float32(3).reshape(1), a) is not None
    ufunc_into(np.multiply, a, np.float32(3).reshape(1), a)
    assert np.array_equal(a, expected)


def test_shifted_overlap_is_one_call() -> None:
    base = np.arange(8193, dtype=np.float32)
    a, out = base[1:], base[:-1]
    assert parallel._blocks(a, a, out) is None  # numpy's own overlap handling applies
    expected = base[1:] + base[1:]
    ufunc_into(np.add, a, a, out)
    assert np.array_equal(out, expected)


def test_small_or_scalar_outputs_are_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "MIN_BYTES", 1 << 20)
    a = np.ones(1000, np.float32)
    assert parallel._blocks(a, a, np.empty_like(a)) is None
    assert parallel._blocks(np.float32(1), np.float32(2), np.empty((), np.float32)) is None


def test_a_failing_block_raises() -> None:
    a = np.ones(8192, np.float32)
    out = np.empty(8192, np.int8)  # float -> int8 under same_kind casting fails per block
    with pytest.raises(TypeError):
        ufunc_into(np.add, a, a, out)


def test_reference_add_of_a_large_tensor_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:


    b = nnrt.ModelBuilder()
    x = b.input("x", (300, 1000))
    y = b.input("y", (1, 1000))
    b.output(b.add(x, y))
    model = b.build()
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((300, 1000)).astype(np.float32)
    ys = rng.standard_normal((1, 1000)).astype(np.float32)
    calls = []
    real = parallel.ufunc_into
    monkeypatch.setattr(parallel, "ufunc_into", lambda *args: calls.append(1) or real(*args))
    (result,) = nnrt.reference.run(model, [xs, ys])
    assert calls  # the kernel took the split path
    assert result.tobytes() == (xs + ys).tobytes()
