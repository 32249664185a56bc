"""The helpers kernel modules share: fused activations (:func:`activate`) and ufunc kernels.

Every kernel computing a result takes its destination first (``out``, a C-contiguous array of
the result's exact shape) and writes every element of it, using ``out=`` so nothing is
allocated where numpy allows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["activate", "ufunc_kernel"]

Array = np.ndarray[Any, Any]


def activate(out: Array, act: int) -> None:
    """Apply fused activation ``act`` to ``out`` in place."""
    if act == 1:
        np.maximum(out, 0.0, out=out)
    elif act == 2:
        np.clip(out, -1.0, 1.0, out=out)
    elif act == 3:
        np.clip(out, 0.0, 6.0, out=out)
    elif act != 0:
        raise ValueError(f"invalid fused activation code {act!r}")


def ufunc_kernel(ufunc: np.ufunc, doc: str) -> Callable[..., None]:
    """A kernel applying ``ufunc`` to its inputs into ``out``: ``kernel(out, *inputs)``
    (broadcasting like the ufunc; ``out`` may be one of the inputs)."""

    def kernel(out: Array, *inputs: Array) -> None:
        ufunc(*inputs, out=out)

    kernel.__name__ = kernel.__qualname__ = str(ufunc.__name__)
    kernel.__doc__ = doc
    return kernel
