"""Box arithmetic shared by the detection operations, computed in float32 as NNAPI's CPU
executor does.

NNAPI's kernels for AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS,
DETECTION_POSTPROCESSING and HEATMAP_MAX_KEYPOINT convert every input to float32 (float16
widened; quantised ``(float(q) - zeroPoint) * scale``), compute in float32 and convert the
results back (quantised ``clamp(round(x / scale + zeroPoint))``, C rounding): :func:`as_float32`
and :func:`from_float32` are those conversions. Boxes are ``(x1, y1, x2, y2)`` corners.

Non-maximum suppression (:func:`suppress`) reproduces NNAPI's in-place algorithm exactly —
including which of two equal scores wins — because the order of the kept boxes is the order of
the outputs.

Operations whose output sizes depend on the values they compute (the kept boxes) compute their
results in ``prepare`` at execution and hand them to ``execute``: :func:`prepared_shapes`,
:func:`prepared_results`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.operand import Operand, dtype_of
from nnrt.model.types import OperandType
from nnrt.ops._framework.context import ExecutionContext, OperationContext, Unknown
from nnrt.ops._framework.registry import Shape
from nnrt.ops.quant import is_quantized, round_half_away

__all__ = [
    "BOX_SCALE",
    "Array",
    "NmsStep",
    "as_float32",
    "expect_box_quant",
    "expect_dim",
    "from_float32",
    "hard_step",
    "iou",
    "known_dims",
    "prepared_results",
    "prepared_shapes",
    "sort_by_score",
    "suppress",
    "transform_boxes",
]

T = OperandType
Array = np.ndarray[Any, Any]
F32 = np.float32

#: The scale NNAPI requires of TENSOR_QUANT16_ASYMM / _SYMM box coordinates (zero point 0).
BOX_SCALE = 0.125


# -- conversions ---------------------------------------------------------------------------------

def as_float32(x: Array, operand: Operand) -> Array:
    """The values of a tensor of ``operand`` as NNAPI's float kernels see them, in float32."""
    if is_quantized(operand.type):
        shifted = x.astype(np.float32) - F32(operand.zero_point)
        converted: Array = shifted * F32(operand.scale)
        return converted
    return x.astype(np.float32)


def from_float32(x: Array, operand: Operand) -> Array:
    """float32 results written to a tensor of ``operand``: quantised types get NNAPI's
    ``clamp(round(x / scale + zeroPoint))`` in float32, rounding halves away from zero (NaN is
    written as the zero point); float types are rounded to their precision."""
    dtype = dtype_of(operand.type)
    if not is_quantized(operand.type):
        return x.astype(dtype)
    with np.errstate(all="ignore"):
        q = np.asarray(x, np.float32) / F32(operand.scale) + F32(operand.zero_point)
    q = round_half_away(np.nan_to_num(q.astype(np.float64), nan=float(operand.zero_point)))
    info = np.iinfo(dtype)
    converted: Array = np.clip(q, info.min, info.max).astype(dtype)
    return converted


def expect_box_quant(ctx: OperationContext, *, input: int | None = None,
                     output: int | None = None) -> None:
    """Require a quantised box operand to have scale 0.125 and zero point 0 (NNAPI's rule for
    TENSOR_QUANT16_ASYMM / TENSOR_QUANT16_SYMM coordinates); other types pass."""
    operand = ctx.operand(input) if input is not None else ctx.output_operand(output or 0)
    if not is_quantized(operand.type):
        return
    if operand.scale != BOX_SCALE or operand.zero_point != 0:
        ctx.fail(f"{operand.type.name} box coordinates must have scale {BOX_SCALE} and zero "
                 f"point 0, got scale {operand.scale} and zero point {operand.zero_point}",
                 input=input, output=output)


# -- shape rules ---------------------------------------------------------------------------------

Dims = tuple[int | None, ...]


def known_dims(ctx: OperationContext, i: int, rank: int) -> Dims | None:
    """The dims of tensor input ``i``, None where unknown (statically), after checking its rank
    is ``rank``; None when its rank is not known yet. At execution every dim is known (a 0 is a
    real zero extent, as NNAPI allows for numbers of boxes)."""
    dims = ctx.dims(i)
    executing = isinstance(ctx, ExecutionContext)
    if not dims and not executing:
        return None
    if len(dims) != rank:
        ctx.fail(f"expected rank {rank}, got {len(dims)}", input=i)
    return tuple(d if executing or d > 0 else None for d in dims)


def expect_dim(ctx: OperationContext, i: int, dims: Dims | None, axis: int, want: int | None,
               rule: str) -> None:
    """Require dimension ``axis`` of input ``i`` (``dims`` from :func:`known_dims`) to equal
    ``want`` where both are known; the message states ``rule``, e.g. ``"num_rois (input 0
    dimension 0)"``."""
    if dims is None or want is None or dims[axis] is None or dims[axis] == want:
        return
    ctx.fail(f"dimension {axis} must be {rule} = {want}, got {dims[axis]} (shape "
             f"{_show(dims)})", input=i)


def _show(dims: Dims) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in dims) + ")"


# -- geometry ------------------------------------------------------------------------------------

