"""Sparse constants (``sparsity`` + DENSIFY) densified at import: CSR and block-sparse, against
LiteRT's own DENSIFY, and malformed metadata as ``BadData`` naming the field."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb

import nnrt
import nnrt.reference
import nnrt.tflite
from nnrt.tflite.sparse import densify
from tests.unit.tflite.flatbuffers_kit import B, TfliteFile, litert_run

DENSE = np.asarray([[1, 0, 0, 2], [0, 0, 0, 0], [0, 3, 4, 0], [5, 0, 0, 6]], np.float32)


def _dim(size: int = 0, segments: list[int] | None = None,
         indices: list[int] | None = None) -> Any:
    dim = fb.DimensionMetadataT()
    if segments is None:
        dim.format, dim.denseSize = fb.DimensionType.DENSE, size
        return dim
    dim.format = fb.DimensionType.SPARSE_CSR
    dim.arraySegmentsType = dim.arrayIndicesType = fb.SparseIndexVector.Int32Vector
    dim.arraySegments, dim.arrayIndices = fb.Int32VectorT(), fb.Int32VectorT()
    dim.arraySegments.values = segments
    dim.arrayIndices.values = list(indices or [])
    return dim


def _csr() -> tuple[Any, np.ndarray]:  # type: ignore[type-arg]
    sparsity = fb.SparsityParametersT()
    sparsity.traversalOrder = [0, 1]
    sparsity.dimMetadata = [_dim(4), _dim(segments=[0, 2, 2, 4, 6],
                                          indices=[0, 3, 1, 2, 0, 3])]
    return sparsity, np.asarray([1, 2, 3, 4, 5, 6], np.float32)


def _blocked() -> tuple[Any, np.ndarray]:  # type: ignore[type-arg]
    """2x2 blocks over dim 1: block rows dense, block columns CSR, each block dense."""
    sparsity = fb.SparsityParametersT()
    sparsity.traversalOrder = [0, 1, 2]
    sparsity.blockMap = [1]
    sparsity.dimMetadata = [_dim(4), _dim(segments=[0, 2, 2, 4, 6], indices=[0, 1, 0, 1, 0, 1]),
                            _dim(2)]
    values = np.asarray([1, 0, 0, 2, 0, 3, 4, 0, 5, 0, 0, 6], np.float32)
    return sparsity, values


@pytest.mark.parametrize("make", [_csr, _blocked])
def test_densify_csr_and_blocks(make: Any) -> None:
    sparsity, values = make()
    np.testing.assert_array_equal(densify(values, (4, 4), sparsity, "t"), DENSE)


def test_a_sparse_constant_through_densify_matches_litert() -> None:
    sparsity, values = _csr()
    f = TfliteFile()
    x = f.tensor((4, 4), name="x")
    w = f.const(values, name="w")
    f.tensors[w].shape = np.asarray([4, 4], np.int32)
    f.tensors[w].sparsity = sparsity
    dense = f.tensor((4, 4), name="dense")
    y = f.tensor((4, 4), name="y")
    f.op(B.DENSIFY, [w], [dense])
    f.op(B.ADD, [x, dense], [y], fb.AddOptionsT())
    data = f.finish([x], [y])
    feed = np.random.default_rng(3).standard_normal((4, 4)).astype(np.float32)
    (got,) = nnrt.reference.run(nnrt.tflite.load(data), {"x": feed})
    np.testing.assert_array_equal(got, feed + DENSE)
    np.testing.assert_array_equal(got, litert_run(data, [feed])[0])


@pytest.mark.parametrize(("field", "break_it"), [
    ("dim_metadata[1].array_indices", lambda s: s.dimMetadata[1].arrayIndices.values.__setitem__(
        0, 9)),
    ("dim_metadata[1].array_segments", lambda s: s.dimMetadata[1].arraySegments.values.__setitem__(
        1, 7)),
    ("dim_metadata[0].dense_size", lambda s: setattr(s.dimMetadata[0], "denseSize", 5)),
    ("traversal_order", lambda s: setattr(s, "traversalOrder", [0, 0])),
    ("block_map", lambda s: setattr(s, "blockMap", [3])),
    ("dim_metadata", lambda s: s.dimMetadata.pop()),
])
def test_bad_sparsity_metadata_names_the_field(field: str, break_it: Any) -> None:
    sparsity, values = _csr()
    break_it(sparsity)
    with pytest.raises(nnrt.BadData, match=rf"t\.{field.replace('[', '.').replace(']', '.')}"):
        densify(values, (4, 4), sparsity, "t")


def test_too_few_stored_values_is_bad_data() -> None:
    sparsity, values = _csr()
    with pytest.raises(nnrt.BadData, match="reaches 6 values, the buffer holds 5"):
        densify(values[:5], (4, 4), sparsity, "t")
