"""UNIDIRECTIONAL_SEQUENCE_LSTM (nnrt/ops/sequence_lstm.py): malformed models are rejected with
precise errors, and results agree with onnxruntime's ONNX LSTM."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from single_op import IN, OMIT, build

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32
UNITS, INPUT_SIZE, BATCH, STEPS = 4, 3, 2, 3
OP = r"operation 0 \(UNIDIRECTIONAL_SEQUENCE_LSTM\)"


def _inputs(*, cifg: bool = False, peephole: bool = False, projection: int | None = None,
            layer_norm: bool = False) -> list[list[Any]]:
    """Input specs ``[type, dims, value]`` (value IN: a model input; OMIT: NO_VALUE)."""
    out = projection or UNITS

    def t(dims: tuple[int, ...], present: bool = True) -> list[Any]:
        return [F32, dims, IN if present else OMIT]

    specs = [t((STEPS, BATCH, INPUT_SIZE)),
             *(t((UNITS, INPUT_SIZE), not cifg or k > 0) for k in range(4)),
             *(t((UNITS, out), not cifg or k > 0) for k in range(4)),
             t((UNITS,), peephole and not cifg), t((UNITS,), peephole), t((UNITS,), peephole),
             *(t((UNITS,), not cifg or k > 0) for k in range(4)),
             t((out, UNITS), projection is not None), t((out,), False),
             t((BATCH, out)), t((BATCH, UNITS)),
             [T.INT32, (), 4], [T.FLOAT32, (), 0.0], [T.FLOAT32, (), 0.0], [T.BOOL, (), True]]
    if layer_norm:
        specs += [t((UNITS,), not cifg), t((UNITS,)), t((UNITS,)), t((UNITS,))]
    return specs


def _outputs(n: int = 3, out: int = UNITS) -> list[tuple[Any, ...]]:
    return [(F32, (STEPS, BATCH, out)), (F32, (BATCH, out)), (F32, (BATCH, UNITS))][:n]


def _model(inputs: list[list[Any]], outputs: list[tuple[Any, ...]] | None = None) -> nnrt.Model:
    return build(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, [tuple(s) for s in inputs],
                 outputs if outputs is not None else _outputs(), model_input=IN)


def _rejects(inputs: list[list[Any]], message: str,
             outputs: list[tuple[Any, ...]] | None = None) -> None:
    with pytest.raises(nnrt.BadData, match=f"{OP}, {message}"):
        _model(inputs, outputs).finish()


def test_valid_signatures_finish_with_inferred_shapes() -> None:
    model = _model(_inputs(projection=3, peephole=True), _outputs(out=3)).finish()
    assert model.inferred_dims[model.outputs[0]] == (STEPS, BATCH, 3)
    _model(_inputs(cifg=True, peephole=True, layer_norm=True)).finish()
    _model(_inputs(), _outputs(1)).finish()


def test_counts() -> None:
    with pytest.raises(nnrt.BadData, match=f"{OP}: expected 24 or 28 inputs, got 25"):
        _model([*_inputs(), [F32, (UNITS,), IN]]).finish()
    with pytest.raises(nnrt.BadData, match=f"{OP}: expected 1 or 3 outputs, got 2"):
        _model(_inputs(), _outputs(2)).finish()


@pytest.mark.parametrize(("slot", "spec", "message"), [
    (0, [T.TENSOR_INT32, (STEPS, BATCH, INPUT_SIZE), IN],
     r"input 0 \(input\): expected TENSOR_FLOAT32 or TENSOR_FLOAT16, got TENSOR_INT32"),
    (6, [T.TENSOR_FLOAT16, (UNITS, UNITS), IN],
     r"input 6 \(recurrent_to_forget_weights\): expected TENSOR_FLOAT32, got TENSOR_FLOAT16"),
    (13, [F32, (UNITS,), OMIT], r"input 13 \(forget_gate_bias\): this input is required"),
    (20, [T.FLOAT32, (), 4.0], r"input 20 \(activation\): expected INT32, got FLOAT32"),
    (21, [T.FLOAT16, (), 0.0], r"input 21 \(cell_clip\): expected FLOAT32, got FLOAT16"),
    (23, [T.INT32, (), 1], r"input 23 \(time_major\): expected BOOL, got INT32"),
    (20, [T.INT32, (), 2], r"input 20 \(activation\): invalid activation code 2"),
    (22, [T.FLOAT32, (), -0.5], r"input 22 \(proj_clip\): must be non-negative"),
    (0, [F32, (STEPS, INPUT_SIZE), IN], r"input 0 \(input\): expected rank 3, got 2"),
    (14, [F32, (UNITS, 1), IN], r"input 14 \(cell_bias\): expected rank 1, got 2"),
])
def test_types_and_parameters(slot: int, spec: list[Any], message: str) -> None:
    inputs = _inputs()
    inputs[slot] = spec
    _rejects(inputs, message)


def test_output_types() -> None:
    outputs = _outputs()
    outputs[1] = (T.TENSOR_FLOAT16, (BATCH, UNITS))
    _rejects(_inputs(), r"output 1 \(output_state_out\): expected TENSOR_FLOAT32, got "
                        "TENSOR_FLOAT16", outputs)


def _omit(inputs: list[list[Any]], *slots: int) -> list[list[Any]]:
    for slot in slots:
        inputs[slot][2] = OMIT
    return inputs


def _give(inputs: list[list[Any]], *slots: int) -> list[list[Any]]:
    for slot in slots:
        inputs[slot][2] = IN
    return inputs


@pytest.mark.parametrize(("inputs", "message"), [
    (_give(_inputs(cifg=True), 5), r"input 5 \(recurrent_to_input_weights\): must be given "
                                   "exactly when input_to_input_weights is"),
    (_omit(_inputs(), 12), r"input 12 \(input_gate_bias\): must be given exactly when"),
    (_omit(_inputs(peephole=True), 10), r"input 10 \(cell_to_forget_weights\): the forget and "
                                        "output peephole weights must be given together"),
    (_omit(_inputs(peephole=True), 9), r"input 9 \(cell_to_input_weights\): must be given "
                                       "exactly when there are peephole weights and no CIFG"),
    (_give(_inputs(cifg=True, peephole=True), 9), r"input 9 \(cell_to_input_weights\)"),
    (_give(_inputs(), 17), r"input 17 \(projection_bias\): a projection bias needs projection "
                           "weights"),
    (_omit(_inputs(layer_norm=True), 26), r"input 26 \(cell_layer_norm_weights\): the layer "
                                          "normalisation weights must be given all or none"),
    (_give(_inputs(cifg=True, layer_norm=True), 24), r"input 24 \(input_layer_norm_weights\): "
                                                     "must be given exactly when there is layer"),
])
def test_optional_groups(inputs: list[list[Any]], message: str) -> None:
    _rejects(inputs, message)


def test_shapes() -> None:
    inputs = _inputs()
    inputs[0][1] = (STEPS, BATCH, 5)
    _rejects(inputs, r"input 0 \(input\): input size 5 does not match the weights' 3")
    inputs = _inputs()
    inputs[7][1] = (UNITS, 3)
    _rejects(inputs, r"input 7 \(recurrent_to_cell_weights\): expected shape \(4, 4\), got "
                     r"\(4, 3\)")
    inputs = _inputs(projection=3)
    inputs[16][1] = (3, 5)
    _rejects(inputs, r"input 16 \(projection_weights\): expected shape \(3, 4\), got \(3, 5\)",
             _outputs(out=3))
    inputs = _inputs()
    inputs[19][1] = (BATCH + 1, UNITS)
    _rejects(inputs, r"input 19 \(cell_state_in\): expected shape \(2, 4\), got \(3, 4\)")
    _rejects(_inputs(), r"output 0 \(output\): declared dims \(3, 2, 5\) contradict the shape "
                        r"\(3, 2, 4\)", [(F32, (STEPS, BATCH, 5))])


def test_shape_and_parameter_errors_at_execution() -> None:
    inputs = _inputs()
    inputs[0][1] = (0, 0, 0)
    inputs[20] = [T.INT32, (), IN]
    model = _model(inputs).finish()
    values: list[Any] = [np.zeros(spec[1], np.float32) for spec in inputs if spec[2] is IN
                         and spec[0] == F32]
    x = np.zeros((STEPS, BATCH, 5), np.float32)
    with pytest.raises(nnrt.BadData, match=f"{OP}, input 0 \\(input\\): input size 5 does not"):
        nnrt.reference.run(model, [x, *values[1:], np.int32(4)])
    x = np.zeros((STEPS, BATCH, INPUT_SIZE), np.float32)
    with pytest.raises(nnrt.BadData, match=f"{OP}, input 20 \\(activation\\): invalid "
                                           "activation code 5"):
        nnrt.reference.run(model, [x, *values[1:], np.int32(5)])


def test_layer_norm_cifg_with_empty_input_gate_tensors() -> None:
    """NNAPI's own layer-norm CIFG test model declares the input gate's tensors {0, 0} / {0}
    and feeds them no data: they are omitted, not weights of a wrong shape."""
    empty = _inputs(cifg=True, peephole=True, layer_norm=True)
    for slot, dims in ((1, (0, 0)), (5, (0, 0)), (9, (0,)), (12, (0,)), (24, (0,))):
        empty[slot] = [F32, dims, IN]
    model = _model(empty).finish()
    rng = np.random.default_rng(7)
    feeds = [rng.uniform(-0.5, 0.5, spec[1]).astype(np.float32) for spec in empty
             if spec[2] is IN]
    got = nnrt.reference.run(model, feeds)
    omitted = _model(_inputs(cifg=True, peephole=True, layer_norm=True)).finish()
    want = nnrt.reference.run(omitted, [f for f in feeds if f.size])
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    feeds[1] = rng.uniform(-0.5, 0.5, (UNITS, INPUT_SIZE)).astype(np.float32)
    with pytest.raises(nnrt.BadData, match=f"{OP}, input 5 \\(recurrent_to_input_weights\\): "
                                           "must be given exactly when input_to_input_weights"):
        nnrt.reference.run(model, feeds)


# -- against onnxruntime ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ort() -> Any:
    """onnxruntime, imported once per module (its import opens files that stay open, which the
    per-test leak check would report)."""
    pytest.importorskip("onnx")
    return pytest.importorskip("onnxruntime")


def _onnx_lstm(ort: Any, x: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray, h0: np.ndarray,
               c0: np.ndarray, p: np.ndarray | None, input_forget: int) -> list[np.ndarray]:
    """ONNX LSTM (gate order i, o, f, c; one direction; time-major) run by onnxruntime."""
    from onnx import TensorProto, helper  # only where onnxruntime is installed

    feeds = {"X": x, "W": w, "R": r, "B": b, "h0": h0, "c0": c0}
    if p is not None:
        feeds["P"] = p
    names = ["X", "W", "R", "B", "", "h0", "c0", *(["P"] if p is not None else [])]
    node = helper.make_node("LSTM", names, ["Y", "Y_h", "Y_c"], hidden_size=w.shape[1] // 4,
                            input_forget=input_forget)
    graph = helper.make_graph(
        [node], "lstm",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in ("Y", "Y_h", "Y_c")])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx_model.ir_version = 8
    session = ort.InferenceSession(onnx_model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def _nnapi_lstm(x: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray, h0: np.ndarray,
                c0: np.ndarray, p: np.ndarray | None, cifg: bool, time_major: bool
                ) -> list[np.ndarray]:
    """The same LSTM as one UNIDIRECTIONAL_SEQUENCE_LSTM, weights mapped to NNAPI's layout.

    With ONNX's ``input_forget`` onnxruntime derives the forget gate as ``1 - i``; NNAPI's CIFG
    derives ``i = 1 - f``. ``sigmoid(-z) = 1 - sigmoid(z)``, so CIFG with the input gate's
    weights, bias and peephole negated as the forget gate's computes the same cell.
    """
    w_i, w_o, w_f, w_c = np.split(w[0], 4)
    r_i, r_o, r_f, r_c = np.split(r[0], 4)
    b_i, b_o, b_f, b_c = np.split(b[0, :b.shape[1] // 2] + b[0, b.shape[1] // 2:], 4)
    p_i, p_o, p_f = np.split(p[0], 3) if p is not None else (None, None, None)
    if cifg:
        w_f, r_f, b_f = -w_i, -r_i, -b_i
        p_f = -p_i if p_i is not None else None
        w_i = r_i = b_i = p_i = None
    values = [x if time_major else x.transpose(1, 0, 2), w_i, w_f, w_c, w_o, r_i, r_f, r_c, r_o,
              p_i, p_f, p_o, b_i, b_f, b_c, b_o, None, None, h0[0], c0[0]]
    specs = [(F32, v.shape, v if k else IN) if v is not None else (F32, (1,), OMIT)
             for k, v in enumerate(values)]
    specs += [(T.INT32, (), 4), (T.FLOAT32, (), 0.0), (T.FLOAT32, (), 0.0),
              (T.BOOL, (), time_major)]
    hidden = h0.shape[-1]
    seq = (x.shape[0], x.shape[1], hidden) if time_major else (x.shape[1], x.shape[0], hidden)
    outputs = [(F32, seq), (F32, h0.shape[1:]), (F32, c0.shape[1:])]
    model = build(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, specs, outputs, model_input=IN).finish()
    return nnrt.reference.run(model, [values[0]])


@pytest.mark.parametrize(("peephole", "cifg", "time_major", "seed"), [
    (False, False, True, 0), (True, False, True, 1), (True, False, False, 2),
    (False, True, True, 3), (True, True, False, 4),
])
def test_matches_onnxruntime(ort: Any, peephole: bool, cifg: bool, time_major: bool,
                             seed: int) -> None:
    rng = np.random.default_rng(seed)
    steps, batch, inputs, hidden = 5, 3, 4, 6

    def rand(*shape: int) -> np.ndarray:
        return rng.uniform(-0.8, 0.8, shape).astype(np.float32)

    x, w, r = rand(steps, batch, inputs), rand(1, 4 * hidden, inputs), rand(1, 4 * hidden, hidden)
    b, h0, c0 = rand(1, 8 * hidden), rand(1, batch, hidden), rand(1, batch, hidden)
    p = rand(1, 3 * hidden) if peephole else None
    y, y_h, y_c = _onnx_lstm(ort, x, w, r, b, h0, c0, p, int(cifg))
    seq, h, c = _nnapi_lstm(x, w, r, b, h0, c0, p, cifg, time_major)
    expected = y[:, 0] if time_major else y[:, 0].transpose(1, 0, 2)
    np.testing.assert_allclose(seq, expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(h, y_h[0], atol=1e-5, rtol=0)
    np.testing.assert_allclose(c, y_c[0], atol=1e-5, rtol=0)
