"""What the recurrent operations share: optional-input presence, activation functions, clips,
the time-major layout and the bidirectional operations' linking modes and outputs.

Presence. An optional tensor input is *absent* when it is omitted (NO_VALUE) or has no
elements. NNAPI's own test models pass an omitted optional tensor as a model input declared
``{0}`` or ``{0, 0}`` that receives no data (NNAPI's CPU executor then sees no buffer); nnrt
receives that as a zero-size array, and the recurrent kernels treat it as omitted. Whether a
model input of unknown dims is present is only known at execution, so the rules built on
presence (CIFG, peepholes, projection, layer normalisation, auxiliary input) are checked in
``prepare``, which runs at ``Model.finish()`` when the facts are static and again before every
execution — as NNAPI checks them when preparing the operation.

Bidirectional linking (BIDIRECTIONAL_SEQUENCE_LSTM / _RNN). Without an auxiliary input both
directions read the input. With an auxiliary input and auxiliary weights ("cross-linking") both
directions also read the auxiliary input through their auxiliary weights. With an auxiliary
input and no auxiliary weights ("parallel linking", NNAPI 1.3) the forward direction reads the
input and the backward direction reads the auxiliary input instead. Auxiliary weights without
an auxiliary input are an error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

import numpy as np

from nnrt.ops._framework.context import OperationContext, Unknown
from nnrt.ops._framework.registry import Shape

__all__ = [
    "LSTM_ACTIVATIONS",
    "RNN_ACTIVATIONS",
    "Array",
    "Linking",
    "bidirectional_outputs",
    "bidirectional_shapes",
    "check_activation",
    "check_clip",
    "expect_given",
    "expected_counts",
    "expect_shape",
    "given",
    "linking",
    "maybe_given",
    "sigmoid",
    "time_major_view",
]

Array = np.ndarray[Any, Any]


def sigmoid(x: Array) -> Array:
    """The logistic function."""
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


#: The activation functions NNAPI's recurrent operations name by TFLite-style code.
RNN_ACTIVATIONS: dict[int, Callable[[Array], Array]] = {
    0: lambda x: x,
    1: lambda x: np.maximum(x, 0.0),
    2: lambda x: np.clip(x, -1.0, 1.0),
    3: lambda x: np.clip(x, 0.0, 6.0),
    4: np.tanh,
    6: sigmoid,
}
_NAMES = {0: "none", 1: "relu", 2: "relu1", 3: "relu6", 4: "tanh", 6: "sigmoid"}
#: The LSTM operations' activation ``g``: NNAPI lists these (no relu1).
LSTM_ACTIVATIONS = {code: f for code, f in RNN_ACTIVATIONS.items() if code != 2}


def check_activation(ctx: OperationContext, slot: int,
                     codes: dict[int, Callable[[Array], Array]]) -> None:
    """Fail unless the INT32 activation at ``slot`` (when known) is one of ``codes``."""
    code = ctx.constant(slot)
    if code is not None and code not in codes:
        listed = ", ".join(f"{c}={_NAMES[c]}" for c in codes)
        ctx.fail(f"invalid activation code {code} (expected {listed})", input=slot)


def check_clip(ctx: OperationContext, slot: int) -> None:
    """Fail unless the clip threshold at ``slot`` (when known) is non-negative."""
    value = ctx.constant(slot)
    if value is not None and not value >= 0:
        ctx.fail(f"must be non-negative (0 disables clipping), got {value}", input=slot)


def maybe_given(ctx: OperationContext, slot: int) -> bool | None:
    """Whether input ``slot`` has a value (see the module docstring); None if not known yet."""
    if ctx.is_omitted(slot):
        return False
    value = ctx.constant(slot)
    if value is not None:
        return bool(np.size(value) > 0)
    dims = ctx.dims(slot)
    if dims and all(d > 0 for d in dims):
        return True
    return None


def given(ctx: OperationContext, slot: int) -> bool:
    """Like :func:`maybe_given`, raising ``Unknown`` when presence is not known yet."""
    present = maybe_given(ctx, slot)
    if present is None:
        raise Unknown
    return present


def expect_given(ctx: OperationContext, slot: int) -> None:
    """Fail unless the required tensor input ``slot`` has a value with elements."""
    if not given(ctx, slot):
        ctx.fail("this input is required but has no value (it is empty)", input=slot)


def expect_shape(ctx: OperationContext, slot: int, expected: Shape) -> None:
    """Fail unless input ``slot``, when present, has exactly the shape ``expected``."""
    if given(ctx, slot) and ctx.shape(slot) != expected:
        ctx.fail(f"expected shape {expected}, got {ctx.shape(slot)}", input=slot)


def time_major_view(x: Array, time_major: bool) -> Array:
    """``x`` as ``[max_time, batch, ...]``: itself when time-major, else the first two axes
    swapped (a view; applying it again restores the layout)."""
    return x if time_major else np.swapaxes(x, 0, 1)


class Linking(Enum):
    """How a bidirectional operation feeds its two directions (module docstring)."""

    NONE = "none"
    CROSS = "cross"
    PARALLEL = "parallel"


def linking(ctx: OperationContext, aux_input: int, fw_aux: Sequence[int],
            bw_aux: Sequence[int]) -> Linking:
    """The linking mode, checking that the auxiliary weights come with an auxiliary input.

    ``fw_aux`` / ``bw_aux`` are the auxiliary weight slots each direction may have; which of
    them a cross-linked direction needs is the operation's rule (checked by the caller).
    """
    weights = [slot for slot in (*fw_aux, *bw_aux) if given(ctx, slot)]
    if not given(ctx, aux_input):
        if weights:
            ctx.fail("auxiliary weights need an auxiliary input", input=weights[0])
        return Linking.NONE
    if not weights:
        return Linking.PARALLEL
    return Linking.CROSS


def bidirectional_shapes(sequence: tuple[int, int], fw_size: int, bw_size: int, merge: bool,
                         states: Sequence[Shape], n_outputs: int) -> list[Shape]:
    """Output shapes: the forward sequence (both directions concatenated when ``merge``), the
    backward one unless merged, then ``states`` when the operation has those outputs.

    ``sequence`` is the input's leading ``(max_time, batch)`` or ``(batch, max_time)``.
    """
    if merge:
        shapes: list[Shape] = [(*sequence, fw_size + bw_size)]
    else:
        shapes = [(*sequence, fw_size), (*sequence, bw_size)]
    if n_outputs > len(shapes):
        shapes += list(states)
    return shapes


def bidirectional_outputs(fw: Array, bw: Array, merge: bool, time_major: bool,
                          states: Sequence[Array], n_outputs: int) -> list[Array]:
    """The outputs from the time-major sequences ``fw`` and ``bw`` and the final states."""
    sequences = [np.concatenate([fw, bw], axis=-1)] if merge else [fw, bw]
    results = [time_major_view(s, time_major) for s in sequences]
    if n_outputs > len(results):
        results += list(states)
    return results


def expected_counts(merge: bool | None, with_states: int) -> tuple[int, ...]:
    """The allowed output counts of a bidirectional operation: 2 (1 merged), or with the
    ``with_states`` final-state outputs of NNAPI 1.3; both merge settings when not known."""
    counts = {False: (2, 2 + with_states), True: (1, 1 + with_states)}
    if merge is None:
        return tuple(sorted({*counts[False], *counts[True]}))
    return counts[merge]
