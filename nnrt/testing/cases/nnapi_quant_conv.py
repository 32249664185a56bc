"""Quantised conformance cases of the convolutions, from NNAPI's test specs.

CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D and TRANSPOSE_CONV_2D with TENSOR_QUANT8_ASYMM and
TENSOR_QUANT8_ASYMM_SIGNED inputs and filters of their type or TENSOR_QUANT8_SYMM_PER_CHANNEL.
The helpers here (:class:`Q`, :func:`qarg`, :func:`lit`, :func:`qout`, :func:`add`) also write
the quantised cases of ``nnapi_quant_matmul`` and ``nnapi_quant_pool``.
Each case is one example of an AOSP ``runtime/test/specs/*/*.mod.py`` file (named in a comment;
case names ``<op>_nnapi_<spec stem>[_<example>]_<variation>``):

* V1_0 quant8 specs and the per-channel / V1_3 signed specs give literal quantised values;
* V1_2 / V1_3 specs that quantise a float example with ``DataTypeConverter`` are written as the
  float vector plus the variation's (type, scale, zero point) per operand, quantised here with
  :func:`~nnrt.testing.spec.spec_quantize` exactly as NNAPI's generator does (bias scale
  ``input_scale * filter_scale``, per channel for a per-channel filter, as the specs give it).

Outputs are compared within one quantisation step, NNAPI's tolerance. Cases named
``<op>_nnrt_...`` are nnrt's: NNAPI's float vectors under a TENSOR_QUANT8_ASYMM_SIGNED
quantisation of nnrt's choosing where the V1_3 spec was not at hand (zero points shifted by
-128), and edge cases with hand-computed expected values compared exactly: gemmlowp's rounding
(ties toward +infinity in the doubling high multiply, away from zero in the shift, double
rounding included), saturation, asymmetric zero points and activations in the quantised domain.
Examples that need zero-sized tensors are not transcribed; DEPTHWISE_CONV_2D's per-channel
"different" and "layout" examples of V1_2 are not either: their filter ``[1, 2, 2, 2]`` with
depth_multiplier 2 on 2 input channels breaks NNAPI's own shape rule (depth_out = depth_in *
multiplier), and their expected values come from reads past the filter and bias.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import (
    Arg,
    OpCase,
    bools,
    i32,
    i32s,
    out,
    per_channel,
    quant,
    spec_quantize,
    to_nchw,
)

__all__ = ["CASES", "Q", "add", "chan", "lit", "qarg", "qbias", "qout", "s8", "u8"]

CASES: list[OpCase] = []

SAME, VALID = 1, 2
_CLAMP = {0: (-np.inf, np.inf), 1: (0.0, np.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
_ACT_NAMES = {0: "none", 1: "relu", 2: "relu1", 3: "relu6"}
_EXACT = (0.0, 0.0)


@dataclass(frozen=True)
class Q:
    """How a variation quantises one operand: NNAPI's ``DataTypeConverter`` entry."""

    type: T
    scale: float = 0.0
    zero_point: int = 0
    #: (channel dim, scales) of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand.
    channel: tuple[int, tuple[float, ...]] | None = None


def u8(scale: float, zero_point: int) -> Q:
    """TENSOR_QUANT8_ASYMM with ``scale`` and ``zero_point``."""
    return Q(T.TENSOR_QUANT8_ASYMM, scale, zero_point)


def s8(scale: float, zero_point: int) -> Q:
    """TENSOR_QUANT8_ASYMM_SIGNED with ``scale`` and ``zero_point``."""
    return Q(T.TENSOR_QUANT8_ASYMM_SIGNED, scale, zero_point)


def chan(dim: int, *scales: float) -> Q:
    """TENSOR_QUANT8_SYMM_PER_CHANNEL with ``scales`` along ``dim``."""
    return Q(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, channel=(dim, tuple(scales)))


def _array(values: Any, dims: Sequence[int]) -> Any:
    return np.asarray(values, np.float64).reshape(tuple(dims))


def qarg(values: Any, dims: Sequence[int], q: Q) -> Arg:
    """A spec's real ``values`` quantised as NNAPI's generator does for ``q``."""
    v = _array(values, dims)
    if q.channel is not None:
        return per_channel(spec_quantize(v, q.type, 0, channel=q.channel), *q.channel)
    return quant(spec_quantize(v, q.type, q.scale, q.zero_point), q.type, q.scale,
                 q.zero_point)


def lit(values: Any, dims: Sequence[int], q: Q) -> Arg:
    """Literal quantised ``values`` (a V1_0-style spec) of ``q``'s type."""
    if q.channel is not None:
        return per_channel(np.reshape(values, tuple(dims)), *q.channel)
    return quant(np.reshape(values, tuple(dims)), q.type, q.scale, q.zero_point)


def qout(values: Any, dims: Sequence[int], q: Q, *, literal: bool = False) -> Arg:
    """The expected output: real ``values`` quantised, or ``literal`` quantised values."""
    v = _array(values, dims)
    expected = v if literal else spec_quantize(v, q.type, q.scale, q.zero_point)
    return out(q.type, dims, expected, scale=q.scale, zero_point=q.zero_point)


def qbias(values: Sequence[float], x: Q, w: Q) -> Arg:
    """The INT32 bias quantised with scale ``x.scale * w.scale`` (per channel when ``w`` is)."""
    if w.channel is not None:
        scales = [x.scale * s for s in w.channel[1]]
        return i32(spec_quantize(values, T.TENSOR_INT32, 0, channel=(0, scales)))
    scale = x.scale * w.scale
    return i32(spec_quantize(values, T.TENSOR_INT32, scale), scale=scale)


