"""STRIDED_SLICE, the comparisons and FILL on the litert driver: each matches the reference
exactly (they move, compare or make values, they do not round), or is refused with the reason
TFLite computes it otherwise."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")

from ai_edge_litert.interpreter import Interpreter

from nnrt.drivers.litert import LitertDriver
from nnrt.drivers.litert.flatbuffer import write_partition

Op = nnrt.OperationType
T = nnrt.OperandType
RNG = np.random.default_rng(11)
_COMPARISONS = (Op.EQUAL, Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL)


def _run_both(model: nnrt.Model, feed: list[np.ndarray]) -> None:
    """Run ``model`` wholly on litert (in process) and on the reference: the same arrays."""
    driver = LitertDriver()
    assert not driver.support(model).reasons
    got = driver.prepare(model).execute(feed).outputs
    for g, w in zip(got, nnrt.reference.run(model, feed), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def _strided_slice(shape: tuple[int, ...]) -> nnrt.Model | None:
    """A STRIDED_SLICE of random begin / end / strides / masks over ``shape`` (None when NNAPI
    refuses it or its output is empty)."""
    rank = len(shape)
    begin = [int(RNG.integers(-d - 2, d + 2)) for d in shape]
    end = [int(RNG.integers(-d - 2, d + 2)) for d in shape]
    strides = [int(RNG.choice([-3, -2, -1, 1, 2, 3])) for _ in shape]
    shrink = 0
    for i, d in enumerate(shape):
        if RNG.random() < 0.25:  # one element, a positive stride, any index form
            shrink |= 1 << i
            begin[i] = int(RNG.integers(-d, d))
            end[i], strides[i] = begin[i] % d + 1, 1
    begin_mask, end_mask = (int(RNG.integers(0, 1 << rank)) & ~shrink for _ in range(2))
    b = nnrt.ModelBuilder()
    x = b.input("x", shape)
    try:
        y = b.operation(Op.STRIDED_SLICE, x, np.asarray(begin, np.int32),
                        np.asarray(end, np.int32), np.asarray(strides, np.int32), begin_mask,
                        end_mask, shrink)[0]
        b.output(y)
        model = b.build()
    except nnrt.NnrtError:
        return None
    dims = model.inferred_dims[model.outputs[0]]
    return model if dims and all(d > 0 for d in dims) else None


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5, 6])
def test_strided_slice_matches_the_reference_with_masks_negative_strides_and_clamping(
        rank: int) -> None:
    ran = 0
    while ran < 25:
        shape = tuple(int(d) for d in RNG.integers(1, 6, rank))
        model = _strided_slice(shape)
        if model is not None:
            _run_both(model, [RNG.standard_normal(shape).astype(np.float32)])
            ran += 1


def test_strided_slice_shrinking_every_dim_gives_shape_1_as_nnapi_does() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (3, 4, 2), "float16")
    ones = np.ones(3, np.int32)
    y = b.operation(Op.STRIDED_SLICE, x, np.array([-1, 2, 0], np.int32),
                    np.array([3, 3, 1], np.int32), ones, 0, 0, 0b111)[0]
    b.output(y)
    model = b.build()
    assert model.inferred_dims[model.outputs[0]] == (1,)
    interpreter = Interpreter(model_content=write_partition(model))
    interpreter.allocate_tensors()  # TFLite's shape, not a scalar reshaped on the way out
    assert interpreter.get_output_details()[0]["shape"].tolist() == [1]
    _run_both(model, [RNG.standard_normal((3, 4, 2)).astype(np.float16)])


@pytest.mark.parametrize("kind", _COMPARISONS, ids=lambda kind: kind.name)
def test_comparisons_match_the_reference_on_nan_infinities_zeros_and_int32_extremes(
        kind: nnrt.OperationType) -> None:
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.5, 3e38], np.float32)
    big = np.iinfo(np.int32)
    ints = np.array([big.min, -1, 0, 1, big.max, 7], np.int32)
    b = nnrt.ModelBuilder()
    f = b.input("f", (2, 1, 2, 1, 2, 1))  # broadcast at rank 6: every pair of specials
    g = b.input("g", (1, 2, 1, 2, 1, 2))
    i = b.input("i", (2, 1, 6), "int32")
    outputs = [b.operation(kind, f, g, output_types=[T.TENSOR_BOOL8])[0],
               b.operation(kind, i, ints[::-1].copy(), output_types=[T.TENSOR_BOOL8])[0]]
    if kind in (Op.EQUAL, Op.NOT_EQUAL):  # the orderings of BOOL8 are refused (below)
        bools = b.input("b", (2, 2), "bool")
        outputs.append(b.operation(kind, bools, np.array([[True, False]]),
                                   output_types=[T.TENSOR_BOOL8])[0])
    b.output(*outputs)
    feed = [specials.reshape(2, 1, 2, 1, 2, 1), specials.reshape(1, 2, 1, 2, 1, 2),
            np.stack([ints, ints[::-1]]).reshape(2, 1, 6),
            np.array([[True, False], [False, True]])]
    _run_both(b.build(), feed if kind in (Op.EQUAL, Op.NOT_EQUAL) else feed[:3])


def test_float16_comparisons_read_their_computed_input_rounded_to_float16() -> None:
    """``x + 0.1`` computed in float32 is 1.1 + 2.4e-8, rounded to float16 1.0996094: LESS
    and GREATER_EQUAL against that float16 constant see the rounded value, as the reference."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (4,), "float16")
    shifted = b.add(x, np.full(4, 0.1, np.float16))
    bound = np.full(4, 1.0996094, np.float16)
    b.output(*(b.operation(kind, shifted, bound, output_types=[T.TENSOR_BOOL8])[0]
               for kind in (Op.LESS, Op.GREATER_EQUAL, Op.NOT_EQUAL)))
    model = b.build()
    feed = [np.array([1.0, 1.0009766, -3.0, 0.5], np.float16)]
    assert nnrt.reference.run(model, feed)[0].tolist() == [False, False, True, True]
    _run_both(model, feed)


