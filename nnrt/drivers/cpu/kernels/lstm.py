"""The UNIDIRECTIONAL_SEQUENCE_LSTM kernel (and its gate packing), in float32.

One GEMM computes every time step's input products, then a time loop does one GEMM per step for
the recurrent products of all gates at once.

The lowering packs the gates' weights side by side, in the order ``input`` (absent with CIFG),
``forget``, ``output``, ``cell``: ``wx`` ``[input_size, gates * units]``, ``wh``
``[output_size, gates * units]``, ``bias`` ``[gates * units]`` (and the layer-normalisation
weights like ``bias``); the sigmoid gates are then one contiguous block of the pre-activations.
``params`` is ``(activation code, cell clip, projection clip, time major, cifg)``; ``peephole``
is ``(input or None, forget, output)`` or None; ``projection`` ``[units, output_size]`` or
None. Scratch (float32): ``xw`` ``[steps, batch, gates * units]`` (batch-major input: ``[batch,
steps, ...]``), ``z`` ``[batch, gates * units]``, ``c`` and ``m`` ``[batch, units]``, ``h``
``[batch, output_size]``. ``h_out`` / ``c_out`` receive the final states (None when the
operation has a single output).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.drivers.cpu.kernels.basic import logistic

__all__ = ["LSTM_KERNELS"]

Array = np.ndarray[Any, Any]
_EPSILON = np.float32(1e-8)


def _activate(x: Array, code: int) -> None:
    """The LSTM activation ``g`` by NNAPI code (0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid),
    in place."""
    if code == 4:
        np.tanh(x, out=x)
    elif code == 6:
        logistic(x, x)
    elif code == 1:
        np.maximum(x, 0.0, out=x)
    elif code == 3:
        np.clip(x, 0.0, 6.0, out=x)
    elif code != 0:
        raise ValueError(f"invalid LSTM activation code {code!r}")


def _normalise(z: Array, weights: Array, bias: Array) -> None:
    """Layer normalisation of each row of ``z`` (one gate), scaled, then biased, in place."""
    z -= z.mean(axis=1, keepdims=True)
    var = np.multiply(z, z).mean(axis=1, keepdims=True)
    var += _EPSILON
    z /= np.sqrt(var)
    z *= weights
    z += bias


def pack_gates(out: Array, parts: tuple[Array, ...]) -> None:
    """Gate weights ``[units, n]`` side by side as ``[n, gates * units]`` (vectors
    ``[units]`` as ``[gates * units]``), for weights known only at execution."""
    units = parts[0].shape[0]
    for k, part in enumerate(parts):
        block = out[..., k * units:(k + 1) * units]
        np.copyto(block, part.T if part.ndim == 2 else part)


Peephole = tuple[Array | None, Array, Array]


def lstm(out: Array, x: Array, wx: Array, wh: Array, bias: Array, peephole: Peephole | None,
         norm: Array | None, projection: Array | None, projection_bias: Array | None,
         h0: Array, c0: Array, h_out: Array | None, c_out: Array | None, xw: Array, z: Array,
         c: Array, m: Array, h: Array, params: tuple[int, float, float, bool, bool]) -> None:
    """UNIDIRECTIONAL_SEQUENCE_LSTM; see the module docstring for the argument layout."""
    code, cell_clip, proj_clip, time_major, cifg = params
    np.matmul(x.reshape(-1, x.shape[2]), wx, out=xw.reshape(-1, wx.shape[1]))
    if norm is None:
        xw += bias
    np.copyto(c, c0)
    np.copyto(h, h0)
    for t in range(xw.shape[0] if time_major else xw.shape[1]):
        np.matmul(h, wh, out=z)
        z += xw[t] if time_major else xw[:, t]
        _cell(z, c, m, peephole, norm, bias, (code, cell_clip, cifg))
        if projection is None:
            np.copyto(h, m)
        else:
            np.matmul(m, projection, out=h)
            if projection_bias is not None:
                h += projection_bias
            if proj_clip > 0:
                np.clip(h, -proj_clip, proj_clip, out=h)
        np.copyto(out[t] if time_major else out[:, t], h)
    if h_out is not None:
        np.copyto(h_out, h)
    if c_out is not None:
        np.copyto(c_out, c)


def _cell(z: Array, c: Array, m: Array, peephole: Peephole | None, norm: Array | None,
          bias: Array, params: tuple[int, float, bool]) -> None:
    """One step from the gates' pre-activations ``z`` (without peepholes or normalisation):
    updates the cell state ``c`` and leaves ``o * g(c)`` in ``m``."""
    code, cell_clip, cifg = params
    units = c.shape[1]
    forget = 0 if cifg else units
    output = forget + units
    sig = output + units  # [input], forget, output: the sigmoid gates
    if peephole is not None:
        if peephole[0] is not None:
            z[:, :units] += peephole[0] * c
        z[:, forget:output] += peephole[1] * c
    if norm is not None:
        for start in range(0, sig + units, units):
            if start != output or peephole is None:  # a peephole output gate waits for c
                block = slice(start, start + units)
                _normalise(z[:, block], norm[block], bias[block])
    early = output if peephole is not None else sig
    logistic(z[:, :early], z[:, :early])
    cell = z[:, sig:]
    _activate(cell, code)
    c *= z[:, forget:output]
    if cifg:
        np.subtract(1.0, z[:, :units], out=m)
        cell *= m
    else:
        cell *= z[:, :units]
    c += cell
    if cell_clip > 0:
        np.clip(c, -cell_clip, cell_clip, out=c)
    gate = z[:, output:sig]
    if peephole is not None:
        gate += peephole[2] * c
        if norm is not None:
            _normalise(gate, norm[output:sig], bias[output:sig])
        logistic(gate, gate)
    np.copyto(m, c)
    _activate(m, code)
    m *= gate


#: The kernels of this module, by name (merged into the cpu kernel table).
LSTM_KERNELS: dict[str, Callable[..., Any]] = {"lstm": lstm, "pack_gates": pack_gates}
