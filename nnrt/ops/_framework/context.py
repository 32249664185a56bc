"""What an operation's ``validate`` / ``prepare`` / ``execute`` see: its operands and values.

``OperationContext`` is the static view used at ``Model.finish()``: types, declared (or inferred)
dims and constant values. Asking it for a shape or value that is not known statically raises
``Unknown``, which the shape-inference pass catches (the check then happens at execution).
``ExecutionContext`` is the same interface over actual input arrays, plus ``input()``.

Every check raises ``BadData`` through :meth:`OperationContext.fail`, whose message names the
operation index, the op name, the operand slot and its name: ``operation 3 (CONV_2D), input 1
(filter): expected rank 4, got 2``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from nnrt.errors import BadData, OpFailed
from nnrt.model.operand import QUANT_TYPES, Operand, dtype_of, is_scalar
from nnrt.model.operation import Operation, operation_name
from nnrt.model.types import FusedActivation, OperandType
from nnrt.ops._framework.registry import OperationDef, Shape, lookup

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = ["ExecutionContext", "OperationContext", "Unknown", "static_context"]

_PY_SCALAR: dict[OperandType, Callable[[Any], Any]] = {
    OperandType.INT32: int,
    OperandType.UINT32: int,
    OperandType.FLOAT32: float,
    OperandType.FLOAT16: float,
    OperandType.BOOL: bool,
}


class Unknown(Exception):
    """A shape or value is not known before execution (static contexts only)."""


class OperationContext:
    """Static view of one operation in a model (types, dims, constants) plus checking helpers."""

    def __init__(
        self,
        operands: Sequence[Operand],
        operation: Operation,
        index: int,
        definition: OperationDef | None = None,
        *,
        relaxed: bool = False,
        dims: Callable[[int], tuple[int, ...]] | None = None,
        constant: Callable[[int], np.ndarray[Any, Any] | None] | None = None,
    ) -> None:
        self._operands = operands
        self.operation = operation
        #: The ``OperationType`` of this operation.
        self.op_type = operation.type
        self.index = index
        self.definition = definition
        #: Whether the model allows FLOAT32 to be computed in FLOAT16 precision.
        self.relaxed = relaxed
        self._dims = dims or (lambda i: operands[i].dims)
        self._constant = constant or (lambda i: operands[i].value)

    # -- describing and failing ---------------------------------------------------------------

    @property
    def n_inputs(self) -> int:
        """Number of inputs the operation was given."""
        return len(self.operation.inputs)

    @property
    def n_outputs(self) -> int:
        """Number of outputs the operation was given."""
        return len(self.operation.outputs)

    def where(self, *, input: int | None = None, output: int | None = None) -> str:
        """``"operation 3 (CONV_2D), input 1 (filter)"``: the location for an error message."""
        text = f"operation {self.index} ({operation_name(self.operation.type)})"
        if input is not None:
            name = (self.definition.input_name(input, self.n_inputs) if self.definition
                    else None)
            text += f", input {input}" + (f" ({name})" if name else "")
        elif output is not None:
            name = self.definition.output_name(output) if self.definition else None
            text += f", output {output}" + (f" ({name})" if name else "")
        return text

    def fail(self, message: str, *, input: int | None = None,
             output: int | None = None) -> NoReturn:
        """Raise ``BadData`` with the location prefix."""
        raise BadData(f"{self.where(input=input, output=output)}: {message}")

    # -- operands -----------------------------------------------------------------------------

    def operand(self, i: int) -> Operand:
        """The operand record of input ``i``."""
        return self._operands[self.operation.inputs[i]]

    def output_operand(self, j: int) -> Operand:
        """The operand record of output ``j``."""
        return self._operands[self.operation.outputs[j]]

    def input_type(self, i: int) -> OperandType:
        """The operand type of input ``i``."""
        return self.operand(i).type

    def output_type(self, j: int) -> OperandType:
        """The operand type of output ``j``."""
        return self.output_operand(j).type

    def is_omitted(self, i: int) -> bool:
        """Whether optional input ``i`` is absent (beyond the given inputs, or NO_VALUE)."""
        return i >= self.n_inputs or self.operand(i).is_omitted

    def is_constant(self, i: int) -> bool:
        """Whether input ``i`` has a value fixed in the model."""
        return not self.is_omitted(i) and self.operand(i).is_constant

    def constant(self, i: int) -> Any:
        """The value of input ``i`` if known now (constant / execution), else None.

        Scalars come back as Python ``int`` / ``float`` / ``bool``, tensors as ndarrays.
        """
        if self.is_omitted(i):
            return None
        arr = self._constant(self.operation.inputs[i])
        if arr is None:
            return None
        return self._to_python(self.input_type(i), arr)

    # -- shapes and values (static: may raise Unknown) ------------------------------------------

    def dims(self, i: int) -> tuple[int, ...]:
        """Declared / inferred dims of input ``i`` (0 = unknown, ``()`` = unknown rank)."""
        return self._dims(self.operation.inputs[i])

    def rank(self, i: int) -> int:
        """Rank of input ``i``; raises ``Unknown`` if not known yet."""
        if is_scalar(self.input_type(i)):
            return 0
        dims = self.dims(i)
        if not dims:
            raise Unknown
        return len(dims)

    def rank_or_none(self, i: int) -> int | None:
        """Rank of input ``i``, or None if unknown."""
        try:
            return self.rank(i)
        except Unknown:
            return None

    def shape(self, i: int) -> Shape:
        """Fully known shape of input ``i``; raises ``Unknown`` if any dim is unknown."""
        if is_scalar(self.input_type(i)):
            return ()
        dims = self.dims(i)
        if not dims or any(d == 0 for d in dims):
            raise Unknown
        return dims

    def value(self, i: int) -> Any:
        """Value of input ``i`` (Python scalar or ndarray); raises ``Unknown`` if not known."""
        result = self.constant(i)
        if result is None:
            raise Unknown
        return result

    def scalar(self, i: int) -> Any:
        """Alias of :meth:`value` for scalar parameters, reading as intent."""
        return self.value(i)

    @staticmethod
    def _to_python(op_type: OperandType, arr: np.ndarray[Any, Any]) -> Any:
        convert = _PY_SCALAR.get(op_type)
        if convert is not None:
            return convert(arr.reshape(()).item())
        return arr

    # -- checking helpers for validate() --------------------------------------------------------

    def expect_counts(self, inputs: int | Sequence[int], outputs: int | Sequence[int] = 1) -> None:
        """Require one of the allowed input counts and output counts."""
        allowed_in = (inputs,) if isinstance(inputs, int) else tuple(inputs)
        allowed_out = (outputs,) if isinstance(outputs, int) else tuple(outputs)
        if self.n_inputs not in allowed_in:
            self.fail(f"expected {_one_of(allowed_in)} inputs, got {self.n_inputs}")
        if self.n_outputs not in allowed_out:
            self.fail(f"expected {_one_of(allowed_out)} outputs, got {self.n_outputs}")

    def expect_type(self, i: int, *types: OperandType) -> OperandType:
        """Require input ``i`` to be present and of one of ``types``; returns its type."""
        self.expect_present(i)
        t = self.input_type(i)
        if t not in types:
            self.fail(f"expected {_one_of([x.name for x in types])}, got {t.name}", input=i)
        return t

    def expect_optional_type(self, i: int, *types: OperandType) -> None:
        """Like :meth:`expect_type` but an omitted input is accepted."""
        if not self.is_omitted(i):
            self.expect_type(i, *types)

    def expect_output_type(self, j: int, *types: OperandType) -> OperandType:
        """Require output ``j`` to be of one of ``types``; returns its type."""
        t = self.output_type(j)
        if t not in types:
            self.fail(f"expected {_one_of([x.name for x in types])}, got {t.name}", output=j)
        return t

    def expect_present(self, i: int) -> None:
        """Require input ``i`` not to be omitted."""
        if i < self.n_inputs and self.operand(i).is_omitted:
            self.fail("this input is required but has no value", input=i)

    def expect_same_type(self, i: int, j: int) -> None:
        """Require inputs ``i`` and ``j`` to have the same operand type."""
        if self.input_type(i) != self.input_type(j):
            self.fail(f"expected {self.input_type(j).name} like input {j}, got "
                      f"{self.input_type(i).name}", input=i)

    def expect_output_like_input(self, j: int = 0, i: int = 0) -> None:
        """Require output ``j`` to have the type (and quantisation) of input ``i``."""
        src, dst = self.operand(i), self.output_operand(j)
        if dst.type != src.type:
            self.fail(f"expected {src.type.name} like input {i}, got {dst.type.name}", output=j)

    def expect_output_quant_like_input(self, j: int = 0, i: int = 0) -> None:
        """Require a quantised output ``j`` to keep input ``i``'s scale and zero point."""
        src, dst = self.operand(i), self.output_operand(j)
        if dst.type in QUANT_TYPES and dst.type == src.type and (
                dst.scale != src.scale or dst.zero_point != src.zero_point):
            self.fail(f"expected the scale and zero point of input {i} ({src.scale}, "
                      f"{src.zero_point}), got ({dst.scale}, {dst.zero_point})", output=j)

    def expect_rank_at_least(self, i: int, low: int) -> None:
        """Require input ``i`` to have rank ≥ ``low``, when its rank is known.

        A declared tensor cannot have rank 0 (empty dims mean unknown rank), so for ``low=1``
        this only bites on actual values, i.e. when called from ``prepare``.
        """
        rank = self.rank_or_none(i)
        if rank is not None and rank < low:
            self.fail(f"expected rank of at least {low}, got {rank}", input=i)

    def expect_rank(self, i: int, *ranks: int) -> None:
        """Require input ``i`` to have one of ``ranks``, when its rank is known."""
        rank = self.rank_or_none(i)
        if rank is not None and rank not in ranks:
            self.fail(f"expected rank {_one_of(ranks)}, got {rank}", input=i)

    def expect_rank_between(self, i: int, low: int, high: int) -> None:
        """Require ``low <= rank <= high`` for input ``i``, when its rank is known."""
        rank = self.rank_or_none(i)
        if rank is not None and not low <= rank <= high:
            self.fail(f"expected rank between {low} and {high}, got {rank}", input=i)

    def expect_scalar(self, i: int, *types: OperandType) -> None:
        """Require input ``i`` to be a scalar of one of ``types`` (e.g. ``INT32``)."""
        self.expect_type(i, *types)

    def expect_activation(self, i: int) -> None:
        """Require input ``i`` to be an INT32 fused-activation code (0..3 when constant)."""
        self.expect_scalar(i, OperandType.INT32)
        code = self.constant(i)
        if code is not None and code not in tuple(FusedActivation):
            self.fail(f"invalid fused activation code {code} (expected 0=NONE, 1=RELU, "
                      "2=RELU1, 3=RELU6)", input=i)

    def expect_axis(self, i: int, rank: int | None, *, allow_end: bool = False) -> int | None:
        """Require a constant INT32 axis in ``[-rank, rank)``; returns it normalised (or None).

        With ``allow_end`` the range is ``[-(rank+1), rank]`` (EXPAND_DIMS style).
        """
        self.expect_scalar(i, OperandType.INT32)
        axis = self.constant(i)
        if axis is None or rank is None:
            return None
        n = rank + 1 if allow_end else rank
        if not -n <= axis < n:
            self.fail(f"axis {axis} is out of range for rank {rank} (expected [{-n}, {n}))",
                      input=i)
        return int(axis) % n


