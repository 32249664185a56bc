"""Hostile frames and descriptors at a real worker process and a real ``nnrt serve``.

A bounded run of :mod:`frame_fuzzer` against each (the long run is its ``--cases`` option),
the saved corpus replayed, and regression tests for the bugs the fuzzer found.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator

import msgpack
import pytest
from frame_fuzzer import (
    HEADER,
    KNOWN_BUGS,
    Checker,
    Closed,
    Conn,
    Target,
    fuzz,
    load_corpus,
)
from fuzz_kit import PROFILE, count
from hostile import deep_list

from nnrt.ipc.messages import PROTOCOL_VERSION

CI_CASES = 10000 if PROFILE == "long" else 400


@pytest.fixture(params=["worker", "serve"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    with tempfile.TemporaryDirectory(prefix="nnrt-fuzz-") as workdir, \
            Target(request.param, workdir) as started:
        started.workdir = workdir  # type: ignore[attr-defined]
        yield started


def _check(report_failures: list[str]) -> None:
    assert not report_failures, "\n".join(report_failures[:20])


def test_random_frames(target: Target) -> None:
    report = fuzz(target, CI_CASES, seed=20260801, workdir=target.workdir,  # type: ignore[attr-defined]
                  excluded=KNOWN_BUGS)
    count(f"frames.{target.kind}", report.cases)
    _check(report.failures)
    assert report.outcomes["answered"] and report.outcomes["closed"]


def test_corpus_replay(target: Target) -> None:
    cases = load_corpus()
    assert len(cases) >= 10
    report = fuzz(target, 0, seed=0, workdir=target.workdir,  # type: ignore[attr-defined]
                  replay=cases, batch=1)
    count(f"frames.corpus.{target.kind}", report.cases)
    _check(report.failures)


# -- regressions ---------------------------------------------------------------------------------

def _send_frame(target: Target, message: object, greet: bool = True) -> None:
    conn = Conn(target.path)
    try:
        if greet:
            conn.call("hello", {"protocol": PROTOCOL_VERSION, "client": "fuzz"})
        payload = msgpack.packb(message, use_bin_type=True)
        conn.send(HEADER.pack(len(payload)) + payload)
        # closed (even before the ping is sent): fine, as long as the process lives (checked
        # below)
        with contextlib.suppress(Closed, OSError):
            conn.send(HEADER.pack(4) + msgpack.packb([9, "ping", {}]))
            conn.wait_for(9)
    finally:
        conn.close()


def _still_serving(target: Target, children: set[int]) -> None:
    assert target.alive(), f"{target.kind} died:\n{target.new_log()[-3000:]}"
    checker = Checker(target)
    try:
        checker.check()
    finally:
        checker.close()
    assert target.children() == children, f"{target.kind}: a worker was restarted"


def test_deeply_nested_frames_do_not_kill_the_process(target: Target) -> None:
    """Bug found by fuzzing: msgpack carries up to 1024 levels of nesting; a request whose id,
    verb or tensor shape nests ~1000 deep made ``repr`` in the ProtocolError message raise
    RecursionError, which escaped the service loop: the worker process exited (status 1) and
    so did the whole ``nnrt serve`` (an ExceptionGroup out of anyio.run)."""
    children = target.children()
    deep = deep_list(990)
    message = {"id": [deep, "ping", {}], "verb": [2, deep, {}],
               "shape": [2, "execute", {"handle": 1, "inputs": [["float32", deep, b""]]}]}
    for where in ("shape", "id", "verb"):
        _send_frame(target, message[where])
        assert target.alive(), f"{target.kind} died on a deep {where}"
    _still_serving(target, children)


MALFORMED = [
    ["float32", [1, 4], b"\x00" * 3],       # byte count does not match the shape
    ["float32", [1] * 17, b"\x00" * 4],     # rank above the limit
    ["float64", [1, 4], b"\x00" * 32],      # dtype not on the wire
]


def test_malformed_inline_inputs_through_serve_keep_the_worker() -> None:
    """Bug found by fuzzing: ``nnrt serve`` forwarded an execute's inline tensors unchecked; the
    worker treats a malformed tensor as a protocol error and drops the connection, i.e. the
    shared worker process exits and is restarted — one client's bad request fails every other
    client's requests in flight on that worker."""
    with tempfile.TemporaryDirectory(prefix="nnrt-fuzz-") as workdir, \
            Target("serve", workdir) as serve:
        checker = Checker(serve)  # compiles the model: handle 1 of its own session
        try:
            children = serve.children()
            for tensor in MALFORMED:
                conn = Conn(serve.path)
                try:
                    conn.call("hello", {"protocol": PROTOCOL_VERSION, "client": "fuzz"})
                    status, body = conn.call("compile", {"model": _add_wire()})
                    assert status == 0, body
                    conn.call("execute", {"handle": body["handle"], "inputs": [tensor]})
                except Closed:
                    pass  # closing this client is fine; restarting the worker is not
                finally:
                    conn.close()
                checker.check()
                assert serve.children() == children, f"the worker was restarted by {tensor}"
        finally:
            checker.close()


def _add_wire() -> dict[str, object]:
    from frame_fuzzer import SEED_MODELS

    return SEED_MODELS[0]


def test_nan_deadline_through_serve_is_bad_data() -> None:
    """Bug found by fuzzing: ``nnrt serve`` passed an execute's NaN deadline to anyio
    (ValueError "deadline must not be NaN", logged as failing unexpectedly, answered
    OP_FAILED); the worker answers BAD_DATA for the same request."""
    with tempfile.TemporaryDirectory(prefix="nnrt-fuzz-") as workdir, \
            Target("serve", workdir) as serve:
        conn = Conn(serve.path)
        try:
            conn.call("hello", {"protocol": PROTOCOL_VERSION, "client": "fuzz"})
            status, body = conn.call("compile", {"model": _add_wire()})
            assert status == 0, body
            status, body = conn.call("execute", {
                "handle": body["handle"], "deadline": float("nan"),
                "inputs": [["float32", [1, 4], bytes(16)]]})
        finally:
            conn.close()
        assert status == 4, (status, body)
        assert "unexpectedly" not in serve.new_log()
