"""Quantised conformance cases of FULLY_CONNECTED and BATCH_MATMUL, from NNAPI's test specs.

TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED FULLY_CONNECTED, TENSOR_QUANT8_ASYMM_SIGNED
BATCH_MATMUL (NNAPI defines no TENSOR_QUANT8_ASYMM variant of it), in the format of
:mod:`nnrt.testing.cases.nnapi_quant_conv`. ``<op>_nnrt_*`` cases are nnrt's, hand-computed and
compared exactly: asymmetric zero points, saturation, activations in the quantised domain and
gemmlowp's rounding.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.cases import nnapi_quant_conv
from nnrt.testing.cases.nnapi_quant_conv import lit, qarg, qbias, qout, s8, u8
from nnrt.testing.spec import OpCase, bools, i32, i32s

__all__ = ["CASES"]

CASES: list[OpCase] = []
add = partial(nnapi_quant_conv.add, into=CASES)
_ACT_NAMES = {0: "none", 1: "relu", 2: "relu1", 3: "relu6"}

# -- FULLY_CONNECTED --------------------------------------------------------------------------
# V1_0/fully_connected_quant8.mod.py (as fully_connected_quant8_weights_as_inputs gives it),
# fully_connected_quant8_2 (a [4, 1, 5, 1] input read as 2 rows, RELU) and
# fully_connected_quant8_large; V1_2/fully_connected_v1_2.mod.py quant8_mult_gt_1.
add("fully_connected_nnapi_fully_connected_quant8", Op.FULLY_CONNECTED,
    [lit([2, 32, 16], (3, 1), u8(0.5, 0)), lit([2], (1, 1), u8(0.5, 0)),
     i32([4], scale=0.25), i32s(0)],
    qout([2, 17, 9], (3, 1), u8(1.0, 0), literal=True))
_FC2_W = list(range(129, 148, 2)) * 3
add("fully_connected_nnapi_fully_connected_quant8_2", Op.FULLY_CONNECTED,
    [lit([129, 131, 133, 135, 137, 139, 141, 143, 109, 107, 129, 131, 133, 135, 137, 139, 141,
          111, 145, 107], (4, 1, 5, 1), u8(0.5, 127)),
     lit(_FC2_W, (3, 10), u8(0.5, 127)), i32([4, 8, 12], scale=0.25), i32s(1)],
    qout([151, 152, 153, 185, 186, 187], (2, 3), u8(1.0, 127), literal=True))
add("fully_connected_nnapi_fully_connected_quant8_large", Op.FULLY_CONNECTED,
    [lit([10] * 5, (1, 5), u8(0.2, 0)), lit([10, 20, 20, 20, 10], (1, 5), u8(0.2, 0)),
     i32([10], scale=0.04), i32s(0)],
    qout([32], (1, 1), u8(1.0, 0), literal=True))
_FC_V1_2 = ([2, 32, 16], [2], [4], [8, 68, 36])
for _name, _xq, _wq, _oq in (
        ("fully_connected_nnapi_fully_connected_v1_2_quant8_mult_gt_1", u8(0.5, 127),
         u8(0.5, 120), u8(0.1, 128)),
        ("fully_connected_nnapi_fully_connected_quant8_signed_mult_gt_1", s8(0.5, -1),
         s8(0.5, -8), s8(0.1, 0))):
    add(_name, Op.FULLY_CONNECTED,
        [qarg(_FC_V1_2[0], (3, 1), _xq), qarg(_FC_V1_2[1], (1, 1), _wq),
         qbias(_FC_V1_2[2], _xq, _wq), i32s(0)], qout(_FC_V1_2[3], (3, 1), _oq))
# V1_3/fully_connected_quant8_signed.mod.py: its literal examples (the V1_0 vectors shifted).
add("fully_connected_nnapi_fully_connected_quant8_signed", Op.FULLY_CONNECTED,
    [lit([-126, -96, -112], (3, 1), s8(0.5, -128)), lit([-126], (1, 1), s8(0.5, -128)),
     i32([4], scale=0.25), i32s(0)],
    qout([-126, -111, -119], (3, 1), s8(1.0, -128), literal=True))
add("fully_connected_nnapi_fully_connected_quant8_signed_2", Op.FULLY_CONNECTED,
    [lit([1, 3, 5, 7, 9, 11, 13, 15, -19, -21, 1, 3, 5, 7, 9, 11, 13, -17, 17, -21],
         (4, 1, 5, 1), s8(0.5, -1)),
     lit(np.subtract(_FC2_W, 128), (3, 10), s8(0.5, -1)), i32([4, 8, 12], scale=0.25),
     i32s(1)],
    qout([23, 24, 25, 57, 58, 59], (2, 3), s8(1.0, -1), literal=True))
add("fully_connected_nnapi_fully_connected_quant8_signed_large", Op.FULLY_CONNECTED,
    [lit([-118] * 5, (1, 5), s8(0.2, -128)),
     lit([-118, -108, -108, -108, -118], (1, 5), s8(0.2, -128)), i32([10], scale=0.04),
     i32s(0)],
    qout([-96], (1, 1), s8(1.0, -128), literal=True))

# nnrt: asymmetric zero points, saturation and the four activations in the quantised domain.
# Input scale 0.5 zero point 3 (signed: -125), weights scale 2 zero point 200 (signed: 72): the
# multiplier is 1, so each output is its exact accumulator plus the output zero point 128
# (signed: 0): 15, 200 and -200 (saturating both ways) and 8, before the activation's clamp.
_FC_X = [10, 0, -3]
_FC_W = [1, 5, 0, 20, 0, 0, -20, 0, 0, 0, 0, -5]
_FC_B = [5, 0, 0, -7]
_FC_OUT = {T.TENSOR_QUANT8_ASYMM: {0: [143, 255, 0, 136], 1: [143, 255, 128, 136],
                                   2: [129, 129, 127, 129], 3: [134, 134, 128, 134]},
           T.TENSOR_QUANT8_ASYMM_SIGNED: {0: [15, 127, -128, 8], 1: [15, 127, 0, 8],
                                          2: [1, 1, -1, 1], 3: [6, 6, 0, 6]}}
for _make, _zx, _zw, _zo in ((u8, 3, 200, 128), (s8, -125, 72, 0)):
    _t = _make(1.0, 0).type
    for _act, _expected in _FC_OUT[_t].items():
        add(f"fully_connected_nnrt_zero_points_{_t.name.lower()}_{_ACT_NAMES[_act]}",
            Op.FULLY_CONNECTED,
            [lit(np.add(_FC_X, _zx), (1, 3), _make(0.5, _zx)),
             lit(np.add(_FC_W, _zw), (4, 3), _make(2.0, _zw)), i32(_FC_B, scale=1.0),
             i32s(_act)],
            qout(_expected, (1, 4), _make(1.0, _zo), literal=True), exact=True)

# -- BATCH_MATMUL -----------------------------------------------------------------------------
# AIDL_V2/batch_matmul.mod.py quant8_signed (scale 1, zero point -128; NNAPI defines no
# TENSOR_QUANT8_ASYMM variant).
_BM_A = [1, 2, 3, 4, 5, 6]
_BM_B = [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]
_BM_OUT = [74, 80, 86, 92, 173, 188, 203, 218]
_BM_Q = s8(1.0, -128)
for _name, _a, _ad, _b, _bd, _adj_x, _adj_y, _out, _od in (
        ("simple", _BM_A, (1, 2, 3), _BM_B, (1, 3, 4), False, False, _BM_OUT, (1, 2, 4)),
        ("rhs_adjoint", _BM_A, (1, 2, 3), [7, 11, 15, 8, 12, 16, 9, 13, 17, 10, 14, 18],
         (1, 4, 3), False, True, _BM_OUT, (1, 2, 4)),
        ("lhs_adjoint", [1, 4, 2, 5, 3, 6], (1, 3, 2), _BM_B, (1, 3, 4), True, False, _BM_OUT,
         (1, 2, 4)),
        ("two_batch_size", _BM_A * 2, (2, 2, 3), _BM_B * 2, (2, 3, 4), False, False, _BM_OUT * 2,
         (2, 2, 4))):
    add(f"batch_matmul_nnapi_batch_matmul_{_name}_quant8_signed", Op.BATCH_MATMUL,
        [qarg(_a, _ad, _BM_Q), qarg(_b, _bd, _BM_Q), bools(_adj_x), bools(_adj_y)],
        qout(_out, _od, _BM_Q))
# nnrt: different zero points and a multiplier of 0.25 (0.5 * 0.25 / 0.5), hand-computed:
# accumulators 6, -14, 10, 30 -> 2, -4, 3, 8 (gemmlowp: 7.5 -> 8, -3.5 -> -4), plus -10.
add("batch_matmul_nnrt_zero_points_quant8_signed", Op.BATCH_MATMUL,
    [lit([5, 1, 3, 13], (1, 2, 2), s8(0.5, 3)), lit([2, -6, -1, 1], (1, 2, 2), s8(0.25, -2)),
     bools(False), bools(False)],
    qout([-8, -14, -7, -2], (1, 2, 2), s8(0.5, -10), literal=True), exact=True)
