"""The cpu driver's extension kernels (nnrt/drivers/cpu/kernels/ext.py): the float32 erf
approximation measured against ``math.erf`` on a dense grid, layer_norm against an independent
float64 computation, and both lowered end to end (GELU and LayerNorm models vs the reference)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt.drivers.cpu import CpuDriver, compile_partition
from nnrt.drivers.cpu.kernels.ext import ERF_SCRATCH, erf, layer_norm
from nnrt.testing.spec import FLOAT32_TOL

Op = nnrt.OperationType
Array = np.ndarray[Any, Any]
ATOL, RTOL = FLOAT32_TOL


def _erf(x: Array, *, in_place: bool = False) -> Array:
    scratch = np.empty((ERF_SCRATCH, *x.shape), np.float32)
    out = x.copy() if in_place else np.empty_like(x)
    # No overflow, division by zero or invalid operation anywhere (tiny inputs may underflow).
    with np.errstate(over="raise", divide="raise", invalid="raise", under="ignore"):
        erf(out, out if in_place else x, scratch)
    return out


def _float32_neighbours(points: list[float], count: int) -> Array:
    """``count`` consecutive float32 values on each side of each point, both signs."""
    result = []
    for p in points:
        below = above = np.float32(p)
        for _ in range(count):
            below = np.nextafter(below, np.float32(-np.inf))
            above = np.nextafter(above, np.float32(np.inf))
            result += [below, above, np.float32(p)]
    arr = np.asarray(result, np.float32)
    return np.concatenate([arr, -arr])


def test_erf_approximation_error_is_below_1e_7_on_a_dense_grid() -> None:
    grid = np.concatenate([np.linspace(-8.0, 8.0, 1_600_001, dtype=np.float32),
                           np.geomspace(1e-38, 1e-3, 2000, dtype=np.float32),
                           _float32_neighbours([0.0, 1.0, 4.0], 64)])
    got = _erf(grid).astype(np.float64)
    want = np.fromiter(map(math.erf, grid.astype(np.float64).tolist()), np.float64,
                       count=grid.size)
    error = np.abs(got - want)
    worst = int(np.argmax(error))
    assert error[worst] <= 1e-7, f"max error {error[worst]:.3g} at x = {grid[worst]!r}"


def test_erf_special_values_symmetry_and_in_place() -> None:
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 40.0, -40.0, 3.4e38], np.float32)
    got = _erf(x)
    np.testing.assert_array_equal(got, [1.0, -1.0, np.nan, 0.0, -0.0, 1.0, -1.0, 1.0])
    assert np.signbit(got[4]) and not np.signbit(got[3])
    y = np.linspace(-5.0, 5.0, 10_001, dtype=np.float32).reshape(1, 73, 137)
    np.testing.assert_array_equal(_erf(y), -_erf(-y))
    np.testing.assert_array_equal(_erf(y, in_place=True), _erf(y))


def _layer_norm64(x: Array, scale: Array, bias: Array | None, axis: int,
                  epsilon: float) -> Array:
    x64 = x.astype(np.float64)
    axes = tuple(range(axis, x.ndim))
    centred = x64 - x64.mean(axis=axes, keepdims=True)
    y: Array = centred / np.sqrt((centred**2).mean(axis=axes, keepdims=True) + epsilon) * scale
    return y if bias is None else y + bias


@pytest.mark.parametrize(("shape", "axis", "scale_shape", "with_bias"), [
    ((4, 768), 1, (768,), True),
    ((2, 5, 64), 2, (64,), False),
    ((2, 3, 4, 5), 1, (4, 1), True),
    ((3, 7), 0, (1,), True),
])
def test_layer_norm_kernel_matches_float64(shape: tuple[int, ...], axis: int,
                                           scale_shape: tuple[int, ...], with_bias: bool) -> None:
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(0.3, 2.0, shape).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, scale_shape).astype(np.float32)
    bias = rng.normal(0.0, 0.5, shape[axis:]).astype(np.float32) if with_bias else None
    out = np.empty_like(x)
    layer_norm(out, x, scale, bias, axis, 1e-5, np.empty_like(x))
    np.testing.assert_allclose(out, _layer_norm64(x, scale, bias, axis, 1e-5), atol=ATOL,
                               rtol=RTOL)


def _gelu_layer_norm_model(bias_omitted: bool) -> tuple[nnrt.Model, list[Array]]:
    """x -> LayerNorm -> GELU (x / sqrt 2, ERF, + 1, * x, * 0.5): a transformer block's tail."""
    rng = np.random.default_rng(3)
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 8, 32))
    gamma = b.constant(rng.uniform(0.5, 1.5, 32).astype(np.float32))
    beta = (nnrt.Omitted(nnrt.OperandType.TENSOR_FLOAT32) if bias_omitted
            else b.constant(rng.normal(0.0, 0.2, 32).astype(np.float32)))
    h = b.operation(Op.NNRT_LAYER_NORMALIZATION, x, gamma, beta, -1, 1e-5)[0]
    e = b.operation(Op.NNRT_ERF, b.mul(h, np.array([1 / math.sqrt(2)], np.float32)))[0]
    b.output(b.mul(b.mul(h, b.add(e, np.array([1.0], np.float32))), np.array([0.5], np.float32)))
    return b.build(), [rng.normal(0.0, 3.0, (2, 8, 32)).astype(np.float32)]


@pytest.mark.parametrize("bias_omitted", [False, True])
def test_gelu_and_layer_norm_are_accelerated_and_match_the_reference(
        bias_omitted: bool) -> None:
    model, inputs = _gelu_layer_norm_model(bias_omitted)
    driver = CpuDriver()
    assert all(driver.supported_operations(model))
    part = compile_partition(model, "partition_0")
    assert "    erf(" in part.source and "    layer_norm(" in part.source
    assert part.in_place_fused >= 1  # ERF (or the element-wise ops after it) computes in place
    want = nnrt.reference.run(model, inputs)[0]
    with driver.prepare(model) as prepared:
        got = prepared.execute(inputs).outputs[0]
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=ATOL, rtol=RTOL)


def test_extension_ops_with_parameters_given_at_execution_are_not_selected() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 4))
    eps = b.input("eps", (), nnrt.OperandType.FLOAT32)
    scale = b.constant(np.ones(4, np.float32))
    b.output(b.operation(Op.NNRT_LAYER_NORMALIZATION, x, scale, scale, -1, eps)[0],
             b.operation(Op.NNRT_ERF, b.input("h", (3,), "float16"))[0])
    assert CpuDriver().support(b.build()).reasons == {
        0: "input 4 (epsilon) is not a constant (parameters must be)",
        1: "TENSOR_FLOAT16 not supported"}