def add(name: str, op: Op, inputs: Sequence[Arg], output: Arg, *, layout: int | None = None,
        output_shape: int | None = None, exact: bool = False,
        variants: tuple[str, ...] | None = None, into: list[OpCase] = CASES) -> None:
    """Add the case to ``into`` and, when ``layout`` (the BOOL layout input's slot) is given,
    its NCHW twin.

    ``output_shape`` is the slot of TRANSPOSE_CONV_2D's output_shape tensor (in the
    operation's layout); ``exact`` compares without NNAPI's one-step tolerance.
    """
    case = OpCase(name, op, tuple(inputs), (output,), tolerance=_EXACT if exact else None,
                  variants=variants)
    into.append(case)
    if layout is None:
        return
    twin = to_nchw(case, layout_input=layout)
    if output_shape is not None:
        args = list(twin.inputs)
        args[output_shape] = i32(np.asarray(args[output_shape].value)[[0, 3, 1, 2]])
        twin = replace(twin, inputs=tuple(args))
    into.append(twin)


def _ints(*params: int) -> list[Arg]:
    return [i32s(p) for p in params]


def _clamped(values: Sequence[float], act: int) -> list[float]:
    low, high = _CLAMP[act]
    return [float(min(max(v, low), high)) for v in values]


@dataclass(frozen=True)
class _Float:
    """A float example of a convolution spec: input, filter, bias, parameters and output."""

    x: tuple[Any, tuple[int, ...]]
    w: tuple[Any, tuple[int, ...]]
    b: Sequence[float]
    #: Inputs after the bias (scalar parameters; TRANSPOSE_CONV_2D's output_shape first).
    tail: tuple[Arg, ...]
    out_dims: tuple[int, ...]
    expected: Sequence[float]
    layout: int | None = None
    output_shape: int | None = None


def _quantised(name: str, op: Op, ex: _Float, variations: dict[str, tuple[Q, Q, Q]], *,
               activation: int | None = None) -> None:
    """One case (plus NCHW twin) per variation ``suffix: (input, filter, output)``.

    With ``activation`` (the activation slot) the example is expanded to all four fused
    activations, the float output clamped before quantisation (NNAPI's AddAllActivations).
    """
    acts = range(4) if activation is not None else (None,)
    for suffix, (xq, wq, oq) in variations.items():
        for act in acts:
            tail = list(ex.tail)
            expected = ex.expected
            label = name
            if act is not None and activation is not None:
                tail[activation - 3] = i32s(act)
                expected = _clamped(expected, act)
                label = f"{name}_{_ACT_NAMES[act]}"
            inputs = [qarg(*ex.x, xq), qarg(*ex.w, wq), qbias(ex.b, xq, wq), *tail]
            add(f"{label}_{suffix}", op, inputs, qout(expected, ex.out_dims, oq),
                layout=ex.layout, output_shape=ex.output_shape)


# -- CONV_2D ----------------------------------------------------------------------------------
# V1_0/conv_quant8.mod.py (and conv_quant8_weights_as_inputs: the same vector), conv_quant8_2,
# conv_quant8_channels, conv_quant8_overflow: literal values, explicit padding unless noted.
add("conv_2d_nnapi_conv_quant8", Op.CONV_2D,
    [lit([8, 8, 8, 8, 4, 8, 8, 8, 8], (1, 3, 3, 1), u8(0.5, 0)),
     lit([2, 2, 2, 2], (1, 2, 2, 1), u8(0.5, 0)), i32([4], scale=0.25),
     *_ints(0, 0, 0, 0, 1, 1, 0)],
    qout([15, 15, 15, 15], (1, 2, 2, 1), u8(1.0, 0), literal=True))
# Implicit VALID, stride width 3, height 1.
add("conv_2d_nnapi_conv_quant8_2", Op.CONV_2D,
    [lit([133, 131, 129, 125, 123, 121, 135, 133, 131, 123, 121, 119, 137, 135, 133, 121, 119,
          117], (1, 3, 6, 1), u8(0.5, 127)),
     lit([129, 131, 133, 135], (1, 2, 2, 1), u8(0.5, 127)), i32([-4], scale=0.25),
     *_ints(VALID, 3, 1, 0)],
    qout([157, 103, 167, 93], (1, 2, 2, 1), u8(1.0, 127), literal=True))
add("conv_2d_nnapi_conv_quant8_channels", Op.CONV_2D,
    [lit([10, 10, 10], (1, 1, 1, 3), u8(0.5, 0)),
     lit(range(1, 10), (3, 1, 1, 3), u8(0.5, 0)), i32([0, 0, 0], scale=0.25),
     *_ints(0, 0, 0, 0, 1, 1, 0)],
    qout([15, 38, 60], (1, 1, 1, 3), u8(1.0, 0), literal=True))
# Results beyond 255 saturate.
add("conv_2d_nnapi_conv_quant8_overflow", Op.CONV_2D,
    [lit(range(1, 19), (1, 2, 3, 3), u8(0.5, 0)),
     lit([10, 40, 70, 20, 50, 80, 30, 60, 90], (3, 1, 1, 3), u8(0.5, 0)),
     i32([0, 0, 0], scale=0.25), *_ints(0, 0, 0, 0, 1, 1, 0)],
    qout([75, 90, 105, 165, 203, 240] + [255] * 12, (1, 2, 3, 3), u8(1.0, 0), literal=True))

# V1_2/conv2d_v1_2.mod.py tests 1-4 (quant8, channelQuant8, channelQuant8_mult_gt_1 variations,
# each with its NCHW twin) and test 9 (literal, real multiplier above 1).
_CONV_1 = _Float(([1, 1, 1, 1, 0.5, 1, 1, 1, 1], (1, 3, 3, 1)), ([0.25] * 4, (1, 2, 2, 1)),
                 [0], (*_ints(0, 0, 0, 0, 1, 1, 0), bools(False)), (1, 2, 2, 1), [0.875] * 4,
                 layout=10)
