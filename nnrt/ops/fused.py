"""Fused activations (NNAPI ``FuseCode``) applied to float results."""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import FusedActivation

__all__ = ["apply_activation"]


def apply_activation(x: np.ndarray[Any, Any], code: int) -> np.ndarray[Any, Any]:
    """Apply fused activation ``code`` (0 NONE, 1 RELU, 2 RELU1, 3 RELU6) to ``x``."""
    if code == FusedActivation.NONE:
        return x
    if code == FusedActivation.RELU:
        return np.asarray(np.maximum(x, 0))
    if code == FusedActivation.RELU1:
        return np.asarray(np.clip(x, -1, 1))
    if code == FusedActivation.RELU6:
        return np.asarray(np.clip(x, 0, 6))
    raise ValueError(f"invalid fused activation code {code}")
