"""The wire form of small executes whose tensors all travel inline, worked out once per model.

Most requests a service sends are small: each input an ndarray of its operand's exact dtype and
declared shape, owning its memory, a few KiB at most; each output of a statically known shape.
:class:`InlineCodec` precomputes their wire form per compiled model, so that such a request is
encoded with one identity/shape test per input and its reply decoded with one comparison per
output. Everything else (dict inputs, other dtypes or shapes, views of shared memory, large
tensors, caller output buffers) takes the runtime's general path, which checks and converts.
Replies are untrusted: an output that does not match the fast form is decoded by the general,
fully checked :func:`~nnrt.ipc.messages.decode_tensor`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import decode_tensor, dtype_name, encode_tensor
from nnrt.memory import find_memory
from nnrt.model.operand import dtype_of, is_scalar
from nnrt.model.values import narrowed_int32

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = ["INLINE_LIMIT", "InlineCodec", "inline_tensors"]

Array = np.ndarray[Any, Any]

#: Tensors up to this many bytes travel inline in the request: cheaper than an arena round trip.
INLINE_LIMIT = 64 << 10

_INT32 = np.dtype(np.int32)

#: ``where`` of the first outputs' error messages, made once.
_OUTPUT = tuple(f"output {j}" for j in range(16))


class _Input:
    """An input whose exact-dtype, declared-shape arrays encode without further checks."""

    __slots__ = ("dtype", "name", "shape", "wire_shape")

    def __init__(self, dtype: np.dtype[Any], name: str, shape: tuple[int, ...]) -> None:
        self.dtype = dtype
        self.name = name
        self.shape = shape
        #: The shape as sent (a list the packer reads; never mutated).
        self.wire_shape = list(shape)

    def wire(self, value: Any) -> list[Any] | None:
        """``value``'s wire tensor when it is an ndarray of the declared shape, not a view of
        shared memory (those go by reference), and of this input's dtype — or int64 for an
        int32 input, every value in range (the conversion
        :func:`~nnrt.model.values.coerce_input` makes) — else None."""
        if value.__class__ is not np.ndarray or value.shape != self.shape or (
                value.base is not None and find_memory(value) is not None):
            return None
        if value.dtype is not self.dtype:
            value = narrowed_int32(value) if self.dtype is _INT32 else None
            if value is None:
                return None  # another dtype, or out of range: the general path says which
        return [self.name, self.wire_shape, value.tobytes()]


class _Output:
    """An output's wire dtype and, when static, its shape and byte size (else (), -1)."""

    __slots__ = ("dtype", "head", "name", "nbytes", "shape", "where", "wire_shape")

    def __init__(self, j: int, dtype: np.dtype[Any], name: str,
                 shape: tuple[int, ...] | None) -> None:
        self.dtype = dtype
        self.name = name
        self.shape = shape or ()
        self.wire_shape = None if shape is None else list(shape)
        #: ``[name, shape]``: what a reply's tensor starts with in the fast form.
        self.head = [name, self.wire_shape]
        self.nbytes = -1 if shape is None else math.prod(shape) * dtype.itemsize
        self.where = _OUTPUT[j] if j < len(_OUTPUT) else f"output {j}"


class InlineCodec:
    """Encodes small all-inline execute requests of one model and decodes their replies."""

    __slots__ = ("_inputs", "_names", "_outputs", "arena_outputs", "static_shapes")

    def __init__(self, model: Model) -> None:
        operands = model.operands
        inferred = model.inferred_dims
        outputs = []
        for j, i in enumerate(model.outputs):
            dtype = dtype_of(operands[i].type)
            dims = inferred[i]
            static = tuple(dims) if dims and all(d > 0 for d in dims) else None
            outputs.append(_Output(j, dtype, _wire_name(dtype), static))
        self._outputs = tuple(outputs)
        #: Per output, its shape when statically known (every dim > 0), else None.
        self.static_shapes = tuple(o.shape if o.nbytes >= 0 else None for o in outputs)
        #: Whether some output is large enough to come back through the arena.
        self.arena_outputs = any(o.nbytes > INLINE_LIMIT for o in outputs)
        names = tuple(operands[i].name for i in model.inputs)
        #: The input names, when each input has a distinct one (dict inputs by name).
        self._names = names if all(names) and len(set(names)) == len(names) else None
        inputs = []
        for i in model.inputs:
            operand = operands[i]
            dims = operand.dims
            dtype = dtype_of(operand.type)
            if (is_scalar(operand.type) or not dims or not all(d > 0 for d in dims)
                    or math.prod(dims) * dtype.itemsize > INLINE_LIMIT):
                break
            inputs.append(_Input(dtype, _wire_name(dtype), tuple(dims)))
        else:
            #: Per input, its fast form; None when some input can never take the fast path.
            self._inputs: tuple[_Input, ...] | None = (
                None if self.arena_outputs else tuple(inputs))
            return
        self._inputs = None

    def encode(self, inputs: Sequence[Any] | Mapping[Any, Any]) -> list[list[Any]] | None:
        """The wire tensors of ``inputs`` (a list in model input order, or a dict by input
        name) when each is an ndarray owning its memory, of its input's declared shape and
        exact dtype (or in-range int64 for int32: :meth:`_Input.wire`); else None."""
        specs = self._inputs
        if specs is None or len(inputs) != len(specs):
            return None
        values: Sequence[Any]
        if isinstance(inputs, Mapping):
            names = self._names
            if names is None:
                return None
            try:
                values = [inputs[name] for name in names]
            except KeyError:
                return None  # keyed by position, or a name missing: the general path
        else:
            values = inputs
        tensors = []
        for spec, value in zip(specs, values):  # noqa: B905 - lengths compared above
            if (value.__class__ is np.ndarray and value.base is None
                    and value.dtype is spec.dtype and value.shape == spec.shape):
                tensors.append([spec.name, spec.wire_shape, value.tobytes()])
                continue
            tensor = spec.wire(value)
            if tensor is None:
                return None
            tensors.append(tensor)
        return tensors

    def decode(self, reply: dict[str, Any]) -> list[Array]:
        """The outputs of an execute reply whose outputs all came inline (untrusted: checked);
        each result owns its memory."""
        raw = reply.get("outputs")
        specs = self._outputs
        if raw.__class__ is not list or len(raw) != len(specs):
            raise ProtocolError("execute reply has the wrong number of outputs")
        results = []
        for spec, value in zip(specs, raw):  # noqa: B905 - lengths compared above
            if (value.__class__ is list and len(value) == 3 and value[:2] == spec.head
                    and value[2].__class__ is bytes
                    and len(value[2]) == spec.nbytes):  # the declared static shape
                results.append(np.ndarray(spec.shape, spec.dtype, bytearray(value[2])))
                continue
            if value.__class__ is not list or not value or value[0] != spec.name:
                raise ProtocolError(f"{spec.where}: expected a {spec.name} tensor")
            results.append(decode_tensor(value, spec.where, writable=True))
        return results


def inline_tensors(arrays: list[Array]) -> list[Any] | None:
    """The wire form of checked inputs that all travel inline — small, and owning their
    memory (an owner is never a view of shared memory) — or None if one does not."""
    tensors = []
    for array in arrays:
        if array.base is not None or array.nbytes > INLINE_LIMIT:
            return None
        tensors.append(encode_tensor(array))
    return tensors


def _wire_name(dtype: np.dtype[Any]) -> str:
    return dtype_name(dtype) or dtype.name