_CONV_2 = _Float((range(1, 13), (1, 3, 4, 1)), ([1, 4, 7, 2, 5, 8, 3, 6, 9], (1, 3, 3, 1)),
                 [-200], (*_ints(SAME, 1, 1, 1), bools(False)), (1, 3, 4, 1),
                 [0, 0, 0, 0, 35, 112, 157, 0, 0, 34, 61, 0], layout=7)
_CONV_3 = _Float(([5, 5, 5], (1, 1, 1, 3)), ([0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5], (3, 1, 1, 3)),
                 [0, 0, 0], (*_ints(0, 0, 0, 0, 1, 1, 0), bools(False)), (1, 1, 1, 3),
                 [15, 37.5, 60], layout=10)
_CONV_4 = _Float((range(1, 19), (1, 2, 3, 3)), ([1, 4, 7, 2, 5, 8, 3, 6, 9], (3, 1, 1, 3)),
                 [0, 0, 0], (*_ints(0, 0, 0, 0, 1, 1, 0), bools(False)), (1, 2, 3, 3),
                 [30, 36, 42, 66, 81, 96, 102, 126, 150, 138, 171, 204, 174, 216, 258, 210,
                  261, 312], layout=10)
_quantised("conv_2d_nnapi_conv2d_v1_2_nchw_1", Op.CONV_2D, _CONV_1, {
    "quant8": (u8(0.5, 0), u8(0.125, 0), u8(0.125, 0)),
    "channel_quant8": (u8(0.5, 0), chan(0, 0.125), u8(0.125, 0))})
_quantised("conv_2d_nnapi_conv2d_v1_2_nchw_2", Op.CONV_2D, _CONV_2, {
    "quant8": (u8(0.5, 127), u8(0.5, 127), u8(1.0, 50)),
    "channel_quant8": (u8(0.5, 127), chan(0, 0.5), u8(1.0, 50))})
_quantised("conv_2d_nnapi_conv2d_v1_2_channel", Op.CONV_2D, _CONV_3, {
    "quant8": (u8(0.5, 0), u8(0.5, 0), u8(0.5, 0)),
    "channel_quant8": (u8(0.5, 0), chan(0, 0.5, 0.4, 0.3), u8(0.5, 0))})
_quantised("conv_2d_nnapi_conv2d_v1_2_large", Op.CONV_2D, _CONV_4, {
    "quant8": (u8(0.5, 128), u8(0.5, 128), u8(2.0, 0)),
    "channel_quant8": (u8(0.5, 128), chan(0, 0.5, 1.0, 0.5), u8(2.0, 0)),
    "channel_quant8_mult_gt_1": (u8(1.0, 127), chan(0, 0.5, 1.0, 1.005), u8(1.0, 127))})
_GT1 = 256.5 / 255
add("conv_2d_nnapi_conv2d_v1_2_quant_output_multiplier_gt_1", Op.CONV_2D,
    [lit([129, 129, 129, 129, 130, 130, 130, 130, 129, 130, 131, 132, 129, 130, 131, 132],
         (2, 2, 4, 1), u8(_GT1, 128)),
     lit([129, 130, 131, 132, 127, 129, 127, 129, 127, 127, 129, 129], (3, 2, 2, 1),
         u8(_GT1, 128)),
     i32([1, 2, 3], scale=_GT1 * _GT1), *_ints(VALID, 2, 2, 0)],
    qout([145, 129, 132, 145, 129, 132, 144, 131, 130, 164, 131, 130], (2, 1, 2, 3),
         u8(1.0, 127), literal=True))

# V1_2/conv2d_per_channel.mod.py tests 1 and 2 (literal; bias scale 0, per channel implied).
_PC_FILTER = lit([1, 2, 1, 2, 1, 2], (3, 1, 1, 2), chan(0, 0.5, 0.75, 1.0))
add("conv_2d_nnapi_conv2d_per_channel", Op.CONV_2D,
    [lit([138] * 6, (1, 3, 1, 2), u8(0.5, 128)), _PC_FILTER, i32([4, 4, 4]),
     *_ints(0, 0, 0, 0, 1, 1, 0)],
    qout([137, 141, 145] * 3, (1, 3, 1, 3), u8(1.0, 128), literal=True))
add("conv_2d_nnapi_conv2d_per_channel_layouts", Op.CONV_2D,
    [lit([138, 108] * 3, (1, 3, 1, 2), u8(0.5, 128)), _PC_FILTER, i32([4, 4, 4]),
     *_ints(0, 0, 0, 0, 1, 1, 0), bools(False)],
    qout([121, 118, 115] * 3, (1, 3, 1, 3), u8(1.0, 128), literal=True), layout=10)

