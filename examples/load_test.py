"""A small load generator for ``examples/service.py`` (plain asyncio streams, loopback only).

::

    python examples/service.py --port 8080 &
    python examples/load_test.py --url http://127.0.0.1:8080/predict --concurrency 16 --duration 5
    python examples/load_test.py --requests 1000

Each of ``--concurrency`` clients keeps one HTTP/1.1 connection open and sends ``POST`` requests
back to back until ``--duration`` seconds have passed or ``--requests`` have been sent, whichever
comes first. It prints requests/s, p50 / p99 latency and the error count, and exits 1 if any
request failed (a non-200 answer, a broken connection or a timeout).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_CONCURRENCY, MAX_DURATION, MAX_REQUESTS = 1024, 600.0, 10_000_000
REQUEST_TIMEOUT = 10.0  # seconds
# what one failed request can raise: connection trouble, a timeout, or a garbled response
REQUEST_ERRORS = (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                  ValueError, IndexError)


@dataclass
class Results:
    latencies: list[float] = field(default_factory=list)  # seconds, successful requests
    errors: int = 0
    first_error: str = ""

    def fail(self, reason: str) -> None:
        self.errors += 1
        self.first_error = self.first_error or reason


def make_bodies(count: int = 32) -> list[bytes]:
    rng = random.Random(0)
    return [json.dumps({"input": [rng.uniform(-1, 1) for _ in range(64)]}).encode()
            for _ in range(count)]


async def post(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str,
               path: str, body: bytes) -> int:
    """Send one request on an open connection; return the status (the body is read and dropped)."""
    writer.write(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    await writer.drain()
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(head[0].split(" ")[1])
    length = 0
    for line in head[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def client(url: str, deadline: float, budget: list[int], results: Results) -> None:
    """One keep-alive connection; reconnects after an error. ``budget[0]`` is requests left."""
    parts = urlsplit(url)
    host, port, path = parts.hostname or "", parts.port or 80, parts.path or "/"
    bodies = make_bodies()
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    try:
        while time.monotonic() < deadline and budget[0] > 0:
            budget[0] -= 1
            start, reason = time.monotonic(), ""
            try:
                async with asyncio.timeout(REQUEST_TIMEOUT):
                    if connection is None:
                        connection = await asyncio.open_connection(host, port)
                    status = await post(*connection, host, path, random.choice(bodies))
            except REQUEST_ERRORS as e:
                status, reason = 0, f"{type(e).__name__}: {e}"
            if status == 200:
                results.latencies.append(time.monotonic() - start)
                continue
            results.fail(reason or f"HTTP {status}")
            if connection is not None:  # start afresh after any failure
                connection[1].close()
                connection = None
            await asyncio.sleep(0.01)  # do not spin on a refused connection
    finally:
        if connection is not None:
            connection[1].close()
            with contextlib.suppress(OSError):
                await connection[1].wait_closed()


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of sorted ``values`` (0 for none)."""
    if not values:
        return 0.0
    return values[min(len(values) - 1, round(q / 100 * (len(values) - 1)))]


async def run(url: str, concurrency: int, duration: float, requests: int) -> Results:
    results = Results()
    deadline, budget = time.monotonic() + duration, [requests]
    async with asyncio.TaskGroup() as tg:
        for _ in range(concurrency):
            tg.create_task(client(url, deadline, budget, results))
    return results


def check_url(url: str) -> str:
    """``url`` if it is http:// on a loopback host, else a usage error."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname not in LOOPBACK:
        allowed = ", ".join(LOOPBACK)
        raise argparse.ArgumentTypeError(f"only http:// on {allowed} is allowed, got {url!r}")
    return url


def bounded(kind: type[int] | type[float], limit: float) -> Callable[[str], int | float]:
    """An argparse ``type`` accepting ``kind`` values in (0, limit]."""
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not 0 < value <= limit:
            raise argparse.ArgumentTypeError(f"must be more than 0 and at most {limit}")
        return value
    return parse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", type=check_url, default="http://127.0.0.1:8080/predict")
    parser.add_argument("--concurrency", type=bounded(int, MAX_CONCURRENCY), default=16)
    parser.add_argument("--duration", type=bounded(float, MAX_DURATION), default=10.0,
                        help=f"seconds (at most {MAX_DURATION:g})")
    parser.add_argument("--requests", type=bounded(int, MAX_REQUESTS), default=MAX_REQUESTS)
    args = parser.parse_args()
    start = time.monotonic()
    results = asyncio.run(run(args.url, args.concurrency, args.duration, args.requests))
    elapsed = time.monotonic() - start
    latencies = sorted(results.latencies)
    print(f"requests: {len(latencies)} ok, {results.errors} errors in {elapsed:.2f} s")
    print(f"requests/s: {len(latencies) / elapsed:.1f}")
    print(f"latency p50: {percentile(latencies, 50) * 1e3:.2f} ms, "
          f"p99: {percentile(latencies, 99) * 1e3:.2f} ms")
    if results.errors:
        print(f"first error: {results.first_error}", file=sys.stderr)
    return 1 if results.errors or not latencies else 0


if __name__ == "__main__":
    sys.exit(main())
