"""The cpu driver's lowerings for what ONNX-imported models use beyond its first 26 operations:
element-wise math, reductions, data movement, UNIDIRECTIONAL_SEQUENCE_LSTM, and the int32 /
bool operations (comparisons, SELECT, CAST, integer arithmetic).

Oracles: the reference driver (``nnrt.reference.run``, float64 kernels), onnxruntime for an
imported ONNX LSTM, and numpy's own ``pad`` / ``tile`` for the data-movement kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt.drivers.cpu import CpuDriver, compile_partition
from nnrt.drivers.cpu.kernels.data import mirror_pad, pad, slice_copy, tile
from nnrt.drivers.cpu.kernels.typed import typed_slot
from nnrt.drivers.cpu.module import decode_module, encode_module
from nnrt.drivers.cpu.split import join_module, split_module
from nnrt.model.builder import Omitted
from nnrt.testing.spec import FLOAT32_TOL

Op = nnrt.OperationType
T = nnrt.OperandType
Array = np.ndarray[Any, Any]
ATOL, RTOL = FLOAT32_TOL


def _run_both(model: nnrt.Model, inputs: list[Array]) -> tuple[list[Array], list[Array]]:
    """(cpu driver outputs, reference outputs); the whole model must be one cpu partition."""
    driver = CpuDriver(optimize_after=0)
    assert driver.support(model).reasons == {}
    with driver.prepare(model) as prepared:
        got = [np.array(a) for a in prepared.execute(inputs).outputs]
    return got, list(nnrt.reference.run(model, inputs))


def _assert_matches(model: nnrt.Model, inputs: list[Array], atol: float = ATOL,
                    rtol: float = RTOL) -> None:
    got, want = _run_both(model, inputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, atol=atol, rtol=rtol)


# -- a mixed model is one partition ----------------------------------------------------------


def _mixed_model() -> tuple[nnrt.Model, list[Array]]:
    """Every new family at once: math, reductions, slicing, padding, gather, tile, split,
    one-hot (EQUAL + SELECT), CAST, ARGMIN and int32 arithmetic."""
    rng = np.random.default_rng(7)
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 6, 8))
    ids = b.input("ids", (2, 5), "int32")
    e = b.operation(Op.EXP, b.operation(Op.NEG, b.operation(Op.ABS, x)[0])[0])[0]
    lg = b.operation(Op.LOG, b.add(e, [1.0]))[0]
    mx = b.operation(Op.MAXIMUM, lg, b.constant(np.full((8,), 0.1, np.float32)))[0]
    pw = b.operation(Op.POW, mx, b.constant(np.array([2.0], np.float32)))[0]
    pr = b.operation(Op.PRELU, b.sub(pw, [0.05]), b.constant(np.full((8,), 0.25, np.float32)))[0]
    hs = b.operation(Op.HARD_SWISH, b.operation(Op.FLOOR, b.mul(pr, [40.0]))[0])[0]
    s = b.operation(Op.STRIDED_SLICE, hs, b.constant(np.array([0, 5, 0], np.int32)),
                    b.constant(np.array([2, 0, 8], np.int32)),
                    b.constant(np.array([1, -2, 2], np.int32)), 0, 0, 0)[0]
    p = b.operation(Op.PAD_V2, s, b.constant(np.array([[0, 0], [1, 0], [0, 2]], np.int32)),
                    -1.5)[0]
    r = b.operation(Op.REDUCE_MAX, p, b.constant(np.array([2], np.int32)), True)[0]
    t = b.operation(Op.TILE, r, b.constant(np.array([1, 1, 3], np.int32)))[0]
    g = b.operation(Op.GATHER, t, 1, b.constant(np.array([3, 0, 2], np.int32)))[0]
    halves = b.operation(Op.SPLIT, x, 2, 2, outputs=2)
    total = b.operation(Op.REDUCE_SUM, halves[1], b.constant(np.array([1, 2], np.int32)),
                        False)[0]
    doubled = b.mul(ids, b.constant(np.array([2], np.int32)))
    hot = b.operation(Op.EQUAL, b.operation(Op.EXPAND_DIMS, doubled, 2)[0],
                      b.constant(np.arange(4, dtype=np.int32).reshape(1, 1, 4)),
                      output_types=[T.TENSOR_BOOL8])[0]
    one_hot = b.operation(Op.SELECT, hot, b.constant(np.ones((2, 5, 4), np.float32)),
                          b.constant(np.zeros((2, 5, 4), np.float32)),
                          output_types=[T.TENSOR_FLOAT32])[0]
    as_float = b.operation(Op.CAST, ids, output_types=[T.TENSOR_FLOAT32])[0]
    arg = b.operation(Op.ARGMIN, hs, 2, output_types=[T.TENSOR_INT32])[0]
    b.output(g, total, one_hot, as_float, arg)
    inputs = [rng.standard_normal((2, 6, 8)).astype(np.float32),
              rng.integers(0, 3, (2, 5)).astype(np.int32)]
    return b.build(), inputs


def test_a_mixed_model_is_one_cpu_partition_and_matches_the_reference() -> None:
    model, inputs = _mixed_model()
    _assert_matches(model, inputs)
    part = compile_partition(model, "partition_0")
    source = part.source
    assert "square(" in source and "power(" not in source  # POW by a constant 2
    assert "select(" not in source and source.count("cast(") == 2  # one-hot: a cast
    assert "typed_slot(" in source  # int32 / bool intermediates live in the arena
    # GATHER by [3, 0, 2] keeps its indices as an int32 module tensor.
    assert any(t.dtype == np.int32 and t.tolist() == [3, 0, 2] for t in part.tensors.values())


def test_bool_and_int32_values_share_the_float32_arena_without_overlap() -> None:
    """Several bool values of sizes that are not multiples of 4, live at the same time."""
    rng = np.random.default_rng(1)
    b = nnrt.ModelBuilder()
    x = b.input("x", (3, 7))
    y = b.input("y", (3, 7))
    less = b.operation(Op.LESS, x, y, output_types=[T.TENSOR_BOOL8])[0]
    greater = b.operation(Op.GREATER, x, b.constant(np.zeros(1, np.float32)),
                          output_types=[T.TENSOR_BOOL8])[0]
    both = b.operation(Op.LOGICAL_AND, less, greater)[0]
    either = b.operation(Op.LOGICAL_OR, less, b.operation(Op.LOGICAL_NOT, greater)[0])[0]
    chosen = b.operation(Op.SELECT, both, x, y, output_types=[T.TENSOR_FLOAT32])[0]
    other = b.operation(Op.SELECT, either, b.mul(x, [2.0]), y,
                        output_types=[T.TENSOR_FLOAT32])[0]
    third = b.operation(Op.SELECT, less, b.constant(np.full((3, 7), 2.5, np.float32)), y,
                        output_types=[T.TENSOR_FLOAT32])[0]
    truncated = b.operation(Op.CAST, b.mul(x, [100.0]), output_types=[T.TENSOR_INT32])[0]
    back = b.operation(Op.CAST, b.operation(Op.ABS, truncated)[0],
                       output_types=[T.TENSOR_FLOAT32])[0]
    b.output(chosen, other, third, back, either)
    model = b.build()
    assert ", 2.5, x1)" in compile_partition(model, "p").source  # a uniform branch: a number
    inputs = [rng.standard_normal((3, 7)).astype(np.float32) for _ in range(2)]
    got, want = _run_both(model, inputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_integer_and_cast_edge_cases_follow_the_reference() -> None:
    b = nnrt.ModelBuilder()
    i = b.input("i", (6,), "int32")
    f = b.input("f", (6,))
    wrapped = b.operation(Op.NEG, b.operation(Op.ABS, i)[0])[0]
    summed = b.add(i, b.constant(np.full((6,), 2**31 - 1, np.int32)))
    saturated = b.operation(Op.CAST, f, output_types=[T.TENSOR_INT32])[0]
    nan_equal = b.operation(Op.NOT_EQUAL, f, f, output_types=[T.TENSOR_BOOL8])[0]
    b.output(wrapped, summed, saturated, nan_equal)
    model = b.build()
    inputs = [np.array([-2**31, -5, 0, 3, 2**31 - 1, 1], np.int32),
              np.array([np.nan, 3e9, -3e9, -2.7, 2.7, -0.0], np.float32)]
    got, want = _run_both(model, inputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


# -- float32 element-wise and reductions -----------------------------------------------------


@pytest.mark.parametrize("op", [Op.EXP, Op.LOG, Op.NEG, Op.ABS, Op.FLOOR, Op.SIN,
                                Op.HARD_SWISH], ids=lambda op: op.name)
def test_unary_ops_match_the_reference_in_place_and_on_special_values(op: Op) -> None:
    rng = np.random.default_rng(int(op))
    b = nnrt.ModelBuilder()
    x = b.input("x", (4, 33))
    # A dying intermediate: the op computes in place over MUL's result.
    b.output(b.add(b.operation(op, b.mul(x, [1.5]))[0], [0.0]))
    model = b.build()
    values = rng.uniform(-8.0, 8.0, (4, 33)).astype(np.float32)
    values[0, :6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30]
    _assert_matches(model, [values])
    assert compile_partition(model, "p").in_place_fused >= 1


def test_elu_prelu_and_log_softmax_match_the_reference() -> None:
    rng = np.random.default_rng(5)
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3, 10))
    elu = b.operation(Op.ELU, x, 0.7)[0]
    prelu = b.operation(Op.PRELU, b.mul(x, [1.0]), b.constant(
        rng.uniform(0.0, 0.5, (3, 1)).astype(np.float32)))[0]
    log_softmax = b.operation(Op.LOG_SOFTMAX, x, 1.3, 1)[0]
    b.output(elu, prelu, log_softmax)
    _assert_matches(b.build(), [rng.normal(0.0, 3.0, (2, 3, 10)).astype(np.float32)])


@pytest.mark.parametrize(("op", "axes", "keep"), [
    (Op.REDUCE_SUM, [1], False), (Op.REDUCE_SUM, [0, -1], True), (Op.REDUCE_MAX, [2], False),
    (Op.REDUCE_MIN, [0, 1, 2], False), (Op.REDUCE_PROD, [1, 1], True),
])
def test_reductions_match_the_reference(op: Op, axes: list[int], keep: bool) -> None:
    rng = np.random.default_rng(len(axes))
    b = nnrt.ModelBuilder()
    x = b.input("x", (3, 500, 4))
    b.output(b.operation(op, x, b.constant(np.array(axes, np.int32)), keep)[0])
    scale = 1.0 if op != Op.REDUCE_PROD else 0.02
    _assert_matches(b.build(), [(1.0 + scale * rng.standard_normal((3, 500, 4))).astype(
        np.float32)])


def test_instance_normalization_matches_the_reference() -> None:
    rng = np.random.default_rng(9)
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 5, 6, 3))
    b.output(b.operation(Op.INSTANCE_NORMALIZATION, x, 1.5, -0.25, 1e-5, False)[0],
             b.operation(Op.INSTANCE_NORMALIZATION, x, 0.5, 0.75, 1e-3, True)[0])
    _assert_matches(b.build(), [rng.normal(2.0, 3.0, (2, 5, 6, 3)).astype(np.float32)])


# -- data movement ---------------------------------------------------------------------------


def test_data_movement_kernels_match_numpy() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    pads = ((1, 2), (0, 3), (2, 0))
    out = np.full((6, 7, 7), np.nan, np.float32)
    pad(out, x, pads, -np.inf)
    np.testing.assert_array_equal(out, np.pad(x, pads, constant_values=-np.inf))
    for mode, mirrored in (("reflect", pads), ("symmetric", ((1, 3), (4, 0), (2, 5)))):
        want = np.pad(x, mirrored, mode=mode)
        out = np.full(want.shape, np.nan, np.float32)
        mirror_pad(out, x, mirrored, mode == "symmetric")
        np.testing.assert_array_equal(out, want)
    tiled = np.empty((6, 4, 15), np.float32)
    tile(tiled, x, (2, 1, 3))
    np.testing.assert_array_equal(tiled, np.tile(x, (2, 1, 3)))
    strided = np.empty((15, 4, 6), np.float32).T  # not contiguous: computed, then copied
    tile(strided, x, (2, 1, 3))
    np.testing.assert_array_equal(strided, np.tile(x, (2, 1, 3)))
    with pytest.raises(ValueError, match="does not fill"):  # hostile multiples: no allocation
        tile(strided, x, (10**9, 1, 1))
    sliced = np.empty((2, 5), np.float32)
    slice_copy(sliced, x, ((2, None, -2), (1, 2, 1), (4, None, -1)))
    np.testing.assert_array_equal(sliced, x[2::-2, 1, 4::-1])


def test_gather_with_indices_given_at_execution_checks_their_range() -> None:
    b = nnrt.ModelBuilder()
    table = b.input("table", (10, 4))
    ids = b.input("ids", (2, 3), "int32")
    b.output(b.operation(Op.GATHER, table, 0, ids)[0])
    model = b.build()
    rng = np.random.default_rng(0)
    values = rng.standard_normal((10, 4)).astype(np.float32)
    _assert_matches(model, [values, np.array([[9, 0, 3], [3, 3, 1]], np.int32)])
    with CpuDriver(optimize_after=0).prepare(model) as prepared, pytest.raises(
            nnrt.BadData, match=r"operation 0 \(GATHER\), input 2 \(indices\): index 10 at "
                                r"position 4 is out of range for axis 0 of size 10"):
        prepared.execute([values, np.array([[9, 0, 3], [3, 10, -1]], np.int32)])


def test_gathers_of_arithmetic_progressions_become_slices() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (4, 9))
    b.output(b.operation(Op.GATHER, x, 1, b.constant(np.array([7, 4, 1], np.int32)))[0],
             b.operation(Op.GATHER, x, 0, b.constant(np.array([2], np.int32)))[0],
             b.operation(Op.REVERSE, x, b.constant(np.array([1], np.int32)))[0])
    model = b.build()
    assert "gather(" not in compile_partition(model, "p").source
    _assert_matches(model, [np.arange(36, dtype=np.float32).reshape(4, 9)])


# -- UNIDIRECTIONAL_SEQUENCE_LSTM --------------------------------------------------------------


def _lstm_model(*, steps: int, batch: int, size: int, units: int, cifg: bool = False,
                peephole: bool = False, projection: int = 0, norm: bool = False,
                time_major: bool = True, runtime_weights: bool = False, clip: float = 0.0,
                seed: int = 0) -> tuple[nnrt.Model, list[Array]]:
    rng = np.random.default_rng(seed)
    b = nnrt.ModelBuilder()
    shape = (steps, batch, size) if time_major else (batch, steps, size)
    x = b.input("x", shape)
    feeds = [rng.uniform(-1.0, 1.0, shape).astype(np.float32)]
    out_size = projection or units
    none = Omitted(T.TENSOR_FLOAT32)

    def tensor(dims: tuple[int, ...], present: bool = True) -> Any:
        if not present:
            return none
        value = rng.uniform(-0.4, 0.4, dims).astype(np.float32)
        if runtime_weights and len(dims) == 2:
            feeds.append(value)
            return b.input(f"w{len(feeds)}", dims)
        return b.constant(value)

    args = [x, *(tensor((units, size), k > 0 or not cifg) for k in range(4)),
            *(tensor((units, out_size), k > 0 or not cifg) for k in range(4)),
            tensor((units,), peephole and not cifg), tensor((units,), peephole),
            tensor((units,), peephole),
            *(tensor((units,), k > 0 or not cifg) for k in range(4)),
            tensor((out_size, units), projection > 0), tensor((out_size,), projection > 0),
            b.input("h0", (batch, out_size)), b.input("c0", (batch, units)),
            4, clip, clip / 2, time_major]
    feeds += [rng.uniform(-0.5, 0.5, (batch, out_size)).astype(np.float32),
              rng.uniform(-0.5, 0.5, (batch, units)).astype(np.float32)]
    if norm:
        args += [tensor((units,), not cifg), *(tensor((units,)) for _ in range(3))]
    b.output(*b.operation(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, *args, outputs=3))
    return b.build(), feeds


@pytest.mark.parametrize("variant", [
    {},
    {"cifg": True, "time_major": False},
    {"peephole": True, "projection": 6, "clip": 0.8},
    {"norm": True, "peephole": True},
    {"norm": True, "cifg": True, "projection": 5},
    {"runtime_weights": True, "time_major": False},
], ids=["plain", "cifg_batch_major", "peephole_projection_clip", "norm_peephole",
        "norm_cifg_projection", "runtime_weights"])
def test_lstm_matches_the_reference_on_random_weights(variant: dict[str, Any]) -> None:
    model, feeds = _lstm_model(steps=12, batch=3, size=7, units=16, seed=len(variant),
                               **variant)
    _assert_matches(model, feeds)


@pytest.fixture(scope="module")
def ort() -> Any:
    """onnxruntime, imported once per module (its import opens files that stay open, which the
    per-test leak check would report)."""
    pytest.importorskip("onnx")
    return pytest.importorskip("onnxruntime")


def test_lstm_imported_from_onnx_matches_onnxruntime(ort: Any) -> None:
    """A silero-like LSTM (128 units, one step) and a longer one, imported by nnrt.onnx."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import nnrt.onnx

    rng = np.random.default_rng(11)
    for steps, hidden in ((1, 128), (20, 24)):
        size = hidden
        inits = [numpy_helper.from_array(rng.uniform(-0.2, 0.2, s).astype(np.float32), n)
                 for n, s in (("W", (1, 4 * hidden, size)), ("R", (1, 4 * hidden, hidden)),
                              ("B", (1, 8 * hidden)))]
        node = helper.make_node("LSTM", ["X", "W", "R", "B", "", "h0", "c0"], ["Y", "Yh", "Yc"],
                                hidden_size=hidden)
        dims = {"X": [steps, 2, size], "h0": [1, 2, hidden], "c0": [1, 2, hidden]}
        graph = helper.make_graph(
            [node], "lstm",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in dims.items()],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
             for n in ("Y", "Yh", "Yc")], inits)
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                                  ir_version=8)
        feed = {n: rng.uniform(-1.0, 1.0, d).astype(np.float32) for n, d in dims.items()}
        want = ort.InferenceSession(proto.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feed)
        model = nnrt.onnx.load(onnx.load_from_string(proto.SerializeToString()))
        driver = CpuDriver(optimize_after=0)
        assert driver.support(model).reasons == {}
        with driver.prepare(model) as prepared:
            got = prepared.execute([feed[n] for n in dims]).outputs
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, atol=ATOL, rtol=RTOL)


