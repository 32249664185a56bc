"""Sparse TFLite constants (a tensor's ``sparsity``, read by DENSIFY) made dense at import.

TFLite stores a sparse tensor as its non-zero values plus ``SparsityParameters``: the original
dims, optionally split into blocks (``block_map`` names the blocked dims; each adds a block dim
after the original ones), visited in ``traversal_order``; ``dim_metadata[k]`` describes the
k-th visited dim, DENSE (``dense_size`` positions) or SPARSE_CSR (``array_segments`` delimit,
per position of the previous level, the run of ``array_indices`` giving that dim's
coordinates). Each leaf of that traversal is the next stored value, as TFLite's
``FormatConverter`` reads it. The metadata comes from the file: every size, segment and index
is checked and a bad one is a ``BadData`` naming its field.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.errors import BadData

__all__ = ["densify"]

Array = np.ndarray[Any, Any]
_SPARSE_CSR = fb.DimensionType.SPARSE_CSR


def densify(values: Array, shape: tuple[int, ...], sparsity: Any, where: str) -> Array:
    """The dense array of ``shape`` the sparse ``values`` describe (``where`` names the
    tensor's ``sparsity`` field in messages)."""
    rank = len(shape)
    order = [int(d) for d in (sparsity.traversalOrder if sparsity.traversalOrder is not None
                              else [])]
    blocked = [int(d) for d in (sparsity.blockMap if sparsity.blockMap is not None else [])]
    levels = list(sparsity.dimMetadata or [])
    total = rank + len(blocked)
    if len(set(blocked)) != len(blocked) or any(not 0 <= b < rank for b in blocked):
        raise BadData(f"{where}.block_map: {blocked[:12]} must name distinct dims of the "
                      f"rank-{rank} tensor")
    if sorted(order) != list(range(total)) or sorted(order[:rank]) != list(range(rank)):
        raise BadData(f"{where}.traversal_order: {order[:12]} is not an order of the {rank} "
                      f"dims and {len(blocked)} block dims")
    if len(levels) != total:
        raise BadData(f"{where}.dim_metadata: {len(levels)} entries for {total} dims")
    expanded = _expanded_dims(shape, blocked, order, levels, where)
    positions, coords = _traverse(levels, order, expanded, where)
    flat = values.reshape(-1)
    if positions.size != flat.size or (positions.size and int(positions.max()) >= flat.size):
        raise BadData(f"{where}: the traversal reaches {positions.size} values, the buffer "
                      f"holds {flat.size}")
    dense_coords = []
    for dim in range(rank):
        coord = coords[dim]
        if dim in blocked:
            block = rank + blocked.index(dim)
            coord = coord * expanded[block] + coords[block]
        dense_coords.append(coord)
    dense = np.zeros(shape, values.dtype.newbyteorder("="))
    if rank:
        dense[tuple(dense_coords)] = flat[positions]
    return dense


def _expanded_dims(shape: tuple[int, ...], blocked: list[int], order: list[int],
                   levels: list[Any], where: str) -> list[int]:
    """The size of each dim, original ones (divided by their block size) then block dims."""
    level_of = {dim: k for k, dim in enumerate(order)}
    blocks = []
    for b, dim in enumerate(blocked):
        k = level_of[len(shape) + b]
        size = int(levels[k].denseSize)
        if levels[k].format != fb.DimensionType.DENSE or size <= 0 or shape[dim] % size:
            raise BadData(f"{where}.dim_metadata[{k}]: block dim of dim {dim} (size "
                          f"{shape[dim]}) must be DENSE with a dense_size dividing it, got "
                          f"{size}")
        blocks.append(size)
    outer = [s // blocks[blocked.index(d)] if d in blocked else s for d, s in enumerate(shape)]
    expanded = outer + blocks
    for k, level in enumerate(levels):
        if level.format == fb.DimensionType.DENSE and int(level.denseSize) != expanded[order[k]]:
            raise BadData(f"{where}.dim_metadata[{k}].dense_size: {int(level.denseSize)}, "
                          f"the dim it traverses has {expanded[order[k]]}")
    return expanded


def _traverse(levels: list[Any], order: list[int], expanded: list[int],
              where: str) -> tuple[Array, list[Array]]:
    """Per leaf: its value's position in the buffer and its coordinate along every
    expanded dim (indexed by dim)."""
    positions = np.zeros(1, np.int64)
    visited: list[tuple[int, Array]] = []
    for k, level in enumerate(levels):
        size = expanded[order[k]]
        if level.format == fb.DimensionType.DENSE:
            parents = np.repeat(np.arange(positions.size), size)
            coord = np.tile(np.arange(size, dtype=np.int64), positions.size)
            positions = (positions[:, None] * size + np.arange(size)).reshape(-1)
        elif level.format == _SPARSE_CSR:
            parents, positions, coord = _csr_level(level, positions, size, f"{where}."
                                                   f"dim_metadata[{k}]")
        else:
            raise BadData(f"{where}.dim_metadata[{k}].format: {level.format} is neither "
                          "DENSE nor SPARSE_CSR")
        visited = [(dim, c[parents]) for dim, c in visited] + [(order[k], coord)]
    coords: list[Array] = [np.zeros(0, np.int64)] * len(expanded)
    for dim, c in visited:
        coords[dim] = c
    return positions, coords


def _csr_level(level: Any, positions: Array, size: int,
               where: str) -> tuple[Array, Array, Array]:
    segments = _vector(level.arraySegments, f"{where}.array_segments")
    indices = _vector(level.arrayIndices, f"{where}.array_indices")
    if positions.size and int(positions.max()) + 1 >= segments.size:
        raise BadData(f"{where}.array_segments: {segments.size} entries, the previous level "
                      f"reaches position {int(positions.max())}")
    if segments.size and (segments[0] < 0 or np.any(np.diff(segments) < 0)
                          or segments[-1] > indices.size):
        raise BadData(f"{where}.array_segments: not a non-decreasing run from 0 to at most "
                      f"{indices.size} (the array_indices)")
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= size):
        raise BadData(f"{where}.array_indices: indices outside the dim's {size} entries")
    starts, stops = segments[positions], segments[positions + 1]
    counts = stops - starts
    if int(counts.sum()) > math.prod([size, max(positions.size, 1)]):
        raise BadData(f"{where}.array_segments: more entries than the dim has")
    parents = np.repeat(np.arange(positions.size), counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    chosen = np.repeat(starts, counts) + offsets
    return parents, chosen.astype(np.int64), indices[chosen]


def _vector(vector: Any, where: str) -> Array:
    values = getattr(vector, "values", None)
    if values is None:
        raise BadData(f"{where}: missing")
    return np.asarray(values, np.int64).reshape(-1)
