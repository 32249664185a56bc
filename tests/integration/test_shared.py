"""Shared mode: ``nnrt serve`` with several client processes, scoping and hostile clients."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
from models import add_model
from service_client import running_service

import nnrt
from nnrt.ipc.framing import FrameReader, encode_frame, send_frame
from nnrt.ipc.messages import PROTOCOL_VERSION
from nnrt.runtime.compile.compilation import Compilation
from nnrt.runtime.core import Shared

X = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
EXPECTED = X + np.arange(1, 5, dtype=np.float32)

CLIENT = textwrap.dedent("""
    import sys, anyio, numpy as np, nnrt
    sys.path.insert(0, {tests!r})
    from models import add_model

    async def main():
        async with nnrt.Runtime(connect={path!r}) as rt:
            compiled = await rt.compile(add_model())
            results = {{}}
            async def one(k):
                (results[k],) = await compiled.execute([np.full((1, 4), k, np.float32)])
            async with anyio.create_task_group() as tg:
                for k in range(200):
                    tg.start_soon(one, k)
            for k, y in results.items():
                assert np.array_equal(y, np.full((1, 4), k) + [1, 2, 3, 4]), (k, y)
            stats = await rt.refresh_statistics()
            print("ok", len(results), stats.completed)

    anyio.run(main)
""")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One service for the module's tests (each starts clients of its own): what a test does
    to it, hostile frames included, must leave it serving the next."""
    path = str(tmp_path_factory.mktemp("shared") / "nnrt.sock")
    with running_service(path):
        yield path


def test_socket_is_private(service: str) -> None:
    assert stat.S_IMODE(os.stat(service).st_mode) == 0o600


def test_three_client_processes(service: str) -> None:
    tests = str(Path(__file__).parent)
    code = CLIENT.format(tests=tests, path=service)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.startswith("ok 200"), out


@pytest.mark.anyio
async def test_handles_are_scoped_to_their_connection(service: str) -> None:
    async with nnrt.Runtime(connect=service) as a, nnrt.Runtime(connect=service) as b:
        compiled = await a.compile(add_model())
        (y,) = await compiled.execute([X])
        np.testing.assert_array_equal(y, EXPECTED)
        stolen_compilation = Compilation([compiled.ref], None, compiled.placement())
        stolen = nnrt.CompiledModel(b, b._core, compiled.model, stolen_compilation,
                                    compiled.priority,
                                    Shared((("stolen",),), compiled.model, stolen_compilation,
                                           None))
        with pytest.raises(nnrt.BadData, match="unknown handle"):
            await stolen.execute([X])


def _raw(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(10)
    return s


def _closed_by_peer(s: socket.socket) -> bool:
    reader = FrameReader()
    while True:
        try:
            n = reader.receive(s)
        except (ConnectionResetError, BrokenPipeError):
            return True
        if n == 0:
            return True
        # error responses may precede the close; keep reading


@pytest.mark.parametrize("payload", [
    b"\x05\x00\x00",                                   # truncated header then close
    (1 << 31).to_bytes(4, "little") + b"x",            # oversize length
    (3).to_bytes(4, "little") + b"\xc1\xc1\xc1",       # not msgpack
    encode_frame({"not": "a list"}),
    encode_frame([1, "hello"]),                        # wrong envelope length
    encode_frame([True, "hello", {"protocol": 1, "client": "x"}]),  # bool id
    encode_frame([1, "frobnicate", {}]),               # unknown verb
    encode_frame([1, "execute", {"handle": 1, "inputs": []}]),      # before hello
    encode_frame([1, "hello", {"protocol": "1", "client": "x"}]),   # wrong field type
    encode_frame([1, "hello", {"protocol": 1, "client": "x", "evil": 1}]),  # unknown field
])
def test_malformed_frames_close_only_that_connection(service: str, payload: bytes) -> None:
    with _raw(service) as bad, _raw(service) as good:
        send_frame(good, encode_frame([1, "hello", {"protocol": PROTOCOL_VERSION,
                                                     "client": "t"}]))
        bad.sendall(payload)
        if payload.startswith(b"\x05\x00\x00"):
            bad.shutdown(socket.SHUT_WR)
        assert _closed_by_peer(bad)
        send_frame(good, encode_frame([2, "ping", {}]))
        reader = FrameReader()
        answered: set[int] = set()
        while 2 not in answered:
            assert reader.receive(good) > 0
            answered.update(m[0] for m in reader.messages())


def test_wrong_protocol_version_is_refused(service: str) -> None:
    with _raw(service) as s:
        send_frame(s, encode_frame([1, "hello", {"protocol": 99, "client": "t"}]))
        reader = FrameReader()
        assert reader.receive(s) > 0
        (message,) = list(reader.messages())
        assert message[0] == 1 and message[1] == 4 and "protocol version 99" in message[2][
            "message"]


def test_service_survives_a_client_vanishing_mid_request(service: str) -> None:
    async def vanish() -> None:
        async with nnrt.Runtime(connect=service) as rt:
            compiled = await rt.compile(add_model())
            with anyio.move_on_after(0.001):
                await compiled.execute([X])

    anyio.run(vanish)

    async def use() -> None:
        async with nnrt.Runtime(connect=service) as rt:
            (y,) = await (await rt.compile(add_model())).execute([X])
            np.testing.assert_array_equal(y, EXPECTED)

    anyio.run(use)


def _children_of(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(p) for p in (task / "children").read_text().split())
    return found


def _exited(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # a zombie has exited (its reaper is not us)


def test_service_killed_clients_fail_fast_and_workers_exit(tmp_path: Path) -> None:
    path = str(tmp_path / "doomed.sock")
    proc = subprocess.Popen([sys.executable, "-m", "nnrt", "serve", "--socket", path,
                             "--driver", "reference", "--workers", "2"],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        workers = _children_of(proc.pid)
        assert len(workers) == 2

        async def client() -> None:
            async with nnrt.Runtime(connect=path) as rt:
                compiled = await rt.compile(add_model())
                await compiled.execute([X])
                proc.kill()
                proc.wait()
                start = time.monotonic()
                with pytest.raises(nnrt.UnavailableDevice) as lost:
                    with anyio.fail_after(5):
                        while True:  # the first call may race the kill; none may hang
                            await compiled.execute([X])
                assert time.monotonic() - start < 5
                # the message names who went away: the service, not "the worker"
                assert f"the nnrt service at {path}" in str(lost.value), lost.value

        anyio.run(client)
        deadline = time.monotonic() + 10
        while not all(_exited(pid) for pid in workers):
            assert time.monotonic() < deadline, "workers outlived their service"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
