"""nnrt inside a small asyncio HTTP service (plain asyncio streams, no web framework).

Run it, ask it, load-test it::

    python examples/service.py --port 8080 --workers 2 --timeout 5.0
    curl -s localhost:8080/healthz
    curl -s -d "{\\"input\\": [$(seq -s, 1 64)]}" localhost:8080/predict
    python examples/load_test.py --url http://127.0.0.1:8080/predict --concurrency 16 --duration 5

The model, an MLP classifier ([1, 64] -> FC 32 + relu -> FC 10 -> softmax, weights from
``np.random.default_rng(0)``), is compiled once; requests share the compiled model and the runtime
schedules them onto ``--workers`` processes. ``POST /predict`` takes ``{"input": [64 numbers]}``
and answers ``{"probabilities": [10 floats], "class": int}``: bad input is a 400 (never a 500), a
body over 1 MiB a 413, a missed ``--timeout`` a 504, any other runtime error a 503. ``GET /healthz``
returns the runtime statistics (503 while a pool has no live worker). Connections are HTTP/1.1
keep-alive with ``Content-Length`` bodies. SIGINT / SIGTERM stop accepting, close idle connections,
let in-flight requests finish and stop the workers. ``--port 0`` picks a free port.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import signal
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import numpy as np

import nnrt

INPUT_SIZE, HIDDEN, CLASSES = 64, 32, 10
MAX_BODY = 1 << 20  # bytes
MAX_HEAD = 16 << 10  # bytes of request line + headers
READ_TIMEOUT = 10.0  # seconds to receive one request, and to wait idle on a kept-alive connection
DRAIN_GRACE = 10.0  # extra seconds in-flight requests get to finish at shutdown

log = logging.getLogger("service")
Response = tuple[int, dict[str, Any]]


class HttpError(Exception):
    """An error answer: the HTTP ``status`` and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Request:
    """One parsed HTTP request."""

    method: str
    path: str
    keep_alive: bool
    body: bytes


def build_model() -> nnrt.Model:
    """The MLP classifier; the same seed always gives the same weights."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((HIDDEN, INPUT_SIZE)) * 0.1).astype(np.float32)
    b1 = (rng.standard_normal(HIDDEN) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((CLASSES, HIDDEN)) * 0.1).astype(np.float32)
    b2 = (rng.standard_normal(CLASSES) * 0.1).astype(np.float32)
    b = nnrt.ModelBuilder()
    x = b.input("input", (1, INPUT_SIZE))
    hidden = b.fully_connected(x, w1, b1, activation="relu")
    b.output(b.softmax(b.fully_connected(hidden, w2, b2)), names=["probabilities"])
    return b.build()


async def read_request(reader: asyncio.StreamReader) -> Request:
    """Read one request; ``IncompleteReadError`` means the client closed the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise HttpError(431, "request head too large") from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, "malformed request line")
    method, path, version = parts
    fields = (line.partition(":") for line in lines[1:])
    headers = {name.strip().lower(): value.strip() for name, _, value in fields}
    if "transfer-encoding" in headers:
        raise HttpError(501, "only Content-Length bodies are supported")
    length_text = headers.get("content-length", "0")
    if not (length_text.isascii() and length_text.isdigit()):
        raise HttpError(400, "bad Content-Length")
    if len(length_text) > 9 or int(length_text) > MAX_BODY:
        raise HttpError(413, f"body over {MAX_BODY} bytes")
    body = await reader.readexactly(int(length_text))
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return Request(method, path.split("?")[0], keep_alive, body)


async def write_response(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any],
                         keep_alive: bool) -> None:
    body = json.dumps(payload).encode()
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
    writer.write(head.encode() + body)
    await writer.drain()


def parse_input(body: bytes) -> np.ndarray:
    """``{"input": [64 numbers]}`` -> a float32 [1, 64] array, or ``HttpError(400)``."""
    try:
        values = json.loads(body)["input"]
    except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: [[[[...]]]]
        raise HttpError(400, 'expected a JSON object {"input": [64 numbers]}') from None
    bad = HttpError(400, f'"input" must be a list of {INPUT_SIZE} finite float32 numbers')
    if not (isinstance(values, list) and len(values) == INPUT_SIZE
            and all(type(v) in (int, float) for v in values)):  # type(): bool is not a number
        raise bad
    try:
        array = np.array(values, np.float64)
    except OverflowError:  # an integer beyond float64
        raise bad from None
    if not np.all(np.abs(array) <= np.finfo(np.float32).max):  # also false for NaN and inf
        raise bad
    return array.astype(np.float32).reshape(1, INPUT_SIZE)


