"""Isolation in shared mode (real processes): a client cannot reach another client's objects,
and other users cannot reach the service.

A victim process holds a compiled model, a shared-memory pool and a device buffer; this process,
on its own connection, names them by the victim's ids (handles, pool ids and tokens are small
integers, easy to guess): every use is ``BadData`` "unknown …", nothing is released, and its
cancels do not reach the victim's requests. The socket is 0600; a client of another uid gets
``EACCES``, and if the socket is opened up by mistake the service refuses it by ``SO_PEERCRED``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from models import add_model
from service_client import RawClient
from test_overload import Service, limited_service

from nnrt.ipc.framing import encode_frame
from nnrt.ipc.messages import PROTOCOL_VERSION, Status, encode_tensor
from nnrt.model.wire import model_to_wire

TESTS = str(Path(__file__).parent)

VICTIM = textwrap.dedent("""
    import json, sys, anyio, numpy as np, nnrt
    sys.path.insert(0, {tests!r})
    from models import slow_input, slow_model
    from test_device_memory import state_model

    async def main():
        async with nnrt.Runtime(connect={path!r}) as rt:
            step = await rt.compile(state_model())
            slow = await rt.compile(slow_model(20, 512))
            buffer = await rt.allocate(nnrt.BufferDesc(), [nnrt.BufferRole(step, 1)])
            await buffer.copy_from(np.full(4, 5, np.float32))
            with rt.memory.create(4096) as memory:
                x = memory.ndarray(np.float32, (4,))
                x[:] = 1
                (y,) = await step.execute([x, buffer])  # shares the pool with the service
                assert np.array_equal(y, np.full(4, 6)), y
                print(json.dumps({{"handle": step.ref.key[0], "pool": memory.id,
                                  "token": buffer.handle}}), flush=True)
                assert sys.stdin.readline() == "slow\\n"
                async with anyio.create_task_group() as tg:
                    async def run_slow():
                        (z,) = await slow.execute([np.ones((1, 512, 512), np.float32)])
                        assert np.allclose(z, 0.5 ** 20, rtol=1e-5, atol=0), "wrong"
                    tg.start_soon(run_slow)
                    await anyio.sleep(0.05)
                    print("running", flush=True)
                assert sys.stdin.readline() == "check\\n"
                x[:] = 2  # everything still works for its owner
                (y,) = await step.execute([x, buffer])
                assert np.array_equal(y, np.full(4, 7)), y
                assert np.array_equal(await buffer.copy_to(), np.full(4, 5)), "buffer changed"
                await buffer.free()
                del x, y
            print("ok", flush=True)

    anyio.run(main)
""")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    with limited_service(str(tmp_path)) as running:
        yield running


def _expect(client: RawClient, verb: str, body: dict[str, Any], message: str) -> None:
    status, reply = client.call(verb, body)
    assert status == Status.BAD_DATA and message in reply["message"], (verb, status, reply)


def test_a_client_cannot_reach_another_clients_objects(service: Service) -> None:
    victim = subprocess.Popen([sys.executable, "-c", VICTIM.format(tests=TESTS,
                                                                   path=service.path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert victim.stdin is not None and victim.stdout is not None
    try:
        ids = json.loads(victim.stdout.readline())
        handle, pool, token = ids["handle"], ids["pool"], ids["token"]
        with RawClient.connect(service.path) as attacker:
            attacker.hello()
            x = encode_tensor(np.ones(4, np.float32))
            _expect(attacker, "execute", {"handle": handle, "inputs": [x, x]}, "unknown handle")
            _expect(attacker, "release", {"handle": handle}, "unknown handle")
            _expect(attacker, "allocate", {"roles": [[handle, "input", 1, 1.0]]},
                    "unknown handle")
            status, mine = attacker.call("compile", {"model": model_to_wire(add_model())})
            assert status == Status.OK
            pooled = ["float32", [1, 4], pool, 0, 16]
            _expect(attacker, "execute", {"handle": mine["handle"], "inputs": [pooled]},
                    "unknown pool")
            _expect(attacker, "unmap", {"pool": pool}, "unknown pool")
            _expect(attacker, "copy_to", {"token": token, "target": None},
                    "unknown device memory token")
            _expect(attacker, "copy_from", {"token": token, "source": x},
                    "unknown device memory token")
            _expect(attacker, "free", {"token": token}, "unknown device memory token")
            _expect(attacker, "execute", {"handle": mine["handle"],
                                          "inputs": [["device", token]]},
                    "unknown device memory token")
            victim.stdin.write("slow\n")
            victim.stdin.flush()
            assert victim.stdout.readline() == "running\n"
            for target in range(1, 200):  # the victim's request ids are small integers too
                attacker.send("cancel", {"target": target})
            assert attacker.call("ping")[0] == Status.OK  # cancels of unknown ids: ignored
        victim.stdin.write("check\n")
        victim.stdin.flush()
        assert victim.stdout.readline() == "ok\n"
        assert victim.wait(30) == 0
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.wait()
        victim.stdin.close()
        victim.stdout.close()


OTHER_USER = textwrap.dedent("""
    import errno, os, socket, sys
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(sys.argv[1])
    except OSError as exc:
        print(errno.errorcode[exc.errno])
        sys.exit()
    try:  # a well-formed hello frame: [1, "hello", {"protocol": 1, "client": "x"}]
        s.sendall(bytes.fromhex(sys.argv[2]))
        print("answered" if s.recv(4096) else "closed")
    except (ConnectionResetError, BrokenPipeError):  # closed before or during the send
        print("closed")
""")


def _as_nobody(path: str, frame: bytes) -> str:
    done = subprocess.run(["/usr/bin/python3", "-I", "-c", OTHER_USER, path, frame.hex()],
                          user=65534, group=65534, capture_output=True, text=True, timeout=30,
                          check=True)
    return done.stdout.strip()


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"),
                    reason="needs root (to run a client as another uid) and /usr/bin/python3")
def test_other_users_are_refused() -> None:
    hello = encode_frame([1, "hello", {"protocol": PROTOCOL_VERSION, "client": "x"}])
    directory = tempfile.mkdtemp(prefix="nnrt-isolation-", dir="/tmp")
    try:
        os.chmod(directory, 0o755)  # only the socket's own mode stands in the way
        with limited_service(directory) as service:
            assert stat.S_IMODE(os.stat(service.path).st_mode) == 0o600
            assert _as_nobody(service.path, hello) == "EACCES"
            os.chmod(service.path, 0o666)  # opened up by mistake: SO_PEERCRED still refuses
            assert _as_nobody(service.path, hello) == "closed"
            with RawClient.connect(service.path) as owner:  # root / the service's user: served
                assert owner.hello()["protocol"] == PROTOCOL_VERSION
            assert "uid 65534: only uid" in service.log()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
