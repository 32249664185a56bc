"""Control flow: IF and WHILE run referenced models (SUBGRAPH operands) on the interpreter.

NNAPI signatures:

* IF: input 0 the condition, a TENSOR_BOOL8 of shape [1]; inputs 1 and 2 the then and else
  models (SUBGRAPH); inputs 3.. the values passed to the chosen model as its inputs. The
  outputs are that model's outputs. Both models take ``n_inputs - 3`` inputs and give
  ``n_outputs`` outputs.
* WHILE: input 0 the condition model, input 1 the body model, inputs 2.. the initial values of
  ``m`` input-output, ``k`` state-only and ``n`` input-only operands, where ``m`` is the number
  of outputs, ``k`` the body's outputs beyond ``m`` and ``n`` its inputs beyond ``m + k``.
  While the condition model (``m + k + n`` inputs, one TENSOR_BOOL8 [1] output) gives true, the
  body (``m + k + n`` inputs, ``m + k`` outputs) replaces the first ``m + k`` values; the
  outputs are the final input-output values. A loop still running after
  :data:`MAX_WHILE_ITERATIONS` iterations fails (NNAPI bounds loops by a timeout instead).

Every operand a model exchanges with the operation must have the same type, scale and zero point
as the operation's operand there, and compatible dims (where both are known they agree).

Shapes: at ``Model.finish`` IF's output shapes come from the referenced model's shape inference
run on the operation's input shapes (both models, when the condition is not a constant, must
agree). At execution ``prepare`` runs the chosen model, or the loop, because its outputs'
shapes may depend on values it computes; ``execute`` returns those results.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.errors import BadData, OpFailed
from nnrt.model.operand import Operand, dtype_of, is_scalar
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext, Unknown
from nnrt.ops._framework.inference import infer_output_shapes
from nnrt.ops._framework.registry import Shape, lookup, register
from nnrt.ops._framework.support import unsupported_reason

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = ["MAX_WHILE_ITERATIONS"]

T = OperandType
Array = np.ndarray[Any, Any]

CONDITION, THEN_MODEL, ELSE_MODEL, FIRST_BRANCH_INPUT = 0, 1, 2, 3
CONDITION_MODEL, BODY_MODEL, FIRST_LOOP_INPUT = 0, 1, 2
#: Iterations after which a WHILE loop fails with ``OpFailed``.
MAX_WHILE_ITERATIONS = 100_000


# -- signatures ---------------------------------------------------------------------------------

def _model(ctx: OperationContext, slot: int) -> Model:
    """The finished model SUBGRAPH input ``slot`` refers to."""
    ctx.expect_type(slot, T.SUBGRAPH)
    model = ctx.operand(slot).subgraph
    if model is None:
        ctx.fail("expected a reference to a model (set_operand_value_from_model), got a model "
                 "input", input=slot)
    return model


def _compatible(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether dims ``a`` and ``b`` (0 unknown, ``()`` unknown rank) can describe one shape."""
    return not a or not b or (len(a) == len(b) and all(
        x == 0 or y == 0 or x == y for x, y in zip(a, b, strict=True)))


def _mismatch(mine: Operand, theirs: Operand, dims: tuple[int, ...]) -> str | None:
    """Why operand ``mine`` of a referenced model cannot stand for ``theirs`` (dims ``dims``)."""
    if mine.type != theirs.type:
        return "the types differ"
    if (mine.scale, mine.zero_point) != (theirs.scale, theirs.zero_point):
        return "the scales or zero points differ"
    if mine.channel_quant != theirs.channel_quant:
        return "the per-channel quantisation differs"
    if not _compatible(mine.dims, dims):
        return "the dims are incompatible"
    return None


def _expect_counts(ctx: OperationContext, slot: int, role: str, have: int, want: int) -> None:
    if have != want:
        ctx.fail(f"the {role} of the referenced model: it has {have}, the operation needs "
                 f"{want}", input=slot)


