"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and SVDF (nnrt/ops/rnn.py,
bidirectional_rnn.py, svdf.py): malformed models are rejected with errors naming the operand
and the rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from single_op import IN, OMIT, build

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32
UNITS, INPUT_SIZE, BATCH, STEPS = 4, 3, 2, 5


def _t(dims: tuple[int, ...], present: bool = True) -> list[Any]:
    return [F32, dims, IN if present else OMIT]


def _cell(input_size: int = INPUT_SIZE) -> list[list[Any]]:
    return [_t((UNITS, input_size)), _t((UNITS, UNITS)), _t((UNITS,)), _t((BATCH, UNITS))]


def _rejects(op: Op, inputs: list[list[Any]], outputs: list[tuple[Any, ...]],
             message: str) -> None:
    with pytest.raises(nnrt.BadData, match=f"operation 0 \\({op.name}\\), {message}"):
        build(op, [tuple(s) for s in inputs], outputs, model_input=IN).finish()


# -- RNN ------------------------------------------------------------------------------------

def _rnn(activation: int = 1) -> list[list[Any]]:
    return [_t((BATCH, INPUT_SIZE)), *_cell(), [T.INT32, (), activation]]


RNN_OUT = [(F32, (BATCH, UNITS)), (F32, (BATCH, UNITS))]


@pytest.mark.parametrize(("slot", "dims", "message"), [
    (2, (UNITS, UNITS + 1), r"input 2 \(recurrent_weights\): expected shape \(4, 4\), got "
                            r"\(4, 5\)"),
    (3, (UNITS + 1,), r"input 3 \(bias\): expected shape \(4,\), got \(5,\)"),
    (4, (BATCH + 1, UNITS), r"input 4 \(hidden_state_in\): expected shape \(2, 4\), got "
                            r"\(3, 4\)"),
    (0, (BATCH, 7), r"input 0 \(input\): 7 features, the weights take 3"),
    (1, (UNITS, INPUT_SIZE, 1), r"input 1 \(weights\): expected rank 2, got 3"),
])
def test_rnn_shapes_name_the_operand(slot: int, dims: tuple[int, ...], message: str) -> None:
    inputs = _rnn()
    inputs[slot][1] = dims
    _rejects(Op.RNN, inputs, RNN_OUT, message)


def test_rnn_activation_and_counts() -> None:
    _rejects(Op.RNN, _rnn(5), RNN_OUT, r"input 5 \(activation\): invalid activation code 5 "
                                       r"\(expected 0=none, 1=relu, 2=relu1, 3=relu6, 4=tanh")
    with pytest.raises(nnrt.BadData, match=r"\(RNN\): expected 2 outputs, got 1"):
        build(Op.RNN, [tuple(s) for s in _rnn()], RNN_OUT[:1], model_input=IN).finish()


def test_rnn_step_matches_a_direct_computation() -> None:
    model = build(Op.RNN, [tuple(s) for s in _rnn(4)], RNN_OUT, model_input=IN).finish()
    rng = np.random.default_rng(1)
    x, w, r, b, h = (rng.uniform(-1, 1, s[1]).astype(np.float32) for s in _rnn()[:5])
    state, output = nnrt.reference.run(model, [x, w, r, b, h])
    want = np.tanh(x.astype(np.float64) @ w.T + h @ r.T + b)
    np.testing.assert_allclose(output, want, atol=1e-6)
    np.testing.assert_array_equal(state, output)


# -- UNIDIRECTIONAL_SEQUENCE_RNN ------------------------------------------------------------

def _sequence(time_major: int = 1) -> list[list[Any]]:
    return [_t((STEPS, BATCH, INPUT_SIZE)), *_cell(), [T.INT32, (), 1],
            [T.INT32, (), time_major]]


def test_sequence_rnn_rules() -> None:
    seq = [(F32, (STEPS, BATCH, UNITS))]
    _rejects(Op.UNIDIRECTIONAL_SEQUENCE_RNN, _sequence(2), seq,
             r"input 6 \(time_major\): must be 0 \(batch-major\) or 1 \(time-major\), got 2")
    # batch-major: the batch is the input's first dim, which the hidden state contradicts
    _rejects(Op.UNIDIRECTIONAL_SEQUENCE_RNN, _sequence(0), [(F32, (STEPS, BATCH, UNITS))],
             r"input 4 \(hidden_state\): expected shape \(5, 4\), got \(2, 4\)")
    model = build(Op.UNIDIRECTIONAL_SEQUENCE_RNN, [tuple(s) for s in _sequence()],
                  [*seq, (F32, (BATCH, UNITS))], model_input=IN).finish()
    assert model.inferred_dims[model.outputs[1]] == (BATCH, UNITS)


