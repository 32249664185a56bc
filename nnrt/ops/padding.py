"""NNAPI's implicit padding and window counts, shared by convolutions and pooling.

An implicit ``PaddingCode`` replaces explicit padding in CONV_2D, DEPTHWISE_CONV_2D,
GROUPED_CONV_2D, TRANSPOSE_CONV_2D and the 2-D pooling operations:

* VALID: no padding;
* SAME: the output keeps ``ceil(size / stride)`` positions; the total padding that needs (never
  negative, except for TRANSPOSE_CONV_2D) is split with the smaller half at the head (top /
  left) and the odd element at the tail (bottom / right).

The filter size is the effective (dilated) one, ``(filter - 1) * dilation + 1``.
"""

from __future__ import annotations

from nnrt.model.types import PaddingCode

__all__ = ["conv_out_size", "effective_size", "implicit_padding", "same_padding"]


def effective_size(filter_size: int, dilation: int = 1) -> int:
    """The span of a filter of ``filter_size`` taps spread ``dilation`` apart."""
    return (filter_size - 1) * dilation + 1


def same_padding(size: int, stride: int, dilation: int, filter_size: int, *,
                 transpose: bool = False) -> tuple[int, int]:
    """NNAPI's SAME padding (head, tail) for one spatial dimension of ``size``.

    The output keeps ``ceil(size / stride)`` positions; the total padding that needs is split
    with the smaller half first. For TRANSPOSE_CONV_2D ``size`` is the output size and the tail
    is whatever makes the last stride fit exactly, which may be negative.
    """
    out = -(-size // stride)
    total = (out - 1) * stride + effective_size(filter_size, dilation) - size
    head = max(total, 0) // 2
    tail = total - head if transpose else max(total, 0) - head
    return head, tail


def implicit_padding(code: int, size: int, stride: int, filter_size: int,
                     dilation: int = 1) -> tuple[int, int]:
    """(head, tail) padding of the implicit scheme ``code``: SAME as above, otherwise none."""
    if code == PaddingCode.SAME:
        return same_padding(size, stride, dilation, filter_size)
    return 0, 0


def conv_out_size(size: int, filter_size: int, stride: int, dilation: int,
                  padding: tuple[int, int]) -> int:
    """Output positions of a strided, dilated window sliding over ``size`` padded by
    (head, tail): ``(size + head + tail - effective) // stride + 1``."""
    head, tail = padding
    return (size + head + tail - effective_size(filter_size, dilation)) // stride + 1
