"""A stateful loop (RNN-style) keeping a 16 MiB state, three ways, per-step time and bytes copied.

Run: .venv/bin/python benchmarks/device_buffers.py [--state 16M] [--steps 100] [--rounds 3]

The model is one step ``new_state = state + x`` (x a [1] float32 input, state float32 of
``--state`` bytes). Side by side in one run, one worker:
- (a) the state lives in two device buffers (``rt.allocate``) used ping-pong: input of one step,
  output of the next (a buffer may not be both in one request); nothing crosses the boundary;
- (b) the state comes back to the client as an ndarray and is sent again the next step. With
  nnrt's defaults that ndarray is a view of the shared arena, which the runtime recognises and
  sends back by reference: no bytes are copied either way. (b') the same with ``copy=True``:
  the client owns a private copy of the state (copied out of the arena) and sends it back
  through the arena (copied in) — what a runtime returning owned arrays costs;
- (c) the state lives in one shared memfd, two regions used ping-pong as output then input.
The variants run in interleaved rounds (none always first, right after the worker started).
Prints a markdown table (committed to docs/benchmarks.md): per variant, the median over rounds
of its median ms per step, and the bytes the client side copies per step.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time
from collections.abc import Awaitable, Callable

import numpy as np

import nnrt
from nnrt import BufferDesc, BufferRole

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def state_model(count: int) -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1,))
    state = b.input("state", (count,))
    b.output(b.add(state, x))
    return b.build()


async def per_step(step: Callable[[int], Awaitable[object]], steps: int) -> float:
    """Median seconds per step over ``steps`` steps, after 3 warm-up steps (k counts on)."""
    samples = []
    for k in range(3 + steps):
        start = time.perf_counter()
        await step(k)
        if k >= 3:
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def main(nbytes: int, steps: int, rounds: int) -> None:
    count = nbytes // 4
    x = np.ones(1, np.float32)
    initial = np.zeros(count, np.float32)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, numpy {np.__version__}, nnrt {nnrt.__version__}; "
          f"state {nbytes >> 20} MiB, {steps} steps, {rounds} rounds")
    names = ["(a) device buffers", "(b) ndarray state sent back each step",
             "(b') the same with copy=True (owned arrays)", "(c) one shared memfd, ping-pong"]
    copied = [0, 0, 2 * nbytes, 0]
    samples: list[list[float]] = [[] for _ in names]
    async with nnrt.Runtime(workers=1, arena_limit=8 * nbytes) as rt:
        compiled = await rt.compile(state_model(count))

        roles = dict(input_roles=[BufferRole(compiled, 1)], output_roles=[BufferRole(compiled, 0)])
        buffers = [await rt.allocate(BufferDesc(), **roles) for _ in range(2)]
        await buffers[0].copy_from(initial)
        memory = rt.memory.create(2 * nbytes)
        halves = [memory.ndarray(np.float32, (count,)),
                  memory.ndarray(np.float32, (count,), nbytes)]
        halves[0][:] = 0
        state = [initial]

        async def device(k: int) -> None:
            await compiled.execute([x, buffers[k % 2]], outputs=[buffers[(k + 1) % 2]])

        async def round_trip(k: int) -> None:
            (state[0],) = await compiled.execute([x, state[0]])

        async def round_trip_copy(k: int) -> None:
            (state[0],) = await compiled.execute([x, state[0]], copy=True)

        async def shared(k: int) -> None:
            await compiled.execute([x, halves[k % 2]], outputs=[halves[(k + 1) % 2]])

        # interleaved rounds: no variant always runs first (right after the worker started)
        for round_ in range(rounds):
            for index, step in enumerate((device, round_trip, round_trip_copy, shared)):
                state[0] = initial
                samples[index].append(await per_step(step, steps))
            print(f"round {round_ + 1}: " + ", ".join(
                f"{name.split()[0]} {seconds[-1] * 1e3:.2f} ms"
                for name, seconds in zip(names, samples, strict=True)), flush=True)
        assert float(np.asarray(halves[0][:1])[0]) >= 3  # (c) really stepped its state
        state = []
        for buffer in buffers:
            await buffer.free()
        halves.clear()  # the views go before the memory closes
        memory.close()
    rows = [(name, statistics.median(seconds), nbytes_copied)
            for name, seconds, nbytes_copied in zip(names, samples, copied, strict=True)]
    print("\n| state loop | ms per step | bytes copied per step (client side) |\n|---|---:|---:|")
    for name, seconds, copied in rows:
        print(f"| {name} | {seconds * 1e3:.2f} | {copied:,} |")
    a, b, c = rows[0][1], rows[1][1], rows[3][1]
    verdict = "no slower" if a <= c * 1.05 else "slower"
    print(f"\n(a) vs (c): {a * 1e3:.2f} vs {c * 1e3:.2f} ms ({verdict}); (b) / (a) = "
          f"{b / a:.1f}x; (b') / (a) = {rows[2][1] / a:.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", default="16M")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median "
                        "of each variant's per-step medians is reported (this VM is noisy)")
    args = parser.parse_args()
    text = args.state
    size = int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)
    asyncio.run(main(size, args.steps, args.rounds))
