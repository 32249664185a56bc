"""Load reports (protocol version 4) from real worker processes, and the pools that steer by them:
packing light traffic onto the first worker, never a heavy model, trials that lose no request."""

from __future__ import annotations

import socket
import time
from typing import Any

import anyio
import numpy as np
import pytest
from models import add_model, slow_input, slow_model
from service_client import RawClient, Worker, outputs_of

import nnrt
from nnrt.ipc.framing import encode_frame
from nnrt.ipc.messages import LOAD_REPORT_ID, PROTOCOL_VERSION, Status, check_load_report
from nnrt.model.wire import model_to_wire
from nnrt.runtime.backends import steering
from nnrt.runtime.backends.channel import RequestClient
from nnrt.runtime.backends.framed import FramedSocket
from nnrt.runtime.backends.pool import WorkerPool
from nnrt.worker.load import REPORT_INTERVAL

X = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
EXPECTED = X + np.arange(1, 5, dtype=np.float32)


def _hello(client: RawClient, **fields: Any) -> dict[str, Any]:
    status, body = client.call("hello", {"protocol": PROTOCOL_VERSION, "client": "test",
                                         **fields})
    assert status == Status.OK, body
    return body


def _drain(client: RawClient, ids: set[int]) -> list[tuple[float, float, int]]:
    """Read until every id in ``ids`` is answered (OK, with the right sum); the load reports
    read on the way, checked."""
    reports = []
    while ids:
        request_id, status, body = client.receive()
        if request_id == LOAD_REPORT_ID:
            reports.append(check_load_report(status, body))
            continue
        assert status == Status.OK, body
        if "outputs" in body:
            np.testing.assert_array_equal(outputs_of(body)[0], EXPECTED)
        ids.remove(request_id)
    return reports


# -- the wire ------------------------------------------------------------------------------------

def test_a_worker_reports_every_execute_it_ran_to_a_client_that_asked() -> None:
    start = time.monotonic()  # (the worker's first span begins when it starts)
    worker, client = Worker.embedded()
    with worker, client:
        _hello(client, load_reports=True)
        prepare = client.send("prepare", {"model": model_to_wire(add_model())})
        reports: list[tuple[float, float, int]] = []
        while (reply := client.receive())[0] != prepare:  # a report may come before the reply
            reports.append(check_load_report(*reply[1:]))
        handle = reply[2]["handle"]
        sent = 0
        deadline = time.monotonic() + 0.2
        while time.monotonic() < deadline:  # bursts of 20, many report intervals long
            ids = {client.execute(handle, [X]) for _ in range(20)}
            sent += len(ids)
            reports += _drain(client, ids)
        time.sleep(2 * REPORT_INTERVAL)  # the last executes are counted in the next report,
        reports += _drain(client, {client.send("ping")})  # due once the ping is answered
        request_id, status, body = client.receive()
        assert request_id == LOAD_REPORT_ID
        reports.append(check_load_report(status, body))
        assert len(reports) >= 10
        assert sum(executes for _, _, executes in reports) == sent
        for span, busy, _ in reports:
            assert span >= REPORT_INTERVAL and 0 < busy <= span * 1.05 + 0.001
        assert sum(span for span, _, _ in reports) <= time.monotonic() - start  # no overlap


def test_no_load_report_reaches_a_client_that_did_not_ask() -> None:
    worker, client = Worker.embedded()
    with worker, client:
        _hello(client)
        handle = client.prepare(add_model())
        deadline = time.monotonic() + 30 * REPORT_INTERVAL
        while time.monotonic() < deadline:
            ids = {client.execute(handle, [X]) for _ in range(10)}
            assert _drain(client, ids) == []


def test_a_report_is_an_id_0_response_the_request_schemas_refuse_as_a_request() -> None:
    # id 0 is never a request's: a client cannot forge one toward the worker
    worker, client = Worker.embedded()
    with worker, client:
        _hello(client, load_reports=True)
        client.send_raw(encode_frame([0, "ping", {}]))
        assert client.closed_by_peer()


