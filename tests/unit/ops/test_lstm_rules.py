"""LSTM and BIDIRECTIONAL_SEQUENCE_LSTM (nnrt/ops/lstm.py, bidirectional_lstm.py, lstm_cell.py):
malformed models are rejected with errors naming the operand and the rule."""

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
LSTM = r"operation 0 \(LSTM\)"
BI = r"operation 0 \(BIDIRECTIONAL_SEQUENCE_LSTM\)"


def _t(dims: tuple[int, ...], present: bool = True) -> list[Any]:
    return [F32, dims, IN if present else OMIT]


def _cell(*, cifg: bool = False, out: int = UNITS, input_size: int = INPUT_SIZE
          ) -> list[list[Any]]:
    """One direction's inputs 1-17 (no peepholes, no projection)."""
    return [*(_t((UNITS, input_size), not cifg or k > 0) for k in range(4)),
            *(_t((UNITS, out), not cifg or k > 0) for k in range(4)),
            *(_t((UNITS,), False) for _ in range(3)),
            *(_t((UNITS,), not cifg or k > 0) for k in range(4)),
            _t((out, UNITS), False), _t((out,), False)]


def _lstm_inputs(*, cifg: bool = False, layer_norm: bool = False) -> list[list[Any]]:
    specs = [_t((BATCH, INPUT_SIZE)), *_cell(cifg=cifg), _t((BATCH, UNITS)),
             _t((BATCH, UNITS)), [T.INT32, (), 4], [T.FLOAT32, (), 0.0], [T.FLOAT32, (), 0.0]]
    if layer_norm:
        specs += [_t((UNITS,), not cifg), _t((UNITS,)), _t((UNITS,)), _t((UNITS,))]
    return specs


def _lstm_outputs(gates: int = 4) -> list[tuple[Any, ...]]:
    return [(F32, (BATCH, UNITS * gates)), (F32, (BATCH, UNITS)), (F32, (BATCH, UNITS)),
            (F32, (BATCH, UNITS))]


def _lstm(inputs: list[list[Any]], outputs: list[tuple[Any, ...]] | None = None) -> nnrt.Model:
    return build(Op.LSTM, [tuple(s) for s in inputs], outputs or _lstm_outputs(),
                 model_input=IN)


def test_lstm_signatures_finish_with_the_scratch_buffer_shape() -> None:
    model = _lstm(_lstm_inputs()).finish()
    assert model.inferred_dims[model.outputs[0]] == (BATCH, 4 * UNITS)
    model = _lstm(_lstm_inputs(cifg=True, layer_norm=True), _lstm_outputs(3)).finish()
    assert model.inferred_dims[model.outputs[0]] == (BATCH, 3 * UNITS)
    with pytest.raises(nnrt.BadData, match=f"{LSTM}, output 0 \\(scratch_buffer\\): declared "
                                           r"dims \(2, 16\) contradict the shape \(2, 12\)"):
        _lstm(_lstm_inputs(cifg=True)).finish()


@pytest.mark.parametrize(("slot", "dims", "message"), [
    (7, (UNITS, 5), r"input 7 \(recurrent_to_cell_weights\): expected shape \(4, 4\), got "
                    r"\(4, 5\)"),
    (3, (5, INPUT_SIZE), r"input 3 \(input_to_cell_weights\): expected shape \(4, 3\), got "
                         r"\(5, 3\)"),
    (13, (UNITS + 1,), r"input 13 \(forget_gate_bias\): expected shape \(4,\), got \(5,\)"),
    (19, (BATCH, UNITS + 1), r"input 19 \(cell_state_in\): expected shape \(2, 4\), got "
                             r"\(2, 5\)"),
    (0, (BATCH, 5), r"input 0 \(input\): input size 5 does not match the weights' 3"),
])
def test_lstm_bad_weight_shapes_name_the_operand(slot: int, dims: tuple[int, ...],
                                                 message: str) -> None:
    inputs = _lstm_inputs()
    inputs[slot][1] = dims
    with pytest.raises(nnrt.BadData, match=f"{LSTM}, {message}"):
        _lstm(inputs).finish()