def _expect_input_like(ctx: OperationContext, slot: int, model: Model, k: int, op_input: int
                       ) -> None:
    """Input ``k`` of ``model`` (referenced by input ``slot``) matches operation input
    ``op_input``."""
    mine, theirs = model.operands[model.inputs[k]], ctx.operand(op_input)
    why = _mismatch(mine, theirs, ctx.dims(op_input))
    if why is not None:
        ctx.fail(f"its input {k} ({mine.describe()}) does not match the operation's input "
                 f"{op_input} ({theirs.describe()}): {why}", input=slot)


def _expect_output_like(ctx: OperationContext, slot: int, model: Model, j: int, theirs: Operand,
                        what: str) -> None:
    """Output ``j`` of ``model`` (referenced by input ``slot``) matches ``theirs``."""
    mine = model.operands[model.outputs[j]]
    why = _mismatch(mine, theirs, theirs.dims)
    if why is not None:
        ctx.fail(f"its output {j} ({mine.describe()}) does not match {what}, "
                 f"{theirs.describe()}: {why}", input=slot)


def _expect_values(ctx: OperationContext, first: int) -> None:
    """Inputs ``first..`` are present tensors or scalars (no model passes through)."""
    for i in range(first, ctx.n_inputs):
        ctx.expect_present(i)
        if ctx.input_type(i) == T.SUBGRAPH:
            ctx.fail("a model cannot be passed as a value", input=i)


def _supports(ctx: OperationContext, slots: Sequence[int], names: Sequence[str]) -> str | None:
    """Why one of the referenced models cannot run on the reference kernels, or None."""
    for slot, name in zip(slots, names, strict=True):
        model = ctx.operand(slot).subgraph
        if model is None:
            continue
        for index, op in enumerate(model.operations):
            reason = unsupported_reason(model, index)
            if reason is not None:
                return f"its {name} model's operation {index} ({op.type.name}): {reason}"
    return None


# -- running referenced models -------------------------------------------------------------------

@dataclass
class _State:
    """Per execution context: the results ``prepare`` computed."""

    results: list[Array] | None = None


_STATES: weakref.WeakKeyDictionary[OperationContext, _State] = weakref.WeakKeyDictionary()


def _state(ctx: OperationContext) -> _State:
    state = _STATES.get(ctx)
    if state is None:
        state = _STATES[ctx] = _State()
    return state


def _run(ctx: ExecutionContext, slot: int, values: Sequence[Array]) -> list[Array]:
    """Run the model input ``slot`` refers to on ``values``; its errors name the operation."""
    model = _model(ctx, slot)
    try:
        return ctx.run_model(model, values)
    except (BadData, OpFailed) as exc:
        raise type(exc)(f"{ctx.where(input=slot)}: in the referenced model: {exc}") from exc


def _prepared(ctx: ExecutionContext, results: list[Array]) -> list[Shape]:
    """Keep ``results`` for ``execute`` and return their shapes."""
    _state(ctx).results = results
    return [tuple(int(d) for d in r.shape) for r in results]


def _results(ctx: ExecutionContext, compute: Callable[[ExecutionContext], list[Array]]
             ) -> list[Array]:
    """What ``prepare`` computed for this execution, or (it did not run) computed now."""
    state = _state(ctx)
    results, state.results = state.results, None
    return compute(ctx) if results is None else results