def test_load_reports_must_be_asked_for_with_a_bool() -> None:
    worker, client = Worker.embedded()
    with worker, client:
        client.send_raw(encode_frame([1, "hello", {"protocol": PROTOCOL_VERSION, "client": "t",
                                                   "load_reports": 1}]))
        assert client.closed_by_peer()


# -- the runtime's side of the wire -------------------------------------------------------------

REPORT = [LOAD_REPORT_ID, 0, {"load": [0.002, 0.001, 3]}]


async def _client_receiving(frames: list[Any], asked: bool) -> tuple[str | None, list[Any]]:
    """Run a RequestClient on a socketpair whose far end sends ``frames`` and stays open; returns
    why the client lost the connection (None: it did not) and the reports it handed on."""
    ours, theirs = socket.socketpair()
    got: list[Any] = []
    client = RequestClient(FramedSocket(ours))
    if asked:
        client.on_load_report = lambda *report: got.append(report)
    try:
        with theirs:
            for frame in frames:
                theirs.sendall(encode_frame(frame))
            with anyio.fail_after(5):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.run)
                    while client.lost is None and len(got) < len(frames):
                        await anyio.sleep(0.01)
                    lost = client.lost
                    tg.cancel_scope.cancel()
    finally:
        client.close()
    return lost, got


@pytest.mark.anyio
async def test_the_client_hands_reports_to_its_pool() -> None:
    lost, got = await _client_receiving([REPORT, REPORT], asked=True)
    assert got == [(0.002, 0.001, 3)] * 2
    assert lost is None


@pytest.mark.anyio
async def test_an_unasked_report_breaks_the_connection() -> None:
    lost, _ = await _client_receiving([REPORT], asked=False)
    assert lost is not None and "nobody asked for" in lost


@pytest.mark.anyio
@pytest.mark.parametrize("body", [
    {"load": [0.002, 0.001]},
    {"load": [0.0, 0.0, 0]},
    {"load": [-1.0, 0.0, 0]},
    {"load": [0.002, -0.001, 1]},
    {"load": [0.002, 0.001, -1]},
    {"load": [0.002, 0.001, 1.5]},
    {"load": [0.002, True, 1]},
    {"load": [float("nan"), 0.0, 1]},
    {"load": [0.002, float("inf"), 1]},
    {"load": "busy"},
    {"load": [0.002, 0.001, 1], "more": 1},
    {},
])
async def test_malformed_reports_break_the_connection(body: dict[str, Any]) -> None:
    lost, got = await _client_receiving([[LOAD_REPORT_ID, 0, body]], asked=True)
    assert got == []
    assert lost is not None and "protocol error" in lost


@pytest.mark.anyio
async def test_a_report_with_an_error_status_breaks_the_connection() -> None:
    lost, _ = await _client_receiving([[LOAD_REPORT_ID, 4, {"load": [0.002, 0.001, 3]}]],
                                      asked=True)
    assert lost is not None and "protocol error" in lost


# -- pools ---------------------------------------------------------------------------------------

def _pool(rt: nnrt.Runtime) -> WorkerPool:
    return rt._core.backend.pools["reference"]  # type: ignore[union-attr, no-any-return]


async def _until(predicate: Any, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.005)


