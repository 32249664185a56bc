"""Checking what an execution returns: the driver's output arrays and the caller's buffers.

Caller buffer capacities follow NNAPI: every output that needs more bytes than its buffer holds
makes the execution fail with ``OutputInsufficientSize``, which carries the actual shape of
*every* output so the caller can resize and retry.

A caller may also hand over output *destinations*: writable C-contiguous arrays (of any dtype,
used as raw bytes) that receive the outputs' bytes in C order. Before the execution each
destination whose output has a fully known static shape that fits becomes a *typed* view (that
dtype and shape over the buffer's first bytes) a driver may compute into; afterwards an output
the driver did not already write there is copied in once, and the result returned is the view
of the destination's first ``nbytes`` with the actual shape and dtype.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.errors import BadData, OpFailed, OutputInsufficientSize
from nnrt.model.model import Model
from nnrt.model.operand import dtype_of, is_scalar
from nnrt.model.values import dims_compatible

__all__ = ["Destinations", "OutputChecker"]

Array = np.ndarray[Any, Any]
#: Per model output, the caller's destination (checked: writable, C-contiguous), or None.
Destinations = tuple[Array | None, ...]


class OutputChecker:
    """Checks a driver's outputs against a model's output operands and the caller's buffers."""

    __slots__ = ("_dims", "_driver", "_dtypes", "_static")

    def __init__(self, model: Model, driver_name: str) -> None:
        operands = model.operands
        inferred = model.inferred_dims
        self._driver = driver_name
        self._dtypes = tuple(dtype_of(operands[i].type) for i in model.outputs)
        self._dims = tuple(operands[i].dims for i in model.outputs)
        #: Per output, (shape, nbytes) when its shape is fully known before running, else None.
        static: list[tuple[tuple[int, ...], int] | None] = []
        for j, i in enumerate(model.outputs):
            shape = () if is_scalar(operands[i].type) else inferred[i]
            known = is_scalar(operands[i].type) or (bool(shape) and all(d > 0 for d in shape))
            static.append((shape, math.prod(shape) * self._dtypes[j].itemsize)
                          if known else None)
        self._static = tuple(static)

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

    def check_destinations(self, outputs: Sequence[Any]) -> Destinations:
        """Validate caller output destinations (returned as a tuple, entries as given).

        ``outputs`` needs one entry per model output: None, or a writable C-contiguous ndarray
        (any dtype without Python objects). ``BadData`` naming ``outputs[j]`` otherwise.
        """
        count = len(self._dtypes)
        if outputs.__class__ is not list and outputs.__class__ is not tuple and (
                isinstance(outputs, str | bytes | np.ndarray) or not isinstance(outputs, Sequence)):
            raise BadData(f"execute: outputs must be a sequence of {count} destination arrays "
                          f"(or None entries), got {type(outputs).__name__}")
        if len(outputs) != count:
            raise BadData(f"execute: outputs has {len(outputs)} entries, the model has {count} "
                          "outputs")
        buffers: list[Array | None] = []
        for j, buf in enumerate(outputs):
            if buf is None:
                buffers.append(None)
                continue
            if not isinstance(buf, np.ndarray):
                raise BadData(f"execute: outputs[{j}] must be a numpy array or None, got "
                              f"{type(buf).__name__}")
            if buf.dtype.hasobject:
                raise BadData(f"execute: outputs[{j}] has dtype {buf.dtype}, which holds Python "
                              "objects, not bytes")
            flags = buf.flags
            if not flags.writeable:
                raise BadData(f"execute: outputs[{j}] is read-only")
            if not flags.c_contiguous:
                raise BadData(f"execute: outputs[{j}] is not C-contiguous (strides "
                              f"{buf.strides}, shape {buf.shape})")
            buffers.append(buf)
        return tuple(buffers)

    def typed_destinations(self, buffers: Destinations) -> tuple[Array | None, ...] | None:
        """Per output, its destination typed and shaped as the static output shape, or None.

        An entry is None when the output has no destination, its shape is not fully known before
        running, or it does not fit; the whole result is None when no entry is set.
        """
        typed: list[Array | None] = []
        found = False
        for j, buf in enumerate(buffers):
            static = self._static[j]
            if buf is None or static is None or static[1] > buf.nbytes:
                typed.append(None)
                continue
            if buf.dtype is self._dtypes[j] and buf.shape == static[0]:
                typed.append(buf)  # typed and shaped so already (the usual case): no views
            else:
                shape, nbytes = static
                typed.append(_bytes_of(buf)[:nbytes].view(self._dtypes[j]).reshape(shape))
            found = True
        return tuple(typed) if found else None

    def place(self, results: Sequence[Any], sizes: tuple[int, ...] | None,
              buffers: Destinations, typed: tuple[Array | None, ...] | None) -> list[Array]:
        """Check the driver's outputs (as :meth:`check`) and put each in its destination.

        ``sizes`` apply to outputs without a destination. An output too large for its
        destination is ``OutputInsufficientSize`` with every output's shape; one the driver
        already computed into its ``typed`` destination is returned as is; any other is copied
        once into its destination and the returned array is that copy.
        """
        if typed is not None and len(results) == len(typed):
            for arr, dest in zip(results, typed, strict=True):
                if arr is not dest:
                    break
            else:  # every output computed in place into its typed destination: checked already
                return list(results)  # (declared dtype, static shape, fits its buffer)
        capacities = [buf.nbytes if buf is not None else (None if sizes is None else sizes[j])
                      for j, buf in enumerate(buffers)]
        outputs = self.check(results, None)
        self._check_capacities(outputs, capacities)
        for j, buf in enumerate(buffers):
            if buf is None:
                continue
            arr = outputs[j]
            dest = typed[j] if typed is not None else None
            if dest is not None and arr.shape == dest.shape:
                if arr is dest or (np.may_share_memory(arr, dest) and arr.strides == dest.strides
                                   and _address(arr) == _address(dest)):
                    outputs[j] = dest  # computed in place by the driver
                    continue
                view = dest  # already typed and shaped as the result
            else:
                view = _bytes_of(buf)[:arr.nbytes].view(arr.dtype).reshape(arr.shape)
            np.copyto(view, arr, casting="no")
            outputs[j] = view
        return outputs

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
            if arr.__class__ is np.ndarray and arr.dtype is self._dtypes[j]:
                pass  # the usual case, without the comparisons below
            elif not isinstance(arr, np.ndarray) or arr.dtype != self._dtypes[j]:
                got = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
                raise OpFailed(f"driver {self._driver}: output {j} is {got}, expected an "
                               f"ndarray of {self._dtypes[j]}")
            if arr.shape != self._dims[j] and not dims_compatible(self._dims[j], arr.shape):
                raise OpFailed(f"driver {self._driver}: output {j} has shape {arr.shape}, the "
                               f"model declares {self._dims[j]}")
        if sizes is not None:
            self._check_capacities(outputs, sizes)
        return outputs

    @staticmethod
    def _check_capacities(outputs: list[Array], capacities: Sequence[int | None]) -> None:
        """``OutputInsufficientSize`` (with every output's shape) if an output does not fit."""
        short = [f"output {j} needs {arr.nbytes} bytes (shape {arr.shape}), its buffer holds "
                 f"{size}" for j, (arr, size) in enumerate(zip(outputs, capacities, strict=True))
                 if size is not None and arr.nbytes > size]
        if short:
            raise OutputInsufficientSize("; ".join(short), [tuple(arr.shape) for arr in outputs])


def _bytes_of(buf: Array) -> Array:
    """The bytes of a C-contiguous array as a flat uint8 view."""
    return buf.reshape(-1).view(np.uint8)


def _address(arr: Array) -> int:
    """The address of ``arr``'s first byte."""
    address: int = arr.__array_interface__["data"][0]
    return address