def test_lstm_counts_groups_and_parameters() -> None:
    with pytest.raises(nnrt.BadData, match=f"{LSTM}: expected 23 or 27 inputs, got 24"):
        _lstm([*_lstm_inputs(), _t((UNITS,))]).finish()
    inputs = _lstm_inputs(cifg=True)
    inputs[12][2] = IN
    with pytest.raises(nnrt.BadData, match=f"{LSTM}, input 12 \\(input_gate_bias\\): must be "
                                           "given exactly when input_to_input_weights is"):
        _lstm(inputs, _lstm_outputs(3)).finish()
    inputs = _lstm_inputs(layer_norm=True)
    inputs[24][2] = OMIT
    with pytest.raises(nnrt.BadData, match=f"{LSTM}, input 24 \\(forget_layer_norm_weights\\):"
                                           " the layer normalisation weights must be given all"):
        _lstm(inputs).finish()
    inputs = _lstm_inputs()
    inputs[20] = [T.INT32, (), 2]
    with pytest.raises(nnrt.BadData, match=f"{LSTM}, input 20 \\(activation\\): invalid "
                                           "activation code 2"):
        _lstm(inputs).finish()
    inputs = _lstm_inputs()
    inputs[22] = [T.FLOAT32, (), -1.0]
    with pytest.raises(nnrt.BadData, match=f"{LSTM}, input 22 \\(proj_clip\\): must be "
                                           "non-negative"):
        _lstm(inputs).finish()


def test_lstm_empty_optional_inputs_count_as_omitted_at_execution() -> None:
    """NNAPI's test models omit optional tensors as model inputs of dims {0} fed no data."""
    inputs = _lstm_inputs()
    for slot in (9, 10, 11):
        inputs[slot] = [F32, (0,), IN]
    inputs[0] = [F32, (0, INPUT_SIZE), IN]
    model = _lstm(inputs).finish()
    rng = np.random.default_rng(0)
    feeds = [rng.uniform(-0.5, 0.5, spec[1]).astype(np.float32) if 0 not in spec[1]
             else np.zeros(0, np.float32) for spec in inputs[1:] if spec[2] is IN]
    feeds.insert(0, rng.uniform(-0.5, 0.5, (BATCH, INPUT_SIZE)).astype(np.float32))
    with_empty = nnrt.reference.run(model, feeds)
    inputs = _lstm_inputs()
    plain = _lstm(inputs).finish()
    without = nnrt.reference.run(plain, [f for f in feeds if f.size])
    for got, want in zip(with_empty, without, strict=True):
        np.testing.assert_array_equal(got, want)
    feeds[0] = np.zeros((0, INPUT_SIZE), np.float32)
    with pytest.raises(nnrt.BadData, match=f"{LSTM}, input 0 \\(input\\): this input is "
                                           "required but has no value"):
        nnrt.reference.run(model, feeds)


# -- BIDIRECTIONAL_SEQUENCE_LSTM ------------------------------------------------------------

def _bi_inputs(*, merge: bool = False, aux: str = "none", bw_input: int = INPUT_SIZE,
               aux_size: int = 2) -> list[list[Any]]:
    """61 inputs, time-major; ``aux`` is "none", "cross" or "parallel"."""
    cross = aux == "cross"
    return [_t((STEPS, BATCH, INPUT_SIZE)), *_cell(), *_cell(input_size=bw_input),
            *(_t((BATCH, UNITS)) for _ in range(4)),
            _t((STEPS, BATCH, aux_size), aux != "none"),
            *(_t((UNITS, aux_size), cross) for _ in range(8)),
            [T.INT32, (), 4], [T.FLOAT32, (), 0.0], [T.FLOAT32, (), 0.0], [T.BOOL, (), merge],
            [T.BOOL, (), True], *(_t((UNITS,), False) for _ in range(8))]


