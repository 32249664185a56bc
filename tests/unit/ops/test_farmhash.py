"""FarmHash ``Fingerprint64`` (nnrt/ops/farmhash.py) against FarmHash's own C++ results."""

from __future__ import annotations

import pytest

from nnrt.ops.farmhash import fingerprint64

# Fingerprint64 of bytes((i * 37 + 11) % 256 for i in range(n)), computed by FarmHash's C++
# implementation (the pyfarmhash binding); every length class of the algorithm is covered:
# 0, 1-3, 4-7, 8-16, 17-32, 33-64 and the 64-byte block loop (with partial last blocks).
_VECTORS = {
    0: 0x9AE16A3B2F90404F, 1: 0x4271B80E2915C76A, 3: 0x373A2B2A12E0C581,
    4: 0xCC1E778137AE6D69, 7: 0x960838FBC6D9C975, 8: 0x7D507025ED4EECFD,
    12: 0x12A0D52D6F922439, 16: 0xD836480326A974D6, 17: 0x5CDED6CB65C9DAC6,
    31: 0x52A467E87C92D522, 32: 0xA03300E1B2BE6DA7, 33: 0x839154CA67815696,
    64: 0x000F03EAC52D3535, 65: 0xFB360C5023F60DB6, 127: 0xD70E348FCBF64D04,
    128: 0x33EF435F17AF1739, 129: 0xC30A81B637D2E4DD, 200: 0x51320A19A60CBD6E,
}


@pytest.mark.parametrize("length", sorted(_VECTORS))
def test_fingerprint64_matches_farmhash(length: int) -> None:
    data = bytes((i * 37 + 11) % 256 for i in range(length))
    assert fingerprint64(data) == _VECTORS[length]


def test_fingerprint64_is_an_unsigned_64_bit_value_sensitive_to_every_byte() -> None:
    data = bytes(range(100))
    base = fingerprint64(data)
    assert 0 <= base < 2**64
    for k in (0, 31, 63, 64, 99):
        changed = bytearray(data)
        changed[k] ^= 1
        assert fingerprint64(bytes(changed)) != base