# V1_3/conv2d_quant8_signed.mod.py: the dilation examples (explicit and implicit padding, every
# one with layout and dilation factors), the per-channel ones (literal), CONV_NCHW_1..LARGE
# (quant8_signed, channelquant8_signed, channelQuant8_mult_gt_1) and the multiplier above 1.
_DIL9 = np.zeros((9, 9))
_DIL9[3:6, 3:6] = 1.0
_DIL6 = np.zeros((6, 6))
_DIL6[2:4, 2:4] = [[4, 3], [2, 1]]
_SIGNED_DIL = {"quant8_signed": (s8(0.5, -128), s8(0.125, -128), s8(0.125, -128))}
_DIL_EXAMPLES = {
    "dilation_1": _Float(_CONV_1.x, _CONV_1.w, [0], (*_ints(0, 0, 0, 0, 1, 1, 0), bools(False),
                                                     *_ints(1, 1)), (1, 2, 2, 1), [0.875] * 4,
                         layout=10),
    "dilation_3": _Float((_DIL9.ravel(), (1, 9, 9, 1)), (range(1, 10), (1, 3, 3, 1)), [0],
                         (*_ints(0, 0, 0, 0, 1, 1, 0), bools(False), *_ints(3, 3)),
                         (1, 3, 3, 1), [5] * 9, layout=10),
    "valid_padding_dilation_1": _Float(_CONV_1.x, _CONV_1.w, [0], (
        *_ints(VALID, 1, 1, 0), bools(False), *_ints(1, 1)), (1, 2, 2, 1), [0.875] * 4,
        layout=7),
    "valid_padding_dilation_3": _Float((_DIL9.ravel(), (1, 9, 9, 1)), (range(1, 10), (1, 3, 3, 1)),
                                       [0], (*_ints(VALID, 1, 1, 0), bools(False), *_ints(3, 3)),
                                       (1, 3, 3, 1), [5] * 9, layout=7),
    "same_padding_stride_2_dilation_3": _Float(
        (_DIL6.ravel(), (1, 6, 6, 1)), ([1, 2, 3, 4], (1, 2, 2, 1)), [0],
        (*_ints(SAME, 2, 2, 0), bools(False), *_ints(3, 3)), (1, 3, 3, 1),
        [16, 0, 9, 0, 0, 0, 4, 0, 1], layout=7),
}
for _stem, _ex in _DIL_EXAMPLES.items():
    _quantised(f"conv_2d_nnapi_conv2d_quant8_signed_{_stem}", Op.CONV_2D, _ex, _SIGNED_DIL)
add("conv_2d_nnapi_conv2d_quant8_signed_per_channel", Op.CONV_2D,
    [lit([10] * 6, (1, 3, 1, 2), s8(0.5, 0)), _PC_FILTER, i32([4, 4, 4]),
     *_ints(0, 0, 0, 0, 1, 1, 0)],
    qout([9, 13, 17] * 3, (1, 3, 1, 3), s8(1.0, 0), literal=True))
add("conv_2d_nnapi_conv2d_quant8_signed_per_channel_layouts", Op.CONV_2D,
    [lit([10, -20] * 3, (1, 3, 1, 2), s8(0.5, 0)), _PC_FILTER, i32([4, 4, 4]),
     *_ints(0, 0, 0, 0, 1, 1, 0), bools(False)],
    qout([-7, -10, -13] * 3, (1, 3, 1, 3), s8(1.0, 0), literal=True), layout=10)
_quantised("conv_2d_nnapi_conv2d_quant8_signed_nchw_1", Op.CONV_2D, _CONV_1, {
    "quant8_signed": (s8(0.5, -128), s8(0.125, -128), s8(0.125, -128)),
    "channel_quant8_signed": (s8(0.5, -128), chan(0, 0.125), s8(0.125, -128))})
_quantised("conv_2d_nnapi_conv2d_quant8_signed_nchw_2", Op.CONV_2D, _CONV_2, {
    "quant8_signed": (s8(0.5, -1), s8(0.5, -1), s8(1.0, -78)),
    "channel_quant8_signed": (s8(0.5, -1), chan(0, 0.5), s8(1.0, -78))})
_quantised("conv_2d_nnapi_conv2d_quant8_signed_channel", Op.CONV_2D, _CONV_3, {
    "quant8_signed": (s8(0.5, -128), s8(0.5, -128), s8(0.5, -128)),
    "channel_quant8_signed": (s8(0.5, -128), chan(0, 0.5, 0.4, 0.3), s8(0.5, -128))})
_quantised("conv_2d_nnapi_conv2d_quant8_signed_large", Op.CONV_2D, _CONV_4, {
    "quant8_signed": (s8(0.5, 0), s8(0.5, 0), s8(2.0, -128)),
    "channel_quant8_signed": (s8(0.5, 0), chan(0, 0.5, 1.0, 0.5), s8(2.0, -128)),
    "channel_quant8_mult_gt_1": (s8(1.0, -1), chan(0, 0.5, 1.0, 1.005), s8(1.0, -1))})
add("conv_2d_nnapi_conv2d_quant8_signed_quant_output_multiplier_gt_1", Op.CONV_2D,
    [lit([1, 1, 1, 1, 2, 2, 2, 2, 1, 2, 3, 4, 1, 2, 3, 4], (2, 2, 4, 1), s8(_GT1, 0)),
     lit([1, 2, 3, 4, -1, 1, -1, 1, -1, -1, 1, 1], (3, 2, 2, 1), s8(_GT1, 0)),
     i32([1, 2, 3], scale=_GT1 * _GT1), *_ints(VALID, 2, 2, 0)],
    qout([17, 1, 4, 17, 1, 4, 16, 3, 2, 36, 3, 2], (2, 1, 2, 3), s8(1.0, -1), literal=True))

# nnrt: gemmlowp's rounding, per output channel. A 1x1 convolution of [-19, -17, -6, -2, 2, 6,
# 17, 19] with per-channel multipliers 0.5, 0.25 and 1.5 (filter scales; input and output
# scale 1). x * 0.5 is the doubling high multiply by 2**30, ties toward +infinity (-9.5 -> -9,
# 8.5 -> 9); x * 0.25 then halves that with ties away from zero (17: 8.5 -> 9 -> 4.5 -> 5, a
# double rounding); x * 1.5 shifts left once, then multiplies by 0.75 * 2**31 (ties up).
add("conv_2d_nnrt_per_channel_rounding", Op.CONV_2D,
    [lit([-19, -17, -6, -2, 2, 6, 17, 19], (1, 1, 8, 1), s8(1.0, 0)),
     lit([1, 1, 1], (3, 1, 1, 1), chan(0, 0.5, 0.25, 1.5)), i32([0, 0, 0]),
     *_ints(0, 0, 0, 0, 1, 1, 0)],
    qout([-9, -5, -28, -8, -4, -25, -3, -2, -9, -1, -1, -3,
          1, 1, 3, 3, 2, 9, 9, 5, 26, 10, 5, 29], (1, 1, 8, 3), s8(1.0, 0), literal=True),
    exact=True)

