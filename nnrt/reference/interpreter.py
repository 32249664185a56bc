"""The reference interpreter: runs a finished model in-process on the numpy kernels.

:class:`ExecutionPlan` is a finished model made ready to run many times: per operation, in run
order, its definition, operand indices, output dtypes and declared dims, and the constants it
reads, all computed once. ``run`` builds a plan per call; the reference driver keeps one per
prepared model, so both share one execution path (same results, same errors).

Given typed output destinations (the HAL's ``ExecutionControl.outputs``), the operation that
produces a model output may compute it straight into the caller's memory: its context's
``out(j)`` offers the destination when the prepared shape and dtype match exactly and writing
there clobbers no value still needed (checked against the values live after the operation and,
unless the kernel handles overlap like a ufunc, the operation's own inputs).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.errors import BadData, BadState, NnrtError, OpFailed
from nnrt.model.binding import InputBinder, Inputs, widen, widened_outputs
from nnrt.model.operand import dtype_of, is_scalar
from nnrt.model.types import OperandType
from nnrt.model.values import dims_compatible
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import lookup
from nnrt.ops._framework.support import check_supported
from nnrt.ops.floats import float_errors_state

if TYPE_CHECKING:
    from nnrt.model.model import Model
    from nnrt.model.operand import Operand

__all__ = ["ExecutionPlan", "OperationStep", "run"]
Array = np.ndarray[Any, Any]


def run(model: Model, inputs: Inputs) -> list[Array]:
    """Run ``model`` on ``inputs`` and return its outputs, in model output order.

    ``inputs`` is a list in model input order, or a dict keyed by input position or name.
    Raises ``BadState`` for an unfinished model, ``Unsupported`` listing every operation the
    reference kernels do not implement, ``BadData`` for bad inputs, ``OpFailed`` if a kernel fails.
    """
    if not model.finished:
        raise BadState("nnrt.reference.run: the model is not finished (call model.finish())")
    check_supported(model)
    plan = ExecutionPlan(model)
    return widen(plan.execute(plan.binder.bind(inputs)), widened_outputs(model))


class OperationStep:
    """One operation of a model with its static facts looked up once."""

    __slots__ = ("_exact", "_shape_key", "_shape_operands", "_shape_slots", "_shapes", "_single",
                 "definition", "dims",
                 "dtypes", "index", "live_after", "operands", "operation", "outputs", "relaxed")

    def __init__(self, model: Model, op_index: int) -> None:
        op = model.operations[op_index]
        definition = lookup(op.type)
        if definition is None:
            raise OpFailed(f"operation {op_index} ({op.type.name}): no reference kernel")
        operands = model.operands
        self.operands = operands
        self.relaxed = model.relaxed
        self.index = op_index
        self.operation = op
        self.definition = definition
        #: Output operand indices, their dtypes and declared dims.
        self.outputs = op.outputs
        self.dtypes = tuple(dtype_of(operands[i].type) for i in op.outputs)
        self.dims = tuple(operands[i].dims for i in op.outputs)
        # A fully specified declaration is compatible exactly with an equal shape.
        self._exact = tuple(bool(d) and all(x > 0 for x in d) for d in self.dims)
        #: One output of fully declared dims: (dtype, dims, [dims]), what :meth:`run` checks
        #: its result against at once; None otherwise (the general checks).
        single_dims = tuple(self.dims[0]) if len(self.outputs) == 1 and self._exact[0] else None
        self._single = (None if single_dims is None
                        else (self.dtypes[0], single_dims, [single_dims]))
        # Shape cache: when every non-constant input is a float tensor, prepare() depends only
        # on those inputs' shapes (NNAPI derives shapes and parameter checks from constants,
        # scalars and integer tensors, never from float tensor values — except for the
        # operations flagged ``shapes_from_values``), so its result can be reused while the
        # shapes repeat.
        dynamic = [slot for slot, k in enumerate(op.inputs)
                   if not (operands[k].is_constant or operands[k].is_omitted)]
        self._shape_slots: tuple[int, ...] | None = tuple(dynamic) if all(
            operands[op.inputs[slot]].type in _SHAPE_ONLY_TYPES for slot in dynamic) and not (
            definition.shapes_from_values) else None
        #: The operand indices of those inputs (their shapes form the cache key).
        self._shape_operands = tuple(op.inputs[slot] for slot in dynamic)
        self._shape_key: tuple[Any, ...] | None = None
        self._shapes: list[tuple[int, ...]] = []
        #: Operands (other than this step's outputs) still needed once this step has run: read
        #: by a later step or a model output. Set by the plan for steps producing model outputs,
        #: whose results may be computed into caller memory that must not hold any of them.
        self.live_after: tuple[int, ...] = ()


    def specialized(self, constants: Sequence[Array | None]) -> _Entry | None:
        """This step as one call on a plan's values (by operand index), with its output's
        operand index, dtype and dims; None unless it has one fully declared output, every
        tensor input has fully declared dims (so the binder and the steps before guarantee its
        shapes), ``prepare`` agrees with the declaration, and the definition specialises.
        ``constants``: the plan's constant values by operand index."""
        specialize, single = self.definition.specialize, self._single
        if single is None or specialize is None:
            return None
        operands, inputs = self.operands, self.operation.inputs
        for k in inputs:
            operand = operands[k]
            if not (operand.is_omitted or is_scalar(operand.type) or (
                    operand.dims and all(d > 0 for d in operand.dims))):
                return None
        ctx = OperationContext(operands, self.operation, self.index, self.definition,
                               relaxed=self.relaxed, constant=constants.__getitem__)
        try:
            if [tuple(map(int, s)) for s in self.definition.prepare(ctx)] != single[2]:
                return None
            found = specialize(ctx)
        except Exception:  # the general kernel runs instead, and reports
            return None
        if found is None:
            return None
        func, slots = found
        return (_bind_call(func, tuple(inputs[slot] for slot in slots)), self.outputs[0],
                single[0], single[1])

    def run(self, ctx: _PlanContext) -> list[Array]:
        """Prepare and execute the kernel in ``ctx``; return the checked output arrays.

        Raises the kernel's nnrt errors as they are, ``OpFailed`` for any other kernel error or
        a result of the wrong count or shape, and ``BadData`` for a shape the model declared
        differently.
        """
        definition = self.definition
        try:
            if self._shape_slots is not None:
                key = ctx.shapes_of(self._shape_operands)
                if key == self._shape_key:
                    shapes = self._shapes
                else:
                    shapes = [tuple(map(int, s)) for s in definition.prepare(ctx)]
                    self._shape_key, self._shapes = key, shapes
            else:
                shapes = [tuple(map(int, s)) for s in definition.prepare(ctx)]
            ctx.output_shapes = shapes
            results = definition.execute(ctx)
            if results.__class__ is not list:
                results = list(results)
        except NnrtError:
            raise
        except Exception as exc:
            raise OpFailed(f"{ctx.where()}: kernel failed: {exc!r}") from exc
        if len(results) != len(self.outputs):
            raise OpFailed(f"{ctx.where()}: kernel returned {len(results)} outputs, "
                           f"expected {len(self.outputs)}")
        single = self._single
        if single is not None:  # one output, and the kernel returned one (checked above)
            arr = results[0]  # the usual case in one test: an ndarray of the output's dtype and
            if (arr.__class__ is np.ndarray and arr.dtype is single[0]  # declared static shape,
                    and arr.shape == single[1] and shapes == single[2]):  # prepare's shape too
                return results
        checked: list[Array] = []
        for slot, result in enumerate(results):
            arr = result if result.__class__ is np.ndarray else np.asarray(result)
            dtype = self.dtypes[slot]
            if arr.dtype is not dtype and arr.dtype != dtype:  # identity: the usual, cheap case
                arr = arr.astype(dtype)
            shape = arr.shape
            if slot < len(shapes) and shape != shapes[slot]:
                raise OpFailed(f"{ctx.where(output=slot)}: kernel produced shape {shape}, "
                               f"prepare computed {shapes[slot]}")
            declared = self.dims[slot]
            if not (shape == declared if self._exact[slot] else dims_compatible(declared, shape)):
                ctx.fail(f"computed shape {shape} does not match the declared dims "
                         f"{declared}", output=slot)
            checked.append(arr)
        return checked


