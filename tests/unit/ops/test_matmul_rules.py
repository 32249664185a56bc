"""Malformed FULLY_CONNECTED / BATCH_MATMUL models are rejected with precise errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from single_op import OMIT, build

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32


@dataclass
class Arg:
    """One operand: value None makes it a model input; ``omit`` gives NO_VALUE."""

    type: T
    dims: tuple[int, ...] = ()
    value: Any = None
    scale: float = 0.0
    omit: bool = False


def _model(op: Op, args: list[Arg], out: Arg) -> nnrt.Model:
    inputs = [(a.type, a.dims, OMIT if a.omit else a.value, a.scale) for a in args]
    return build(op, inputs, [(out.type, out.dims, out.scale)]).finish()


def _fc(x: tuple[int, ...] = (2, 3), w: tuple[int, ...] = (4, 3), b: tuple[int, ...] = (4,),
        out: tuple[int, ...] = (2, 4), act: int = 0) -> nnrt.Model:
    args = [Arg(F32, x), Arg(F32, w), Arg(F32, b), Arg(T.INT32, (), act)]
    return _model(Op.FULLY_CONNECTED, args, Arg(F32, out))


# -- FULLY_CONNECTED -------------------------------------------------------------------------


def test_fc_wrong_input_count() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(FULLY_CONNECTED\): expected 4 "
                                           r"inputs, got 3"):
        _model(Op.FULLY_CONNECTED, [Arg(F32, (2, 3)), Arg(F32, (4, 3)), Arg(T.INT32, (), 0)],
               Arg(F32, (2, 4)))


def test_fc_bias_is_required() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(FULLY_CONNECTED\), input 2 \(bias\): "
                                           r"this input is required"):
        _model(Op.FULLY_CONNECTED, [Arg(F32, (2, 3)), Arg(F32, (4, 3)), Arg(F32, (4,), omit=True),
                                    Arg(T.INT32, (), 0)], Arg(F32, (2, 4)))


def test_fc_weights_rank() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 1 \(weights\): expected rank 2, got 3"):
        _fc(w=(1, 4, 3))


def test_fc_input_rank_at_most_4() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 0 \(input\): expected rank between 2 and 4, "
                                           r"got 5"):
        _fc(x=(1, 1, 1, 2, 3))


def test_fc_bias_length_matches_units() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 2 \(bias\): bias length 3 does not match "
                                           r"num_units 4"):
        _fc(b=(3,))


def test_fc_input_size_must_divide_elements() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(FULLY_CONNECTED\), input 0 \(input\): "
                                           r"10 elements .* input_size 3"):
        _fc(x=(2, 5))


def test_fc_bad_activation() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 3 \(activation\): invalid fused activation "
                                           r"code 4"):
        _fc(act=4)


def test_fc_quantised_bias_scale() -> None:
    q = T.TENSOR_QUANT8_ASYMM
    with pytest.raises(nnrt.BadData, match=r"input 2 \(bias\): bias scale 0.5 must equal input "
                                           r"scale x weights scale"):
        _model(Op.FULLY_CONNECTED, [Arg(q, (2, 3), scale=0.5), Arg(q, (4, 3), scale=0.25),
                                    Arg(T.TENSOR_INT32, (4,), scale=0.5), Arg(T.INT32, (), 0)],
               Arg(q, (2, 4), scale=1.0))


def test_fc_quantised_runs() -> None:
    q = T.TENSOR_QUANT8_ASYMM_SIGNED
    model = _model(Op.FULLY_CONNECTED, [Arg(q, (2, 3), scale=0.5), Arg(q, (4, 3), scale=0.25),
                                        Arg(T.TENSOR_INT32, (4,), scale=0.125),
                                        Arg(T.INT32, (), 0)], Arg(q, (2, 4), scale=1.0))
    # Rows of 8 and -8 against weights 1..4 (per unit): 24 * k, +- 8, times 0.125 = 3k +- 1.
    x = np.int8([[8, 8, 8], [-8, -8, -8]])
    w = np.repeat(np.int8([1, 2, 3, 4]), 3).reshape(4, 3)
    (y,) = nnrt.reference.run(model, [x, w, np.full(4, 8, np.int32)])
    np.testing.assert_array_equal(y, np.int8([[4, 7, 10, 13], [-2, -5, -8, -11]]))


# -- BATCH_MATMUL ----------------------------------------------------------------------------


def _bmm(lhs: tuple[int, ...], rhs: tuple[int, ...], out: tuple[int, ...], *, t: T = F32,
         adj_type: T = T.BOOL, adj: Any = False, scale: float = 0.0) -> nnrt.Model:
    return _model(Op.BATCH_MATMUL, [Arg(t, lhs, scale=scale), Arg(t, rhs, scale=scale),
                                    Arg(adj_type, (), adj), Arg(T.BOOL, (), False)],
                  Arg(t, out, scale=scale))


def test_bmm_ranks_must_match() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(BATCH_MATMUL\), input 1 \(rhs\): "
                                           r"rank 2 differs from the rank 3"):
        _bmm((2, 2, 3), (3, 4), (2, 2, 4))


def test_bmm_rank_at_most_6() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 0 \(lhs\): expected rank between 2 and 6, "
                                           r"got 7"):
        _bmm((1, 1, 1, 1, 1, 2, 3), (1, 1, 1, 1, 1, 3, 4), (1, 1, 1, 1, 1, 2, 4))


def test_bmm_adj_flag_must_be_bool() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 2 \(adj_x\): expected BOOL, got INT32"):
        _bmm((2, 3), (3, 4), (2, 4), adj_type=T.INT32, adj=0)


def test_bmm_inner_dimensions() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 1 \(rhs\): cannot multiply"):
        _bmm((2, 3), (2, 4), (2, 4))


def test_bmm_batch_dimensions_must_match() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 1 \(rhs\): batch dimensions \(1,\) differ"):
        _bmm((2, 2, 3), (1, 3, 4), (2, 2, 4))


def test_bmm_quant8_asymm_is_not_a_variant() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 0 \(lhs\): expected .*, got "
                                           r"TENSOR_QUANT8_ASYMM$"):
        _bmm((2, 3), (3, 4), (2, 4), t=T.TENSOR_QUANT8_ASYMM, scale=0.5)


def test_bmm_shape_mismatch_found_at_execution() -> None:
    model = _bmm((0, 0), (0, 0), (0, 0))
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(BATCH_MATMUL\), input 1 \(rhs\): "
                                           r"cannot multiply"):
        nnrt.reference.run(model, [np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)])


def test_bmm_quantised_saturates_to_int8() -> None:
    model = _bmm((2, 3), (3, 4), (2, 4), t=T.TENSOR_QUANT8_ASYMM_SIGNED, scale=0.5)
    # 3 * 20 * 20 * 0.5 * 0.5 / 0.5 = 600 and its negative: saturated.
    lhs = np.int8([[20, 20, 20], [-20, -20, -20]])
    (y,) = nnrt.reference.run(model, [lhs, np.full((3, 4), 20, np.int8)])
    np.testing.assert_array_equal(y, np.int8([[127] * 4, [-128] * 4]))
