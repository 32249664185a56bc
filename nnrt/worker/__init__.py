"""The driver worker process: ``python -m nnrt.worker`` serves one driver over a Unix socket.

:mod:`~nnrt.worker.service` runs the event loop of one process (connections, the listener, the
load meter), :mod:`~nnrt.worker.requests` answers each request verb, and
:mod:`~nnrt.worker.executor` runs queued executes (:mod:`~nnrt.worker.jobs`) one at a time. The
runtime's client side never imports this package: what both sides share is in :mod:`nnrt.ipc`
(the wire, the poll window) and :mod:`nnrt.memory` (mapped shared memories).
"""
