"""The litert compiler's rewrites for transformer-style graphs: a bias ADD after a
FULLY_CONNECTED (through a RESHAPE keeping the last axis) folded into its bias, and POW by a
constant 2 written as ``x * x`` (XNNPACK has no POW kernel) — each only where it is exact up to
float rounding, and the results as the reference's."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")

from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert import LitertDriver
from nnrt.drivers.litert.flatbuffer import write_partition

Op = nnrt.OperationType
OT = nnrt.OperandType
ROWS, DEPTH, UNITS = 6, 8, 5
RNG = np.random.default_rng(384)
X = RNG.standard_normal((2, 3, DEPTH)).astype(np.float32)


def _builtins(model: nnrt.Model) -> list[str]:
    names = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}
    tflite = fb.ModelT.InitFromPackedBuf(write_partition(model), 0)
    return [names[tflite.operatorCodes[o.opcodeIndex].builtinCode]
            for o in tflite.subgraphs[0].operators]


def _close_to_reference(model: nnrt.Model, x: np.ndarray = X) -> None:
    driver = LitertDriver()
    assert not driver.support(model).reasons
    got = driver.prepare(model).execute([x]).outputs
    for g, want in zip(got, nnrt.reference.run(model, [x]), strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)


def _matmul_add(*, reshape: tuple[int, ...] | None = (2, 3, UNITS),
                shift: np.ndarray | None = None, fc_activation: str | None = None,
                add_activation: str | None = None, read_product: bool = False) -> nnrt.Model:
    """x (2, 3, DEPTH) -> RESHAPE (ROWS, DEPTH) -> FULLY_CONNECTED (zero bias) -> [RESHAPE]
    -> ADD shift: ONNX's MatMul + Add as the importer writes it."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3, DEPTH))
    weights = RNG.standard_normal((UNITS, DEPTH)).astype(np.float32)
    product = b.fully_connected(b.reshape(x, (ROWS, DEPTH)), weights,
                                np.zeros(UNITS, np.float32), fc_activation)
    shaped = product if reshape is None else b.reshape(product, reshape)
    vector = RNG.standard_normal(UNITS).astype(np.float32) if shift is None else shift
    y = b.add(shaped, vector, add_activation)
    b.output(y, *([product] if read_product else []))
    return b.build()


@pytest.mark.parametrize(("reshape", "activation"), [
    ((2, 3, UNITS), None), ((2, 3, UNITS), "relu"), (None, None), (None, "relu6"),
    ((ROWS, 1, UNITS), None)])
def test_a_bias_add_after_a_fully_connected_is_its_bias(reshape: tuple[int, ...] | None,
                                                        activation: str | None) -> None:
    model = _matmul_add(reshape=reshape, add_activation=activation)
    assert "ADD" not in _builtins(model)
    _close_to_reference(model)


def test_the_folded_bias_broadcasts_a_one_element_shift() -> None:
    model = _matmul_add(shift=np.full((1, 1, 1), 0.25, np.float32))
    assert "ADD" not in _builtins(model)
    _close_to_reference(model)


@pytest.mark.parametrize("change", [
    {"shift": RNG.standard_normal((3, 1)).astype(np.float32)},  # varies along the rows
    {"shift": RNG.standard_normal((4, 2, 3, UNITS)).astype(np.float32)},  # adds a dimension
    {"fc_activation": "relu"},  # the ADD comes after the clamp
    {"read_product": True},  # the product is also a model output
    {"reshape": (3, 2 * UNITS)},  # the RESHAPE mixes the columns into the last axis
], ids=["per_row", "broadcast_up", "activation_first", "read_elsewhere", "mixed_columns"])
def test_an_add_that_is_not_a_bias_stays(change: dict[str, object]) -> None:
    if change.get("reshape") == (3, 2 * UNITS):
        change = {**change, "shift": RNG.standard_normal(2 * UNITS).astype(np.float32)}
    model = _matmul_add(**change)  # type: ignore[arg-type]
    assert "ADD" in _builtins(model)
    _close_to_reference(model)


