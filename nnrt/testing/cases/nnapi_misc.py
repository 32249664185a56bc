"""Conformance cases from NNAPI's specs: HASHTABLE_LOOKUP, LSH_PROJECTION and the quantised LSTMs.

Each case is one example of an AOSP ``runtime/test/specs/<version>/<stem>.mod.py`` file (named
in a comment; case names ``<op>_nnapi_<stem>[_<example>]``); only the test vectors are
transcribed. A spec's ``[]`` value (an omitted optional operand) is an omitted input here. Cases
of nnrt's own say how their expected values were derived.

RANDOM_MULTINOMIAL has no case here: its outputs are random, NNAPI's own test
(``random_multinomial*.mod.py``) checks them statistically, and the kit compares values. Its
unit tests (``tests/unit/ops/test_multinomial.py``) check the distribution the same way.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import Arg, OpCase, f16, f32, f32s, i32, i32s, omitted, out, q8, quant

CASES: list[OpCase] = []

Q8S = T.TENSOR_QUANT8_SYMM
Q8AS = T.TENSOR_QUANT8_ASYMM_SIGNED
Q16 = T.TENSOR_QUANT16_SYMM


def _omitted(type_: T, dims: tuple[int, ...], scale: float = 0.0) -> Arg:
    """An omitted input; symmetric quantised types still declare a (positive) scale."""
    return replace(omitted(type_, dims), scale=scale)


# -- HASHTABLE_LOOKUP ----------------------------------------------------------------------------

_HITS = out(T.TENSOR_QUANT8_ASYMM, (4,), [1, 0, 1, 1], scale=1.0)

# hashtable_lookup_float.mod.py (V1_0): rows i of value hold i + j / 10.
CASES.append(OpCase(
    "hashtable_lookup_nnapi_hashtable_lookup_float", Op.HASHTABLE_LOOKUP,
    (i32([1234, -292, -11, 0]), i32([-11, 0, 1234]),
     f32([[0.0, 0.1], [1.0, 1.1], [2.0, 2.1]])),
    (out(T.TENSOR_FLOAT32, (4, 2), [[2.0, 2.1], [0, 0], [0.0, 0.1], [1.0, 1.1]]), _HITS),
    skip=("float16",)))  # TENSOR_FLOAT16 is no HASHTABLE_LOOKUP type

# hashtable_lookup_quant8.mod.py (V1_0): rows i of value hold i * 10 + j.
CASES.append(OpCase(
    "hashtable_lookup_nnapi_hashtable_lookup_quant8", Op.HASHTABLE_LOOKUP,
    (i32([123, 250, 255, 0]), i32([0, 123, 255]), q8([[0, 1], [10, 11], [20, 21]], 0.5, 0)),
    (out(T.TENSOR_QUANT8_ASYMM, (4, 2), [[10, 11], [0, 0], [20, 21], [0, 1]], scale=0.5),
     _HITS)))

# nnrt's own: TENSOR_INT32 values of rank 3, a miss below, between and above the keys (each a
# zero row), a repeated lookup.
CASES.append(OpCase(
    "hashtable_lookup_int32_rank3", Op.HASHTABLE_LOOKUP,
    (i32([7, -5, 2, 7, 100]), i32([-3, 2, 7]), i32(np.arange(12).reshape(3, 2, 2))),
    (out(T.TENSOR_INT32, (5, 2, 2), [[[8, 9], [10, 11]], [[0, 0], [0, 0]],
                                     [[4, 5], [6, 7]], [[8, 9], [10, 11]], [[0, 0], [0, 0]]]),
     out(T.TENSOR_QUANT8_ASYMM, (5,), [1, 0, 1, 1, 0], scale=1.0))))

# -- LSH_PROJECTION ------------------------------------------------------------------------------

_SEEDS = [[0.123, 0.456], [-0.321, -0.654], [1.234, 5.678], [-4.321, -8.765]]
_LOOKUP = i32([[12345, 54321], [67890, 9876], [-12345678, -87654321]])
_WEIGHTS = [0.12, 0.34, 0.56]
_DENSE, _SPARSE_DEPRECATED, _SPARSE = 2, 1, 3

# lsh_projection.mod.py (V1_0) and lsh_projection_weights_as_inputs.mod.py (V1_0): DENSE; the
# seeds are a constant in one, an input in the other (the consts variant covers both).
# TENSOR_FLOAT16 seeds hash other bytes: no float16 variant, lsh_projection_float16 below.
CASES.append(OpCase(
    "lsh_projection_nnapi_lsh_projection", Op.LSH_PROJECTION,
    (f32(_SEEDS), _LOOKUP, f32(_WEIGHTS), i32s(_DENSE)),
    (out(T.TENSOR_INT32, (8,), [1, 1, 1, 0, 1, 1, 1, 0]),), skip=("float16",)))

# lsh_projection_2.mod.py (V1_0): SPARSE_DEPRECATED (type 1), weights omitted.
CASES.append(OpCase(
    "lsh_projection_nnapi_lsh_projection_2", Op.LSH_PROJECTION,
    (f32(_SEEDS), _LOOKUP, omitted(T.TENSOR_FLOAT32, (3,)), i32s(_SPARSE_DEPRECATED)),
    (out(T.TENSOR_INT32, (4,), [1, 2, 2, 0]),), skip=("float16",)))

# lsh_projection_float16.mod.py (V1_2): DENSE with TENSOR_FLOAT16 seeds and weights.
CASES.append(OpCase(
    "lsh_projection_nnapi_lsh_projection_float16", Op.LSH_PROJECTION,
    (f16(_SEEDS), _LOOKUP, f16(_WEIGHTS), i32s(_DENSE)),
    (out(T.TENSOR_INT32, (8,), [1, 1, 1, 1, 1, 0, 0, 0]),)))

# nnrt's own: SPARSE (type 3) is SPARSE_DEPRECATED plus k * 2**num_bits for hash function k
# (NNAPI's definition), so lsh_projection_2's signatures [1, 2, 2, 0] become [1, 6, 10, 12].
CASES.append(OpCase(
    "lsh_projection_sparse_offsets", Op.LSH_PROJECTION,
    (f32(_SEEDS), _LOOKUP, omitted(T.TENSOR_FLOAT32, (3,)), i32s(_SPARSE)),
    (out(T.TENSOR_INT32, (4,), [1, 6, 10, 12]),), skip=("float16",)))

# -- QUANTIZED_16BIT_LSTM --------------------------------------------------------------------------

_W_SCALE, _W_ZERO = 0.00408021, 100
_Q16_WEIGHTS = {
    "input": ([146, 250, 235, 171, 10, 218, 171, 108], [24, 50, 132, 179, 158, 110, 3, 169],
              [133, 34, 29, 49, 206, 109, 54, 183], [195, 187, 11, 99, 109, 10, 218, 48]),
    "recurrent": ([254, 206, 77, 168, 71, 20, 215, 6, 223, 7, 118, 225, 59, 130, 174, 26],
                  [137, 240, 103, 52, 68, 51, 237, 112, 0, 220, 89, 23, 69, 4, 207, 253],
                  [172, 60, 205, 65, 14, 0, 140, 168, 240, 223, 133, 56, 142, 64, 246, 216],
                  [106, 214, 67, 23, 59, 158, 45, 3, 119, 132, 49, 205, 129, 218, 11, 98]),
}
_Q16_BIASES = ([-7876, 13488, -726, 32839], [9206, -46884, -11693, -38724],
               [39481, 48624, 48976, -21419], [-58999, -17050, -41852, -40538])


def _q16_lstm(name: str, batches: int, x: list[int], cell: list[int], prev: list[int],
              cell_out: list[int], output: list[int]) -> None:
    weights = ([q8(np.reshape(w, (4, 2)), _W_SCALE, _W_ZERO) for w in _Q16_WEIGHTS["input"]]
               + [q8(np.reshape(w, (4, 4)), _W_SCALE, _W_ZERO)
                  for w in _Q16_WEIGHTS["recurrent"]])
    biases = [quant(b, T.TENSOR_INT32, _W_SCALE / 128) for b in _Q16_BIASES]
    CASES.append(OpCase(
        name, Op.QUANTIZED_16BIT_LSTM,
        (q8(np.reshape(x, (batches, 2)), 1 / 128, 128), *weights, *biases,
         quant(np.reshape(cell, (batches, 4)), Q16, 1 / 2048),
         q8(np.reshape(prev, (batches, 4)), 1 / 128, 128)),
        (out(Q16, (batches, 4), np.reshape(cell_out, (batches, 4)), scale=1 / 2048),
         out(T.TENSOR_QUANT8_ASYMM, (batches, 4), np.reshape(output, (batches, 4)),
             scale=1 / 128, zero_point=128))))


# quantized_lstm.mod.py (V1_2): two batches, then the first batch alone ("constant_weights";
# the consts variant makes the weights constants).
_q16_lstm("quantized_16bit_lstm_nnapi_quantized_lstm", 2, [166, 179, 50, 150],
          [876, 1034, 955, -909, 761, 1029, 796, -1036],
          [136, 150, 140, 115, 135, 152, 138, 112],
          [1485, 1177, 1373, -1023, 1019, 1355, 1097, -1235],
          [140, 151, 146, 112, 136, 156, 142, 112])
_q16_lstm("quantized_16bit_lstm_nnapi_quantized_lstm_constant_weights", 1, [166, 179],
          [876, 1034, 955, -909], [136, 150, 140, 115], [1485, 1177, 1373, -1023],
          [140, 151, 146, 112])

# -- QUANTIZED_LSTM ---------------------------------------------------------------------------------

_QL_INPUT = [90, 102, 13, 26, 38, 102, 13, 26, 51, 64]
_QL_INPUT_TO = (
    [64, 77, 89, -102, -115, 13, 25, 38, -51, 64, -102, 89, -77, 64, -51, -64, -51, -38, -25,
     -13],
    [-77, -13, 38, 25, 115, -64, -25, -51, 38, -102, -51, 38, -64, -51, -77, 38, -51, -77, -64,
     -64],
    [-51, -38, -25, -13, -64, 64, -25, -38, -25, -77, 77, -13, -51, -38, -89, 89, -115, -64, 102,
     77],
    [-102, -51, -25, -115, -13, -89, 38, -38, -102, -25, 77, -25, 51, -89, -38, -64, 13, 64, -77,
     -51],
)
#: qlstm_projection's recurrent weights ([4, 3]); qlstm_noprojection's ([4, 4]) extend them.
_QL_RECURRENT_TO = (
    [-25, -38, 51, 13, -64, 115, -25, -38, -89, 6, -25, -77],
    [-64, -38, -64, -25, 77, 51, 115, 38, -13, 25, 64, 25],
    [-38, 25, 13, -38, 102, -10, -25, 38, 102, -77, -13, 25],
    [38, -13, 13, -25, -64, -89, -25, -77, -13, -51, -89, -25],
)
_QL_RECURRENT_4X4 = (
    [-64, -38, -64, -25, 77, 51, 115, 38, -13, 25, 64, 25, 25, 38, -13, 51],
    [-38, 25, 13, -38, 102, -10, -25, 38, 102, -77, -13, 25, 38, -13, 25, 64],
    [38, -13, 13, -25, -64, -89, -25, -77, -13, -51, -89, -25, 13, 64, 25, -38],
)
_QL_BIAS = ([644245, 3221226, 4724464, 8160438], [2147484, -6442451, -4294968, 2147484],
            [-1073742, 15461883, 5368709, 1717987], [1073742, -214748, 4294968, 2147484])
_QL_LAYER_NORM = ([3277, 6553, 9830, 16384], [6553, 6553, 13107, 9830],
                  [22937, 6553, 9830, 26214], [19660, 6553, 6553, 16384])
_QL_PROJECTION = [-25, 51, 3, -51, 25, 127, 77, 20, 18, 51, -102, 51]
_W8, _STATE, _LN, _BIAS = 0.00784314, 3.05176e-05, 3.05182e-05, 4.65661e-08


def _qlstm(name: str, output_size: int, *, cifg: bool, projection: bool,
           recurrent: tuple[list[int], ...], output: list[int], cell_out: list[int]) -> None:
    """A QUANTIZED_LSTM case of qlstm_*.mod.py: batch 2, input 5, 4 units, zero states."""
    batches, n_input, units = 2, 5, 4

    def gate(k: int, values: Any, dims: tuple[int, ...], type_: T, scale: float) -> Arg:
        if k == 0 and cifg:
            return _omitted(type_, dims, scale if type_ != T.TENSOR_INT32 else 0.0)
        return quant(np.reshape(values, dims), type_, scale)

    input_to = [gate(k, w, (units, n_input), Q8S, _W8) for k, w in enumerate(_QL_INPUT_TO)]
    recurrent_to = [gate(k, w, (units, output_size), Q8S, _W8) for k, w in enumerate(recurrent)]
    peepholes = [_omitted(Q16, (units,), 1.0) for _ in range(3)]
    biases = [gate(k, b, (units,), T.TENSOR_INT32, _BIAS) for k, b in enumerate(_QL_BIAS)]
    if projection:
        proj = [quant(np.reshape(_QL_PROJECTION, (output_size, units)), Q8S, 0.00392157),
                i32([0] * output_size)]
    else:
        proj = [_omitted(Q8S, (output_size, units), 0.00392157),
                _omitted(T.TENSOR_INT32, (output_size,))]
    norms = [gate(k, w, (units,), Q16, _LN) for k, w in enumerate(_QL_LAYER_NORM)]
    state_out = out(Q8AS, (batches, output_size), np.reshape(output, (batches, output_size)),
                    scale=_STATE)
    CASES.append(OpCase(
        name, Op.QUANTIZED_LSTM,
        (quant(np.reshape(_QL_INPUT, (batches, n_input)), Q8AS, 0.0078125),
         *input_to, *recurrent_to, *peepholes, *biases, *proj,
         quant(np.zeros((batches, output_size)), Q8AS, _STATE),
         quant(np.zeros((batches, units)), Q16, _STATE),
         *norms, f32s(0.0), f32s(0.0),
         f32s(0.007059), f32s(0.007812), f32s(0.007059), f32s(0.007812), i32s(0), f32s(0.007)),
        (state_out, out(Q16, (batches, units), np.reshape(cell_out, (batches, units)),
                        scale=_STATE), state_out)))


# qlstm_projection.mod.py (V1_3): example 1 (layer norm, projection), example 2 (also CIFG).
_qlstm("quantized_lstm_nnapi_qlstm_projection", 3, cifg=False, projection=True,
       recurrent=_QL_RECURRENT_TO, output=[127, 127, -108, -67, 127, 127],
       cell_out=[-14650, 8939, 5771, 6715, -11843, 7847, 1508, 12939])
_qlstm("quantized_lstm_nnapi_qlstm_projection_cifg", 3, cifg=True, projection=True,
       recurrent=_QL_RECURRENT_TO, output=[127, 127, 127, -128, 127, 127],
       cell_out=[-11692, 9960, 5491, 8861, -9422, 7726, 2056, 13149])
# qlstm_noprojection.mod.py (V1_3): CIFG, layer norm, output size = number of units.
_qlstm("quantized_lstm_nnapi_qlstm_noprojection", 4, cifg=True, projection=False,
       recurrent=([0] * 16, *_QL_RECURRENT_4X4), output=[-15, 21, 14, 20, -15, 15, 5, 27],
       cell_out=[-11692, 9960, 5491, 8861, -9422, 7726, 2056, 13149])