#: A specialised step: the call on the plan's values, its output's operand index, dtype, dims.
_Entry = tuple[Callable[[list[Any]], Any], int, "np.dtype[Any]", tuple[int, ...]]


def _bind_call(func: Callable[..., Any], indices: tuple[int, ...]
               ) -> Callable[[list[Any]], Any]:
    """``func`` applied to the values at ``indices`` of a plan's value list."""
    if len(indices) == 1:
        (i,) = indices

        def call1(values: list[Any]) -> Any:
            return func(values[i])
        return call1
    if len(indices) == 2:
        i, j = indices

        def call2(values: list[Any]) -> Any:
            return func(values[i], values[j])
        return call2

    def call(values: list[Any]) -> Any:
        return func(*[values[k] for k in indices])
    return call


_MISSING = object()
_SHAPE_ONLY_TYPES = frozenset({OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16})


class _Frame:
    """The operand values of one execution in progress, by operand index.

    ``dests`` maps model output operand indices to their typed caller destinations, if any.
    """

    __slots__ = ("dests", "slots")

    def __init__(self) -> None:
        self.slots: list[Array | None] = []
        self.dests: dict[int, Array] | None = None

    def get(self, index: int) -> Array | None:
        return self.slots[index]


class _PlanContext(ExecutionContext):
    """An ``ExecutionContext`` over a frame, with per-input facts precomputed for speed.

    The overrides return exactly what the base methods compute, with fewer calls.
    """

    def __init__(self, step: OperationStep, frame: _Frame) -> None:
        super().__init__(step.operands, step.operation, step.index, step.definition, frame.get,
                         relaxed=step.relaxed)
        self._frame = frame
        self._step = step
        #: Plans of the models this operation refers to (IF, WHILE), made on first use.
        self._plans: dict[int, ExecutionPlan] | None = None
        self._in = step.operation.inputs
        self._n = len(self._in)
        self._in_operands = tuple(step.operands[k] for k in self._in)
        self._in_types = tuple(o.type for o in self._in_operands)
        self._omitted = tuple(o.is_omitted for o in self._in_operands)
        # Constant scalar parameters (activation codes, axes, ...) as Python values, once.
        self._scalars: dict[int, Any] = {}
        for i, o in enumerate(self._in_operands):
            if o.is_constant and o.value is not None and o.value.ndim == 0 and o.type in (
                    OperandType.INT32, OperandType.UINT32, OperandType.FLOAT32,
                    OperandType.FLOAT16, OperandType.BOOL):
                self._scalars[i] = self._to_python(o.type, o.value)

    def run_model(self, model: Model, values: Sequence[Array]) -> list[Array]:
        plans = self._plans
        if plans is None:
            plans = self._plans = {}
        plan = plans.get(id(model))
        if plan is None:
            plan = plans[id(model)] = ExecutionPlan(model)
        return plan.execute(plan.binder.bind(list(values)))

    def operand(self, i: int) -> Operand:
        return self._in_operands[i]

    def input_type(self, i: int) -> OperandType:
        return self._in_types[i]

    def is_omitted(self, i: int) -> bool:
        return i >= self._n or self._omitted[i]

    def input(self, i: int) -> Array | None:
        if i >= self._n or self._omitted[i]:
            return None
        return self._frame.slots[self._in[i]]

    def tensor(self, i: int) -> Array:
        arr = None if i >= self._n or self._omitted[i] else self._frame.slots[self._in[i]]
        if arr is None:
            self.fail("this input is required but has no value", input=i)
        return arr

    def shape(self, i: int) -> tuple[int, ...]:
        shape: tuple[int, ...] = self.tensor(i).shape  # a tuple of Python ints already
        return shape

    def shapes_of(self, operands: tuple[int, ...]) -> tuple[Any, ...]:
        """A key of the shapes of the values of ``operands`` (indices of this step's
        non-constant, non-omitted inputs: always set when the step runs): the one shape itself,
        or a tuple of the shapes."""
        slots: list[Any] = self._frame.slots
        if len(operands) == 1:  # the usual case, without building a tuple
            shape: tuple[int, ...] = slots[operands[0]].shape
            return shape
        return tuple([slots[k].shape for k in operands])

    def scalar(self, i: int) -> Any:
        scalar = self._scalars.get(i, _MISSING)
        if scalar is not _MISSING:
            return scalar
        return super().scalar(i)

    def constant(self, i: int) -> Any:
        scalar = self._scalars.get(i, _MISSING)
        if scalar is not _MISSING:
            return scalar
        arr = self.input(i)
        if arr is None:
            return None
        return self._to_python(self._in_types[i], arr)

    def out(self, j: int, *, overlap: bool = False) -> Array | None:
        dests = self._frame.dests
        if dests is None or j >= len(self._step.outputs):
            return None
        dest = dests.get(self._step.outputs[j])
        if (dest is None or j >= len(self.output_shapes)
                or dest.shape != tuple(self.output_shapes[j])
                or dest.dtype != self._step.dtypes[j]):
            return None
        slots = self._frame.slots
        needed = self._step.live_after if overlap else self._step.live_after + self._in
        for index in needed:
            value = slots[index]
            if value is not None and np.may_share_memory(value, dest):
                return None
        return dest