@pytest.mark.parametrize(("dtype", "value"), [("float32", -2.5), ("float16", 0.1),
                                               ("int32", -(2**31))])
def test_fill_makes_its_constant_dims_of_its_value(dtype: str, value: float) -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 1, 3, 1, 1, 2), dtype)
    scalar = {"float32": (float(value), T.FLOAT32), "float16": (float(value), T.FLOAT16),
              "int32": (int(value), T.INT32)}[dtype]
    filled = b.operation(Op.FILL, np.array([2, 1, 3, 1, 1, 2], np.int32), b.constant(*scalar),
                         output_types=[getattr(T, f"TENSOR_{dtype.upper()}")])[0]
    b.output(filled, b.add(x, filled))
    _run_both(b.build(), [np.arange(12).reshape(2, 1, 3, 1, 1, 2).astype(dtype)])


def test_partition_reasons_for_bool_orderings_and_tensor_parameters() -> None:
    b = nnrt.ModelBuilder()
    p = b.input("p", (3,), "bool")
    x = b.input("x", (4, 2))
    begin = b.input("begin", (2,), "int32")
    dims = b.input("dims", (2,), "int32")
    less = b.operation(Op.LESS, p, p, output_types=[T.TENSOR_BOOL8])[0]
    sliced = b.operation(Op.STRIDED_SLICE, x, begin, np.array([4, 2], np.int32),
                         np.array([1, 1], np.int32), 0, 0, 0)[0]
    filled = b.operation(Op.FILL, dims, 1.0, output_types=[T.TENSOR_FLOAT32])[0]
    b.output(less, sliced, filled)
    reasons = LitertDriver().support(b.build()).reasons
    assert "LESS of TENSOR_BOOL8 (TFLite's kernel has no BOOL inputs" in reasons[0]
    assert "input 1 (begin) is not a constant" in reasons[1]
    assert "input 0 (dims) is not a constant" in reasons[2]


@pytest.mark.parametrize(("shape", "multiples", "dtype"), [
    ((3,), (2,), np.float32), ((2, 3), (1, 4), np.int32), ((1, 2, 1, 3), (2, 1, 3, 1), np.float32),
    ((2, 1, 2, 1, 2, 1), (1, 2, 1, 2, 1, 2), np.float32)])
def test_tile_matches_the_reference(shape: tuple[int, ...], multiples: tuple[int, ...],
                                    dtype: type) -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", shape, dtype=np.dtype(dtype).name)
    b.output(b.operation(nnrt.OperationType.TILE, x, b.constant(np.array(multiples, np.int32)))[0])
    model = b.build()
    driver = LitertDriver()
    assert not driver.support(model).reasons
    value = (np.arange(np.prod(shape)) - 3).reshape(shape).astype(dtype)
    got = driver.prepare(model).execute([value]).outputs[0]
    np.testing.assert_array_equal(got, np.tile(value, multiples))
