"""Malformed AVERAGE_POOL_2D / MAX_POOL_2D / L2_POOL_2D models are rejected with precise errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from single_op import build

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32


def _model(op: Op, x_type: T, x_dims: tuple[int, ...], params: list[tuple[T, Any]],
           out_dims: tuple[int, ...], *, scale: float = 0.0, out_scale: float | None = None,
           finish: bool = True) -> nnrt.Model:
    """One pooling op: input 0 a model input, ``params`` constants (value None = model input)."""
    inputs = [(x_type, x_dims, None, scale), *((t, (), value) for t, value in params)]
    out = (x_type, out_dims, scale if out_scale is None else out_scale)
    m = build(op, inputs, [out])
    return m.finish() if finish else m


def _explicit(pads: tuple[int, int, int, int] = (0, 0, 0, 0), strides: tuple[int, int] = (1, 1),
              filters: tuple[int, int] = (2, 2), act: int = 0) -> list[tuple[T, Any]]:
    return [(T.INT32, v) for v in (*pads, *strides, *filters, act)]


def _implicit(scheme: int = 2, strides: tuple[int, int] = (1, 1),
              filters: tuple[int, int] = (2, 2), act: int = 0) -> list[tuple[T, Any]]:
    return [(T.INT32, v) for v in (scheme, *strides, *filters, act)]


def test_wrong_input_count() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(AVERAGE_POOL_2D\): expected 7, 8, "
                                           r"10 or 11 inputs, got 9"):
        _model(Op.AVERAGE_POOL_2D, F32, (1, 3, 3, 1), _explicit()[:-1], (1, 2, 2, 1))


def test_input_rank_must_be_4() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(MAX_POOL_2D\), input 0 \(input\): "
                                           r"expected rank 4, got 3"):
        _model(Op.MAX_POOL_2D, F32, (3, 3, 1), _implicit(), (2, 2, 1))


def test_bad_activation_code() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(MAX_POOL_2D\), input 9 "
                                           r"\(activation\): invalid fused activation code 5"):
        _model(Op.MAX_POOL_2D, F32, (1, 3, 3, 1), _explicit(act=5), (1, 2, 2, 1))


def test_bad_padding_scheme_names_the_implicit_slot() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(L2_POOL_2D\), input 1 "
                                           r"\(padding_scheme\): invalid padding scheme 3"):
        _model(Op.L2_POOL_2D, F32, (1, 3, 3, 1), _implicit(scheme=3), (1, 2, 2, 1))


def test_padding_must_be_smaller_than_filter() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 1 \(padding_left\): padding left 2 must be "
                                           r"smaller than the filter width 2"):
        _model(Op.AVERAGE_POOL_2D, F32, (1, 3, 3, 1), _explicit(pads=(2, 0, 0, 0)),
               (1, 3, 2, 1))


def test_stride_must_be_positive() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 3 \(stride_height\): stride height must be "
                                           r"positive, got 0"):
        _model(Op.AVERAGE_POOL_2D, F32, (1, 3, 3, 1), _implicit(strides=(1, 0)), (1, 2, 2, 1))


def test_valid_filter_larger_than_input() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 4 \(filter_width\): filter width 5 exceeds "
                                           r"the padded input width 3"):
        _model(Op.MAX_POOL_2D, F32, (1, 3, 3, 1), _implicit(filters=(5, 1)), (0, 0, 0, 0))


def test_layout_flag_must_be_bool() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 7 \(layout\): expected BOOL, got INT32"):
        _model(Op.AVERAGE_POOL_2D, F32, (1, 3, 3, 1), [*_implicit(), (T.INT32, 1)],
               (1, 2, 2, 1))


def test_l2_pool_has_no_quantised_variant() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(L2_POOL_2D\), input 0 \(input\): "
                                           r"expected TENSOR_FLOAT32 or TENSOR_FLOAT16, got "
                                           r"TENSOR_QUANT8_ASYMM"):
        _model(Op.L2_POOL_2D, T.TENSOR_QUANT8_ASYMM, (1, 3, 3, 1), _implicit(), (1, 2, 2, 1),
               scale=0.5)


def test_quantised_output_keeps_input_quantisation() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(MAX_POOL_2D\), output 0 \(output\): "
                                           r"TENSOR_QUANT8_ASYMM_SIGNED output needs the input's "
                                           r"scale"):
        _model(Op.MAX_POOL_2D, T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 3, 3, 1), _implicit(),
               (1, 2, 2, 1), scale=0.5, out_scale=0.25)


def test_bad_stride_given_at_execution() -> None:
    params = _implicit()
    params[1] = (T.INT32, None)  # stride width becomes a model input
    model = _model(Op.AVERAGE_POOL_2D, F32, (1, 3, 3, 1), params, (0, 0, 0, 0))
    x = np.ones((1, 3, 3, 1), np.float32)
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(AVERAGE_POOL_2D\), input 2 "
                                           r"\(stride_width\): stride width must be positive"):
        nnrt.reference.run(model, [x, np.int32(-1)])


def test_quantised_pools_run_on_the_stored_integers() -> None:
    x = np.uint8([[0, 1, 2], [3, 4, 5], [6, 7, 10]]).reshape(1, 3, 3, 1)
    model = _model(Op.AVERAGE_POOL_2D, T.TENSOR_QUANT8_ASYMM, (1, 3, 3, 1), _implicit(),
                   (1, 2, 2, 1), scale=0.5)
    # Window sums 8, 12, 20 and 26 over 4 elements: 2, 3, 5 and 6.5, rounded up to 7.
    (y,) = nnrt.reference.run(model, [x])
    np.testing.assert_array_equal(y.ravel(), np.uint8([2, 3, 5, 7]))
    model = _model(Op.MAX_POOL_2D, T.TENSOR_QUANT8_ASYMM, (1, 3, 3, 1), _implicit(act=3),
                   (1, 2, 2, 1), scale=0.5)
    # Maxima 8, 10, 14 and 20; RELU6 at scale 0.5 clamps to 12.
    (y,) = nnrt.reference.run(model, [x * 2])
    np.testing.assert_array_equal(y.ravel(), np.uint8([8, 10, 12, 12]))
