"""Shared memory pools with nnrt: every kind, weights served from a file, frames from a producer.

Run::

    python examples/memory_pools.py [--frames 5]

1. **memfd** (``rt.memory.create``): input and output tensors live in one sealed memfd shared
   with the worker once; the worker reads the input and writes the output in place — the
   result appears in this process's own mapping, nothing crosses the socket but a reference.
2. **mmap_fd** (``rt.memory.from_fd``): a weights file is mapped by fd; the model's
   CONSTANT_REFERENCE weights point into it, so the worker serves them straight from the file's
   pages (the compile request carries a pool id and an offset, never the bytes).
3. **blob** (``rt.memory.open_blob``): a separate *producer process* (think camera or video
   decoder) creates a POSIX shared-memory blob and writes frames into it; this process opens
   the blob by name and runs the model on each frame where it lies. The producer owns the blob
   and unlinks it.
4. Plain ndarrays still work: large ones travel through the runtime's shared arena.
"""

from __future__ import annotations

import argparse
import asyncio
import mmap
import os
import subprocess
import sys
import tempfile

import numpy as np

import nnrt

FEATURES = 1024
FRAME = (64, FEATURES)

PRODUCER = r"""
import sys, mmap, numpy as np, posix_ipc
name, frames = sys.argv[1], int(sys.argv[2])
shape = (64, 1024)
nbytes = int(np.prod(shape)) * 4
shm = posix_ipc.SharedMemory(name, posix_ipc.O_CREX, mode=0o600, size=nbytes)
buffer = mmap.mmap(shm.fd, nbytes)
shm.close_fd()
frame = np.frombuffer(buffer, np.float32).reshape(shape)
print("ready", flush=True)
try:
    for k in range(frames):
        frame[:] = k                      # "decode" frame k into the blob
        print(f"frame {k}", flush=True)
        if sys.stdin.readline().strip() != "next":  # wait until the consumer is done with it
            break
finally:
    del frame
    buffer.close()
    shm.unlink()                          # the producer owns the blob
"""


def scale_model(weights: nnrt.Memory | None = None) -> nnrt.Model:
    """y = x * w (per feature), with w read from ``weights`` when given."""
    model = nnrt.Model()
    x = model.add_operand(nnrt.OperandType.TENSOR_FLOAT32, FRAME)
    w = model.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (FEATURES,))
    act = model.add_operand(nnrt.OperandType.INT32)
    y = model.add_operand(nnrt.OperandType.TENSOR_FLOAT32, FRAME)
    if weights is not None:
        model.set_operand_value_from_memory(w, weights, 0, FEATURES * 4)
    else:
        model.set_operand_value(w, np.full(FEATURES, 2.0, np.float32))
    model.set_operand_value(act, 0)
    model.add_operation(nnrt.OperationType.MUL, [x, w, act], [y])
    model.identify_inputs_and_outputs([x], [y])
    model.finish()
    return model


async def memfd_in_place(rt: nnrt.Runtime) -> None:
    compiled = await rt.compile(scale_model())
    nbytes = int(np.prod(FRAME)) * 4
    with rt.memory.create(2 * nbytes) as memory:
        x = memory.ndarray(np.float32, FRAME)
        y = memory.ndarray(np.float32, FRAME, offset=nbytes)
        x[:] = np.arange(FEATURES, dtype=np.float32)
        (result,) = await compiled.execute([x], outputs=[y])
        assert np.shares_memory(result, y)  # the worker wrote into our mapping
        print(f"memfd:   y[0, :4] = {y[0, :4]} (written in place by the worker)")
        del x, y, result


async def weights_from_file(rt: nnrt.Runtime, directory: str) -> None:
    path = os.path.join(directory, "weights.bin")
    np.linspace(0.0, 1.0, FEATURES, dtype=np.float32).tofile(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        weights = rt.memory.from_fd(fd, 0, FEATURES * 4, mmap.PROT_READ)
    finally:
        os.close(fd)  # the memory holds its own duplicate
    compiled = await rt.compile(scale_model(weights))
    (y,) = await compiled.execute([np.ones(FRAME, np.float32)])
    print(f"mmap_fd: y[0, -4:] = {y[0, -4:]} (weights served from {path})")
    await compiled.release()
    weights.close()


async def frames_from_producer(rt: nnrt.Runtime, frames: int) -> None:
    compiled = await rt.compile(scale_model())
    name = f"/nnrt-example-{os.getpid()}"
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER, name, str(frames)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert producer.stdin is not None and producer.stdout is not None
    try:
        assert producer.stdout.readline().strip() == "ready"
        with rt.memory.open_blob(name, writable=False) as blob:
            frame = blob.ndarray(np.float32, FRAME)
            for _ in range(frames):
                label = producer.stdout.readline().strip()
                (y,) = await compiled.execute([frame])  # the worker reads the blob in place
                print(f"blob:    {label}: mean of y = {float(y.mean()):.1f}")
                producer.stdin.write("next\n")
                producer.stdin.flush()
            del frame
    finally:
        producer.stdin.close()
        producer.wait()


async def plain_arrays(rt: nnrt.Runtime) -> None:
    compiled = await rt.compile(scale_model())
    x = np.random.default_rng(0).standard_normal(FRAME).astype(np.float32)
    (y,) = await compiled.execute([x])  # 256 KiB: through the shared arena
    print(f"arena:   max |y - 2x| = {float(np.abs(y - 2 * x).max())}")


async def main(frames: int) -> None:
    async with nnrt.Runtime(workers=1) as rt:
        await memfd_in_place(rt)
        with tempfile.TemporaryDirectory() as directory:
            await weights_from_file(rt, directory)
        await frames_from_producer(rt, frames)
        await plain_arrays(rt)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=5)
    asyncio.run(main(parser.parse_args().frames))