@pytest.mark.anyio
async def test_a_packing_pool_sends_light_traffic_to_its_first_worker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # What counts as light is the thresholds' business (test_steering.py); here the model is
    # light whatever the VM's speed today (a slow phase puts the 1x4 ADD near the 50 µs bound,
    # and a pack limit that shrinks mid-run rightly overflows to the second worker).
    monkeypatch.setattr(steering, "PACK_MAX_SERVICE", 0.01)
    monkeypatch.setattr(steering, "PACK_DELAY", 1.0)
    async with nnrt.Runtime(drivers=["reference"], workers=2, max_in_flight=16) as rt:
        pool = _pool(rt)
        pool.fix_packing(True)  # no trials
        compiled = await rt.compile(add_model())
        first, second = pool.slots
        with anyio.fail_after(10):  # until the first worker's cost per execute is known
            while first.pack_limit == 0:
                await compiled.execute([X])
        assert 0 < first.service_time <= steering.PACK_MAX_SERVICE
        assert first.pack_limit == min(16, int(steering.PACK_DELAY / first.service_time)) == 16
        before = second.executes

        async def task() -> None:
            for _ in range(50):
                (y,) = await compiled.execute([X])
                np.testing.assert_array_equal(y, EXPECTED)

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(task)
        await anyio.sleep(3 * REPORT_INTERVAL)
        await compiled.execute([X])  # its worker's report now includes everything before
        assert second.executes == before
        assert rt.statistics().pools["reference"].packing


@pytest.mark.anyio
async def test_a_single_worker_pool_neither_packs_nor_steers() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        pool = _pool(rt)
        compiled = await rt.compile(add_model())
        async with anyio.create_task_group() as tg:
            for _ in range(16):
                tg.start_soon(compiled.execute, [X])
        assert pool.packed is None and not rt.statistics().pools["reference"].packing
        assert pool.steering.trials == 0


@pytest.mark.anyio
async def test_a_pool_that_spreads_uses_every_worker() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=2, max_in_flight=16) as rt:
        pool = _pool(rt)
        pool.fix_packing(False)
        assert not rt.statistics().pools["reference"].packing
        compiled = await rt.compile(add_model())

        async def task() -> None:
            for _ in range(100):
                await compiled.execute([X])

        async with anyio.create_task_group() as tg:
            for _ in range(16):
                tg.start_soon(task)
        await _until(lambda: all(slot.executes > 0 for slot in pool.slots))


@pytest.mark.anyio
async def test_a_heavy_model_is_never_queued_behind_another_while_packing() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=2) as rt:
        pool = _pool(rt)
        pool.fix_packing(True)
        compiled = await rt.compile(slow_model(ops=3))
        await compiled.execute([slow_input()])  # its report: far above PACK_MAX_SERVICE
        await _until(lambda: pool.slots[0].service_time > 0)
        heavy = pool.slots[0]
        assert heavy.service_time > steering.PACK_MAX_SERVICE and heavy.pack_limit == 0
        assert pool.packed is pool.slots[0]
        before = [slot.executes for slot in pool.slots]

        async def run() -> None:
            await compiled.execute([slow_input()])

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            tg.start_soon(run)
        await _until(lambda: sum(slot.executes for slot in pool.slots) == sum(before) + 2)
        assert [slot.executes - b for slot, b in zip(pool.slots, before, strict=True)] == [1, 1]


@pytest.mark.anyio
async def test_trials_under_live_traffic_lose_no_request() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=2, max_in_flight=32) as rt:
        pool = _pool(rt)
        compiled = await rt.compile(add_model())
        done = 0

        async def task() -> None:
            nonlocal done
            while pool.steering.trials < 3:
                (y,) = await compiled.execute([X])
                np.testing.assert_array_equal(y, EXPECTED)
                done += 1

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for _ in range(32):
                    tg.start_soon(task)
        assert pool.steering.trials >= 3
        stats = rt.statistics().pools["reference"]
        assert stats.failed == 0 and stats.completed >= done


@pytest.mark.anyio
async def test_a_restarted_first_worker_is_not_packed_onto_before_it_reports() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=2) as rt:
        pool = _pool(rt)
        pool.fix_packing(True)
        compiled = await rt.compile(add_model())
        with anyio.fail_after(10):
            while pool.slots[0].pack_limit == 0:
                await compiled.execute([X])
        pool.slots[0].kill()
        await _until(lambda: pool.restarts >= 1 and pool.slots[0].alive)
        assert pool.slots[0].service_time == 0.0 and pool.slots[0].pack_limit == 0
        (y,) = await compiled.execute([X])
        np.testing.assert_array_equal(y, EXPECTED)

