"""The backend contract: what the runtime needs from worker pools, in-process or behind a service.

:class:`Backend` is implemented by :class:`~nnrt.runtime.backends.embedded.EmbeddedBackend`
(worker pools of this process) and :class:`~nnrt.runtime.backends.remote.RemoteBackend` (the
pools of an ``nnrt serve`` service). A backend names drivers "devices", as NNAPI does; the
driver-managed buffers of memory domains are "buffers" (``allocate`` / ``buffer_request``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nnrt.hal.info import DriverInfo
    from nnrt.memory.source import MemorySource
    from nnrt.runtime.compile.caching import StepCache
    from nnrt.runtime.stats import RuntimeStatistics

__all__ = ["Backend", "CompiledRef", "execute_body"]

#: How a backend knows a prepared model: (key number, prepare body, constant memories, cache).
PreparedKey = tuple[int, dict[str, Any], tuple["MemorySource", ...], "StepCache | None"]


@dataclass
class CompiledRef:
    """What a backend returns for a compiled model: the driver and the backend's model key."""

    driver: str
    key: PreparedKey
    released: bool = False
    #: How the driver got the model: "compiled" (prepare) or "aot" (bytecode from a file).
    source: str = "compiled"


class Backend(Protocol):
    """What the runtime needs from the embedded pools or from a shared service."""

    async def support(self, driver: str, wire_model: dict[str, Any], priority: int,
                      deadline: float | None, memories: Sequence[MemorySource] = ()
                      ) -> dict[str, Any]: ...

    async def compile(self, wire_model: dict[str, Any], preference: int, priority: int,
                      devices: Sequence[str] | None, deadline: float | None,
                      memories: Sequence[MemorySource] = (), *,
                      compiled: list[Any] | None = None,
                      cache: StepCache | None = None, name: str | None = None) -> CompiledRef: ...

    async def execute(self, ref: CompiledRef, inputs: list[Any], output_sizes: list[int] | None,
                      priority: int, deadline: float | None, *,
                      outputs: list[Any] | None = None,
                      memories: Collection[MemorySource] = (),
                      buffer: Any = None) -> dict[str, Any]: ...

    async def release(self, ref: CompiledRef) -> None: ...

    async def allocate(self, driver: str, dims: tuple[int, ...] | None,
                       roles: Sequence[tuple[CompiledRef, str, int, float]]) -> Any: ...

    async def buffer_request(self, buffer: Any, verb: str, body: dict[str, Any],
                             memories: Collection[MemorySource] = ()) -> dict[str, Any]: ...

    def unmap(self, memory_id: int) -> None: ...

    def count_fallback(self, driver: str) -> None: ...

    def statistics(self) -> RuntimeStatistics: ...

    async def refresh_statistics(self) -> RuntimeStatistics: ...

    def devices(self) -> list[DriverInfo]: ...

    def device_info(self, device: str) -> Any: ...

    def device_names(self) -> list[str]: ...

    def close(self) -> None: ...


def execute_body(handle: int, inputs: list[Any], priority: int, deadline: float | None,
                 output_sizes: list[int] | None, outputs: list[Any] | None) -> dict[str, Any]:
    """The body of an ``execute`` request (see ``docs/protocol.md``): optional fields only
    when given, so the common request stays small."""
    body: dict[str, Any] = {"handle": handle, "inputs": inputs, "priority": priority}
    if deadline is not None:
        body["deadline"] = deadline
    if output_sizes is not None:
        body["output_sizes"] = output_sizes
    if outputs is not None:
        body["outputs"] = outputs
    return body