# -- DEPTHWISE_CONV_2D ------------------------------------------------------------------------
# V1_0/depthwise_conv2d_quant8.mod.py (as depthwise_conv2d_quant8_weights_as_inputs gives it;
# the variants feed the filter both ways) and V1_2/depthwise_conv2d_per_channel.mod.py test 1:
# the same vector with a per-channel filter (scales along dimension 3).
_DW_X = [4, 16, 4, 32, 4, 64, 4, 128]
_DW_W = [2, 4, 2, 0, 2, 2, 2, 0]
add("depthwise_conv_2d_nnapi_depthwise_conv2d_quant8", Op.DEPTHWISE_CONV_2D,
    [lit(_DW_X, (1, 2, 2, 2), u8(0.5, 0)), lit(_DW_W, (1, 2, 2, 2), u8(0.5, 0)),
     i32([0, 0], scale=0.25), *_ints(0, 0, 0, 0, 1, 1, 1, 0)],
    qout([8, 48], (1, 1, 1, 2), u8(1.0, 0), literal=True))
add("depthwise_conv_2d_nnapi_depthwise_conv2d_per_channel_same", Op.DEPTHWISE_CONV_2D,
    [lit(_DW_X, (1, 2, 2, 2), u8(0.5, 0)), lit(_DW_W, (1, 2, 2, 2), chan(3, 0.5, 0.5)),
     i32([0, 0]), *_ints(0, 0, 0, 0, 1, 1, 1, 0)],
    qout([8, 48], (1, 1, 1, 2), u8(1.0, 0), literal=True))
# V1_3/depthwise_conv2d_quant8_signed.mod.py's "(0.5, -1)" example, which is V1_0's
# depthwise_conv2d_quant8_2 with every value and zero point shifted by -128; both are added
# (implicit VALID, depth_multiplier 2).
_DW2 = ([1, 3, 13, 15, 5, 7, 17, 19, 9, 11, 21, 23],
        [1, 3, 5, 7, -19, 19, -23, 23, 9, 11, 13, 15, 25, -29, 29, -33], [70, -35, 98, -21, 90,
                                                                           -27, 126, -5])
for _suffix, _shift, _make in (("quant8_2", 128, u8), ("quant8_signed_2", 0, s8)):
    add(f"depthwise_conv_2d_nnapi_depthwise_conv2d_{_suffix}", Op.DEPTHWISE_CONV_2D,
        [lit(np.add(_DW2[0], _shift), (1, 3, 2, 2), _make(0.5, _shift - 1)),
         lit(np.add(_DW2[1], _shift), (1, 2, 2, 4), _make(0.5, _shift - 1)),
         i32([4, 8, 12, 16], scale=0.25), *_ints(VALID, 1, 1, 2, 0)],
        qout(np.add(_DW2[2], _shift), (1, 2, 1, 4), _make(1.0, _shift - 1), literal=True))

# V1_2/depthwise_conv2d_v1_2.mod.py: the quant8 variation of its four float examples (NHWC and
# NCHW; bias scale input x filter scale, as the spec gives it).
_DW_V12_1 = _Float(([10, 21, 10, 22, 10, 23, 10, 24, 10, 25, 10, 26, 10, 27, 10, 28, 10, 29],
                    (1, 3, 3, 2)),
                   ([.25, 0, .2, 0, .25, 0, 0, .3, .25, 0, 0, 0, .25, .1, 0, 0], (1, 2, 2, 4)),
                   [1, 2, 3, 4], (*_ints(0, 0, 0, 0, 1, 1, 2, 0), bools(False)), (1, 2, 2, 4),
                   [11, 3, 7.2, 10.6, 11, 3, 7.4, 10.9, 11, 3, 7.8, 11.5, 11, 3, 8.0, 11.8],
                   layout=11)
_DW_V12 = {
    "": (_DW_V12_1, (u8(0.5, 0), u8(0.01, 0), u8(0.1, 0))),
    "_2": (_Float(([1, 2, 7, 8, 3, 4, 9, 10, 5, 6, 11, 12], (1, 3, 2, 2)),
                  ([1, 2, 3, 4, -9, 10, -11, 12, 5, 6, 7, 8, 13, -14, 15, -16], (1, 2, 2, 4)),
                  [1, 2, 3, 4], (*_ints(VALID, 1, 1, 2, 0), bools(False)), (1, 2, 1, 4),
                  [71, -34, 99, -20, 91, -26, 127, -4], layout=8),
           (u8(0.5, 128), u8(0.5, 128), u8(1.0, 100))),
    "_large": (_Float(([10, 21, 10, 22, 10, 23, 10, 24], (1, 2, 2, 2)),
                      ([.25, 0, .25, 1, .25, 0, .25, 1], (1, 2, 2, 2)), [100, 200],
                      (*_ints(0, 0, 0, 0, 1, 1, 1, 0), bools(False)), (1, 1, 1, 2), [110, 246],
                      layout=11),
               (u8(0.5, 100), u8(0.125, 128), u8(2.0, 128))),
    "_large_2": (_Float(([10, 21, 10, 0, 10, 22, 20, 0, 10, 23, 30, 0, 10, 24, 40, 0],
                         (1, 2, 2, 4)),
                        ([.25, 0, 10, 50, .25, 1, 20, 50, .25, 0, 30, 50, .25, 1, 40, 50],
                         (1, 2, 2, 4)), [6000, 7000, 8000, 9000],
                        (*_ints(0, 0, 0, 0, 1, 1, 1, 0), bools(False)), (1, 1, 1, 4),
                        [6010, 7046, 11000, 9000], layout=11),
                 (u8(0.5, 128), u8(0.25, 0), u8(50.0, 0))),
}
for _stem, (_example, _variation) in _DW_V12.items():
    _quantised(f"depthwise_conv_2d_nnapi_depthwise_conv2d_v1_2{_stem}", Op.DEPTHWISE_CONV_2D,
               _example, {"quant8": _variation})