class Service:
    """Routes requests to the compiled model and owns the connection tasks."""

    def __init__(self, rt: nnrt.Runtime, compiled: nnrt.CompiledModel, timeout: float) -> None:
        self.rt, self.compiled, self.timeout = rt, compiled, timeout
        self.closing = False
        self.connections: set[asyncio.Task[None]] = set()
        self.idle: set[asyncio.StreamWriter] = set()  # waiting for their next request

    async def predict(self, body: bytes) -> Response:
        """Run the model on the request's input; map nnrt errors to HTTP statuses."""
        try:
            x = parse_input(body)
            (probs,) = await self.compiled.execute({"input": x}, timeout=self.timeout)
        except HttpError as e:
            return e.status, {"error": str(e)}
        except nnrt.BadData as e:
            return 400, {"error": str(e)}
        except nnrt.DeadlineMissed as e:
            return 504, {"error": str(e)}
        except nnrt.NnrtError as e:
            return 503, {"error": f"{type(e).__name__}: {e}"}
        return 200, {"probabilities": probs[0].tolist(), "class": int(np.argmax(probs[0]))}

    def health(self) -> Response:
        """Runtime statistics: totals and one record per worker pool."""
        stats = self.rt.statistics()
        ok = all(pool.workers_alive > 0 for pool in stats.pools.values())
        totals = {"completed": stats.completed, "failed": stats.failed, "restarts": stats.restarts}
        pools = {name: dataclasses.asdict(pool) for name, pool in stats.pools.items()}
        return (200 if ok else 503), {"ok": ok, "statistics": {**totals, "pools": pools}}

    async def route(self, request: Request) -> Response:
        """Dispatch on path, then method."""
        routes = {"/predict": "POST", "/healthz": "GET"}
        if request.path not in routes:
            return 404, {"error": f"no route {request.path}; try {sorted(routes)}"}
        if request.method != routes[request.path]:
            return 405, {"error": f"{request.path} takes {routes[request.path]}"}
        return self.health() if request.path == "/healthz" else await self.predict(request.body)

    def accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """``start_server`` callback: serve the connection in a task we can wait for."""
        task = asyncio.create_task(self.handle(reader, writer))
        self.connections.add(task)
        task.add_done_callback(self.connections.discard)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection: requests one after another until either side closes it."""
        try:
            while not self.closing:
                self.idle.add(writer)
                try:
                    async with asyncio.timeout(READ_TIMEOUT):
                        request = await read_request(reader)
                except HttpError as e:  # the framing is unknown from here on: answer and close
                    await write_response(writer, e.status, {"error": str(e)}, keep_alive=False)
                    break
                finally:
                    self.idle.discard(writer)
                try:
                    status, payload = await self.route(request)
                except Exception:
                    log.exception("%s %s failed", request.method, request.path)
                    status, payload = 500, {"error": "internal error"}
                keep_alive = request.keep_alive and not self.closing
                await write_response(writer, status, payload, keep_alive)
                if not keep_alive:
                    break
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass  # idle too long, or the client (or shutdown) closed the connection
        finally:
            writer.close()

    async def shutdown(self) -> None:
        """Stop reading: close idle connections now, give busy ones time to answer."""
        self.closing = True
        for writer in self.idle:
            writer.close()  # the pending read sees end-of-file
        if self.connections:
            _, stuck = await asyncio.wait(self.connections, timeout=self.timeout + DRAIN_GRACE)
            for task in stuck:
                task.cancel()


async def serve(host: str, port: int, workers: int, timeout: float) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with nnrt.Runtime(workers=workers) as rt:
        compiled = await rt.compile(build_model())
        service = Service(rt, compiled, timeout)
        server = await asyncio.start_server(service.accept, host, port, limit=MAX_HEAD)
        bound_host, bound_port = server.sockets[0].getsockname()[:2]
        bound_host = f"[{bound_host}]" if ":" in bound_host else bound_host  # IPv6
        print(f"listening on http://{bound_host}:{bound_port}", flush=True)
        await stop.wait()
        server.close()  # stop accepting
        await service.shutdown()
        await server.wait_closed()
    log.info("stopped; %d workers reaped", workers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per prediction")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(serve(args.host, args.port, args.workers, args.timeout))


if __name__ == "__main__":
    main()
