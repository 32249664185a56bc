"""The runtime's side of the compilation cache: tokens, and the cache files of one step.

``rt.compile(model, cache_dir=..., token=...)``: ``token`` is the application's 32-byte token
for the model (NNAPI's cache token); without one, :func:`model_token` derives it from the
model's canonical content (graph, types, shapes, quantisation and every constant's bytes).
Each step of the plan then gets its own token, :func:`step_token`: a SHA-256 hash chain over
the app token, the step's partition identity (its operation indices in the source model), the
driver's name and version, the execution preference, the priority and the cache format
version — the same inputs always give the same token, any difference gives another one. The
files of a token live in a :class:`~nnrt.cache.directory.CacheDirectory`; the worker slot
opens them (read+write, 0600) and passes their descriptors with the prepare request.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgpack
import numpy as np

from nnrt.cache.directory import CacheDirectory
from nnrt.cache.entry import CacheEntry
from nnrt.cache.files import check_token
from nnrt.errors import BadData
from nnrt.model.model import Model
from nnrt.runtime.compile.constants import PlacedConstants, place_constants

__all__ = ["CACHE_FORMAT_VERSION", "StepCache", "model_token", "placed_with_token",
           "step_token"]

#: Bumped whenever what a cached step depends on changes meaning.
CACHE_FORMAT_VERSION = 1
_CHUNK = 1 << 20


def model_token(model: Model) -> bytes:
    """A 32-byte token from ``model``'s canonical content (names do not count)."""
    digest = hashlib.sha256(b"nnrt model token v1\0")
    _hash_model(digest, model, 0)
    return digest.digest()


async def placed_with_token(model: Model, *, derive_token: bool
                            ) -> tuple[PlacedConstants, bytes | None]:
    """:func:`~nnrt.runtime.compile.constants.place_constants` of ``model`` and, if
    ``derive_token``, its :func:`model_token`. Both read every constant byte (64 MiB for a
    16 M-parameter model), so they run at once, in two threads, off the event loop; errors
    come out as they are (no exception group). The packed constants are closed if either
    fails or the caller is cancelled."""
    placed: list[PlacedConstants] = []

    def work() -> bytes | None:
        if not derive_token:
            placed.append(place_constants(model))
            return None
        with ThreadPoolExecutor(1, "nnrt-model-token") as pool:
            token = pool.submit(model_token, model)
            placed.append(place_constants(model))
            return token.result()

    try:
        derived = await anyio.to_thread.run_sync(work)
    except BaseException:
        for found in placed:  # filled by the thread, which the caller's cancel waits for
            if found.packed is not None:
                found.packed.close()
        raise
    return placed[0], derived


def _hash_model(digest: Any, model: Model, depth: int) -> None:
    if depth > 16:
        raise BadData("model_token: subgraphs nested more than 16 deep")
    inferred = model.inferred_dims
    header = [len(model.operands), len(model.operations), list(model.inputs),
              list(model.outputs), model.relaxed]
    digest.update(msgpack.packb(header))
    for index, operand in enumerate(model.operands):
        quant = operand.channel_quant
        digest.update(msgpack.packb([
            int(operand.type), list(operand.dims), list(inferred[index]), operand.scale,
            operand.zero_point, int(operand.lifetime),
            None if quant is None else [quant.channel_dim, list(quant.scales)]]))
        if operand.subgraph is not None:
            _hash_model(digest, operand.subgraph, depth + 1)
        value = model.constant_value(index) if operand.is_constant else None
        if value is not None:
            contiguous = np.ascontiguousarray(value)
            raw = contiguous.reshape(-1).view(np.uint8).data
            digest.update(struct.pack("<Q", raw.nbytes))
            for start in range(0, raw.nbytes, _CHUNK):
                digest.update(raw[start:start + _CHUNK])
    for op in model.operations:
        digest.update(msgpack.packb([int(op.type), list(op.inputs), list(op.outputs)]))


def step_token(app_token: bytes, operations: Sequence[int], driver: str, version: str,
               preference: int, priority: int) -> bytes:
    """The cache token of one step: a SHA-256 chain over everything its compilation depends
    on (see the module docstring)."""
    check_token(app_token, "step_token")
    links: list[bytes] = [
        app_token,
        msgpack.packb(["partition", sorted(operations)]),
        msgpack.packb(["driver", driver, version]),
        msgpack.packb(["preference", int(preference)]),
        msgpack.packb(["priority", int(priority)]),
        msgpack.packb(["format", CACHE_FORMAT_VERSION]),
    ]
    token = hashlib.sha256(b"nnrt cache token v1\0").digest()
    for link in links:
        token = hashlib.sha256(token + hashlib.sha256(link).digest()).digest()
    return token


@dataclass(frozen=True)
class StepCache:
    """Where one step's compiled model is cached: the directory and the step's token."""

    directory: CacheDirectory
    token: bytes
    meta: Mapping[str, Any] = field(default_factory=dict)

    def open(self, counts: tuple[int, int], info: Any) -> CacheEntry:
        """The entry of this token holding ``counts`` files (locked until closed)."""
        meta = dict(self.meta)
        if info is not None:
            meta.update(driver=info.name, version=info.version)
        return self.directory.open(self.token, counts, meta)

    def body(self, body: dict[str, Any], entry: CacheEntry, *, hit: bool) -> dict[str, Any]:
        """A prepare request body naming the entry's files (sent along as fds)."""
        files = entry.files
        return {**body, "cache": {"token": self.token, "model": len(files.model),
                                  "data": len(files.data), "hit": hit},
                "nfds": len(files.all)}
