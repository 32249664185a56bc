"""Batching in shared mode: requests of different client processes merged by ``nnrt serve``,
each client getting exactly its own results, its memory untouched, nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from batching_client import WIDE, row_model, wide_model
from service_client import RawClient, running_service

import nnrt
from nnrt.ipc.messages import Status, encode_tensor
from nnrt.memory import find_memory
from nnrt.model.wire import model_to_wire
from nnrt.runtime.served import batching_to_wire

CLIENT = str(Path(__file__).parent / "batching_client.py")
ROWS = 24


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, int]]:
    path = str(tmp_path / "nnrt.sock")
    with running_service(path, workers=1, extra=["--driver", "reference"]) as proc:
        yield path, proc.pid


def _batched(raw: RawClient) -> list[dict[str, Any]]:
    status, body = raw.call("statistics")
    assert status == Status.OK, body
    models: list[dict[str, Any]] = body["batched"]
    return models


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _settled(raw: RawClient, pid: int, expected: int | None) -> int:
    """The service's descriptor count once it holds no batched model (and, given
    ``expected``, once the count is back to it; else once it is steady)."""
    deadline = time.monotonic() + 15
    last = -1
    while time.monotonic() < deadline:
        count = _fds(pid)
        if not _batched(raw) and (count == expected if expected is not None else count == last):
            return count
        last = count
        time.sleep(0.3)
    raise AssertionError(f"the service still holds {_batched(raw)} and {_fds(pid)} fds "
                         f"(expected {expected})")


def _round(path: str, raw: RawClient) -> list[dict[str, Any]]:
    """Two client processes, each with ROWS concurrent single-row requests of one model."""
    procs = [subprocess.Popen([sys.executable, CLIENT, path, str(seed), str(ROWS)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for seed in (1, 2)]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdin is not None
            line = proc.stdout.readline()
            assert line.strip() == "ready", (line, proc.stderr.read() if proc.stderr else "")
        for proc in procs:  # both start at once: their requests meet in the service's queue
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = []
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            reports.append(json.loads(line))
        models = _batched(raw)  # while both clients still hold the model
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("exit\n")
            proc.stdin.close()
        for proc in procs:
            assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
    for report in reports:
        assert report == {"same": True, "unchanged": True, "count": ROWS}
    return models


def test_two_client_processes_batch_together_and_stay_isolated(
        service: tuple[str, int]) -> None:
    path, pid = service
    with RawClient.connect(path) as raw:
        raw.hello()
        baseline = _settled(raw, pid, None)
        for _ in range(2):  # the second round shows nothing accumulates
            (model,) = _round(path, raw)  # one batched model for both: identical bytes
            assert model["users"] == 2
            assert model["requests"] == 2 * ROWS
            assert model["executions"] < ROWS  # merged, across the two clients
            assert model["mixed"] >= 1  # a batch held rows of both clients
            _settled(raw, pid, baseline)  # both gone: no batched model, no descriptor left


@pytest.mark.anyio
async def test_large_rows_travel_in_the_clients_own_pools(service: tuple[str, int]) -> None:
    path, _ = service
    rng = np.random.default_rng(3)
    batching = nnrt.Batching(max_batch=8, max_delay=0.2)
    async with nnrt.Runtime(connect=path) as a, nnrt.Runtime(connect=path) as b:
        plain = await a.compile(wide_model())
        first = await a.compile(wide_model(), batching=batching)
        second = await b.compile(wide_model(), batching=batching)
        requests = [(first if k % 2 else second, rng.standard_normal((1, WIDE)).astype(
            np.float32)) for k in range(6)]
        expected = [(await plain.execute([x]))[0] for _, x in requests]
        results: list[Any] = [None] * len(requests)

        async def one(k: int) -> None:
            compiled, x = requests[k]
            (results[k],) = await compiled.execute([x])

        async with anyio.create_task_group() as tg:
            for k in range(len(requests)):
                tg.start_soon(one, k)
        for k, (got, want) in enumerate(zip(results, expected, strict=True)):
            np.testing.assert_array_equal(got, want)
            found = find_memory(got)  # written by the service into this client's arena
            owner = a if k % 2 else b
            assert found is not None and owner._core.arena is not None
            assert found[0] is owner._core.arena._memory
        with RawClient.connect(path) as raw:
            raw.hello()
            (model,) = _batched(raw)
            assert model["users"] == 2 and model["requests"] == 6 and model["mixed"] >= 1
            await first.release()
            x = np.ones((1, WIDE), np.float32)  # the other client's handle keeps it
            (y,) = await second.execute([x])
            np.testing.assert_array_equal(y, (await plain.execute([x]))[0])
            for _ in range(100):
                if _batched(raw)[0]["users"] == 1:
                    break
                await anyio.sleep(0.05)
            assert _batched(raw)[0]["users"] == 1
            await second.release()
            await plain.release()
            for _ in range(100):
                if not _batched(raw):
                    break
                await anyio.sleep(0.05)
            assert _batched(raw) == []


@pytest.mark.anyio
async def test_cancel_deadline_and_priority_reach_the_service_queue(
        service: tuple[str, int]) -> None:
    path, _ = service
    async with nnrt.Runtime(connect=path) as rt:
        compiled = await rt.compile(row_model(),
                                    batching=nnrt.Batching(max_batch=8, max_delay=1.0))
        with anyio.move_on_after(0.2):
            await compiled.execute([np.ones((1, 16), np.float32)])
            pytest.fail("the request did not wait for its batch")
        await anyio.sleep(1.5)  # past max_delay: a request still queued would have run
        with RawClient.connect(path) as raw:
            raw.hello()
            (model,) = _batched(raw)
            assert model["requests"] == 0 and model["executions"] == 0
        started = time.monotonic()  # a deadline travels: the batch starts before it passes
        (y,) = await compiled.execute([np.ones((1, 16), np.float32)], timeout=0.5)
        assert y.shape == (1, 32) and time.monotonic() - started < 0.5
        started = time.monotonic()  # above the model's priority: the batch starts at once
        (y,) = await compiled.execute([np.ones((1, 16), np.float32)], priority=110)
        assert y.shape == (1, 32) and time.monotonic() - started < 0.5


def test_hostile_batched_requests_fail_alone(service: tuple[str, int]) -> None:
    path, _ = service
    wire = model_to_wire(row_model())
    good = batching_to_wire(nnrt.Batching(max_batch=4))
    with RawClient.connect(path) as raw:
        raw.hello()
        for batching, match in (({**good, "max_batch": 0}, "max_batch"),
                                ({**good, "dims": {"x": "1"}}, "dims"),
                                ({**good, "preferred": list(range(1, 100))}, "preferred"),
                                ({**good, "extra": 1}, "batching must be")):
            status, body = raw.call("compile_batched", {"model": wire, "batching": batching})
            assert status == Status.BAD_DATA and match in body["message"], body
        status, body = raw.call("compile_batched", {"model": wire, "batching": good})
        assert status == Status.OK, body
        handle = body["handle"]
        x = encode_tensor(np.ones((1, 16), np.float32))
        for inputs, match in (([["float32", [1, 16], 99, 0, 64]], "unknown pool"),
                              ([encode_tensor(np.ones((1, 15), np.float32))], "x"),
                              ([x, x], "input")):
            status, body = raw.call("execute_batched", {"handle": handle, "inputs": inputs})
            assert status == Status.BAD_DATA and match in body["message"], body
        status, body = raw.call("execute_batched", {"handle": handle + 7, "inputs": [x]})
        assert status == Status.BAD_DATA and "unknown batched handle" in body["message"]
        status, body = raw.call("execute_batched", {"handle": handle, "inputs": [x]})
        assert status == Status.OK and len(body["outputs"]) == 1
        assert raw.call("release_batched", {"handle": handle}) == (Status.OK, {})
        assert _batched(raw) == []