def iou(box: Array, boxes: Array) -> Array:
    """Intersection over union of ``box`` (4,) with each of ``boxes`` (n, 4), in float32
    (``0 / 0`` gives NaN, as in NNAPI)."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    w = np.maximum(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), F32(0))
    h = np.maximum(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), F32(0))
    inter = w * h
    with np.errstate(all="ignore"):
        result: Array = inter / (area + areas - inter)
    return result


def transform_boxes(rois: Array, deltas: Array, height: Array, width: Array) -> Array:
    """Boxes ``rois`` (n, 4) moved by ``deltas`` (n, k, 4) of ``(dx, dy, dw, dh)`` and clipped
    to ``[0, width] x [0, height]`` (per box, (n,) arrays): NNAPI's bounding-box transform, in
    float32, giving (n, k, 4)."""
    w = (rois[:, 2] - rois[:, 0])[:, None]
    h = (rois[:, 3] - rois[:, 1])[:, None]
    cx = ((rois[:, 0] + rois[:, 2]) / F32(2))[:, None]
    cy = ((rois[:, 1] + rois[:, 3]) / F32(2))[:, None]
    with np.errstate(all="ignore"):
        new_w = np.exp(deltas[..., 2]) * w
        new_h = np.exp(deltas[..., 3]) * h
    new_x = cx + deltas[..., 0] * w
    new_y = cy + deltas[..., 1] * h
    half_w, half_h = new_w / F32(2), new_h / F32(2)
    width, height = width[:, None], height[:, None]
    out = np.stack([
        np.minimum(np.maximum(new_x - half_w, F32(0)), width),
        np.minimum(np.maximum(new_y - half_h, F32(0)), height),
        np.minimum(np.maximum(new_x + half_w, F32(0)), width),
        np.minimum(np.maximum(new_y + half_h, F32(0)), height),
    ], axis=-1)
    return out.astype(np.float32)


# -- non-maximum suppression ---------------------------------------------------------------------

#: One suppression round on the candidates left after the best box: from their IoU with it and
#: their scores, their new scores and which of them to discard.
NmsStep = Callable[[Array, Array], tuple[Array, Array]]


def hard_step(threshold: float) -> NmsStep:
    """Hard NMS: discard the candidates whose IoU with the kept box is at least ``threshold``."""
    limit = F32(threshold)

    def step(overlap: Array, scores: Array) -> tuple[Array, Array]:
        return scores, overlap >= limit  # a NaN IoU (empty boxes) discards nothing
    return step


def _first_max(scores: Array) -> int:
    """``std::max_element``: the first maximum, where a NaN first element wins and any other
    NaN never does."""
    if np.isnan(scores[0]):
        return 0
    return int(np.argmax(np.where(np.isnan(scores), -np.inf, scores)))


def suppress(candidates: Sequence[int], scores: Array, boxes: Array, limit: int,
             step: NmsStep) -> list[int]:
    """NNAPI's non-maximum suppression of ``candidates`` (indices into ``scores`` and ``boxes``)
    keeping at most ``limit`` boxes (all when negative); returns the kept ones, best first.

    Each round moves the best remaining candidate (the first maximum) to the front, applies
    ``step`` to the others — updating ``scores`` in place — and swaps each discarded one with
    the last undecided candidate, exactly as NNAPI does, so ties resolve as NNAPI's do.
    """
    order = list(candidates)
    start, end = 0, len(order)
    limit = end if limit < 0 else limit
    while start < end and start < limit:
        segment = np.asarray(order[start:end])
        best = start + _first_max(scores[segment])
        order[start], order[best] = order[best], order[start]
        rest = np.asarray(order[start + 1:end])
        if rest.size:
            new_scores, discard = step(iou(boxes[order[start]], boxes[rest]), scores[rest])
            scores[rest] = new_scores
            dropped = {int(k) for k, d in zip(rest, discard, strict=True) if d}
            i = start + 1
            while i < end:
                if order[i] in dropped:
                    end -= 1
                    order[i], order[end] = order[end], order[i]
                else:
                    i += 1
        start += 1
    return order[:start]


def sort_by_score(indices: Sequence[int], scores: Array) -> list[int]:
    """``indices`` by descending score (equal scores keep their order)."""
    keys = scores[np.asarray(indices, dtype=np.int64)] if len(indices) else np.zeros(0)
    order = np.argsort(-keys, kind="stable")
    return [int(indices[k]) for k in order]


# -- outputs whose shapes depend on values -----------------------------------------------------

_PREPARED: weakref.WeakKeyDictionary[OperationContext, list[Array]] = (
    weakref.WeakKeyDictionary())


def prepared_shapes(ctx: OperationContext,
                    compute: Callable[[ExecutionContext], list[Array]]) -> list[Shape]:
    """``prepare`` of an operation whose output sizes depend on input values: ``Unknown``
    statically; at execution computes the results, keeps them for :func:`prepared_results`
    and returns their shapes."""
    if not isinstance(ctx, ExecutionContext):
        raise Unknown
    results = compute(ctx)
    _PREPARED[ctx] = results
    return [tuple(int(d) for d in r.shape) for r in results]


def prepared_results(ctx: ExecutionContext,
                     compute: Callable[[ExecutionContext], list[Array]]) -> list[Array]:
    """``execute`` of such an operation: what ``prepare`` computed for this execution, or the
    results computed now when an executor did not run ``prepare`` first."""
    results = _PREPARED.pop(ctx, None)
    return compute(ctx) if results is None else results
