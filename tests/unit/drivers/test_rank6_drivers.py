"""The cpu and litert drivers at rank 5 and 6 (nnrt's ``com.nnrt.rank6``): an attention-like
rank-5 chain runs on each as one partition and matches the reference; litert refuses rank 7."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import nnrt
from nnrt.hal.discovery import load_driver

Op = nnrt.OperationType
RNG = np.random.default_rng(11)
DRIVERS = ["cpu", pytest.param("litert", marks=pytest.mark.skipif(
    importlib.util.find_spec("ai_edge_litert") is None,
    reason="ai-edge-litert has no wheel for this platform"))]


def _attention_block() -> nnrt.Model:
    """Reshape to rank 5, transpose heads out, a batched product, softmax, back to rank 3 —
    the shape of the PP-OCR recogniser's attention."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 6, 12))
    qkv = b.transpose(b.reshape(x, (1, 6, 3, 2, 2)), (2, 0, 3, 1, 4))  # (3, 1, 2, 6, 2)
    q, k, v = (b.operation(Op.SLICE, qkv, np.array([i, 0, 0, 0, 0], np.int32),
                           np.array([1, -1, -1, -1, -1], np.int32))[0] for i in range(3))
    scores = b.operation(Op.BATCH_MATMUL, q, k, False, True)[0]  # (1, 1, 2, 6, 6)
    scores = b.mul(scores, np.full((1,), 0.5, np.float32))
    weights = b.softmax(scores)
    y = b.operation(Op.BATCH_MATMUL, weights, v, False, False)[0]  # (1, 1, 2, 6, 2)
    y = b.reshape(b.transpose(y, (0, 1, 3, 2, 4)), (1, 6, 4))
    b.output(b.add(y, np.linspace(-1, 1, 4, dtype=np.float32)))
    return b.build()


@pytest.mark.parametrize("name", DRIVERS)
def test_a_rank_5_attention_block_runs_on_the_driver(name: str) -> None:
    model = _attention_block()
    assert model.extensions == {"com.nnrt.rank6"}
    driver = load_driver(name)
    assert all(driver.supported_operations(model)), driver.support(model).reasons
    x = RNG.standard_normal((1, 6, 12)).astype(np.float32)
    with driver.prepare(model) as prepared:
        (got,) = prepared.execute([x]).outputs
    (want,) = nnrt.reference.run(model, [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(importlib.util.find_spec("ai_edge_litert") is None,
                    reason="ai-edge-litert has no wheel for this platform")
def test_litert_refuses_rank_7_naming_the_limit() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 2, 1, 3, 1, 2))
    b.output(b.operation(Op.EXPAND_DIMS, x, 0)[0])  # NNAPI has no cap for EXPAND_DIMS
    model = b.build()
    support = load_driver("litert").support(model)
    assert support.reasons == {0: "output operand 2 has no static shape of rank 1 to 6"}
