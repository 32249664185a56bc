"""Shared mode, service side: ``nnrt serve --socket PATH`` runs worker pools for many clients.

:mod:`~nnrt.serve.server` accepts clients, :mod:`~nnrt.serve.session` holds one client's
handles, memories and device buffers, :mod:`~nnrt.serve.clients` says who may connect and how
much each may hold. Clients connect with ``nnrt.Runtime(connect=PATH)``
(:mod:`nnrt.runtime.backends.remote`).
"""
