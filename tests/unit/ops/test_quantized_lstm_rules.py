"""QUANTIZED_16BIT_LSTM (nnrt/ops/quantized_lstm.py) and QUANTIZED_LSTM (nnrt/ops/qlstm.py):
malformed models, saturation and clipping, and NNAPI's particular choices the kernels keep."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt import OperandType as T
from nnrt.testing import OpCase, expand
from nnrt.testing.cases import nnapi_misc
from nnrt.testing.check import build
from nnrt.testing.spec import Arg, f32s, i32s, omitted

_CASES = {case.name: case for case in nnapi_misc.CASES}
Q16_LSTM = _CASES["quantized_16bit_lstm_nnapi_quantized_lstm_constant_weights"]
QLSTM = _CASES["quantized_lstm_nnapi_qlstm_projection"]
QLSTM_NO_PROJECTION = _CASES["quantized_lstm_nnapi_qlstm_noprojection"]


def _with(case: OpCase, **changes: Arg) -> OpCase:
    """``case`` with inputs replaced by slot: ``_with(case, i24=f32s(0.1))``."""
    inputs = list(case.inputs)
    for key, arg in changes.items():
        inputs[int(key[1:])] = arg
    return replace(case, inputs=tuple(inputs))


def _requant(case: OpCase, slot: int, scale: float, zero_point: int | None = None) -> OpCase:
    arg = case.inputs[slot]
    return _with(case, **{f"i{slot}": replace(
        arg, scale=scale, zero_point=arg.zero_point if zero_point is None else zero_point)})


def _model(case: OpCase) -> tuple[nnrt.Model, list[Any]]:
    return build(expand(replace(case, variants=("base",)))[0])


def _run(case: OpCase) -> list[np.ndarray]:
    model, feed = _model(case)
    return [np.asarray(y) for y in nnrt.reference.run(model, feed)]


# -- QUANTIZED_16BIT_LSTM -------------------------------------------------------------------------

@pytest.mark.parametrize("slot, scale, zero_point, message", [
    (0, 1 / 64, 128, r"input 0 \(input\): expected scale 0.0078125 and zero point 128"),
    (14, 1 / 128, 127, r"input 14 \(prev_output\): expected scale 0.0078125 and zero point 128"),
    (13, 2.0**-10, 0, r"input 13 \(prev_cell_state\): expected scale 0.000488281 and zero"),
    (6, 0.004, 100, r"input 6 \(recurrent_to_forget_weights\): .*all weights share input 1's"),
    (10, 0.00408021 / 64, 0, r"input 10 \(forget_gate_bias\): .*the weights' scale / 128"),
])
def test_16bit_lstm_requires_nnapi_fixed_quantisation(slot: int, scale: float,
                                                      zero_point: int, message: str) -> None:
    with pytest.raises(nnrt.BadData, match=r"\(QUANTIZED_16BIT_LSTM\), " + message):
        _model(_requant(Q16_LSTM, slot, scale, zero_point))


def test_16bit_lstm_requires_the_outputs_quantisation() -> None:
    outputs = list(Q16_LSTM.outputs)
    outputs[1] = replace(outputs[1], zero_point=0)
    with pytest.raises(nnrt.BadData, match=r"output 1 \(output\): expected scale 0.0078125 and "
                                           "zero point 128"):
        _model(replace(Q16_LSTM, outputs=tuple(outputs)))


def test_16bit_lstm_checks_weight_shapes() -> None:
    arg = Q16_LSTM.inputs[5]
    case = _with(Q16_LSTM, i5=replace(arg, dims=(4, 3), value=np.zeros((4, 3), np.uint8)))
    with pytest.raises(nnrt.BadData, match=r"input 5 \(recurrent_to_input_weights\): expected "
                                           r"shape \(4, 4\), got \(4, 3\)"):
        _run(case)


def test_16bit_lstm_saturates_the_cell_state() -> None:
    # weights at their zero point: only the biases count; huge biases saturate every gate at
    # +8, so c' = 1 * c + 1 * 1 overflows Q4.11 and saturates; h = 1 * tanh(8) -> 127 + 128
    zero = {f"i{k}": replace(Q16_LSTM.inputs[k],
                             value=np.full(Q16_LSTM.inputs[k].dims, 100, np.uint8))
            for k in range(1, 9)}
    biases = {f"i{k}": replace(Q16_LSTM.inputs[k], value=np.full((4,), 2**30, np.int32))
              for k in range(9, 13)}
    cell = replace(Q16_LSTM.inputs[13], value=np.full((1, 4), 32767, np.int16))
    case = _with(Q16_LSTM, **zero, **biases, i13=cell)
    state, output = _run(case)
    np.testing.assert_array_equal(state, np.full((1, 4), 32767))
    np.testing.assert_array_equal(output, np.full((1, 4), 255))


# -- QUANTIZED_LSTM -------------------------------------------------------------------------------

def test_qlstm_optional_groups() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 5 \(recurrent_to_input_weights\): must be "
                                           "given exactly when input_to_input_weights is"):
        _model(_with(QLSTM, i5=replace(omitted(T.TENSOR_QUANT8_SYMM, (4, 3)), scale=1.0)))
    with pytest.raises(nnrt.BadData, match=r"input 21 \(forget_layer_norm_weights\): the "
                                           "layer-normalisation weights must be given all"):
        _model(_with(QLSTM, i22=replace(omitted(T.TENSOR_QUANT16_SYMM, (4,)), scale=1.0)))
    peephole = replace(QLSTM.inputs[20], value=np.ones(4, np.int16), omitted=False, role="auto")
    with pytest.raises(nnrt.BadData, match=r"input 10 \(cell_to_forget_weights\): the peephole "
                                           "weights must be given all together"):
        _model(_with(QLSTM, i11=peephole))


@pytest.mark.parametrize("scale, message", [
    (3.0e-5, r"the cell state's scale must be a power of two from 2\*\*-15 to 2\*\*-9, got 3e-05"),
    (2.0**-8, r"the cell state's scale must be a power of two"),
])
def test_qlstm_cell_state_scale(scale: float, message: str) -> None:
    with pytest.raises(nnrt.BadData, match=r"input 19 \(cell_state_in\): " + message):
        _model(_requant(QLSTM, 19, scale))


def test_qlstm_scalar_rules() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 30 \(hidden_state_zero_point\): expected an "
                                           r"int8 zero point in \[-128, 127\], got 200"):
        _model(_with(QLSTM, i30=i32s(200)))
    with pytest.raises(nnrt.BadData, match=r"input 27 \(forget_intermediate_scale\): expected a "
                                           "positive scale, got 0.0"):
        _model(_with(QLSTM, i27=f32s(0.0)))
    case = _with(QLSTM, i16=replace(omitted(T.TENSOR_QUANT8_SYMM, (3, 4)), scale=1.0),
                 i17=omitted(T.TENSOR_INT32, (3,)))
    with pytest.raises(nnrt.BadData, match=r"without projection weights the output size \(3\) "
                                           r"must equal the number of units \(4\)"):
        _model(case)


def test_qlstm_cell_clip_bounds_the_cell_state() -> None:
    _, free, _ = _run(QLSTM)
    _, clipped, _ = _run(_with(QLSTM, i24=f32s(0.1)))
    limit = int(np.float32(0.1) / np.float32(3.05176e-05))  # 3276, truncated
    assert np.abs(free).max() > limit
    np.testing.assert_array_equal(clipped, np.clip(free, -limit, limit))


def test_qlstm_projection_clip_uses_the_projection_weights_scale() -> None:
    free, _, _ = _run(QLSTM)
    clipped, _, output = _run(_with(QLSTM, i25=f32s(0.1)))
    limit = int(np.float32(0.1) / np.float32(0.00392157))  # 25: NNAPI's kernel uses this scale
    np.testing.assert_array_equal(clipped, np.clip(free, -limit, limit))
    np.testing.assert_array_equal(output, clipped)


def test_qlstm_subtracts_the_hidden_zero_point() -> None:
    # NNAPI's kernel computes the hidden state as rescale(o * tanh(c)) - zero_point
    base, _, _ = _run(QLSTM_NO_PROJECTION)
    shifted, _, _ = _run(_with(QLSTM_NO_PROJECTION, i30=i32s(5)))
    np.testing.assert_array_equal(shifted, base.astype(np.int64) - 5)


def test_qlstm_without_layer_norm_ignores_the_gate_biases() -> None:
    ln_omitted = {f"i{k}": replace(omitted(T.TENSOR_QUANT16_SYMM, (4,)), scale=1.0)
                  for k in (20, 21, 22, 23)}
    case = _with(QLSTM, **ln_omitted)
    bias = replace(QLSTM.inputs[13], value=np.full(4, 10**8, np.int32))
    first = _run(case)
    second = _run(_with(case, i13=bias))
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


def test_qlstm_effective_scales_beyond_int32_fail_typed() -> None:
    with pytest.raises(nnrt.BadData, match=r"\(QUANTIZED_LSTM\): the effective scale of "
                                           r"input_to_forget_weights is 6.1\d*e\+35"):
        _run(_with(QLSTM, i27=f32s(1e-40)))


def test_qlstm_peepholes() -> None:
    # zero peephole weights add rescale(0) = 0 to every gate: the result is the plain one
    def peepholes(value: int) -> dict[str, Arg]:
        return {f"i{k}": replace(QLSTM.inputs[k], value=np.full(4, value, np.int16),
                                 omitted=False, role="auto") for k in (9, 10, 11)}

    plain = _run(QLSTM)
    for a, b in zip(plain, _run(_with(QLSTM, **peepholes(0))), strict=True):
        np.testing.assert_array_equal(a, b)
    # the cell state in is zero, so only the output gate's peephole (on the new cell state)
    # acts: the cell state out is unchanged, the output is not
    output, cell, _ = _run(_with(QLSTM, **peepholes(20000)))
    np.testing.assert_array_equal(cell, plain[1])
    assert not np.array_equal(output, plain[0])
