"""One execute request off the inline fast path: arguments bound once, each tensor sent its way.

As NNAPI's ExecutionBuilder, an :class:`Execution` holds one request's arguments: it checks the
device memories against their roles (the worker checks again), binds the inputs with the
step's :class:`~nnrt.model.binding.InputBinder`, picks how each tensor travels (inline,
shared memory by reference, the runtime's arena, a device memory's token: see
:mod:`nnrt.runtime.transfer`), sends the request and reads the reply into the caller's buffers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.errors import BadData, OpFailed
from nnrt.memory import TensorRef
from nnrt.runtime.buffers import DeviceMemory
from nnrt.runtime.core import deadline_after
from nnrt.runtime.inline import inline_tensors
from nnrt.runtime.transfer import Transfer, deliver

if TYPE_CHECKING:
    from nnrt.model.binding import Inputs
    from nnrt.runtime.backends.base import Backend
    from nnrt.runtime.step import Step

__all__ = ["Execution"]

Array = np.ndarray[Any, Any]
_DTYPE_NAMES = {np.dtype(n): n for n in ("float32", "float16", "int32", "uint32", "uint8",
                                          "int8", "int16", "uint16", "bool")}
#: Capacity reported for outputs that have a shared-memory buffer (checked by reference).
_UNLIMITED = 2**62


class Execution:
    """One request of a :class:`~nnrt.runtime.step.Step`, from its arguments to its results."""

    __slots__ = ("backend", "fallbacks", "inputs", "outputs", "step")

    def __init__(self, step: Step, backend: Backend, inputs: Inputs,
                 outputs: Sequence[Any] | None) -> None:
        self.step = step
        self.backend = backend
        self.inputs = inputs
        self.outputs = outputs
        #: Outputs going to a device memory's shared-memory fallback, by output index.
        self.fallbacks: dict[int, DeviceMemory] = {}

    async def run(self, timeout: float | None, copy: bool) -> list[Array]:
        """Send the request and return the outputs (views of the caller's buffers where given)."""
        step = self.step
        inputs, buffers = _scan(self.inputs, self.outputs)
        outputs = self.outputs
        if buffers:
            inputs, outputs = self._buffer_args(inputs, outputs)
        arrays: list[Any] = step.binder.bind(inputs, keep=DeviceMemory if buffers else None)
        if outputs is None and not buffers and not step.codec.arena_outputs:
            tensors = inline_tensors(arrays)
            if tensors is not None:  # small, but not in the exact form the codec expects
                reply = await self.backend.execute(step.ref, tensors, None, step.priority,
                                                   deadline_after(timeout))
                return step.codec.decode(reply)
        transfer = Transfer(step.core.arena)
        try:
            tensors = [transfer.buffer(arr.handle) if arr.__class__ is DeviceMemory
                       else transfer.input(arr, _dtype_name(arr)) for arr in arrays]
            refs, sizes = (None, None) if outputs is None and not step.codec.arena_outputs else (
                self._outputs(transfer, outputs))
            memories = list(transfer.memories.values()) if transfer.memories else ()
            for memory in memories:
                step.core.memory.watch(memory)
            reply = await self.backend.execute(step.ref, tensors, sizes, step.priority,
                                               deadline_after(timeout), outputs=refs,
                                               memories=memories, buffer=transfer.buffer_handle)
            results = transfer.decode(reply, step.out_names, not copy,
                                      None if outputs is None else list(outputs))
        finally:
            transfer.close()
        for j, device_memory in self.fallbacks.items():  # written into its shared memory
            device_memory.dims, device_memory.initialized = results[j].shape, True
            results[j] = device_memory  # type: ignore[call-overload]
        if outputs is not None:  # plain buffers (not shared memory) receive a copy
            return [deliver(result, target, f"output {j}")
                    if isinstance(target, np.ndarray) and not transfer.in_place(j) else result
                    for j, (target, result) in enumerate(zip(outputs, results, strict=True))]
        return results

    def _buffer_args(self, inputs: Inputs, outputs: Any) -> tuple[Any, Any]:
        """Check the device memories of the request against their roles (the worker checks
        too) and stand in shared-memory fallbacks for their tensors."""
        step = self.step
        key = step.key
        ordered = step.binder.order(inputs)
        seen_in: set[int] = set()
        for j, value in enumerate(ordered):
            if isinstance(value, DeviceMemory):
                value.require_live()
                if (key, "input", j) not in value.roles:
                    raise BadData(f"input {j}: this device memory was not allocated for input "
                                  f"{j} of this compiled model")
                if value.fallback is not None:
                    if not value.initialized:
                        raise OpFailed(f"input {j}: the device memory is uninitialised")
                    ordered[j] = value.as_ref().ndarray()
                seen_in.add(id(value))
        if outputs is not None:
            outputs = list(outputs)
            seen_out: set[int] = set()
            for j, value in enumerate(outputs):
                if not isinstance(value, DeviceMemory):
                    continue
                value.require_live()
                if (key, "output", j) not in value.roles:
                    raise BadData(f"output {j}: this device memory was not allocated for "
                                  f"output {j} of this compiled model")
                if id(value) in seen_in or id(value) in seen_out:
                    raise BadData(f"output {j}: a device memory may not be both an input and "
                                  "an output, nor two outputs, of one execution")
                seen_out.add(id(value))
                if value.fallback is not None:  # (a fallback always has known dims)
                    self.fallbacks[j] = value
                    outputs[j] = TensorRef(value.fallback, 0, value.spec.dims or (),
                                           value.dtype)
        return ordered, outputs

    def _outputs(self, transfer: Transfer, outputs: Any
                 ) -> tuple[list[Any] | None, list[int] | None]:
        """The request's output references and inline buffer sizes."""
        step = self.step
        count = len(step.out_dtypes)
        if outputs is not None and (not isinstance(outputs, list | tuple)
                                    or len(outputs) != count):
            raise BadData(f"outputs must be a list of {count} buffers (None for an output to "
                          "return)")
        refs: list[list[Any] | None] = []
        sizes = []
        for j in range(count):
            target = None if outputs is None else outputs[j]
            if target.__class__ is DeviceMemory:
                refs.append(transfer.buffer_output(target.handle, target))
                sizes.append(_UNLIMITED)
                continue
            if target is not None and not isinstance(target, np.ndarray | TensorRef):
                raise BadData(f"output {j}: expected an ndarray or a TensorRef, got "
                              f"{type(target).__name__}")
            if isinstance(target, np.ndarray):
                expected = step.out_dtypes[j]
                if target.dtype != expected:
                    raise BadData(f"output {j}: expected an ndarray of {expected}")
                if not target.flags.c_contiguous or not target.flags.writeable:
                    raise BadData(f"output {j}: the buffer must be C-contiguous and writeable")
            refs.append(transfer.output_ref(j, target, step.out_dtypes[j], step.out_names[j],
                                            step.codec.static_shapes[j]))
            sizes.append(target.nbytes if isinstance(target, np.ndarray) else _UNLIMITED)
        inline_buffers = outputs is not None and any(
            isinstance(t, np.ndarray) and r is None for t, r in zip(outputs, refs, strict=True))
        return (refs if any(r is not None for r in refs) else None), (
            sizes if inline_buffers else None)


def _scan(inputs: Inputs, outputs: Any) -> tuple[Inputs, bool]:
    """One pass over a request's arguments: ``inputs`` with every TensorRef replaced by its
    ndarray view (recognised as shared memory), and whether any argument is a device memory."""
    values = list(inputs.values()) if isinstance(inputs, Mapping) else inputs
    refs = buffers = False
    for value in values:
        kind = value.__class__
        refs = refs or kind is TensorRef
        buffers = buffers or kind is DeviceMemory
    if refs:
        if isinstance(inputs, Mapping):
            inputs = {k: v.ndarray() if isinstance(v, TensorRef) else v
                      for k, v in inputs.items()}
        else:
            inputs = [v.ndarray() if isinstance(v, TensorRef) else v for v in inputs]
    buffers = buffers or (outputs is not None and any(isinstance(v, DeviceMemory)
                                                      for v in outputs))
    return inputs, buffers


def _dtype_name(array: Array) -> str:
    return _DTYPE_NAMES.get(array.dtype) or array.dtype.name
