"""LSH_PROJECTION (nnrt/ops/lsh.py): malformed models and the bytes each input type hashes."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from single_op import OMIT
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.ops.farmhash import fingerprint64

F32 = T.TENSOR_FLOAT32
SEEDS = np.array([[0.5, -1.25, 3.0], [2.0, 0.125, -7.5]], np.float32)


def _lsh(kind: int, input_spec: tuple[object, ...], weight: object = OMIT,
         hash_spec: tuple[object, ...] = (F32, (2, 3), SEEDS),
         out_dims: tuple[int, ...] = (0,)) -> nnrt.Model:
    rows = input_spec[1][0]  # type: ignore[index]
    weight_type = hash_spec[0]
    return _model(Op.LSH_PROJECTION,
                  [hash_spec, input_spec, (weight_type, (rows,), weight), (T.INT32, (), kind)],
                  [(T.TENSOR_INT32, out_dims)])


def _expected_bit(seed: float, rows: list[bytes], weights: list[float] | None) -> int:
    """NNAPI's definition, written out: sign of sum(w_r * int64(fingerprint(seed32 + row)))."""
    score = 0.0
    for r, row in enumerate(rows):
        value = fingerprint64(struct.pack("<f", seed) + row)
        signed = value - 2**64 if value >= 2**63 else value
        score += (1.0 if weights is None else weights[r]) * float(signed)
    return int(score > 0)


def test_rejects_bad_types_and_projection_types() -> None:
    with pytest.raises(nnrt.BadData, match=r"\(LSH_PROJECTION\), input 1 \(input\): expected "
                                           "TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32 or "
                                           "TENSOR_QUANT8_ASYMM, got TENSOR_BOOL8"):
        _lsh(2, (T.TENSOR_BOOL8, (3,), None), None).finish()
    with pytest.raises(nnrt.BadData, match=r"input 3 \(type\): invalid projection type 4"):
        _lsh(4, (T.TENSOR_INT32, (3,), None)).finish()
    with pytest.raises(nnrt.BadData, match=r"input 2 \(weight\): expected TENSOR_FLOAT32, got "
                                           "TENSOR_FLOAT16"):
        _model(Op.LSH_PROJECTION, [(F32, (2, 3), SEEDS), (T.TENSOR_INT32, (3,), None),
                                   (T.TENSOR_FLOAT16, (3,), None), (T.INT32, (), 2)],
               [(T.TENSOR_INT32, (6,))]).finish()


def test_weights_follow_the_projection_type() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 2 \(weight\): a DENSE projection needs "
                                           "weights"):
        _lsh(2, (T.TENSOR_INT32, (3,), None)).finish()
    with pytest.raises(nnrt.BadData, match=r"input 2 \(weight\): a SPARSE projection takes no "
                                           "weights"):
        _lsh(3, (T.TENSOR_INT32, (3,), None), None).finish()
    with pytest.raises(nnrt.BadData, match=r"input 2 \(weight\): expected shape \(3,\), one "
                                           "weight per input row, got \\(2,\\)"):
        _model(Op.LSH_PROJECTION, [(F32, (2, 3), SEEDS), (T.TENSOR_INT32, (3,), None),
                                   (F32, (2,), None), (T.INT32, (), 2)],
               [(T.TENSOR_INT32, (6,))]).finish()


def test_bit_limits() -> None:
    seeds = np.zeros((2, 33), np.float32)
    with pytest.raises(nnrt.BadData, match=r"input 0 \(hash\): at most 32 bits per hash "
                                           "function, got 33"):
        _lsh(1, (T.TENSOR_INT32, (3,), None), hash_spec=(F32, (2, 33), seeds)).finish()
    seeds = np.zeros((3, 31), np.float32)  # 31 bits + ceil(log2(3)) = 33
    with pytest.raises(nnrt.BadData, match=r"SPARSE projection needs num_bits \+ "
                                           r"ceil\(log2\(num_hash\)\) <= 32"):
        _lsh(3, (T.TENSOR_INT32, (3,), None), hash_spec=(F32, (3, 31), seeds)).finish()
    _lsh(1, (T.TENSOR_INT32, (3,), None), hash_spec=(F32, (3, 31), seeds)).finish()


@pytest.mark.parametrize("type_, data", [
    (T.TENSOR_FLOAT32, np.array([[1.5, -2.0], [0.25, 8.0], [3.0, 3.0]], np.float32)),
    (T.TENSOR_FLOAT16, np.array([[1.5, -2.0], [0.25, 8.0], [3.0, 3.0]], np.float16)),
    (T.TENSOR_QUANT8_ASYMM, np.array([[1, 200], [7, 7], [0, 255]], np.uint8)),
    (T.TENSOR_INT32, np.array([[1, -200], [7, 7], [0, 2**31 - 1]], np.int32)),
])
def test_each_input_type_hashes_its_row_bytes(type_: T, data: np.ndarray) -> None:
    spec = (type_, data.shape, None, 0.5, 3) if type_ == T.TENSOR_QUANT8_ASYMM else (
        type_, data.shape, None)
    model = _lsh(2, spec, None).finish()
    weights = np.array([0.75, -1.5, 2.0], np.float32)
    (bits,) = nnrt.reference.run(model, [data, weights])
    rows = [data[r].astype(data.dtype.newbyteorder("<")).tobytes() for r in range(3)]
    expected = [_expected_bit(float(s), rows, [float(w) for w in weights])
                for s in SEEDS.reshape(-1)]
    np.testing.assert_array_equal(bits, expected)


def test_sparse_signatures_pack_bits_first_bit_highest() -> None:
    data = np.array([[3, 1], [4, 1], [5, 9]], np.int32)
    rows = [data[r].tobytes() for r in range(3)]
    bits = [[_expected_bit(float(s), rows, None) for s in row] for row in SEEDS]
    signatures = [b[0] * 4 + b[1] * 2 + b[2] for b in bits]
    for kind, offsets in ((1, [0, 0]), (3, [0, 8])):
        (out,) = nnrt.reference.run(_lsh(kind, (T.TENSOR_INT32, (3, 2), None)).finish(), [data])
        np.testing.assert_array_equal(out, np.add(signatures, offsets))
