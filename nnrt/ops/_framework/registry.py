"""The operation registry: one definition per operation type, each with three small functions.

An op module defines a class per operation (or builds definitions in a loop for a family) and
registers it::

    @register(OperationType.SOFTMAX, inputs=("input", "beta", "axis"),
              kernel_types=FLOAT_TENSOR_TYPES)
    class Softmax:
        INPUT, BETA, AXIS = 0, 1, 2

        @staticmethod
        def validate(ctx: OperationContext) -> None: ...      # NNAPI's static rules
        @staticmethod
        def prepare(ctx: OperationContext) -> list[Shape]: ... # output shapes
        @staticmethod
        def execute(ctx: ExecutionContext) -> list[np.ndarray]: ...

``validate`` runs at ``Model.finish()`` and sees operand types, declared dims and constant values.
``prepare`` computes output shapes from input shapes and values; it runs at finish when those are
known statically (catching shape errors early) and again before every execution. ``execute`` is
the numpy reference kernel; it runs under ``np.errstate(all="ignore")`` and its results are cast
to the output operands' dtypes by the interpreter.

An optional ``specialize`` serves operations whose every input shape, type and constant is fixed
when an execution plan is built: it returns the kernel reduced to one function of the input
arrays (a ufunc call, say), which the plan then calls without an execution context — computing
exactly what ``execute`` computes for those facts — or None to keep the general kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from nnrt.model.types import OperandType, OperationType

if TYPE_CHECKING:
    from nnrt.ops._framework.context import ExecutionContext, OperationContext

__all__ = [
    "OperationDef",
    "Shape",
    "Specialized",
    "add_definition",
    "definitions",
    "lookup",
    "register",
]

Shape = tuple[int, ...]
Validate = Callable[["OperationContext"], None]
Prepare = Callable[["OperationContext"], Sequence[Shape]]
Execute = Callable[["ExecutionContext"], Sequence[Any]]
Supports = Callable[["OperationContext"], "str | None"]
#: A specialised kernel: the function computing output 0 and the input slots whose arrays it
#: takes, in order.
Specialized = tuple[Callable[..., Any], tuple[int, ...]]
Specialize = Callable[["OperationContext"], "Specialized | None"]


@dataclass(frozen=True)
class OperationDef:
    """How nnrt validates, shapes and runs one operation type.

    ``inputs`` / ``outputs`` name the operands for error messages (extra inputs of longer
    signatures are named too). ``kernel_types`` lists the operand types of input
    ``type_input`` that the reference kernel implements; a valid model using another type is
    reported unsupported, never computed wrongly. ``supports`` (optional) refines that check,
    e.g. for an op whose output type selects the kernel.
    """

    type: OperationType
    validate: Validate
    prepare: Prepare
    execute: Execute
    inputs: tuple[str, ...]
    outputs: tuple[str, ...] = ("output",)
    kernel_types: frozenset[OperandType] = frozenset()
    type_input: int = 0
    #: Optional finer check: returns why a valid operation is not implemented, or None.
    supports: Supports | None = None
    #: Input names per input count, for ops whose signatures put different operands in the same
    #: slot (e.g. explicit vs implicit padding); counts not listed use ``inputs``.
    signatures: Mapping[int, tuple[str, ...]] | None = None
    #: Optional: for a one-output operation whose input shapes, types and constants are all
    #: fixed (a static context, ``shape()`` never ``Unknown`` for its tensors), the kernel as one
    #: function of the input arrays computing what ``execute`` computes; None when those facts
    #: need the general kernel (see the module docstring).
    specialize: Specialize | None = None
    #: NNAPI's own rank limit for an operation nnrt takes at higher rank (up to
    #: ``NNRT_MAX_RANK``, the ``com.nnrt.rank6`` extension); None when nnrt keeps NNAPI's limit
    #: (or NNAPI has none). A model with a tensor of this operation above it is marked
    #: (:func:`nnrt.ops._framework.extensions.model_extensions`).
    nnapi_max_rank: int | None = None
    #: Whether output shapes depend on the *values* of float inputs, not only on their shapes
    #: (BOX_WITH_NMS_LIMIT and GENERATE_PROPOSALS keep a data-dependent number of boxes, a WHILE
    #: loop's iteration count may depend on them): an
    #: executor then runs ``prepare`` on every execution instead of reusing the shapes it
    #: computed for the same input shapes.
    shapes_from_values: bool = False

    def input_name(self, slot: int, n_inputs: int | None = None) -> str | None:
        """The name of input ``slot`` in the signature with ``n_inputs`` inputs, if named."""
        names = self.inputs
        if self.signatures is not None and n_inputs is not None and n_inputs in self.signatures:
            names = self.signatures[n_inputs]
        return names[slot] if 0 <= slot < len(names) else None

    def output_name(self, slot: int) -> str | None:
        """The name of output ``slot``, if the definition names it."""
        return self.outputs[slot] if 0 <= slot < len(self.outputs) else None


_REGISTRY: dict[OperationType, OperationDef] = {}

T = TypeVar("T")


def add_definition(definition: OperationDef) -> OperationDef:
    """Register ``definition``; registering the same operation type twice is a bug."""
    if definition.type in _REGISTRY:
        raise RuntimeError(f"operation {definition.type.name} is registered twice")
    _REGISTRY[definition.type] = definition
    return definition


def register(
    op_type: OperationType,
    *,
    inputs: Sequence[str],
    outputs: Sequence[str] = ("output",),
    kernel_types: frozenset[OperandType] | set[OperandType],
    type_input: int = 0,
    signatures: Mapping[int, Sequence[str]] | None = None,
    nnapi_max_rank: int | None = None,
    shapes_from_values: bool = False,
) -> Callable[[type[T]], type[T]]:
    """Class decorator registering the class's ``validate``, ``prepare`` and ``execute``."""

    def decorate(cls: type[T]) -> type[T]:
        add_definition(
            OperationDef(
                type=op_type,
                validate=getattr(cls, "validate"),  # noqa: B009 - explicit protocol lookup
                prepare=getattr(cls, "prepare"),  # noqa: B009
                execute=getattr(cls, "execute"),  # noqa: B009
                inputs=tuple(inputs),
                outputs=tuple(outputs),
                kernel_types=frozenset(kernel_types),
                type_input=type_input,
                supports=getattr(cls, "supports", None),
                signatures=({n: tuple(names) for n, names in signatures.items()}
                            if signatures is not None else None),
                nnapi_max_rank=nnapi_max_rank,
                shapes_from_values=shapes_from_values,
            )
        )
        return cls

    return decorate


def lookup(op_type: OperationType) -> OperationDef | None:
    """The definition of ``op_type``, or None when nnrt has no reference kernel for it.

    Complete from the first import of anything under :mod:`nnrt.ops`: Python imports the
    package first, and the package imports every family module.
    """
    return _REGISTRY.get(op_type)


def definitions() -> Mapping[OperationType, OperationDef]:
    """Every registered definition, by operation type."""
    return dict(_REGISTRY)

