"""``RequestClient.send_now`` / ``abandon`` (the service's forwarding at arrival) over real
socketpairs: a reply reaches its handler from the reader's callback, and a peer that is gone
when a request is sent or abandoned is never an exception in the sender's caller (the
service's reader of its client: raising there closed that client's connection)."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import pytest

from nnrt.ipc.framing import FrameReader, encode_frame
from nnrt.ipc.messages import Status
from nnrt.runtime.backends.channel import ReplyHandler, RequestClient
from nnrt.runtime.backends.framed import FramedSocket

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Recorded(ReplyHandler):
    def __init__(self) -> None:
        super().__init__()
        self.replies: list[tuple[int, dict[str, Any]]] = []

    def on_reply(self, status: int, body: dict[str, Any]) -> None:
        self.replies.append((status, body))


async def started(tg: anyio.abc.TaskGroup) -> tuple[RequestClient, socket.socket]:
    ours, peer = socket.socketpair()
    peer.setblocking(False)
    client = RequestClient(FramedSocket(ours))
    tg.start_soon(client.run)
    while client.send_now("ping", {}, Recorded()) is None:  # its reader runs from now on
        await anyio.sleep(0.001)
    return client, peer


async def test_a_reply_reaches_its_handler() -> None:
    async with anyio.create_task_group() as tg:
        client, peer = await started(tg)
        handler = Recorded()
        request_id = client.send_now("execute", {"handle": 1}, handler)
        assert request_id is not None
        reader = FrameReader()
        ids: list[int] = []
        with anyio.fail_after(5):
            while request_id not in ids:  # the client's sends leave from its event loop
                await anyio.wait_readable(peer)
                assert reader.receive(peer) > 0
                ids += [m[0] for m in reader.messages()]
        peer.send(encode_frame([request_id, Status.OK, {"outputs": []}]))
        with anyio.fail_after(5):
            while not handler.replies:
                await anyio.sleep(0.001)
        assert handler.replies == [(Status.OK, {"outputs": []})]
        reader.close()
        client.close()
        peer.close()


async def test_a_peer_gone_is_never_raised_to_the_sender() -> None:
    async with anyio.create_task_group() as tg:
        client, peer = await started(tg)
        sent = client.send_now("execute", {"handle": 1}, Recorded())
        assert sent is not None
        await anyio.sleep(0.01)  # sent: nothing waits in the client's outbox
        peer.close()  # the worker is killed; no await from here: its end not read yet
        assert not lost(client)  # so the send below meets the broken socket itself
        assert client.send_now("execute", {"handle": 1}, Recorded()) is None  # EPIPE at once
        assert client.abandon(sent)  # its cancel meets EPIPE too: no exception
        assert not client.abandon(sent)  # given up already
        with anyio.fail_after(5):
            while not lost(client):
                await anyio.sleep(0.001)
        assert client.send_now("execute", {"handle": 1}, Recorded()) is None
        client.close()


def lost(client: RequestClient) -> bool:
    return client.lost is not None
