"""Model generators for the fuzzers: valid-by-construction float32 chains (hypothesis), the
conformance variants, random NNAPI API call sequences, and running a model on a driver."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from hypothesis import strategies as st

import nnrt
from nnrt.hal.base import Driver
from nnrt.model.operand import dtype_of, is_scalar
from nnrt.testing import build, expand
from nnrt.testing.cases import all_cases
from nnrt.testing.spec import CaseVariant

Array = np.ndarray[Any, Any]


@functools.cache
def variants() -> tuple[CaseVariant, ...]:
    """Every conformance variant: one-operation models that are valid by construction."""
    return tuple(v for case in all_cases() for v in expand(case))


@st.composite
def chain_models(draw: st.DrawFn) -> tuple[nnrt.Model, list[Array]]:
    """A valid float32 NHWC chain (convs, pools, elementwise, activations, FC, softmax) and a
    random feed: what the cpu driver fuses and pre-packs, with the reference as the oracle."""
    b = nnrt.ModelBuilder()
    h, w, c = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 4))
    batch = draw(st.integers(1, 2))
    x = b.input("x", (batch, h, w, c))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    def weights(*shape: int) -> Array:
        return rng.uniform(-1, 1, shape).astype(np.float32)

    y = x
    activation = st.sampled_from([None, "relu", "relu6", "relu1"])
    for _ in range(draw(st.integers(1, 6))):
        _, hh, ww, cc = y.shape
        step = draw(st.sampled_from(["conv", "dw", "maxpool", "avgpool", "add", "mul", "unary",
                                     "residual"]))
        if step == "conv":
            out, kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
            y = b.conv2d(y, weights(out, kh, kw, cc), weights(out),
                         stride=draw(st.integers(1, 2)),
                         padding=draw(st.sampled_from(["same", "valid"])) if kh <= hh and
                         kw <= ww else "same", activation=draw(activation))
        elif step == "dw":
            mult = draw(st.integers(1, 2))
            y = b.depthwise_conv2d(y, weights(1, 3, 3, cc * mult), weights(cc * mult),
                                   depth_multiplier=mult, activation=draw(activation))
        elif step in ("maxpool", "avgpool"):
            size = (draw(st.integers(1, hh)), draw(st.integers(1, ww)))
            pool = b.max_pool2d if step == "maxpool" else b.average_pool2d
            y = pool(y, size, stride=(1, 1) if draw(st.booleans()) else None)
        elif step in ("add", "mul"):
            other = weights(cc) if draw(st.booleans()) else weights(1, hh, ww, cc)
            y = (b.add if step == "add" else b.mul)(y, other, draw(activation))
        elif step == "unary":
            y = draw(st.sampled_from([b.relu, b.relu6, b.tanh, b.logistic]))(y)
        elif y.shape == x.shape:
            y = b.add(y, x, draw(activation))
    if draw(st.booleans()):
        n = int(np.prod(y.shape[1:]))
        flat = b.reshape(y, (y.shape[0], n))
        units = draw(st.integers(1, 5))
        y = b.fully_connected(flat, weights(units, n), weights(units), draw(activation))
        if draw(st.booleans()):
            y = b.softmax(y, beta=draw(st.sampled_from([1.0, 0.5])))
    b.output(y)
    return b.build(), [rng.uniform(-2, 2, (batch, h, w, c)).astype(np.float32)]


def feed_for(model: nnrt.Model, values: list[Any]) -> list[Array]:
    """``values`` as arrays of the model inputs' dtypes."""
    return [np.asarray(v, dtype=dtype_of(model.operands[k].type))
            for k, v in zip(model.inputs, values, strict=True)]


def zero_feed(model: nnrt.Model, limit: int = 1 << 16) -> list[Array] | None:
    """Small deterministic inputs for a model of fully specified inputs, or None."""
    feed = []
    for k in model.inputs:
        operand = model.operands[k]
        dims = tuple(operand.dims)
        if is_scalar(operand.type):
            feed.append(np.asarray(1, dtype_of(operand.type)))
            continue
        if not dims or not all(d > 0 for d in dims) or int(np.prod(dims)) > limit:
            return None
        feed.append(np.ones(dims, dtype_of(operand.type)))
    return feed


def run_on(driver: Driver, model: nnrt.Model, feed: list[Array]) -> list[Array] | None:
    """The outputs of ``model`` on ``driver`` (HAL), or None if it does not support it."""
    if not all(driver.supported_operations(model)):
        return None
    prepared = driver.prepare(model)
    try:
        return [np.array(a) for a in prepared.execute(feed).outputs]
    finally:
        prepared.release()


def variant_model(index: int) -> tuple[nnrt.Model, list[Array], CaseVariant]:
    """Conformance variant ``index`` (modulo their number): model, feed, variant."""
    all_variants = variants()
    variant = all_variants[index % len(all_variants)]
    model, values = build(variant)
    return model, feed_for(model, values), variant
