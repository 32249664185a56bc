"""Instructions per execute request, counted by valgrind: a noise-free gauge of the hot path.

On a noisy VM, microsecond timings of the request path move by ±50 % from minute to minute;
instruction counts do not. This script runs a workload twice under ``valgrind --tool=callgrind``
(``--small`` and ``--large`` repetitions) and reports the difference per request, so start-up
and imports cancel out:

* ``worker``: the worker service in this process (``nnrt.worker.service.Service`` on one end of
  a socketpair, the reference driver) fed batches of 64 ``execute`` frames of the 1x4 ADD model
  of ``benchmarks/latency.py``: framing, schema checks, decode, job queue, the HAL and the
  reference plan, the response;
* ``client``: ``Runtime`` + ``CompiledModel.execute`` with 64 tasks in flight against a real
  worker process (only the client process is counted).

Usage (valgrind must be installed; each count takes ~30-60 s)::

    .venv/bin/python benchmarks/instructions.py worker client

OpenBLAS threads and hash randomisation are pinned (``OPENBLAS_NUM_THREADS=1``,
``PYTHONHASHSEED=0``): an idle OpenBLAS thread spinning under valgrind otherwise adds millions
of instructions at random. The worker's poll interval is made infinite so that no socket poll
depends on the (valgrind-slowed) clock.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import shutil
import socket
import struct
import subprocess
import sys

import msgpack
from latency import X, add_model, throughput

import nnrt
import nnrt.worker.executor as executor_module
from nnrt.hal.discovery import load_driver
from nnrt.ipc.messages import PROTOCOL_VERSION
from nnrt.model.wire import model_to_wire
from nnrt.ops.floats import ignore_float_errors_here
from nnrt.worker.service import Service

_BATCH = 64


def _worker(batches: int) -> None:
    ignore_float_errors_here()  # as the worker process does
    executor_module.POLL_INTERVAL = 1e9
    header = struct.Struct("<I")
    packer = msgpack.Packer(use_bin_type=True)

    def frame(message: object) -> bytes:
        payload = packer.pack(message)
        return header.pack(len(payload)) + payload

    client, server = socket.socketpair()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    with Service(load_driver("reference")) as service:
        service.serve_fd(server.detach())

        def serve() -> None:
            for key, mask in service._selector.select(0):
                service._on_event(key.data, mask)
            while service.executor.run_next():
                pass
            service._flush()

        def drain() -> bytes:
            got = b""
            while True:
                try:
                    got += client.recv(1 << 20)
                except BlockingIOError:
                    return got

        client.sendall(frame([1, "hello", {"protocol": PROTOCOL_VERSION, "client": "count"}])
                       + frame([2, "prepare", {"model": model_to_wire(add_model())}]))
        serve()
        client.setblocking(False)
        got = drain()
        (first,) = header.unpack_from(got)
        handle = msgpack.unpackb(got[4 + first + 4:])[2]["handle"]
        data = X.tobytes()
        ids = iter(range(10, 1 << 40))
        frames = [b"".join(frame([next(ids), "execute", {
            "handle": handle, "inputs": [["float32", list(X.shape), data]], "priority": 100}])
            for _ in range(_BATCH)) for _ in range(batches)]
        gc.collect()
        gc.freeze()
        for batch in frames:
            client.sendall(batch)
            serve()
            drain()
    client.close()


def _client(requests: int) -> None:
    async def main() -> None:
        async with nnrt.Runtime(workers=1, max_in_flight=_BATCH, drivers=["reference"]) as rt:
            compiled = await rt.compile(add_model())

            async def call() -> None:
                await compiled.execute([X])

            await throughput(call, _BATCH, requests)

    asyncio.run(main())


def _count(kind: str, reps: int) -> int:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, "--run", kind, str(reps)], env=env, capture_output=True, text=True,
        check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kinds", nargs="*", metavar="{worker,client}",
                        help="what to count (default: both)")
    parser.add_argument("--run", nargs=2, metavar=("KIND", "REPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        kind, reps = args.run[0], int(args.run[1])
        (_worker if kind == "worker" else _client)(reps)
        return
    unknown = set(args.kinds) - {"worker", "client"}
    if unknown:
        parser.error(f"unknown kind(s) {sorted(unknown)}: choose worker and/or client")
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt install valgrind)")
    for kind in args.kinds or ["worker", "client"]:
        # worker: repetitions are batches of 64 requests; client: requests
        small, large, per = (5, 25, _BATCH) if kind == "worker" else (640, 3840, 1)
        delta = _count(kind, large) - _count(kind, small)
        requests = (large - small) * per
        print(f"{kind}: {delta / requests:,.0f} instructions per execute request")


if __name__ == "__main__":
    main()