# V1_3/depthwise_conv2d_quant8_signed.mod.py: the dilation examples (layout and dilation
# factors), the literal signed ones and DEPTHWISE_CONV2D_NCHW (no dilation factors).
_DW_1 = _Float(([10, 21, 10, 22, 10, 23, 10, 24, 10, 25, 10, 26, 10, 27, 10, 28, 10, 29],
                (1, 3, 3, 2)),
               ([.25, 0, .2, 0, .25, 0, 0, .3, .25, 0, 0, 0, .25, .1, 0, 0], (1, 2, 2, 4)),
               [1, 2, 3, 4], (*_ints(0, 0, 0, 0, 1, 1, 2, 0), bools(False), *_ints(1, 1)),
               (1, 2, 2, 4), [11, 3, 7.2, 10.6, 11, 3, 7.4, 10.9, 11, 3, 7.8, 11.5, 11, 3, 8.0,
                              11.8], layout=11)
_DW_DIL_IN = np.asarray([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0,
                         0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], np.float64)
_DW_2 = _Float((_DW_DIL_IN, (1, 4, 4, 2)), (range(1, 17), (1, 2, 2, 4)), [0, 0, 0, 0],
               (*_ints(0, 0, 0, 0, 1, 1, 2, 0), bools(False), *_ints(2, 2)), (1, 2, 2, 4),
               [13, 14, 0, 0, 0, 0, 11, 12, 5, 6, 0, 0, 0, 0, 3, 4], layout=11)
_DW_S1 = s8(0.5, -128), s8(0.01, -128), s8(0.1, -128)
_quantised("depthwise_conv_2d_nnapi_depthwise_conv2d_quant8_signed_dilation_1",
           Op.DEPTHWISE_CONV_2D, _DW_1, {"quant8_signed": _DW_S1})
_quantised("depthwise_conv_2d_nnapi_depthwise_conv2d_quant8_signed_dilation_2",
           Op.DEPTHWISE_CONV_2D, _DW_2,
           {"quant8_signed": (s8(0.5, -128), s8(0.125, -128), s8(0.125, -128))})
_quantised("depthwise_conv_2d_nnapi_depthwise_conv2d_quant8_signed_valid_padding_dilation_1",
           Op.DEPTHWISE_CONV_2D,
           replace(_DW_1, tail=(*_ints(VALID, 1, 1, 2, 0), bools(False), *_ints(1, 1)),
                   layout=8), {"quant8_signed": _DW_S1})
_quantised("depthwise_conv_2d_nnapi_depthwise_conv2d_quant8_signed_valid_padding_dilation_2",
           Op.DEPTHWISE_CONV_2D,
           replace(_DW_2, tail=(*_ints(VALID, 1, 1, 2, 0), bools(False), *_ints(2, 2)),
                   layout=8),
           {"quant8_signed": (s8(0.5, -128), s8(0.1, -128), s8(0.1, -128))})
_DW_S = np.zeros((6, 6))
_DW_S[2:4, 2:4] = 1.0
_quantised("depthwise_conv_2d_nnapi_depthwise_conv2d_quant8_signed_same_padding_stride_2",
           Op.DEPTHWISE_CONV_2D,
           _Float((_DW_S.ravel(), (1, 6, 6, 1)), ([1, 2, 3, 4], (1, 2, 2, 1)), [0],
                  (*_ints(SAME, 2, 2, 1, 0), bools(False), *_ints(3, 3)), (1, 3, 3, 1),
                  [4, 0, 3, 0, 0, 0, 2, 0, 1], layout=8),
           {"quant8_signed": (s8(0.5, -128), s8(0.125, -128), s8(0.125, -128))})
_quantised("depthwise_conv_2d_nnapi_depthwise_conv2d_quant8_signed_nchw", Op.DEPTHWISE_CONV_2D,
           replace(_DW_1, tail=(*_ints(0, 0, 0, 0, 1, 1, 2, 0), bools(False))),
           {"quant8_signed": _DW_S1})
add("depthwise_conv_2d_nnapi_depthwise_conv2d_quant8_signed_same", Op.DEPTHWISE_CONV_2D,
    [lit(np.subtract(_DW_X, 128), (1, 2, 2, 2), s8(0.5, -128)),
     lit(_DW_W, (1, 2, 2, 2), chan(3, 0.5, 0.5)), i32([0, 0]),
     *_ints(0, 0, 0, 0, 1, 1, 1, 0)],
    qout([-120, -80], (1, 1, 1, 2), s8(1.0, -128), literal=True))
add("depthwise_conv_2d_nnapi_depthwise_conv2d_quant8_signed", Op.DEPTHWISE_CONV_2D,
    [lit(np.subtract(_DW_X, 128), (1, 2, 2, 2), s8(0.5, -128)),
     lit(np.subtract(_DW_W, 128), (1, 2, 2, 2), s8(0.5, -128)), i32([0, 0], scale=0.25),
     *_ints(0, 0, 0, 0, 1, 1, 1, 0)],
    qout([-120, -80], (1, 1, 1, 2), s8(1.0, -128), literal=True))