# -- rejections, hostile arguments, the module format ----------------------------------------


def test_what_stays_unselected_is_named() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3))
    h = b.input("h", (2, 3), "float16")
    axes = b.input("axes", (1,), "int32")
    ids = b.input("ids", (2,), "int32")
    b.output(b.operation(Op.REDUCE_SUM, x, axes, False)[0], b.operation(Op.EXP, h)[0],
             b.div(ids, ids),
             b.operation(Op.TOPK_V2, x, 2, outputs=2,
                         output_types=[T.TENSOR_FLOAT32, T.TENSOR_INT32])[0])
    reasons = CpuDriver().support(b.build()).reasons
    assert reasons == {0: "input 1 (axes) is not a constant (parameters must be)",
                       1: "TENSOR_FLOAT16 not supported",
                       2: "TENSOR_INT32 not supported",
                       3: "operation type TOPK_V2 not accelerated"}


def test_typed_slot_refuses_bad_types_and_ranges() -> None:
    arena = np.zeros(8, np.float32)
    view = typed_slot(arena, 2, (3, 7), "bool")
    assert view.shape == (3, 7) and view.dtype == np.bool_
    view[...] = True
    assert np.count_nonzero(arena.view(np.uint8)) == 21
    assert typed_slot(arena, 0, (8,), "int32").dtype == np.int32
    with pytest.raises(ValueError, match="dtype 'float64' is not one of"):
        typed_slot(arena, 0, (2,), "float64")
    with pytest.raises(ValueError, match="outside the scratch arena"):
        typed_slot(arena, 4, (5,), "int32")


def test_bool_tensors_round_trip_through_the_module_and_the_cache_split() -> None:
    empty = {"frame": 0, "inputs": [], "outputs": [], "tensors": [], "slots": [], "steps": []}
    tensors = {"c0": np.array([True, False, True]), "c1": np.arange(3, dtype=np.int32)}
    module = encode_module({"p": empty}, ["p"], tensors, {"p": 0})
    decoded = decode_module(module)
    np.testing.assert_array_equal(decoded.tensors["c0"], tensors["c0"])
    assert decoded.tensors["c0"].dtype == np.bool_
    code, constants = split_module(module)
    np.testing.assert_array_equal(join_module(code, constants).tensors["c0"], tensors["c0"])