class ExecutionContext(OperationContext):
    """An operation at execution time: every input's value is known."""

    def __init__(
        self,
        operands: Sequence[Operand],
        operation: Operation,
        index: int,
        definition: OperationDef,
        values: Callable[[int], np.ndarray[Any, Any] | None],
        *,
        relaxed: bool = False,
    ) -> None:
        super().__init__(
            operands, operation, index, definition, relaxed=relaxed,
            dims=lambda k: _shape_of(values(k)), constant=values,
        )
        #: Output shapes computed by ``prepare``, set by the interpreter before ``execute``.
        self.output_shapes: list[Shape] = []

    def run_model(self, model: Model, values: Sequence[np.ndarray[Any, Any]]
                  ) -> list[np.ndarray[Any, Any]]:
        """Run a model an operation refers to (IF's branches, WHILE's condition and body) on
        ``values``, its inputs; returns its outputs.

        The executor's hook: the reference interpreter runs the model on its own kernels (and
        keeps its plan for the next call); an executor that cannot raises ``OpFailed``.
        """
        raise OpFailed(f"{self.where()}: this executor cannot run referenced models")

    def rank(self, i: int) -> int:
        """Actual rank of input ``i`` (0 for scalars; omitted inputs raise ``BadData``)."""
        return len(self.shape(i))

    def shape(self, i: int) -> Shape:
        """Actual shape of input ``i``."""
        return tuple(int(d) for d in self.tensor(i).shape)

    def input(self, i: int) -> np.ndarray[Any, Any] | None:
        """The array of input ``i`` (0-d for scalars), or None if omitted."""
        if self.is_omitted(i):
            return None
        return self._constant(self.operation.inputs[i])

    def tensor(self, i: int) -> np.ndarray[Any, Any]:
        """The array of a required tensor input ``i``."""
        arr = self.input(i)
        if arr is None:
            self.fail("this input is required but has no value", input=i)
        return arr

    def output_dtype(self, j: int) -> np.dtype[Any]:
        """The numpy dtype of output ``j``."""
        return dtype_of(self.output_type(j))

    def out(self, j: int, *, overlap: bool = False) -> np.ndarray[Any, Any] | None:
        """Where the kernel may compute output ``j`` in place, or None (return a new array).

        Set only when output ``j`` is a model output whose caller destination has exactly the
        shape ``prepare`` computed (``output_shapes[j]``) and the output's dtype, and writing it
        clobbers no value still needed. ``overlap`` says the kernel computes correctly into a
        destination that overlaps its inputs (numpy ufuncs with ``out=`` do); without it a
        destination overlapping an input is not offered. A kernel that uses it returns it.
        """
        return None


def _shape_of(arr: np.ndarray[Any, Any] | None) -> tuple[int, ...]:
    if arr is None:
        return ()
    return tuple(int(d) for d in arr.shape)


def _one_of(items: Sequence[Any]) -> str:
    words = [str(x) for x in items]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def static_context(model: Model, index: int) -> OperationContext:
    """Operation ``index`` of a finished ``model`` seen with its inferred dims and the model's
    constants: what a driver's partition and compile steps read parameters through."""
    op = model.operations[index]
    inferred = model.inferred_dims
    return OperationContext(model.operands, op, index, lookup(op.type), relaxed=model.relaxed,
                            dims=lambda k: inferred[k], constant=model.constant_value)
