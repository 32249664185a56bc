"""Data-movement kernels: slices, padding, tiling and gathering, in float32.

Slices serve SLICE, STRIDED_SLICE, SPLIT, REVERSE and arithmetic GATHERs; padding is constant
or mirrored.

A slice is given as one ``(start, stop, step)`` triple per input dimension (``stop`` may be
None: run to the end in ``step``'s direction), exactly Python's ``slice`` arguments; the
lowering resolves NNAPI's begin / end / masks / sizes into them at compile time. Python slicing
clamps rather than reading out of bounds, and ``gather`` checks its indices, so a hostile
argument is at worst an exception.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.errors import BadData

__all__ = ["DATA_KERNELS"]

Array = np.ndarray[Any, Any]
Spec = tuple[tuple[int, int | None, int], ...]


def slice_copy(out: Array, x: Array, spec: Spec) -> None:
    """Copy the box ``x[spec]`` into ``out`` (which may drop length-1 dimensions)."""
    box = x[tuple(slice(start, stop, step) for start, stop, step in spec)]
    np.copyto(out, box.reshape(out.shape))


def pad(out: Array, x: Array, pads: tuple[tuple[int, int], ...], value: float | Array) -> None:
    """PAD / PAD_V2: ``x`` inside ``out`` with ``(before, after)`` elements of ``value`` per
    dimension; only the border is filled."""
    inner = []
    for axis, ((before, _), size) in enumerate(zip(pads, x.shape, strict=True)):
        lead = (slice(None),) * axis
        out[(*lead, slice(0, before))] = value
        out[(*lead, slice(before + size, None))] = value
        inner.append(slice(before, before + size))
    out[tuple(inner)] = x


def mirror_pad(out: Array, x: Array, pads: tuple[tuple[int, int], ...],
               symmetric: bool) -> None:
    """MIRROR_PAD: ``x`` inside ``out``, each border mirrored from the inside (REFLECT leaves
    the edge out of the mirror, SYMMETRIC repeats it); axis by axis, so corners mirror the
    borders already filled."""
    inner = [slice(before, before + size) for (before, _), size in zip(pads, x.shape,
                                                                        strict=True)]
    out[tuple(inner)] = x
    shift = 0 if symmetric else 1
    for axis, ((before, after), size) in enumerate(zip(pads, x.shape, strict=True)):
        lead, rest = (slice(None),) * axis, tuple(inner[axis + 1:])
        if before:
            start = 2 * before - 1 + shift
            stop = before - 1 + shift
            out[(*lead, slice(0, before), *rest)] = out[
                (*lead, slice(start, None if stop < 0 else stop, -1), *rest)]
        if after:
            end = before + size
            start = end - 1 - shift
            stop = start - after
            out[(*lead, slice(end, end + after), *rest)] = out[
                (*lead, slice(start, None if stop < 0 else stop, -1), *rest)]


def tile(out: Array, x: Array, multiples: tuple[int, ...]) -> None:
    """TILE: ``out`` viewed as ``(m0, d0, m1, d1, ...)`` takes ``x`` broadcast over the
    ``m`` axes (no temporary when ``out`` is contiguous)."""
    grid = tuple(n for pair in zip(multiples, x.shape, strict=True) for n in pair)
    if math.prod(grid) != out.size:
        raise ValueError(f"tile: {x.shape} times {multiples} does not fill {out.shape}")
    if not out.flags.c_contiguous:
        np.copyto(out, np.tile(x, multiples))
        return
    source = tuple(n for d in x.shape for n in (1, d))
    np.copyto(out.reshape(grid), x.reshape(source))


def gather(out: Array, x: Array, indices: Array, axis: int, operation: int) -> None:
    """GATHER: slices of ``x`` along ``axis`` picked by int32 ``indices``.

    Indices known only at execution are checked here: one out of ``[0, x.shape[axis])`` is
    ``BadData`` naming operation ``operation``'s indices input, as the reference says it.
    """
    size = x.shape[axis]
    flat = indices.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= size))
    if bad.size:
        k = int(bad[0])
        raise BadData(f"operation {operation} (GATHER), input 2 (indices): index "
                      f"{int(flat[k])} at position {k} is out of range for axis {axis} of size "
                      f"{size} (expected [0, {size}))")
    np.take(x, indices, axis=axis, out=out, mode="clip")


#: The kernels of this module, by name (merged into the cpu kernel table).
DATA_KERNELS: dict[str, Callable[..., Any]] = {
    "slice_copy": slice_copy, "pad": pad, "mirror_pad": mirror_pad, "tile": tile,
    "gather": gather,
}