def _merge(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The dims known in ``a`` or ``b`` (compatible dims of one operand)."""
    if not a or not b:
        return a or b
    return tuple(x or y for x, y in zip(a, b, strict=True))


def _known(model: Model, dims: Sequence[tuple[int, ...]]) -> bool:
    """Whether the dims of every output of ``model`` are fully known (scalars' always are)."""
    return all(is_scalar(model.operands[index].type) or (d and all(x > 0 for x in d))
               for index, d in zip(model.outputs, dims, strict=True))


def _infer(ctx: OperationContext, slot: int, first: int) -> list[tuple[int, ...]]:
    """Static output dims of the model input ``slot`` refers to, given inputs ``first..``."""
    model = _model(ctx, slot)
    dims = list(model.inferred_dims)
    values: dict[int, Array] = {}
    for k, index in enumerate(model.inputs):
        given = ctx.dims(first + k)
        if not _compatible(dims[index], given):
            ctx.fail(f"dims {given} do not fit input {k} of the referenced model "
                     f"({model.operands[index].describe()})", input=first + k)
        dims[index] = _merge(given, dims[index])
        value = ctx.constant(first + k)
        if value is not None:
            values[index] = np.asarray(value, dtype=dtype_of(ctx.input_type(first + k)))

    def constant(index: int) -> Array | None:
        return values[index] if index in values else model.constant_value(index)

    for op_index in model.run_order:
        op = model.operations[op_index]
        definition = lookup(op.type)
        if definition is None:
            continue
        inner = OperationContext(model.operands, op, op_index, definition,
                                 relaxed=model.relaxed, dims=dims.__getitem__, constant=constant)
        try:
            shapes = infer_output_shapes(inner, definition)
        except BadData as exc:
            ctx.fail(f"in the referenced model: {exc}", input=slot)
        for position, shape in enumerate(shapes or ()):
            dims[op.outputs[position]] = shape
    return [dims[index] for index in model.outputs]


# -- IF -------------------------------------------------------------------------------------------

def _condition(ctx: OperationContext) -> bool | None:
    value = ctx.constant(CONDITION)
    if value is None:
        return None
    if value.size != 1:
        ctx.fail(f"expected one element, got shape {value.shape}", input=CONDITION)
    return bool(value.reshape(-1)[0])


def _run_if(ctx: ExecutionContext) -> list[Array]:
    slot = THEN_MODEL if _condition(ctx) else ELSE_MODEL
    return _run(ctx, slot, [ctx.tensor(i) for i in range(FIRST_BRANCH_INPUT, ctx.n_inputs)])


@register(OperationType.IF, inputs=("condition", "then_model", "else_model"), outputs=(),
          kernel_types={T.TENSOR_BOOL8})
class If:
    """IF: runs the then model or the else model on inputs 3.., by the condition."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Condition type and shape, model references and both models' signatures."""
        if ctx.n_inputs < FIRST_BRANCH_INPUT:
            ctx.fail(f"expected at least {FIRST_BRANCH_INPUT} inputs (condition, then model, "
                     f"else model), got {ctx.n_inputs}")
        ctx.expect_type(CONDITION, T.TENSOR_BOOL8)
        dims = ctx.dims(CONDITION)
        if dims and all(d > 0 for d in dims) and dims != (1,):
            ctx.fail(f"expected shape (1,), got {dims}", input=CONDITION)
        _expect_values(ctx, FIRST_BRANCH_INPUT)
        for slot in (THEN_MODEL, ELSE_MODEL):
            model = _model(ctx, slot)
            n_inputs = ctx.n_inputs - FIRST_BRANCH_INPUT
            _expect_counts(ctx, slot, "inputs", len(model.inputs), n_inputs)
            _expect_counts(ctx, slot, "outputs", len(model.outputs), ctx.n_outputs)
            for k in range(n_inputs):
                _expect_input_like(ctx, slot, model, k, FIRST_BRANCH_INPUT + k)
            for j in range(ctx.n_outputs):
                _expect_output_like(ctx, slot, model, j, ctx.output_operand(j),
                                    f"the operation's output {j}")

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Statically: the chosen model's inferred output shapes (both models' when they agree,
        else ``Unknown``). At execution: runs the chosen model and returns its results' shapes."""
        if isinstance(ctx, ExecutionContext):
            return _prepared(ctx, _run_if(ctx))
        condition = _condition(ctx)
        slots = (THEN_MODEL, ELSE_MODEL) if condition is None else (
            THEN_MODEL if condition else ELSE_MODEL,)
        inferred = [_infer(ctx, slot, FIRST_BRANCH_INPUT) for slot in slots]
        shapes = inferred[0]
        if any(other != shapes for other in inferred) or not _known(
                _model(ctx, slots[0]), shapes):
            raise Unknown
        return shapes

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The chosen model's outputs (computed by ``prepare``)."""
        return _results(ctx, _run_if)

    @staticmethod
    def supports(ctx: OperationContext) -> str | None:
        """Unsupported while an operation of either model has no reference kernel."""
        return _supports(ctx, (THEN_MODEL, ELSE_MODEL), ("then", "else"))


# -- WHILE ----------------------------------------------------------------------------------------

def _loop_counts(ctx: OperationContext) -> tuple[int, int, int]:
    """``(m, k, n)``: input-output, state-only and input-only operand counts."""
    body = _model(ctx, BODY_MODEL)
    m = ctx.n_outputs
    k = len(body.outputs) - m
    n = len(body.inputs) - m - k
    if k < 0:
        ctx.fail(f"the body model has {len(body.outputs)} outputs, fewer than the operation's "
                 f"{m}", input=BODY_MODEL)
    if n < 0:
        ctx.fail(f"the body model has {len(body.inputs)} inputs, fewer than its "
                 f"{len(body.outputs)} outputs", input=BODY_MODEL)
    return m, k, n


def _run_while(ctx: ExecutionContext) -> list[Array]:
    m, k, _ = _loop_counts(ctx)
    values = [ctx.tensor(i) for i in range(FIRST_LOOP_INPUT, ctx.n_inputs)]
    iterations = 0
    while True:
        (flag,) = _run(ctx, CONDITION_MODEL, values)
        if flag.size != 1:
            ctx.fail(f"the condition model gave shape {flag.shape}, not one element",
                     input=CONDITION_MODEL)
        if not flag.reshape(-1)[0]:
            return [np.array(v, copy=True) for v in values[:m]]
        if iterations == MAX_WHILE_ITERATIONS:
            raise OpFailed(f"{ctx.where()}: the loop did not end within "
                           f"{MAX_WHILE_ITERATIONS} iterations")
        values[:m + k] = _run(ctx, BODY_MODEL, values)
        iterations += 1


@register(OperationType.WHILE, inputs=("condition_model", "body_model"), outputs=(),
          kernel_types={T.SUBGRAPH}, shapes_from_values=True)
class While:
    """WHILE: runs the body model while the condition model gives true."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Model references, counts and the signatures of both models."""
        if ctx.n_inputs <= FIRST_LOOP_INPUT:
            ctx.fail(f"expected more than {FIRST_LOOP_INPUT} inputs (condition model, body "
                     f"model, initial values), got {ctx.n_inputs}")
        _expect_values(ctx, FIRST_LOOP_INPUT)
        n_values = ctx.n_inputs - FIRST_LOOP_INPUT
        condition, body = _model(ctx, CONDITION_MODEL), _model(ctx, BODY_MODEL)
        _expect_counts(ctx, CONDITION_MODEL, "inputs", len(condition.inputs), n_values)
        _expect_counts(ctx, CONDITION_MODEL, "outputs", len(condition.outputs), 1)
        _expect_output_like(ctx, CONDITION_MODEL, condition, 0,
                            Operand(T.TENSOR_BOOL8, (1,)), "a condition")
        _expect_counts(ctx, BODY_MODEL, "inputs", len(body.inputs), n_values)
        m, k, _ = _loop_counts(ctx)
        for slot, model in ((CONDITION_MODEL, condition), (BODY_MODEL, body)):
            for i in range(n_values):
                _expect_input_like(ctx, slot, model, i, FIRST_LOOP_INPUT + i)
        for j in range(m):
            _expect_output_like(ctx, BODY_MODEL, body, j, ctx.output_operand(j),
                                f"the operation's output {j}")
        for j in range(m + k):
            _expect_output_like(ctx, BODY_MODEL, body, j, body.operands[body.inputs[j]],
                                f"its input {j} (the value it replaces)")

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Unknown statically; at execution runs the loop and returns its results' shapes."""
        if not isinstance(ctx, ExecutionContext):
            raise Unknown
        return _prepared(ctx, _run_while(ctx))

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The final input-output values (computed by ``prepare``)."""
        return _results(ctx, _run_while)

    @staticmethod
    def supports(ctx: OperationContext) -> str | None:
        """Unsupported while an operation of either model has no reference kernel."""
        return _supports(ctx, (CONDITION_MODEL, BODY_MODEL), ("condition", "body"))
