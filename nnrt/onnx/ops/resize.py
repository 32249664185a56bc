"""Resize (opsets 10 to 19) and Upsample (7 to 9): nearest, linear and cubic interpolation.

Interpolation is separable, and with static shapes every output position's source taps and
weights along an axis are known at import. They are computed here from the ONNX definition:
the source coordinate of each position (in float32 with onnxruntime's formulas and operation
order, since that decides which way the nearest modes break ties), then the nearest index, or
the kernel weights of the neighbours (linear: tent; cubic: Keys with ``cubic_coeff_a``;
``antialias`` widens either by 1 / scale when shrinking; ``exclude_outside`` drops neighbours
past the edges, which otherwise repeat the edge element). The operation emitted is then:

* NNAPI RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR (NCHW) for a 4-D resize of height and width
  when one of its align_corners / half_pixel_centers settings picks the same source indices
  (nearest) or the same source coordinates (bilinear, within float32 rounding) — asked of the
  reference kernel itself on an index probe, so the flags are only used where they match;
* otherwise, per resized axis, one GATHER per tap, each scaled by its per-position weights and
  summed (nearest: a single GATHER) — the ONNX definition written out.

Output sizes are onnxruntime's: ``floor(scale * size)`` in float32, or the ``sizes`` input
(with ``keep_aspect_ratio_policy``); coordinates use the scale and, for align_corners, the
integer output length. Opset 10 Resize and Upsample are ``asymmetric``, nearest rounding down
when enlarging and up when shrinking (onnxruntime's). Runtime scales / sizes / roi and ranks
above 4 are refused.

Where the height or width is dynamic the taps cannot be listed at import. A nearest ``asymmetric``
resize rounding down (``floor``, or opset 10's enlarging rule) by known power-of-two scales of
height and width is then RESIZE_NEAREST_NEIGHBOR in its scale form: its output size
``floor(size * scale)`` is ONNX's, and its source index ``floor(x * (size / out))`` is ONNX's
``floor(x / scale)``, both ratios being the same power of two, exact in float32. Anything else
on dynamic resized dims is reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.errors import NodeUnsupported
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.linear import require_float

__all__ = ["resize", "upsample"]

Array = np.ndarray[Any, Any]

_COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@dataclass(frozen=True)
class _Method:
    """How one Resize node interpolates."""

    mode: str
    coordinates: str
    #: One of _NEAREST, or "legacy" (opset 10 / Upsample: floor enlarging, ceil shrinking).
    nearest: str = "legacy"
    cubic_a: float = -0.75
    exclude_outside: bool = False
    extrapolation: float = 0.0
    #: Widen the linear / cubic filter by 1 / scale when shrinking.
    antialias: bool = False


@dataclass(frozen=True)
class _Taps:
    """Source indices and weights of every output position along one axis."""

    indices: list[Array]
    #: One weight array per tap (None: a single tap of weight 1).
    weights: list[Array] | None
    #: Per position, whether it takes the extrapolation value instead (tf_crop_and_resize).
    outside: Array | None = None


@converter("Resize")
def resize(n: NodeContext) -> list[Value]:
    """Resize: nearest / linear / cubic over any axes (of known size) of a float tensor of
    rank ≤ 4."""
    x = n.input(0)
    require_float(n, x)
    method = _read_method(n)
    if x.rank == 4 and not all(d > 0 for d in x.shape[2:]):
        return [_dynamic_nearest(n, x, method)]
    sizes, scales, roi = _targets(n, x.shape, method)
    return [_interpolate(n, x, method, sizes, scales, roi)]


@converter("Upsample")
def upsample(n: NodeContext) -> list[Value]:
    """Upsample (deprecated; opsets 7 to 9): an asymmetric Resize by ``scales``."""
    x = n.input(0)
    require_float(n, x)
    mode = n.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear"):
        n.fail(f"mode {mode!r} is not supported")
    given = n.attr("scales") if n.opset < 9 else n.const_input(1, "scales")
    if given is None:
        n.fail("scales are required")
    shape = n.static_shape(x)
    scales = np.asarray(given, np.float32).reshape(-1)
    if len(scales) != len(shape) or min(scales) < 1:
        n.fail(f"scales {list(scales)} must give one factor ≥ 1 per dim of {list(shape)}")
    sizes = [int(v) for v in np.floor(scales * np.asarray(shape, np.float32))]
    method = _Method("nearest" if mode == "nearest" else "linear", "asymmetric")
    return [_interpolate(n, x, method, sizes, scales, None)]


def _dynamic_nearest(n: NodeContext, x: Value, method: _Method) -> Value:
    """Resize of dynamic NCHW height / width: RESIZE_NEAREST_NEIGHBOR by scale, where exact."""
    scales_at = 1 if n.opset < 11 else 2
    given = n.const_input(scales_at, "scales") if n.has_input(scales_at) else None
    if n.opset >= 18:
        n.attr("keep_aspect_ratio_policy")  # only shapes a resize to sizes, refused here
        if [int(a) % 4 for a in n.attr("axes", range(4))] != [0, 1, 2, 3]:
            n.fail("axes other than all four on dynamic dims are not supported")
    factors = [] if given is None else [float(f) for f in given.reshape(-1)]
    exact = (method.mode == "nearest" and method.coordinates == "asymmetric"
             and method.nearest in ("floor", "legacy") and len(factors) == 4
             and factors[:2] == [1.0, 1.0]
             and all(f >= 1 and f == 2.0 ** round(math.log2(f)) for f in factors[2:]))
    if not exact:
        n.fail(f"the height and width of {list(x.shape)} are dynamic: only a nearest "
               "asymmetric floor resize by power-of-two scales has an exact NNAPI form there; "
               "pass input_shapes= to nnrt.onnx.load")
    fh, fw = int(factors[2]), int(factors[3])
    out = (x.shape[0], x.shape[1], x.shape[2] * fh, x.shape[3] * fw)
    return n.graph.op(Op.RESIZE_NEAREST_NEIGHBOR, x, float(fw), float(fh), True, False, False,
                      shape=out)


# -- attributes and targets ------------------------------------------------------------------


def _read_method(n: NodeContext) -> _Method:
    mode = n.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic") or (n.opset < 11 and mode == "cubic"):
        n.fail(f"mode {mode!r} is not supported")
    if n.opset < 11:
        return _Method(mode, "asymmetric")
    coordinates = n.attr("coordinate_transformation_mode", "half_pixel")
    nearest = n.attr("nearest_mode", "round_prefer_floor")
    if coordinates not in _COORDINATES or (
            coordinates == "half_pixel_symmetric" and n.opset < 19):
        n.fail(f"coordinate_transformation_mode {coordinates!r} is not supported")
    if nearest not in _NEAREST:
        n.fail(f"nearest_mode {nearest!r} is not supported")
    antialias = n.opset >= 18 and bool(n.attr("antialias", 0))
    if antialias and mode == "nearest":
        n.fail("antialias applies to linear and cubic modes only")
    return _Method(mode, coordinates, nearest, float(n.attr("cubic_coeff_a", -0.75)),
                   bool(n.attr("exclude_outside", 0)),
                   float(n.attr("extrapolation_value", 0.0)), antialias)


def _targets(n: NodeContext, shape: tuple[int, ...], method: _Method
             ) -> tuple[list[int], Array, Array | None]:
    """Output size, float32 scale and (tf_crop_and_resize) float32 region of interest
    ``[starts, ends]`` of every axis."""
    rank = len(shape)
    axes = list(range(rank))
    policy = "stretch"
    if n.opset >= 18:
        axes = [int(a) % rank for a in n.attr("axes", axes)]
        policy = n.attr("keep_aspect_ratio_policy", "stretch")
        if len(set(axes)) != len(axes):
            n.fail(f"axes {axes} repeat an axis")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        n.fail(f"keep_aspect_ratio_policy {policy!r} is not supported")
    roi = _roi(n, shape, axes) if method.coordinates == "tf_crop_and_resize" else None
    scales_at, sizes_at = (1, None) if n.opset < 11 else (2, 3)
    given = n.const_input(scales_at, "scales") if n.has_input(scales_at) else None
    if given is not None and given.size:
        factors = given.reshape(-1).astype(np.float32)
        if len(factors) != len(axes) or min(factors) <= 0:
            n.fail(f"scales {list(factors)} must give one positive factor per axis {axes}")
    elif sizes_at is None or not n.has_input(sizes_at):
        n.fail("neither scales nor sizes are given")
    else:
        wanted = n.const_input(sizes_at, "sizes").reshape(-1).astype(np.int64)
        if len(wanted) != len(axes) or min(wanted) < 1:
            n.fail(f"sizes {list(wanted)} must give one positive size per axis {axes}")
    sized = given is None or not given.size
    for k, a in enumerate(axes):  # an unknown dim may only be left alone
        if not shape[a] and (sized or roi is not None or factors[k] != 1):
            n.fail(f"axis {a} of the input {list(shape)} is resized but has an unknown size; "
                   "pass input_shapes= to nnrt.onnx.load")
    dims = np.asarray([shape[a] or 1 for a in axes], np.float32)
    if sized:
        factors = wanted.astype(np.float32) / dims
        if policy != "stretch":
            factors[:] = factors.min() if policy == "not_larger" else factors.max()
            wanted = np.floor(factors * dims + np.float32(0.5)).astype(np.int64)
    else:
        extent = (roi[1] - roi[0])[axes] if roi is not None else np.float32(1)
        wanted = np.floor(factors * dims * extent).astype(np.int64)
    sizes, scales = list(shape), np.ones(rank, np.float32)
    for k, a in enumerate(axes):
        scales[a], sizes[a] = factors[k], int(wanted[k]) if shape[a] else 0
        if shape[a] and sizes[a] < 1:
            n.fail(f"axis {a} would resize to {sizes[a]} elements")
    return sizes, scales, roi


def _roi(n: NodeContext, shape: tuple[int, ...], axes: list[int]) -> Array:
    if not n.has_input(1):
        n.fail("tf_crop_and_resize needs the roi input")
    values = n.const_input(1, "roi").reshape(-1).astype(np.float32)
    if len(values) != 2 * len(axes):
        n.fail(f"roi has {len(values)} values, expected {2 * len(axes)}")
    roi = np.stack([np.zeros(len(shape), np.float32), np.ones(len(shape), np.float32)])
    roi[0, axes], roi[1, axes] = values[:len(axes)], values[len(axes):]
    return roi


# -- taps ------------------------------------------------------------------------------------


def _coordinates(method: _Method, size: int, out: int, scale: np.float32,
                 roi: tuple[np.float32, np.float32] | None) -> Array:
    """The source coordinate of each output position, in float32 as onnxruntime computes it
    (this decides ties of the nearest modes)."""
    f = np.float32
    i = np.arange(out, dtype=f)
    half = f(0.5)
    mode = method.coordinates
    if mode == "align_corners":
        return i * f(size - 1) / f(out - 1) if out > 1 else np.zeros(out, f)
    if mode == "asymmetric":
        return i / scale
    if mode == "tf_half_pixel_for_nn":
        return (i + half) / scale
    if mode == "pytorch_half_pixel" and out == 1:
        return np.zeros(out, f)
    if mode == "half_pixel_symmetric":  # onnxruntime finishes this one in double
        adjustment = f(out) / (scale * f(size))
        offset = f(size) / f(2) * (f(1) - adjustment)
        shifted = np.float64(offset) + (i.astype(np.float64) + 0.5) / np.float64(scale)
        return (shifted - 0.5).astype(f)
    if mode == "tf_crop_and_resize":
        if roi is None:
            raise NodeUnsupported("tf_crop_and_resize needs the roi input")
        start, end = roi
        if out == 1:
            return np.full(out, half * (start + end) * f(size - 1), f)
        return start * f(size - 1) + i * (end - start) * f(size - 1) / f(out - 1)
    return (i + half) / scale - half


def _round_half_away(c: Array) -> Array:
    magnitude = np.abs(c)
    whole = np.floor(magnitude)
    return np.asarray(np.sign(c) * (whole + (magnitude - whole >= 0.5)))


def _nearest(c: Array, method: _Method, shrinking: bool) -> Array:
    """The nearest source index of coordinates ``c`` (onnxruntime's rules)."""
    rule = method.nearest
    if rule == "legacy":
        return np.ceil(c) if shrinking else np.trunc(c)
    if rule == "floor":
        return np.floor(c)
    if rule == "ceil":
        return np.ceil(c)
    if rule == "round_prefer_ceil":
        return _round_half_away(c)
    tie = c == np.trunc(c) + np.float32(0.5)
    return np.where(tie, np.floor(c), _round_half_away(c))


def _kernel(method: _Method, t: Array) -> Array:
    """The interpolation kernel at distances ``t``: the tent (linear) or Keys' cubic with
    coefficient ``a``."""
    t = np.abs(t)
    if method.mode == "linear":
        return np.asarray(np.maximum(0.0, 1 - t))
    a = method.cubic_a
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.asarray(np.where(t <= 1, near, np.where(t < 2, far, 0.0)))


def _taps(method: _Method, size: int, out: int, scale: np.float32,
          roi: tuple[np.float32, np.float32] | None) -> _Taps:
    """Indices and weights along one axis of ``size`` resized to ``out``.

    Linear and cubic weigh the neighbours at integer offsets from ``floor(coordinate)`` by the
    kernel at their distance (scaled by the shrink factor with antialias, then normalised);
    neighbours past the edges repeat the edge element, or are dropped with
    ``exclude_outside``. Positions outside a tf_crop_and_resize region take the
    extrapolation value.
    """
    coords = _coordinates(method, size, out, scale, roi)
    outside = None
    if roi is not None:
        outside = (coords < 0) | (coords > size - 1)
        coords = np.clip(coords, 0, size - 1)
    if method.mode == "nearest":
        index = _nearest(coords, method, bool(scale < 1))
        return _Taps([np.clip(index, 0, size - 1).astype(np.int32)], None, outside)
    shrink = min(float(scale), 1.0) if method.antialias else 1.0
    support = 1 if method.mode == "linear" else 2
    start = math.floor(-support / shrink) + 1
    offsets = np.arange(start, 2 - start)
    c = coords.astype(np.float64)
    base = np.floor(c)
    weights = _kernel(method, (offsets[None, :] - (c - base)[:, None]) * shrink)
    neighbours = base.astype(np.int64)[:, None] + offsets[None, :]
    if method.exclude_outside:
        weights = np.where((neighbours < 0) | (neighbours >= size), 0.0, weights)
    if method.exclude_outside or method.antialias:
        weights = weights / weights.sum(axis=1, keepdims=True)
    picked = np.clip(neighbours, 0, size - 1).astype(np.int32)
    return _Taps(list(picked.T), list(weights.T), outside)


# -- emission --------------------------------------------------------------------------------


def _interpolate(n: NodeContext, x: Value, method: _Method, sizes: Sequence[int],
                 scales: Array, roi: Array | None) -> Value:
    shape = x.shape
    changed = [a for a in range(len(shape)) if sizes[a] != shape[a] or scales[a] != 1 or (
        roi is not None and (roi[0, a], roi[1, a]) != (0, 1))]
    if not changed:
        return x
    if x.rank > 4:
        n.fail(f"rank {x.rank} inputs are not supported (at most 4)")
    taps = {a: _taps(method, shape[a], sizes[a], scales[a],
                     (roi[0, a], roi[1, a]) if roi is not None else None) for a in changed}
    fast = _nnapi_resize(n, x, method, sizes, taps)
    if fast is not None:
        return fast
    y = x
    for a in changed:
        y = _along(n, y, a, taps[a], method.extrapolation)
    return y


def _along(n: NodeContext, y: Value, axis: int, taps: _Taps, extrapolation: float) -> Value:
    """Resize ``y`` along ``axis``: the weighted sum of one GATHER per tap."""
    g = n.graph
    out = len(taps.indices[0])
    column = (out,) + (1,) * (y.rank - 1 - axis)
    inside = None if taps.outside is None else ~taps.outside
    total: Value | None = None
    for k, index in enumerate(taps.indices):
        term = g.op(Op.GATHER, y, axis, index)
        weight = taps.weights[k] if taps.weights is not None else np.ones(out)
        if inside is not None:
            weight = np.where(inside, weight, 0.0)
        if not np.any(weight):
            continue
        if np.any(weight != 1):
            w = weight.astype(y.dtype).reshape(column)
            term = g.op(Op.MUL, term, Value("", y.dtype, column, const=w), 0)
        total = term if total is None else g.op(Op.ADD, total, term, 0)
    if taps.outside is not None and np.any(taps.outside):
        fill = np.where(taps.outside, extrapolation, 0.0).astype(y.dtype).reshape(column)
        const = Value("", y.dtype, column, const=fill)
        total = const if total is None else g.op(Op.ADD, total, const, 0)
    if total is None:
        n.fail(f"axis {axis}: no output element takes any input")
    return total


def _nnapi_resize(n: NodeContext, x: Value, method: _Method, sizes: Sequence[int],
                  taps: dict[int, _Taps]) -> Value | None:
    """One RESIZE_* operation when NNAPI's coordinates give ``taps`` on height and width."""
    if x.rank != 4 or not set(taps) <= {2, 3} or method.mode == "cubic" or any(
            t.outside is not None for t in taps.values()):
        return None
    op = Op.RESIZE_NEAREST_NEIGHBOR if method.mode == "nearest" else Op.RESIZE_BILINEAR
    height, width = x.shape[2:]
    if not height or not width:
        return None
    out_h, out_w = sizes[2], sizes[3]
    for align, half in ((False, False), (False, True), (True, False)):
        if all(_matches(n, op, axis_in, axis_out, align, half, taps.get(axis))
               for axis, axis_in, axis_out in ((2, height, out_h), (3, width, out_w))):
            return n.graph.op(op, x, out_w, out_h, True, align, half)
    return None


def _matches(n: NodeContext, op: Op, size: int, out: int, align: bool, half: bool,
             taps: _Taps | None) -> bool:
    """Whether NNAPI ``op`` with these flags maps an axis of ``size`` to ``out`` positions as
    ``taps`` do (None: identity), asked of the reference kernel on an index probe."""
    probe = np.arange(size, dtype=np.float32).reshape(1, 1, 1, size)
    got = n.graph.op(op, Value("", np.dtype(np.float32), probe.shape, const=probe),
                     out, 1, True, align, half)
    source = got.array().reshape(-1).astype(np.float64)
    if taps is None:
        return np.array_equal(source, np.arange(size))
    if taps.weights is None:
        return np.array_equal(source, taps.indices[0])
    if len(taps.indices) != 2:  # antialiased: more than two neighbours
        return False
    expected = sum(i * w for i, w in zip(taps.indices, taps.weights, strict=True))
    return bool(np.allclose(source, expected, rtol=0, atol=1e-5 * max(1, size)))
