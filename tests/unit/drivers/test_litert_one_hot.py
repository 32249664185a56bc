"""The litert compiler's one-hot product rewrite: EQUAL with arange(N) -> SELECT(1, 0) ->
FULLY_CONNECTED written as a GATHER of weight rows, exactly (out-of-range indices included),
and only where it is exact."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")

from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert import LitertDriver
from nnrt.drivers.litert.flatbuffer import write_partition

Op = nnrt.OperationType
T = nnrt.OperandType
N, UNITS = 7, 5
RNG = np.random.default_rng(257)
#: In range, at its edges, just outside, and the int32 extremes (an all-zero one-hot row).
INDICES = np.array([[0, 6, 3, -1, 7, 1000], [-(2**31), 2**31 - 1, 5, 2, 1, 6]], np.int32)


def _one_hot(*, arange: np.ndarray | None = None, ones: float = 1.0,
             weights: np.ndarray | None = None, activation: int = 0,
             read_select: bool = False, dtype: str = "float32") -> nnrt.Model:
    """bytes (2, 6) -> EXPAND_DIMS -> EQUAL arange -> SELECT(ones, zeros) -> RESHAPE (12, N)
    -> FULLY_CONNECTED (UNITS)."""
    b = nnrt.ModelBuilder()
    x = b.input("bytes", (2, 6), "int32")
    expanded = b.operation(Op.EXPAND_DIMS, x, 2)[0]
    values = np.arange(N, dtype=np.int32) if arange is None else arange
    hot = b.operation(Op.EQUAL, expanded, values.reshape(1, 1, N),
                      output_types=[T.TENSOR_BOOL8])[0]
    kind = T.TENSOR_FLOAT16 if dtype == "float16" else T.TENSOR_FLOAT32
    rows = b.operation(Op.SELECT, hot, np.full((2, 6, N), ones, dtype),
                       np.zeros((2, 6, N), dtype), output_types=[kind])[0]
    flat = b.reshape(rows, (12, N))
    w = RNG.standard_normal((UNITS, N)).astype(dtype) if weights is None else weights
    y = b.operation(Op.FULLY_CONNECTED, flat, w, RNG.standard_normal(UNITS).astype(dtype),
                    activation)[0]
    b.output(y, *([rows] if read_select else []))
    return b.build()


def _builtins(model: nnrt.Model) -> list[str]:
    names = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}
    tflite = fb.ModelT.InitFromPackedBuf(write_partition(model), 0)
    return [names[tflite.operatorCodes[o.opcodeIndex].builtinCode]
            for o in tflite.subgraphs[0].operators]


def _same_as_reference(model: nnrt.Model) -> None:
    driver = LitertDriver()
    assert not driver.support(model).reasons
    got = driver.prepare(model).execute([INDICES]).outputs
    for g, want in zip(got, nnrt.reference.run(model, [INDICES]), strict=True):
        np.testing.assert_array_equal(g, want)  # bit for bit: one rounding, as the product


@pytest.mark.parametrize(("activation", "dtype"), [(0, "float32"), (1, "float32"),
                                                   (3, "float32"), (0, "float16")])
def test_a_one_hot_product_is_a_gather_of_weight_rows(activation: int, dtype: str) -> None:
    model = _one_hot(activation=activation, dtype=dtype)
    assert _builtins(model) == ["RESHAPE", "MAXIMUM", "MINIMUM", "ADD", "GATHER"]
    _same_as_reference(model)
    want = nnrt.reference.run(model, [INDICES])[0]
    bias_only = nnrt.reference.run(model, [np.full((2, 6), -1, np.int32)])[0][0]
    np.testing.assert_array_equal(want[[3, 4, 5, 6, 7]], np.tile(bias_only, (5, 1)))


@pytest.mark.parametrize("change", [
    {"arange": np.array([0, 1, 2, 3, 4, 6, 5], np.int32)},  # not 0..N-1 in order
    {"ones": 2.0},  # SELECT picks 2, not 1
    {"weights": np.where(np.eye(UNITS, N) > 0, np.inf, 1.0).astype(np.float32)},  # 0 * inf
    {"read_select": True},  # the one-hot rows are also a model output
], ids=["arange", "ones", "inf_weight", "read_elsewhere"])
def test_only_an_exact_one_hot_product_is_rewritten(change: dict[str, object]) -> None:
    model = _one_hot(**change)  # type: ignore[arg-type]
    ops = _builtins(model)
    assert "GATHER" not in ops and "FULLY_CONNECTED" in ops
    _same_as_reference(model)
