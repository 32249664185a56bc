"""Large element-wise kernels split over threads: numpy releases the GIL inside ufunc loops.

A 16 MiB ADD is memory traffic (1.6 to 2.2 ms on one core of the project VM). :func:`ufunc_into`
computes ``out = f(a, b)`` in blocks of rows taken in turn by the calling thread and a small
pool of threads when ``out`` is at least :data:`MIN_BYTES`; otherwise, or when the operands
cannot be split safely (an operand overlapping ``out`` other than exactly), it makes the one
ufunc call itself. Results are bit-identical to the single call: every element is computed by
the same ufunc loop, only on another thread.

Measured on the project VM (2 vCPUs, memfd pages, a pause between calls as between requests):
16 MiB 2.0 -> 1.6 ms, 64 MiB 8.2 -> 5.5 ms; at 4 to 8 MiB the split loses (waking a thread
and handing the GIL over cost 0.2 to 0.3 ms there), hence the threshold.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from nnrt.ops.floats import ignore_float_errors_here

__all__ = ["MIN_BYTES", "THREADS", "ufunc_into"]

Array = np.ndarray[Any, Any]

#: Outputs smaller than this run on the calling thread alone (see the module docstring).
MIN_BYTES = 12 << 20
#: Threads an element-wise kernel is split over (the calling thread included).
THREADS = max(1, min(os.cpu_count() or 1, 8))

#: Blocks per thread: small enough that a thread waking late leaves little to wait for.
_BLOCKS_PER_THREAD = 4

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool  # noqa: PLW0603 - one lazily created pool per process
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(THREADS - 1, thread_name_prefix="nnrt-elementwise",
                                       initializer=ignore_float_errors_here)
        return _pool


def ufunc_into(func: np.ufunc, a: Array, b: Array, out: Array) -> None:
    """``func(a, b, out=out)``, split in blocks over up to :data:`THREADS` threads if large.

    ``out`` has the broadcast shape of ``a`` and ``b``. The caller decides the float error
    state of its own thread; pool threads ignore float errors (NNAPI semantics). Blocks are
    taken one at a time by the calling thread and the pool threads alike, so a pool thread that
    wakes late (waking a thread costs up to ~0.3 ms on a VM) only takes what is left.
    """
    blocks = _blocks(a, b, out)
    if blocks is None:
        func(a, b, out=out)
        return
    work = _Work(func, blocks)
    pool = _executor()
    for _ in range(THREADS - 1):
        pool.submit(work.run)
    work.run()
    work.wait()


class _Work:
    """The blocks of one kernel call, taken in turn by whichever thread is free."""

    __slots__ = ("_blocks", "_done", "_error", "_finished", "_func", "_lock", "_next")

    def __init__(self, func: np.ufunc, blocks: list[tuple[Array, Array, Array]]) -> None:
        self._func = func
        self._blocks = blocks
        self._next = 0
        self._done = 0
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._finished = threading.Event()

    def run(self) -> None:
        """Compute blocks until none is left to take."""
        blocks, lock = self._blocks, self._lock
        while True:
            with lock:
                index = self._next
                if index >= len(blocks):
                    return
                self._next = index + 1
            x, y, o = blocks[index]
            try:
                self._func(x, y, out=o)
            except BaseException as exc:
                self._error = self._error or exc
            with lock:
                self._done += 1
                if self._done == len(blocks):
                    self._finished.set()

    def wait(self) -> None:
        """Return once every block is computed; re-raise a block's failure."""
        self._finished.wait()
        if self._error is not None:
            raise self._error


def _blocks(a: Array, b: Array, out: Array) -> list[tuple[Array, Array, Array]] | None:
    """Row blocks ``(a_i, b_i, out_i)`` covering ``out``, or None to make one call."""
    if THREADS < 2 or out.nbytes < MIN_BYTES or not out.flags.c_contiguous or out.ndim == 0:
        return None
    for x in (a, b):
        if np.may_share_memory(x, out) and not _same_layout(x, out):
            return None  # a shifted overlap: the ufunc's own buffering keeps it right
    if _flat(a, out) and _flat(b, out):  # same shape or a single value: split the elements
        flat_out = out.reshape(-1)
        return _split((_flattened(a), a.size > 1), (_flattened(b), b.size > 1), flat_out,
                      flat_out.shape[0])
    rows = out.shape[0]
    if rows < THREADS:
        return None
    return _split((a, _follows_rows(a, out)), (b, _follows_rows(b, out)), out, rows)


def _flat(x: Array, out: Array) -> bool:
    return x.size == 1 or (x.shape == out.shape and x.flags.c_contiguous)


def _flattened(x: Array) -> Array:
    """``x`` as one axis, or a single value as a 0-d array (it broadcasts to any block)."""
    return x.reshape(-1) if x.size > 1 else x.reshape(())


def _follows_rows(x: Array, out: Array) -> bool:
    """Whether ``x``'s first axis runs along ``out``'s (then it is cut like ``out``)."""
    return x.ndim == out.ndim and x.shape[0] == out.shape[0] > 1


def _split(a: tuple[Array, bool], b: tuple[Array, bool], out: Array, length: int
           ) -> list[tuple[Array, Array, Array]]:
    """Cut the first axis of ``out`` — and of ``a`` / ``b`` where their flag says they follow
    it, else they are passed whole (broadcast) — into ``_BLOCKS_PER_THREAD`` blocks per
    thread."""
    (x, cut_x), (y, cut_y) = a, b
    step = max(-(-length // (THREADS * _BLOCKS_PER_THREAD)), 1)
    return [(x[start:start + step] if cut_x else x, y[start:start + step] if cut_y else y,
             out[start:start + step]) for start in range(0, length, step)]


def _same_layout(x: Array, out: Array) -> bool:
    """Whether ``x`` is exactly ``out``'s memory (same start, shape and strides)."""
    return (x.__array_interface__["data"][0] == out.__array_interface__["data"][0]
            and x.shape == out.shape and x.strides == out.strides)