# -- BIDIRECTIONAL_SEQUENCE_RNN -------------------------------------------------------------

def _bi(*, aux: tuple[bool, bool, bool] = (False, False, False), merge: bool = False,
        bw_input: int = INPUT_SIZE, aux_steps: int = STEPS) -> list[list[Any]]:
    return [_t((STEPS, BATCH, INPUT_SIZE)), *_cell(), *_cell(bw_input),
            _t((aux_steps, BATCH, 2), aux[0]), _t((UNITS, 2), aux[1]), _t((UNITS, 2), aux[2]),
            [T.INT32, (), 1], [T.BOOL, (), True], [T.BOOL, (), merge]]


BI_OUT = [(F32, (STEPS, BATCH, UNITS)), (F32, (STEPS, BATCH, UNITS))]


def test_bidirectional_rnn_rules() -> None:
    op = Op.BIDIRECTIONAL_SEQUENCE_RNN
    _rejects(op, _bi(aux=(True, True, False)), BI_OUT,
             r"input 11 \(bw_aux_weights\): both directions' auxiliary weights must be given, "
             "or neither")
    _rejects(op, _bi(aux=(False, True, True)), BI_OUT,
             r"input 10 \(fw_aux_weights\): auxiliary weights need an auxiliary input")
    _rejects(op, _bi(aux=(True, False, False), aux_steps=STEPS + 1), BI_OUT,
             r"input 9 \(aux_input\): expected leading dims \(5, 2\) like the input's, got "
             r"\(6, 2\)")
    _rejects(op, _bi(aux=(True, False, False)), BI_OUT,
             r"input 9 \(aux_input\): 2 features, the weights take 3")
    with pytest.raises(nnrt.BadData, match=r"\(BIDIRECTIONAL_SEQUENCE_RNN\): expected 1 or 3 "
                                           "outputs with merge_outputs True, got 2"):
        build(op, [tuple(s) for s in _bi(merge=True)], BI_OUT, model_input=IN).finish()


def test_bidirectional_rnn_signatures_finish() -> None:
    op = Op.BIDIRECTIONAL_SEQUENCE_RNN
    build(op, [tuple(s) for s in _bi(aux=(True, False, False), bw_input=2)], BI_OUT,
          model_input=IN).finish()
    build(op, [tuple(s) for s in _bi(aux=(True, True, True))],
          [*BI_OUT, (F32, (BATCH, UNITS)), (F32, (BATCH, UNITS))], model_input=IN).finish()
    model = build(op, [tuple(s) for s in _bi(merge=True)], [(F32, (STEPS, BATCH, 2 * UNITS))],
                  model_input=IN).finish()
    assert model.inferred_dims[model.outputs[0]] == (STEPS, BATCH, 2 * UNITS)


# -- SVDF -----------------------------------------------------------------------------------

FILTERS, MEMORY = 4, 3


def _svdf(rank: int = 2, bias: int = FILTERS // 2) -> list[list[Any]]:
    return [_t((BATCH, INPUT_SIZE)), _t((FILTERS, INPUT_SIZE)), _t((FILTERS, MEMORY)),
            _t((bias,)), _t((BATCH, MEMORY * FILTERS)), [T.INT32, (), rank], [T.INT32, (), 0]]


SVDF_OUT = [(F32, (BATCH, MEMORY * FILTERS)), (F32, (BATCH, FILTERS // 2))]


def test_svdf_rules_name_the_operand() -> None:
    _rejects(Op.SVDF, _svdf(rank=3), SVDF_OUT,
             r"input 5 \(rank\): rank 3 does not divide the 4 filters of weights_feature")
    _rejects(Op.SVDF, _svdf(rank=0), SVDF_OUT, r"input 5 \(rank\): must be positive, got 0")
    _rejects(Op.SVDF, _svdf(bias=3), SVDF_OUT,
             r"input 3 \(bias\): expected shape \(2,\), got \(3,\)")
    inputs = _svdf()
    inputs[2][1] = (FILTERS + 1, MEMORY)
    _rejects(Op.SVDF, inputs, SVDF_OUT,
             r"input 2 \(weights_time\): expected 4 rows like weights_feature, got 5")
    inputs = _svdf()
    inputs[4][1] = (BATCH, (MEMORY - 1) * FILTERS)
    _rejects(Op.SVDF, inputs, SVDF_OUT,
             r"input 4 \(state_in\): expected shape \(2, 12\), got \(2, 8\)")
    inputs = _svdf()
    inputs[1][1] = (FILTERS, INPUT_SIZE + 1)
    _rejects(Op.SVDF, inputs, SVDF_OUT,
             r"input 1 \(weights_feature\): expected shape \(4, 3\), got \(4, 4\)")
