"""Dynamic batching options, and where each input and output of a model carries its batch.

``rt.compile(model, batching=nnrt.Batching(...))`` merges concurrent ``execute`` calls of the
compiled model whose inputs differ only along their batch axis into one execution (see
:mod:`nnrt.runtime.batcher` and docs/runtime.md, "Dynamic batching"). This module holds the
options (:class:`Batching`) and, checked against the model at compile time, the
:class:`BatchLayout`: per input and output its batch axis (or none), the batch sizes an
execution may have, and what a request must look like to join a batch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nnrt.errors import BadData

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = ["DEFAULT_MAX_BATCH", "DEFAULT_MAX_DELAY", "BatchLayout", "Batching"]

#: Rows of one batched execution unless told (``Batching(max_batch=)``).
DEFAULT_MAX_BATCH = 8
#: Seconds the first request of a batch may wait for others unless told.
DEFAULT_MAX_DELAY = 0.002
_MAX_BATCH_LIMIT = 1 << 16
_MAX_DELAY_LIMIT = 10.0


@dataclass(frozen=True)
class Batching:
    """How concurrent executes of one compiled model are merged into batched executions.

    ``max_batch``: most rows in one execution (a request of more rows runs alone).
    ``max_delay``: seconds the oldest waiting request may wait for more before its batch starts
    (a request with a deadline waits at most half the time its deadline leaves beyond a batch's
    mean duration; a request of higher priority than the compiled model's starts its batch at
    once). ``dim``: the batch axis of every input and output;
    ``dims`` overrides it per input or output name (``None``: not batched — an input every
    request of a batch must give equal, an output every request receives whole).
    ``preferred``: the batch sizes an execution may have; a batch is padded up to the next one
    with copies of its last row, whose results are dropped. Default: powers of two up to
    ``max_batch`` (and ``max_batch``) when the model is prepared per input shape (each size is
    one prepared variant), the batch dim's size when it is fixed, any size otherwise.
    ``max_in_flight``: batched executions at once (default: the driver's worker count); while
    they run, requests gather for the next.
    """

    max_batch: int = DEFAULT_MAX_BATCH
    max_delay: float = DEFAULT_MAX_DELAY
    dim: int = 0
    dims: Mapping[str, int | None] = field(default_factory=dict)
    preferred: tuple[int, ...] | None = None
    max_in_flight: int | None = None

    def __post_init__(self) -> None:
        if not _count(self.max_batch) or not 1 <= self.max_batch <= _MAX_BATCH_LIMIT:
            raise BadData(f"Batching.max_batch must be an int from 1 to {_MAX_BATCH_LIMIT}, "
                          f"got {self.max_batch!r:.40}")
        delay = self.max_delay
        if isinstance(delay, bool) or not isinstance(delay, int | float) or not (
                math.isfinite(delay) and 0 <= delay <= _MAX_DELAY_LIMIT):
            raise BadData(f"Batching.max_delay must be seconds from 0 to {_MAX_DELAY_LIMIT}, "
                          f"got {delay!r:.40}")
        if not _count(self.dim) or self.dim < 0:
            raise BadData(f"Batching.dim must be an axis >= 0, got {self.dim!r:.40}")
        if not isinstance(self.dims, Mapping):
            raise BadData("Batching.dims must map input/output names to an axis or None")
        for name, axis in self.dims.items():
            if not isinstance(name, str) or not (axis is None or (_count(axis) and axis >= 0)):
                raise BadData(f"Batching.dims: {name!r:.40} -> {axis!r:.40}: expected an "
                              "input or output name and an axis >= 0 or None")
        if self.preferred is not None:
            sizes = self.preferred
            if not isinstance(sizes, tuple | list) or not sizes or not all(
                    _count(s) and 1 <= s <= _MAX_BATCH_LIMIT for s in sizes):
                raise BadData(f"Batching.preferred must be batch sizes >= 1, got "
                              f"{sizes!r:.60}")
        if self.max_in_flight is not None and (
                not _count(self.max_in_flight) or not 1 <= self.max_in_flight <= 1024):
            raise BadData(f"Batching.max_in_flight must be an int from 1 to 1024, got "
                          f"{self.max_in_flight!r:.40}")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class BatchLayout:
    """A :class:`Batching` checked against one model: the batch axis of each input and output
    (None: not batched), the largest batch and the sizes an execution may have (empty: any)."""

    inputs: tuple[int | None, ...]
    outputs: tuple[int | None, ...]
    max_batch: int
    sizes: tuple[int, ...]
    max_delay: float
    max_in_flight: int | None

    @classmethod
    def of(cls, batching: Batching, model: Model, per_shape: bool) -> BatchLayout:
        """Check ``batching`` against ``model`` (``per_shape``: prepared per input shape).

        Every batched input's batch dim must be unknown (0) or fixed at a size above 1 (then
        each batch is padded to it); ``BadData`` names the input, the axis and why.
        """
        if not isinstance(batching, Batching):
            raise BadData(f"batching must be an nnrt.Batching, got {type(batching).__name__}")
        operands = model.operands
        names = {name for i in (*model.inputs, *model.outputs) if (name := operands[i].name)}
        unknown = sorted(set(batching.dims) - names)
        if unknown:
            raise BadData(f"Batching.dims names {unknown}, which are not inputs or outputs of "
                          f"the model (it has {sorted(names)})")

        def axis_of(index: int) -> int | None:
            return batching.dims.get(operands[index].name or "", batching.dim)

        inputs = tuple(axis_of(i) for i in model.inputs)
        outputs = tuple(axis_of(i) for i in model.outputs)
        if all(axis is None for axis in inputs):
            raise BadData("batching: no input has a batch axis")
        fixed: set[int] = set()
        for position, (index, axis) in enumerate(zip(model.inputs, inputs, strict=True)):
            if axis is None:
                continue
            dims = operands[index].dims
            label = _label(operands[index].name, "input", position)
            if dims and axis >= len(dims):
                raise BadData(f"batching: {label} has rank {len(dims)}, no axis {axis}")
            size = dims[axis] if dims else 0
            if size == 1:
                raise BadData(f"batching: dim {axis} of {label} is fixed at 1, so nothing can "
                              "be batched; leave it unknown (0) in the model (e.g. "
                              "nnrt.onnx.load without input_shapes for it)")
            if size:
                fixed.add(size)
        for position, (index, axis) in enumerate(zip(model.outputs, outputs, strict=True)):
            dims = operands[index].dims
            if axis is not None and dims and axis >= len(dims):
                raise BadData(f"batching: {_label(operands[index].name, 'output', position)} "
                              f"has rank {len(dims)}, no axis {axis}")
        if len(fixed) > 1:
            raise BadData(f"batching: the batched inputs fix different batch sizes {sorted(fixed)}")
        max_batch = batching.max_batch
        if fixed:  # a static batch dim: every batch is padded to it
            (size,) = fixed
            max_batch = min(max_batch, size)
            sizes: tuple[int, ...] = (size,)
            if batching.preferred is not None and tuple(batching.preferred) != sizes:
                raise BadData(f"batching: the model fixes the batch at {size}; preferred "
                              f"{list(batching.preferred)} cannot be run")
        elif batching.preferred is not None:
            sizes = tuple(sorted(set(batching.preferred)))
            max_batch = min(max_batch, sizes[-1])
        elif per_shape:
            sizes = tuple(sorted({*(1 << k for k in range(max_batch.bit_length())
                                    if 1 << k <= max_batch), max_batch}))
        else:
            sizes = ()
        return cls(inputs, outputs, max_batch, sizes, float(batching.max_delay),
                   batching.max_in_flight)

    def padded(self, rows: int) -> int:
        """The batch size an execution of ``rows`` rows runs at (``rows`` <= ``max_batch``)."""
        for size in self.sizes:
            if size >= rows:
                return size
        return rows


def _label(name: str | None, kind: str, position: int) -> str:
    return f"{kind} {name!r}" if name else f"{kind} {position}"
