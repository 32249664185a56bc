"""The cpu compiler's folding of per-channel MUL / ADD constants into convolutions
(nnrt/drivers/cpu/conv_fold.py): when it fires, the folded model matches the reference driver
(which runs every operation as written); when folding would be wrong, it does not fire."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt.drivers.cpu import CpuDriver, compile_partition
from nnrt.testing.spec import FLOAT32_TOL

Array = np.ndarray[Any, Any]
ATOL, RTOL = FLOAT32_TOL
RNG = np.random.default_rng(7)


def _f32(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


def _check_against_reference(model: nnrt.Model, x: Array) -> None:
    want = nnrt.reference.run(model, [x])
    with CpuDriver().prepare(model) as prepared:
        got = prepared.execute([x]).outputs
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("kind", ["conv", "depthwise"])
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_batchnorm_after_a_convolution_folds_into_filter_and_bias(kind: str,
                                                                  layout: str) -> None:
    c = 6
    shape = (2, c, 9, 9) if layout == "NCHW" else (2, 9, 9, c)
    per_channel = (c, 1, 1) if layout == "NCHW" else (c,)
    b = nnrt.ModelBuilder()
    x = b.input("x", shape)
    if kind == "conv":
        y = b.conv2d(x, _f32(c, 3, 3, c), _f32(c), layout=layout)
    else:
        y = b.depthwise_conv2d(x, _f32(1, 3, 3, c), _f32(c), layout=layout)
    y = b.mul(y, np.abs(_f32(*per_channel)) + np.float32(0.5))
    y = b.add(_f32(*per_channel), y)           # the constant on either side
    b.output(b.relu(y))
    model = b.build()
    part = compile_partition(model, "partition_0")
    assert part.affine_folded == 2 and part.activations_fused == 1
    assert [n.kernel for n in part.graph.nodes] == [kind]
    assert part.graph.nodes[0].ops == (0, 1, 2, 3)
    _check_against_reference(model, _f32(*shape))


def test_a_mul_alone_folds_and_brings_its_own_activation() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 5, 5, 3))
    y = b.conv2d(x, _f32(4, 1, 1, 3), _f32(4))
    b.output(b.add(b.mul(y, _f32(1, 1, 1, 4), activation="relu6"), _f32(4)))
    model = b.build()
    part = compile_partition(model, "partition_0")
    # The MUL folds (the conv takes its RELU6); the ADD then follows an activation: kept.
    assert part.affine_folded == 1
    assert [n.kernel for n in part.graph.nodes] == ["conv", "add"]
    assert part.graph.nodes[0].args[7] == 3
    _check_against_reference(model, _f32(1, 5, 5, 3))


def _unfolded(build: Any) -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 6, 6, 4))
    build(b, x)
    model = b.build()
    part = compile_partition(model, "partition_0")
    assert part.affine_folded == 0
    _check_against_reference(model, _f32(1, 6, 6, 4))


def test_a_convolution_with_its_own_activation_is_not_folded() -> None:
    _unfolded(lambda b, x: b.output(b.add(
        b.mul(b.conv2d(x, _f32(4, 3, 3, 4), _f32(4), activation="relu"), _f32(4)), _f32(4))))


@pytest.mark.parametrize("factor_shape", [(6, 1, 4), (1, 6, 1, 1), (1, 1, 6, 4), (2, 1, 1, 4)])
def test_a_constant_not_per_output_channel_is_not_folded(
        factor_shape: tuple[int, ...]) -> None:
    # Varying along H or W, a per-position scalar, or growing the result by broadcasting.
    _unfolded(lambda b, x: b.output(b.mul(b.conv2d(x, _f32(4, 3, 3, 4), _f32(4)),
                                          _f32(*factor_shape))))


def test_an_observable_convolution_result_is_not_folded() -> None:
    def read_twice(b: nnrt.ModelBuilder, x: Any) -> None:
        y = b.conv2d(x, _f32(4, 3, 3, 4), _f32(4))
        b.output(b.add(b.mul(y, _f32(4)), y))

    def model_output(b: nnrt.ModelBuilder, x: Any) -> None:
        y = b.conv2d(x, _f32(4, 3, 3, 4), _f32(4))
        b.output(y, b.mul(y, _f32(4)))

    _unfolded(read_twice)
    _unfolded(model_output)


def test_a_shared_bias_constant_keeps_its_contents_for_the_other_convolution() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 5, 5, 3))
    bias = b.constant(_f32(3))
    first = b.mul(b.conv2d(x, _f32(3, 3, 3, 3), bias), _f32(3))
    b.output(b.conv2d(first, _f32(3, 3, 3, 3), bias))
    model = b.build()
    assert compile_partition(model, "partition_0").affine_folded == 1
    _check_against_reference(model, _f32(1, 5, 5, 3))
