"""Binding execution inputs to a model's input operands: count, order, dtype, range and shape.

:class:`InputBinder` is what every executor checks a request with — the reference interpreter,
the drivers' base class and the runtime's client side — so a bad input gets the same message,
naming the input and its operand, wherever it is caught.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.errors import BadData
from nnrt.model.operand import dtype_of, is_scalar
from nnrt.model.values import coerce_input, dims_compatible, narrowed_int32

if TYPE_CHECKING:
    from nnrt.model.model import Model
    from nnrt.model.operand import Operand

__all__ = ["InputBinder", "Inputs"]

#: Execution inputs: a sequence in model input order, or a mapping by position or input name
#: (``dict[str, ndarray]`` included: a mapping's key type is invariant, hence three forms).
Inputs = Sequence[Any] | Mapping[str, Any] | Mapping[int, Any] | Mapping[int | str, Any]
Array = np.ndarray[Any, Any]

_INT32 = np.dtype(np.int32)

#: The (class, dtype, shape) of a value: an exact input is bound in one comparison of these.
_FORM = operator.attrgetter("__class__", "dtype", "shape")


class _InputSlot:
    """What one model input must look like, with its error-message prefix precomputed."""

    __slots__ = ("dims", "dtype", "exact", "index", "operand", "position", "tensor")

    def __init__(self, position: int, index: int, operand: Operand) -> None:
        self.position = position
        self.index = index
        self.operand = operand
        self.dtype = dtype_of(operand.type)
        self.dims = operand.dims
        self.tensor = not is_scalar(operand.type)
        #: Whether an ndarray of exactly ``dtype`` and shape ``dims`` needs no further check.
        self.exact = not is_scalar(operand.type) and bool(self.dims) and all(
            d > 0 for d in self.dims)

    @property
    def where(self) -> str:
        """``input 'x' (input 0, operand 3, TENSOR_FLOAT32[1, 4])`` (``input 0 (operand 3,
        ...)`` when unnamed): the prefix of error messages, naming the input as the caller
        does."""
        if self.operand.name:
            return (f"input {self.operand.name!r} (input {self.position}, operand {self.index}, "
                    f"{self.operand.describe()})")
        return f"input {self.position} (operand {self.index}, {self.operand.describe()})"

    def check(self, value: Any) -> Array:
        """The general check (:meth:`InputBinder.bind` passes exact arrays without a call)."""
        if self.tensor and value.__class__ is np.ndarray and value.dtype == self.dtype and (
                value.ndim and dims_compatible(self.dims, value.shape)):
            return value  # what coerce_input returns for it, without building messages
        if value is None:
            raise BadData(f"{self.where}: no value given")
        try:  # the message's prefix is built only for a message
            arr = coerce_input(self.operand, value, "")
        except BadData as exc:
            raise BadData(f"{self.where}{exc}") from None
        if not dims_compatible(self.dims, arr.shape):
            raise BadData(f"{self.where}: shape {arr.shape} does not match the declared dims"
                          f"{_mismatch(self.dims, arr.shape)}")
        return arr


class InputBinder:
    """Checks execution inputs against a model's input operands (count, dtype, range, shape)."""

    __slots__ = ("_forms", "_model", "_names", "_slots")

    def __init__(self, model: Model) -> None:
        self._model = model
        operands = model.operands
        self._slots = tuple(_InputSlot(p, i, operands[i]) for p, i in enumerate(model.inputs))
        names = tuple(operands[i].name for i in model.inputs)
        #: The input names in model order, when each input has a distinct one: a dict keyed by
        #: exactly these is ordered in one pass.
        self._names = names if all(names) and len(set(names)) == len(names) else None
        #: When every input has a fully static shape: per input, the (class, dtype, shape) of
        #: an array that needs no check — a list of inputs all such is bound in one comparison.
        self._forms = [(np.ndarray, slot.dtype, tuple(slot.dims)) for slot in self._slots
                       ] if all(slot.exact for slot in self._slots) else None

    def relaxed(self, axes: Sequence[int | None]) -> InputBinder:
        """This binder with the dim ``axes[p]`` of input ``p`` accepted at any size (None:
        as declared): what a request to a batched model may give (its batch axes)."""
        binder = InputBinder(self._model)
        for slot, axis in zip(binder._slots, axes, strict=True):
            if axis is not None and axis < len(slot.dims):
                slot.dims = (*slot.dims[:axis], 0, *slot.dims[axis + 1:])
                slot.exact = False
        binder._forms = None
        return binder

    def bind(self, inputs: Inputs, keep: type | None = None) -> list[Any]:
        """The checked input arrays in model input order, or ``BadData`` saying what is wrong.

        ``inputs`` is a sequence in model input order, or a mapping keyed by input position or
        input operand name. Arrays of the exact dtype are used as given (not copied). Values
        that are instances of ``keep`` are passed through unchecked (someone else checks them:
        the runtime's device memories).
        """
        forms = self._forms
        if forms is not None and inputs.__class__ is list:
            try:
                if list(map(_FORM, inputs)) == forms:  # exact ndarrays, in the right count
                    return list(inputs)
            except Exception:  # not arrays (no dtype, a property that raises...): each is
                pass  # checked below, by the general path that names the culprit
        slots = self._slots
        if inputs.__class__ is list:
            ordered = inputs
        elif isinstance(inputs, Mapping):
            ordered = self._order(inputs)
        else:
            ordered = list(inputs)
        if len(ordered) != len(slots):
            raise BadData(f"expected {len(slots)} inputs{self._listed()}, got {len(ordered)}")
        checked = []
        for slot, value in zip(slots, ordered, strict=True):
            if (slot.exact and value.__class__ is np.ndarray and (
                    value.dtype is slot.dtype or value.dtype == slot.dtype)
                    and value.shape == slot.dims) or (keep is not None and isinstance(value, keep)):
                checked.append(value)  # what coerce_value returns for it, without its checks
            else:  # int64 data for an int32 input (io_dtype) in one range test, else checked
                narrowed = narrowed_int32(value) if slot.dtype is _INT32 and slot.tensor else None
                checked.append(narrowed if narrowed is not None and narrowed.ndim
                               and dims_compatible(slot.dims, narrowed.shape)
                               else slot.check(value))
        return checked

    def order(self, inputs: Inputs) -> list[Any]:
        """``inputs`` (a sequence or a mapping by position or name) as a list in model order,
        unchecked (``BadData`` for a wrong count, unknown names or missing inputs)."""
        if inputs.__class__ is not list and isinstance(inputs, Mapping):
            return self._order(inputs)
        ordered = list(inputs)
        if len(ordered) != len(self._slots):
            raise BadData(f"expected {len(self._slots)} inputs{self._listed()}, got "
                          f"{len(ordered)}")
        return ordered

    def _listed(self) -> str:
        """`` (x, state, sr)``: the inputs' names in order, when every input has one."""
        names = [slot.operand.name or "" for slot in self._slots]
        return f" ({', '.join(names)})" if names and all(names) else ""

    def _label(self, position: int) -> str:
        name = self._slots[position].operand.name
        return repr(name) if name else str(position)

    def _order(self, inputs: Mapping[Any, Any]) -> list[Any]:
        count = len(self._slots)
        names = self._names
        if names is not None and len(inputs) == count:
            try:
                return [inputs[name] for name in names]  # keyed by exactly the names
            except KeyError:
                pass  # by position, or a name missing or unknown: said below
        by_position: dict[int, Any] = {}
        for key, value in inputs.items():
            position = self._model.find_input(key) if isinstance(key, str) else int(key)
            if not 0 <= position < count:
                raise BadData(f"input {key!r} is out of range (the model has {count} inputs)")
            by_position[position] = value
        missing = [p for p in range(count) if p not in by_position]
        if missing:
            which = ", ".join(self._label(p) for p in missing)
            raise BadData(f"input{'s' if len(missing) > 1 else ''} {which} "
                          f"{'are' if len(missing) > 1 else 'is'} missing (the model's inputs: "
                          f"{', '.join(self._label(p) for p in range(count))})")
        return [by_position[p] for p in range(count)]


def _mismatch(dims: tuple[int, ...], shape: tuple[int, ...]) -> str:
    """`` (dim 1 is 5, the model needs 4)``: the first dim that does not fit, if ranks agree."""
    if len(dims) != len(shape):
        return f" (rank {len(shape)}, the model needs rank {len(dims)})" if dims else ""
    for axis, (declared, given) in enumerate(zip(dims, shape, strict=True)):
        if declared and declared != given:
            return f" (dim {axis} is {given}, the model needs {declared})"
    return ""


def widened_outputs(model: Model) -> tuple[tuple[int, np.dtype[Any]], ...]:
    """``(position, dtype)`` of each output callers get in another dtype than its operand's
    (an ``io_dtype``: int64 held as int32 inside)."""
    return tuple((position, np.dtype(model.operands[index].io_dtype))
                 for position, index in enumerate(model.outputs)
                 if model.operands[index].io_dtype)


def widen(results: list[Array], widened: tuple[tuple[int, np.dtype[Any]], ...]) -> list[Array]:
    """``results`` with the outputs of ``widened`` converted to their callers' dtype."""
    for position, dtype in widened:
        results[position] = results[position].astype(dtype)
    return results