class ExecutionPlan:
    """A finished model ready to execute many times on the reference kernels.

    Holds the constants the operations read (materialised once) and one execution context per
    operation, reused by consecutive executions; a concurrent execution on another thread gets
    fresh contexts, so a plan may be shared between threads.
    """

    def __init__(self, model: Model) -> None:
        if not model.finished:
            raise BadState("ExecutionPlan: the model is not finished (call model.finish())")
        self.model = model
        #: Checks inputs for :meth:`execute`.
        self.binder = InputBinder(model)
        self._steps = tuple(OperationStep(model, i) for i in model.run_order)
        operands = model.operands
        constants: list[Array | None] = [None] * len(operands)
        for step in self._steps:
            for index in step.operation.inputs:
                if constants[index] is None and operands[index].is_constant:
                    constants[index] = model.constant_value(index)
        self._constants = constants
        self._inputs = model.inputs
        self._outputs = model.outputs
        self._output = model.outputs[0] if len(model.outputs) == 1 else None
        self._set_live_after()
        self._frame = _Frame()
        #: Each step with its context over the plan's own frame.
        self._pairs = tuple((step, _PlanContext(step, self._frame)) for step in self._steps)
        self._lock = threading.Lock()
        entries = [entry for step in self._steps
                   if (entry := step.specialized(constants)) is not None]
        #: Every step specialised (see :meth:`OperationStep.specialized`): what executions
        #: without output destinations run; None otherwise.
        self._program: tuple[_Entry, ...] | None = tuple(entries) if entries and len(
            entries) == len(self._steps) else None

    @property
    def specialized(self) -> bool:
        """Whether executions without output destinations run the specialised kernels."""
        return self._program is not None

    def _set_live_after(self) -> None:
        """Record, on each step producing a model output, the operands needed after it."""
        last_use: dict[int, int] = {}
        for position, step in enumerate(self._steps):
            for index in step.operation.inputs:
                last_use[index] = position
        for index in self._outputs:
            last_use[index] = len(self._steps)
        model_outputs = set(self._outputs)
        for position, step in enumerate(self._steps):
            if model_outputs.intersection(step.outputs):
                step.live_after = tuple(sorted(
                    index for index, last in last_use.items()
                    if last > position and index not in step.outputs))

    def execute(self, inputs: Sequence[Array], check: Callable[[], None] | None = None,
                outputs: Sequence[Array | None] | None = None) -> list[Array]:
        """Run on ``inputs`` already checked by :attr:`binder`; return the outputs.

        ``check`` (optional) is called between two operations (not before the first: the caller
        checks before it starts); it stops the execution by raising.
        ``outputs`` (optional, one entry per model output) are typed destinations the operation
        producing that output may compute into (then the output returned is that array).
        """
        if len(inputs) != len(self._inputs):
            raise BadData(f"expected {len(self._inputs)} inputs, got {len(inputs)}")
        if outputs is None and self._program is not None:
            results = self._run_program(self._program, inputs, check)
            if results is not None:
                return results
        dests = None if outputs is None else self._destinations(outputs)
        if self._lock.acquire(False):
            try:
                return self._run(self._frame, self._pairs, inputs, check, dests)
            finally:
                self._lock.release()
        frame = _Frame()  # another thread runs the plan: contexts of our own
        pairs = tuple((step, _PlanContext(step, frame)) for step in self._steps)
        return self._run(frame, pairs, inputs, check, dests)

    def _run_program(self, program: tuple[_Entry, ...], inputs: Sequence[Array],
                     check: Callable[[], None] | None) -> list[Array] | None:
        """Run the specialised kernels in order; None if one raised or returned anything but
        an ndarray of its output's dtype and dims — the general path then runs the model
        again, checking and reporting as usual (kernels are pure: nothing to undo)."""
        values: list[Any] = self._constants.copy()
        if len(inputs) == 1:  # counts checked already
            values[self._inputs[0]] = inputs[0]
        else:
            for index, value in zip(self._inputs, inputs, strict=True):
                values[index] = value
        errors = float_errors_state()
        if errors is not None:
            errors.__enter__()
        try:
            poll = None  # between operations: from the second on
            for call, out, dtype, dims in program:
                if poll is not None:
                    poll()
                poll = check
                try:
                    arr = call(values)
                except Exception:  # reported by the general path
                    return None
                if arr.__class__ is not np.ndarray or arr.dtype is not dtype or (
                        arr.shape != dims):
                    return None
                values[out] = arr
        finally:
            if errors is not None:
                errors.__exit__(None, None, None)
        if self._output is not None:
            return [values[self._output]]
        return [values[i] for i in self._outputs]

    def _destinations(self, outputs: Sequence[Array | None]) -> dict[int, Array] | None:
        """Model output destinations keyed by operand index (the first one, for a repeat)."""
        if len(outputs) != len(self._outputs):
            raise BadData(f"expected {len(self._outputs)} output destinations, got "
                          f"{len(outputs)}")
        dests: dict[int, Array] = {}
        for index, dest in zip(self._outputs, outputs, strict=True):
            if dest is not None:
                dests.setdefault(index, dest)
        return dests or None

    def _run(self, frame: _Frame, pairs: Sequence[tuple[OperationStep, _PlanContext]],
             inputs: Sequence[Array], check: Callable[[], None] | None,
             dests: dict[int, Array] | None = None) -> list[Array]:
        values = self._constants.copy()
        for index, value in zip(self._inputs, inputs, strict=False):  # counts checked already
            values[index] = value
        frame.slots = values
        frame.dests = dests
        errors = float_errors_state()  # NNAPI semantics: inf / NaN results, no warnings
        if errors is not None:
            errors.__enter__()
        try:
            poll = None  # between operations: from the second on
            for step, ctx in pairs:
                if poll is not None:
                    poll()
                poll = check
                results = step.run(ctx)
                outputs = step.outputs
                if len(outputs) == 1:
                    values[outputs[0]] = results[0]
                else:
                    for index, arr in zip(outputs, results, strict=True):
                        values[index] = arr
        finally:
            if errors is not None:
                errors.__exit__(None, None, None)
            frame.slots = []  # keep no arrays alive between executions
            frame.dests = None
        if self._output is not None:  # one model output: no list comprehension to run
            return [values[self._output]]  # type: ignore[list-item]
        return [values[i] for i in self._outputs]  # type: ignore[misc]
