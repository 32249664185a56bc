"""An RNN-style loop whose state tensor stays in a driver-managed device buffer (memory domains).

Run::

    python examples/stateful_rnn.py [--steps 1000] [--units 65536]

Each step computes ``state = tanh(state * decay + x_t)`` — the recurrence of a tiny RNN cell. The
state lives in two device buffers allocated with ``rt.allocate`` in the worker and used
ping-pong (one is the step's input, the other its output; NNAPI forbids one buffer in both
roles of a request): across all steps it never leaves the worker. Only the small ``x_t`` goes in;
the final state is copied out once. The same loop with the state round-tripping through the
client as an ndarray gives the same numbers, slower: both timings are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import numpy as np

import nnrt
from nnrt import BufferDesc, BufferRole


def rnn_cell(units: int, decay: float = 0.9) -> nnrt.Model:
    """state' = tanh(state * decay + x): inputs (x [1], state [units]), output state'."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1,))
    state = b.input("state", (units,))
    b.output(b.tanh(b.add(b.mul(state, np.array([decay], np.float32)), x)), names=["state"])
    return b.build()


async def main(steps: int, units: int) -> None:
    inputs = np.sin(np.arange(steps, dtype=np.float32) / 10).reshape(steps, 1)
    async with nnrt.Runtime(workers=1) as rt:
        cell = await rt.compile(rnn_cell(units))

        # state in device buffers: allocated for "input 1" and "output 0" of the cell
        roles = dict(input_roles=[BufferRole(cell, 1)], output_roles=[BufferRole(cell, 0)])
        a = await rt.allocate(BufferDesc((units,)), **roles)
        b = await rt.allocate(BufferDesc((units,)), **roles)
        await a.copy_from(np.zeros(units, np.float32))
        start = time.perf_counter()
        for t in range(steps):
            src, dst = (a, b) if t % 2 == 0 else (b, a)
            await cell.execute([inputs[t], src], outputs=[dst])
        on_device = time.perf_counter() - start
        final = await (a if steps % 2 == 0 else b).copy_to()
        await a.free()
        await b.free()

        # the same loop, state round-tripping through the client
        state = np.zeros(units, np.float32)
        start = time.perf_counter()
        for t in range(steps):
            (state,) = await cell.execute([inputs[t], state])
        round_trip = time.perf_counter() - start

    assert np.array_equal(final, state), "device and client loops disagree"
    print(f"{steps} steps, state of {units} floats ({units * 4 >> 10} KiB)")
    print(f"  state in device buffers: {on_device / steps * 1e6:8.1f} µs per step")
    print(f"  state through the client: {round_trip / steps * 1e6:8.1f} µs per step")
    print(f"  final state[:4] = {final[:4]} (identical both ways)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--units", type=int, default=65536)
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.units))
