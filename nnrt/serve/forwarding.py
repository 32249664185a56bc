"""Executes the service forwards at arrival (``Session._execute_now``): each one's
:class:`Forwarded`, answered when its worker replies, its connection is lost, the client
cancels it or its deadline passes; and the bound on replies a client leaves unread."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from nnrt.ipc.messages import Status
from nnrt.runtime.backends.channel import ReplyHandler
from nnrt.runtime.backends.slot import WorkerSlot
from nnrt.serve.metrics import ForwardedModel

if TYPE_CHECKING:
    from nnrt.serve.session import Session

__all__ = ["REPLY_BACKLOG", "Forwarded"]

#: Bytes of replies a session lets wait for its client to read before it stops forwarding
#: executes at arrival and its replies wait for the client: a client that does not read its
#: replies is then paused (``Session._backpressure``).
REPLY_BACKLOG = 1 << 20


class Forwarded(ReplyHandler):
    """An execute forwarded at arrival: answered when its worker replies, its connection is
    lost, the client cancels it or its deadline passes."""

    __slots__ = ("measured", "request_id", "session", "slot", "start", "timer",
                 "worker_request")

    def __init__(self, session: Session, request_id: int, measured: ForwardedModel) -> None:
        super().__init__()
        self.session = session
        self.request_id = request_id
        self.measured = measured
        self.start = time.monotonic()
        #: The worker slot holding the request, and its id on that worker's connection.
        self.slot: WorkerSlot | None = None
        self.worker_request = 0
        #: What answers it at its deadline, if it has one.
        self.timer: asyncio.TimerHandle | None = None

    def on_reply(self, status: int, body: dict[str, Any]) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.session.forwarded_done(self, status, body)

    def cancel(self) -> None:
        """The client cancelled it (or left): the worker is told, the client answered."""
        self._give_up({"message": "cancelled"})

    def expire(self) -> None:
        """Its deadline passed before the worker answered: the worker is told, the client
        answered as by the task path."""
        self._give_up({"message": "the execution did not finish before its deadline"})

    def _give_up(self, body: dict[str, Any]) -> None:
        slot = self.slot
        if self.answered or slot is None or slot.client is None:
            return
        if slot.client.abandon(self.worker_request):
            self.set_result((Status.MISSED_DEADLINE, body))