# "different" / "layout": four per-channel scales along dimension 3, depth_multiplier 2.
for _name, _tail, _layout in (("different", (), None), ("layout", (bools(False),), 11)):
    add(f"depthwise_conv_2d_nnapi_depthwise_conv2d_quant8_signed_{_name}",
        Op.DEPTHWISE_CONV_2D,
        [lit([1, 2] * 9, (1, 3, 3, 2), s8(0.5, 0)),
         lit([1] * 16, (1, 2, 2, 4), chan(3, 1.0, 0.5, 1.0, 0.5)), i32([4, 4, 4, 4]),
         *_ints(0, 0, 0, 0, 1, 1, 2, 0), *_tail],
        qout([4, 2, 6, 3] * 4, (1, 2, 2, 4), s8(1.0, 0), literal=True), layout=_layout)

# -- GROUPED_CONV_2D --------------------------------------------------------------------------
# V1_2/grouped_conv2d.mod.py: test 1 with all four activations (quant8, quant8_mult_gt_1,
# channelQuant8, channelQuant8_mult_gt_1), tests 2 and 3 (quant8, channelQuant8).
_GC_1 = _Float(([1, 2, 3, 4, 5, 6, 6, 5, 4, 3, 2, 1, 2, 3, 3, 3, 3, 3], (1, 3, 3, 2)),
               ([1, 2, 2, 1, 4, 3, 2, 1], (2, 2, 2, 1)), [10, -33.5],
               (*_ints(0, 0, 0, 0, 1, 1, 2, 0), bools(False)), (1, 2, 2, 2),
               [33, -0.5, 33, 7.5, 31, 4.5, 27, -9.5], layout=11)
_GC_2 = _Float(([1, 2, 3, 4, 4, 3, 2, 1, 2, 3, 3, 3], (1, 3, 2, 2)),
               ([100, 20, 1, 200, 10, 2, 200, 30, 1, 100, 20, 3], (2, 2, 3, 1)), [500, -1000],
               (*_ints(SAME, 1, 1, 2, 0), bools(False)), (1, 3, 2, 2),
               [567, -873, 1480, -160, 608, -840, 1370, -10, 543, -907, 760, -310], layout=8)
_GC_3 = _Float(([1, 2, 3, 4, 55, 4, 3, 2, 1, 5, 4, 3, 2, 11, 2, 3, 4, 5,
                 2, 3, 2, 3, 22, 3, 2, 3, 2, 1, 0, 2, 1, 33, 1, 2, 0, 1], (1, 2, 2, 9)),
               ([1, 2, 3, 2, 1, 0, 2, 3, 3, 6, 6, 6, 9, 8, 5, 2, 1, 1], (6, 1, 1, 3)),
               [10, -20, 30, -40, 50, -60], (*_ints(SAME, 1, 1, 3, 0), bools(False)),
               (1, 2, 2, 6), [24, -16, 215, 338, 98, -51, 32, -6, 73, 50, 134, -45,
                              24, -13, 111, 128, 102, -51, 17, -18, 134, 170, 73, -55], layout=8)
_quantised("grouped_conv_2d_nnapi_grouped_conv2d", Op.GROUPED_CONV_2D, _GC_1, {
    "quant8": (u8(0.25, 100), u8(0.25, 128), u8(0.5, 80)),
    "quant8_mult_gt_1": (u8(0.25, 100), u8(0.25, 128), u8(0.05, 80)),
    "channel_quant8": (u8(0.25, 100), chan(0, 0.25, 0.5), u8(0.5, 80)),
    "channel_quant8_mult_gt_1": (u8(0.25, 100), chan(0, 0.25, 0.5), u8(0.1, 80))},
    activation=10)
_quantised("grouped_conv_2d_nnapi_grouped_conv2d_large", Op.GROUPED_CONV_2D, _GC_2, {
    "quant8": (u8(0.25, 128), u8(1.0, 0), u8(10.0, 100)),
    "channel_quant8": (u8(0.25, 128), chan(0, 2.0, 2.5), u8(10.0, 100))})
_quantised("grouped_conv_2d_nnapi_grouped_conv2d_channel", Op.GROUPED_CONV_2D, _GC_3, {
    "quant8": (u8(0.5, 0), u8(0.25, 0), u8(2.0, 60)),
    "channel_quant8": (u8(0.5, 0), chan(0, *[0.25, 0.3] * 3), u8(2.0, 60))})
# V1_3/grouped_conv2d_quant8_signed.mod.py (as generated): test 1 with all four activations
# in its quant8_signed, quant8_signed "_2" (output scale 0.05) and channelQuant8 variations —
# V1_2's, zero points shifted by -128.
_quantised("grouped_conv_2d_nnapi_grouped_conv2d_quant8_signed", Op.GROUPED_CONV_2D, _GC_1, {
    "quant8_signed": (s8(0.25, -28), s8(0.25, 0), s8(0.5, -48)),
    "quant8_signed_2": (s8(0.25, -28), s8(0.25, 0), s8(0.05, -48)),
    "channel_quant8": (s8(0.25, -28), chan(0, 0.25, 0.5), s8(0.5, -48))}, activation=10)
# nnrt: tests 2 and 3 as TENSOR_QUANT8_ASYMM_SIGNED (V1_2's scales, zero points - 128; the
# V1_3 file's own variations of them were not checked).
_quantised("grouped_conv_2d_nnrt_signed_grouped_conv2d_large", Op.GROUPED_CONV_2D, _GC_2, {
    "quant8_signed": (s8(0.25, 0), s8(1.0, -128), s8(10.0, -28))})
_quantised("grouped_conv_2d_nnrt_signed_grouped_conv2d_channel", Op.GROUPED_CONV_2D, _GC_3, {
    "channel_quant8_signed": (s8(0.5, -128), chan(0, *[0.25, 0.3] * 3), s8(2.0, -68))})

