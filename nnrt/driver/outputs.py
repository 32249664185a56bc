"""Checking what an execution returns: the driver's output arrays and the caller's buffer sizes.

Caller buffer capacities follow NNAPI: every output that needs more bytes than its buffer holds
makes the execution fail with ``OutputInsufficientSize``, which carries the actual shape of
*every* output so the caller can resize and retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.errors import BadData, OpFailed, OutputInsufficientSize
from nnrt.model.model import Model
from nnrt.model.operand import dtype_of
from nnrt.model.values import dims_compatible

__all__ = ["OutputChecker"]

Array = np.ndarray[Any, Any]


class OutputChecker:
    """Checks a driver's outputs against a model's output operands and the caller's buffers."""

    __slots__ = ("_dims", "_driver", "_dtypes")

    def __init__(self, model: Model, driver_name: str) -> None:
        operands = model.operands
        self._driver = driver_name
        self._dtypes = tuple(dtype_of(operands[i].type) for i in model.outputs)
        self._dims = tuple(operands[i].dims for i in model.outputs)

    def check_sizes(self, output_sizes: Sequence[int] | None) -> tuple[int, ...] | None:
        """Validate caller buffer capacities (one non-negative byte count per output)."""
        if output_sizes is None:
            return None
        count = len(self._dtypes)
        if isinstance(output_sizes, str | bytes) or not isinstance(output_sizes, Sequence):
            raise BadData(f"execute: output_sizes must be a sequence of {count} byte counts, "
                          f"got {type(output_sizes).__name__}")
        if len(output_sizes) != count:
            raise BadData(f"execute: output_sizes has {len(output_sizes)} entries, the model "
                          f"has {count} outputs")
        sizes = []
        for j, size in enumerate(output_sizes):
            if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 0:
                raise BadData(f"execute: output_sizes[{j}] must be a byte count >= 0, got "
                              f"{size!r:.40}")
            sizes.append(int(size))
        return tuple(sizes)

    def check(self, results: Sequence[Any], sizes: tuple[int, ...] | None) -> list[Array]:
        """The driver's outputs as a list, after checking count, dtype, shape and buffer sizes.

        A driver returning the wrong thing is ``OpFailed``; outputs too large for the caller's
        buffers are ``OutputInsufficientSize`` with every output's shape.
        """
        count = len(self._dtypes)
        outputs = list(results)
        if len(outputs) != count:
            raise OpFailed(f"driver {self._driver}: returned {len(outputs)} outputs, the model "
                           f"has {count}")
        for j, arr in enumerate(outputs):
            if not isinstance(arr, np.ndarray) or arr.dtype != self._dtypes[j]:
                got = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
                raise OpFailed(f"driver {self._driver}: output {j} is {got}, expected an "
                               f"ndarray of {self._dtypes[j]}")
            if arr.shape != self._dims[j] and not dims_compatible(self._dims[j], arr.shape):
                raise OpFailed(f"driver {self._driver}: output {j} has shape {arr.shape}, the "
                               f"model declares {self._dims[j]}")
        if sizes is not None:
            short = [f"output {j} needs {arr.nbytes} bytes (shape {arr.shape}), its buffer "
                     f"holds {size}" for j, (arr, size) in enumerate(zip(outputs, sizes,
                                                                          strict=True))
                     if arr.nbytes > size]
            if short:
                raise OutputInsufficientSize("; ".join(short),
                                             [tuple(arr.shape) for arr in outputs])
        return outputs