@pytest.mark.parametrize("exponent", [2.0, np.array([2.0, 2.0])])
def test_pow_by_two_is_a_product(exponent: float | np.ndarray) -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (3, 2))
    b.output(b.operation(Op.POW, x, b.constant(np.asarray(exponent, np.float32).reshape(-1)))[0])
    model = b.build()
    assert _builtins(model) == ["MUL"]
    _close_to_reference(model, np.array([[-3.5, 0.0], [1e-20, 1e20], [np.inf, np.nan]],
                                        np.float32))


@pytest.mark.parametrize("exponent", [3.0, np.array([2.0, 0.5])])
def test_pow_with_a_broadcast_exponent_is_refused(exponent: float | np.ndarray) -> None:
    # TFLite's broadcasting POW gives FLT_MAX where NNAPI gives inf (1e20 ** 3)
    b = nnrt.ModelBuilder()
    x = b.input("x", (3, 2))
    b.output(b.operation(Op.POW, x, b.constant(np.asarray(exponent, np.float32).reshape(-1)))[0])
    reasons = LitertDriver().support(b.build()).reasons
    assert "saturates at +-FLT_MAX" in " ".join(str(r) for r in reasons.values())


def test_pow_of_two_tensors_of_one_shape_overflows_to_inf_as_nnapi_does() -> None:
    b = nnrt.ModelBuilder()
    x, e = b.input("x", (4,)), b.input("e", (4,))
    b.output(b.operation(Op.POW, x, e)[0])
    model = b.build()
    driver = LitertDriver()
    assert not driver.support(model).reasons
    xs = np.array([1e20, np.inf, -np.inf, 3.0], np.float32)
    es = np.array([3.0, 3.0, 3.0, 2.0], np.float32)
    got = driver.prepare(model).execute([xs, es]).outputs[0]
    np.testing.assert_array_equal(got, nnrt.reference.run(model, [xs, es])[0])


def _float16_weights(read_weights: bool) -> nnrt.Model:
    """TFLite's float16-weights pattern as nnrt.tflite.load writes it: a TENSOR_FLOAT16
    constant, CAST to float32, as a FULLY_CONNECTED's weights (optionally also an output)."""
    m = nnrt.Model()
    x = m.add_operand(OT.TENSOR_FLOAT32, (ROWS, DEPTH))
    half = m.add_operand(OT.TENSOR_FLOAT16, (UNITS, DEPTH))
    m.set_operand_value(half, RNG.standard_normal((UNITS, DEPTH)).astype(np.float16))
    weights = m.add_operand(OT.TENSOR_FLOAT32, (UNITS, DEPTH))
    m.add_operation(Op.CAST, [half], [weights])
    bias = m.add_operand(OT.TENSOR_FLOAT32, (UNITS,))
    m.set_operand_value(bias, np.zeros(UNITS, np.float32))
    act = m.add_operand(OT.INT32, ())
    m.set_operand_value(act, 0)
    y = m.add_operand(OT.TENSOR_FLOAT32, (ROWS, UNITS))
    m.add_operation(Op.FULLY_CONNECTED, [x, weights, bias, act], [y])
    m.identify_inputs_and_outputs([x], [y, weights] if read_weights else [y])
    return m.finish()


def test_float16_constant_weights_are_written_widened_not_cast_at_execution() -> None:
    """XNNPACK packs constant weights once; a CAST at execution would make them dynamic."""
    x = RNG.standard_normal((ROWS, DEPTH)).astype(np.float32)
    model = _float16_weights(read_weights=False)
    assert _builtins(model) == ["FULLY_CONNECTED"]
    _close_to_reference(model, x)
    # an output of the partition keeps its CAST (its tensor is written by an operator)
    model = _float16_weights(read_weights=True)
    assert "CAST" in _builtins(model)
    _close_to_reference(model, x)