# -- TRANSPOSE_CONV_2D ------------------------------------------------------------------------
# V1_2/transpose_conv2d.mod.py: test 1 with all activations (quant8, channelQuant8), test 2
# (quant8, channelQuant8), tests 3-5 (quant8). Implicit padding: input, filter, bias,
# output_shape, padding code, strides, activation, layout (slot 8); explicit: layout at 10.
_TC_OUT1 = [-0.5, 0, 1.5, 2, 5.5, 8, 4.5, 6, 8.5, 10, 5.5, 6, 7.5, 8, 23.5, 26, 16.5, 18, 20.5,
            22, 14.5, 18, 22.5, 26, 60.5, 70, 40.5, 46, 52.5, 58, 19.5, 22, 25.5, 28, 59.5, 66,
            34.5, 38, 42.5, 46, 37.5, 40, 43.5, 46, 101.5, 108, 58.5, 62, 66.5, 70]
_TC_X = (range(1, 33), (1, 4, 4, 2))
_TC_W = (range(1, 19), (1, 3, 3, 2))
_TC_SAME = [184, 412, 568, 528, 678, 1347, 1689, 1434, 1494, 2715, 3057, 2442, 1968, 3352, 3652,
            2760]
_TC_VALID = [5, 22, 59, 101, 114, 83, 52, 184, 412, 568, 528, 344, 237, 678, 1347, 1689, 1434,
             879, 597, 1494, 2715, 3057, 2442, 1431, 856, 1968, 3352, 3652, 2760, 1548, 689,
             1534, 2543, 2729, 2010, 1103]
_TC = {
    "": _Float(([1, 2, 3, 4], (1, 2, 2, 1)),
               ([1, 3, 5, 7, 9, 11, 13, 15, 17, 2, 4, 6, 8, 10, 12, 14, 16, 18], (2, 3, 3, 1)),
               [-1.5, -2], (i32([1, 5, 5, 2]), *_ints(VALID, 2, 2, 0), bools(False)),
               (1, 5, 5, 2), _TC_OUT1, layout=8, output_shape=3),
    "_large": _Float(([300, 500], (1, 1, 2, 1)), ([9, 5, 6, 9, 8, 5, 3, 1, 4], (1, 3, 3, 1)),
                     [-1000], (i32([1, 3, 4, 1]), *_ints(SAME, 3, 3, 1), bools(False)),
                     (1, 3, 4, 1), [500, 800, 3500, 1500, 1400, 500, 3500, 3000, 0, 200, 500, 0],
                     layout=8, output_shape=3),
    "_same": _Float(_TC_X, _TC_W, [0], (i32([1, 4, 4, 1]), *_ints(SAME, 1, 1, 0), bools(False)),
                    (1, 4, 4, 1), _TC_SAME, layout=8, output_shape=3),
    "_valid": _Float(_TC_X, _TC_W, [0], (i32([1, 6, 6, 1]), *_ints(VALID, 1, 1, 0),
                                         bools(False)), (1, 6, 6, 1), _TC_VALID, layout=8,
                     output_shape=3),
    "_explicit": _Float(_TC_X, _TC_W, [0], (*_ints(1, 2, 2, 1, 1, 1, 0), bools(False)),
                        (1, 3, 3, 1), [678, 1347, 1689, 1494, 2715, 3057, 1968, 3352, 3652],
                        layout=10),
}
_quantised("transpose_conv_2d_nnapi_transpose_conv2d", Op.TRANSPOSE_CONV_2D, _TC[""], {
    "quant8": (u8(0.5, 0), u8(0.5, 0), u8(0.5, 0)),
    "channel_quant8": (u8(0.25, 100), chan(0, 0.25, 0.5), u8(0.5, 80))}, activation=7)
_quantised("transpose_conv_2d_nnapi_transpose_conv2d_large", Op.TRANSPOSE_CONV_2D, _TC["_large"],
           {"quant8": (u8(2.0, 0), u8(0.25, 128), u8(20.0, 50)),
            "channel_quant8": (u8(2.0, 0), chan(0, 0.25), u8(20.0, 50))})
_TC_Q8 = {"_same": (u8(0.5, 100), u8(0.5, 128), u8(16.0, 0)),
          "_valid": (u8(0.25, 10), u8(0.5, 128), u8(32.0, 80)),
          "_explicit": (u8(0.5, 100), u8(0.25, 128), u8(20.0, 50))}
for _stem, (_xq, _wq, _oq) in _TC_Q8.items():
    _quantised(f"transpose_conv_2d_nnapi_transpose_conv2d{_stem}", Op.TRANSPOSE_CONV_2D,
               _TC[_stem], {"quant8": (_xq, _wq, _oq)})
    # nnrt: the same as TENSOR_QUANT8_ASYMM_SIGNED (zero points - 128) and per channel.
    _signed = (s8(_xq.scale, _xq.zero_point - 128), s8(_wq.scale, _wq.zero_point - 128),
               s8(_oq.scale, _oq.zero_point - 128))
    _quantised(f"transpose_conv_2d_nnrt_signed_transpose_conv2d{_stem}", Op.TRANSPOSE_CONV_2D,
               _TC[_stem], {"quant8_signed": _signed,
                            "channel_quant8_signed": (_signed[0], chan(0, _wq.scale),
                                                      _signed[2])})
_quantised("transpose_conv_2d_nnrt_signed_transpose_conv2d", Op.TRANSPOSE_CONV_2D, _TC[""], {
    "channel_quant8_signed": (s8(0.25, -28), chan(0, 0.25, 0.5), s8(0.5, -48))},
    activation=7)
