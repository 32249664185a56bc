"""Where the runtime's requests go: the :class:`~nnrt.runtime.backends.base.Backend` contract.

:mod:`~nnrt.runtime.backends.embedded` runs worker pools in this process
(:mod:`~nnrt.runtime.backends.pool`, :mod:`~nnrt.runtime.backends.steering`,
:mod:`~nnrt.runtime.backends.process`); :mod:`~nnrt.runtime.backends.remote` talks to an
``nnrt serve`` service. Both speak the framed protocol through
:mod:`~nnrt.runtime.backends.channel` and share memories once per connection
(:mod:`~nnrt.runtime.backends.sharing`).
"""