def _bi_outputs(n: int) -> list[tuple[Any, ...]]:
    seq = (F32, (STEPS, BATCH, UNITS))
    return [seq, seq, *((F32, (BATCH, UNITS)) for _ in range(4))][:n]


def _bi(inputs: list[list[Any]], n_outputs: int = 2) -> nnrt.Model:
    return build(Op.BIDIRECTIONAL_SEQUENCE_LSTM, [tuple(s) for s in inputs],
                 _bi_outputs(n_outputs), model_input=IN)


def test_bidirectional_lstm_signatures_finish() -> None:
    model = _bi(_bi_inputs(), 6).finish()
    assert [model.inferred_dims[i] for i in model.outputs] == [
        (STEPS, BATCH, UNITS)] * 2 + [(BATCH, UNITS)] * 4
    merged = build(Op.BIDIRECTIONAL_SEQUENCE_LSTM, [tuple(s) for s in _bi_inputs(merge=True)],
                   [(F32, (STEPS, BATCH, 2 * UNITS))], model_input=IN).finish()
    assert merged.inferred_dims[merged.outputs[0]] == (STEPS, BATCH, 2 * UNITS)
    _bi(_bi_inputs(aux="cross")).finish()
    _bi(_bi_inputs(aux="parallel", bw_input=2)).finish()


def test_bidirectional_lstm_output_counts_follow_merge_outputs() -> None:
    with pytest.raises(nnrt.BadData, match=f"{BI}: expected 1 or 5 outputs with merge_outputs "
                                           "True, got 2"):
        _bi(_bi_inputs(merge=True)).finish()
    with pytest.raises(nnrt.BadData, match=f"{BI}: expected 1, 2, 5 or 6 outputs, got 3"):
        _bi(_bi_inputs(), 3).finish()


def test_bidirectional_lstm_shapes_name_the_direction() -> None:
    inputs = _bi_inputs()
    inputs[24][1] = (UNITS, UNITS + 1)
    with pytest.raises(nnrt.BadData, match=f"{BI}, input 24 \\(bw_recurrent_to_cell_weights\\):"
                                           r" expected shape \(4, 4\), got \(4, 5\)"):
        _bi(inputs).finish()
    with pytest.raises(nnrt.BadData, match=f"{BI}, input 19 \\(bw_input_to_forget_weights\\): "
                                           "the weights take 2 features, the input has 3"):
        _bi(_bi_inputs(bw_input=2)).finish()
    with pytest.raises(nnrt.BadData, match=f"{BI}, input 19 \\(bw_input_to_forget_weights\\): "
                                           "the weights take 3 features, the auxiliary input "
                                           "has 2"):
        _bi(_bi_inputs(aux="parallel")).finish()
    inputs = _bi_inputs(aux="cross")
    inputs[45][1] = (UNITS, 5)
    with pytest.raises(nnrt.BadData, match=f"{BI}, input 45 \\(bw_aux_input_to_forget_weights"
                                           r"\): expected shape \(4, 2\), got \(4, 5\)"):
        _bi(inputs).finish()


def test_bidirectional_lstm_auxiliary_rules() -> None:
    inputs = _bi_inputs(aux="cross")
    inputs[39][2] = OMIT
    with pytest.raises(nnrt.BadData, match=f"{BI}, input 40 \\(fw_aux_input_to_input_weights"
                                           r"\): auxiliary weights need an auxiliary input"):
        _bi(inputs).finish()
    inputs = _bi_inputs(aux="cross")
    inputs[46][2] = OMIT
    with pytest.raises(nnrt.BadData, match=f"{BI}, input 46 \\(bw_aux_input_to_cell_weights"
                                           r"\): with auxiliary weights the auxiliary "
                                           "input-to-gate weights must be given"):
        _bi(inputs).finish()
