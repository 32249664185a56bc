"""Declarative per-operation conformance cases and their variants.

A case is one operation with its arguments and either literal expected outputs or a
``reference`` function computing them in float64, independently of nnrt's kernels::

    OpCase("add_broadcast", OperationType.ADD,
           inputs=(f32([[1.0], [2.0]]), f32([[10.0, 20.0, 30.0]]), i32s(0)),
           outputs=(out(TENSOR_FLOAT32, (2, 3)),),
           reference=lambda a, b, act: [a + b])

``expand(case)`` turns a case into variants (see ``VARIANTS``); ``nnrt.testing.check`` runs them.
The reference function receives tensor inputs as float64 / int64 / bool ndarrays holding the
exact values the variant feeds (float16-rounded in the float16 variant), scalars as Python
values, and omitted inputs as None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from nnrt.model.operand import dtype_of, is_scalar
from nnrt.model.types import OperandType, OperationType

__all__ = [
    "VARIANTS",
    "Arg",
    "CaseVariant",
    "OpCase",
    "b8",
    "bools",
    "expand",
    "f16",
    "f32",
    "f32s",
    "i32",
    "i32s",
    "omitted",
    "out",
    "per_channel",
    "q8",
    "q8s",
    "quant",
    "spec_quantize",
    "tensor",
    "to_nchw",
]

T = OperandType

#: Variant names. ``base`` is the case as written; ``float16`` turns TENSOR_FLOAT32 / FLOAT32
#: operands into TENSOR_FLOAT16 / FLOAT16; ``relaxed`` sets relax_computation_float32_to_float16;
#: ``consts`` makes tensor inputs constants; ``params_as_inputs`` makes scalar parameters model
#: inputs; ``dynamic_output`` declares the outputs' dims unknown (0).
VARIANTS = ("base", "float16", "relaxed", "consts", "params_as_inputs", "dynamic_output")

FLOAT32_TOL = (1e-5, 5 * 2.0**-23)  # (atol, rtol)
FLOAT16_TOL = (5 * 2.0**-10, 5 * 2.0**-10)
#: Quantised outputs may differ from the expected values by this many steps: NNAPI's generated
#: tests allow one (the generator rounds a float result; the kernels compute in fixed point).
QUANT_TOL = 1


@dataclass(frozen=True)
class Arg:
    """One operand of a case.

    For inputs ``value`` is the data (``omitted=True`` gives NO_VALUE); for outputs it is the
    literal expected result, or None when the case has a ``reference``. ``role`` is ``"input"``
    (a model input), ``"const"`` (a constant) or ``"auto"`` (tensors inputs, scalars constants,
    swapped by the ``consts`` / ``params_as_inputs`` variants).
    """

    type: OperandType
    dims: tuple[int, ...] = ()
    value: Any = None
    scale: float = 0.0
    zero_point: int = 0
    role: str = "auto"
    omitted: bool = False
    channel_quant: tuple[int, tuple[float, ...]] | None = None

    @property
    def scalar(self) -> bool:
        """Whether the operand is a scalar."""
        return is_scalar(self.type)


def tensor(data: Any, type: OperandType = T.TENSOR_FLOAT32, *,
           dims: Sequence[int] | None = None, role: str = "auto", scale: float = 0.0,
           zero_point: int = 0) -> Arg:
    """A tensor argument holding ``data`` (dims default to the data's shape)."""
    arr = np.asarray(data, dtype=dtype_of(type))
    shape = tuple(dims) if dims is not None else tuple(arr.shape)
    return Arg(type, shape, arr.reshape(shape), scale, zero_point, role)


def f32(data: Any, **kw: Any) -> Arg:
    """A TENSOR_FLOAT32 argument."""
    return tensor(data, T.TENSOR_FLOAT32, **kw)


def f16(data: Any, **kw: Any) -> Arg:
    """A TENSOR_FLOAT16 argument (prefer f32 + the float16 variant)."""
    return tensor(data, T.TENSOR_FLOAT16, **kw)


def i32(data: Any, **kw: Any) -> Arg:
    """A TENSOR_INT32 argument."""
    return tensor(data, T.TENSOR_INT32, **kw)


def b8(data: Any, **kw: Any) -> Arg:
    """A TENSOR_BOOL8 argument."""
    return tensor(data, T.TENSOR_BOOL8, **kw)


def i32s(value: int, role: str = "auto") -> Arg:
    """An INT32 scalar parameter."""
    return Arg(T.INT32, (), int(value), role=role)


def f32s(value: float, role: str = "auto") -> Arg:
    """A FLOAT32 scalar parameter (FLOAT16 in the float16 variant)."""
    return Arg(T.FLOAT32, (), float(value), role=role)


def bools(value: bool, role: str = "auto") -> Arg:
    """A BOOL scalar parameter."""
    return Arg(T.BOOL, (), bool(value), role=role)


def quant(data: Any, type: OperandType, scale: float, zero_point: int = 0, **kw: Any) -> Arg:
    """A quantised tensor argument holding the integer ``data`` (already quantised)."""
    return tensor(data, type, scale=scale, zero_point=zero_point, **kw)


def q8(data: Any, scale: float, zero_point: int, **kw: Any) -> Arg:
    """A TENSOR_QUANT8_ASYMM argument holding the uint8 values ``data``."""
    return quant(data, T.TENSOR_QUANT8_ASYMM, scale, zero_point, **kw)


def q8s(data: Any, scale: float, zero_point: int, **kw: Any) -> Arg:
    """A TENSOR_QUANT8_ASYMM_SIGNED argument holding the int8 values ``data``."""
    return quant(data, T.TENSOR_QUANT8_ASYMM_SIGNED, scale, zero_point, **kw)


def per_channel(data: Any, channel_dim: int, scales: Sequence[float], *,
                dims: Sequence[int] | None = None, role: str = "auto") -> Arg:
    """A TENSOR_QUANT8_SYMM_PER_CHANNEL argument (int8 ``data``, one scale per channel)."""
    arg = tensor(data, T.TENSOR_QUANT8_SYMM_PER_CHANNEL, dims=dims, role=role)
    return replace(arg, channel_quant=(int(channel_dim), tuple(float(s) for s in scales)))


#: The clamp NNAPI's test generator applies per type when it quantises spec values.
_SPEC_CLAMPS = {
    T.TENSOR_QUANT8_ASYMM: (0, 255),
    T.TENSOR_QUANT16_ASYMM: (0, 65535),
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127),
    T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    T.TENSOR_QUANT8_SYMM: (-128, 127),
    T.TENSOR_QUANT16_SYMM: (-32768, 32767),
    T.TENSOR_INT32: (-(2**31), 2**31 - 1),
}


def spec_quantize(values: Any, type: OperandType, scale: float, zero_point: int = 0, *,
                  channel: tuple[int, Sequence[float]] | None = None) -> Any:
    """Real ``values`` quantised as NNAPI's test generator does for a spec's type variations.

    ``values / scale`` (and / the per-channel scales along ``channel = (dim, scales)``) plus
    ``zero_point`` in float64, rounded half to even (``np.round``), clamped to the type's range.
    Quantised cases derived from a spec's float vectors (``DataTypeConverter``) use this, so
    their inputs and expected outputs are the generator's own numbers.
    """
    v = np.asarray(values, np.float64)
    if scale != 0:
        v = v / scale
    if channel is not None:
        dim, scales = channel
        shape = [1] * v.ndim
        shape[dim] = len(scales)
        v = v / np.asarray(scales, np.float64).reshape(shape)
    v = np.round(v + zero_point)
    low, high = _SPEC_CLAMPS[type]
    return np.clip(v, low, high).astype(dtype_of(type))


def omitted(type: OperandType, dims: Sequence[int] = ()) -> Arg:
    """An omitted optional input (NO_VALUE)."""
    return Arg(type, tuple(dims), None, omitted=True, role="const")


def out(type: OperandType, dims: Sequence[int], expected: Any = None, *,
        scale: float = 0.0, zero_point: int = 0) -> Arg:
    """An output with declared ``dims`` and optionally a literal ``expected`` value."""
    value = None if expected is None else np.asarray(expected)
    return Arg(type, tuple(dims), value, scale, zero_point, role="output")


@dataclass(frozen=True)
class OpCase:
    """One operation, its arguments and its expected results."""

    name: str
    op: OperationType
    inputs: tuple[Arg, ...]
    outputs: tuple[Arg, ...]
    reference: Callable[..., Sequence[Any]] | None = None
    #: Variants to run; None means every applicable one.
    variants: tuple[str, ...] | None = None
    #: Variants to leave out of the applicable ones.
    skip: tuple[str, ...] = ()
    #: Tolerance override (atol, rtol) for float comparisons, only where an op's NNAPI spec is
    #: looser than the defaults; None uses the defaults for the dtype (``docs/testing.md``).
    tolerance: tuple[float, float] | None = None


@dataclass(frozen=True)
class CaseVariant:
    """A concrete, runnable variant of a case."""

    case: OpCase
    variant: str
    inputs: tuple[Arg, ...]
    outputs: tuple[Arg, ...]
    relaxed: bool = False
    reference: Callable[..., Sequence[Any]] | None = field(default=None, repr=False)

    @property
    def id(self) -> str:
        """``"<case name>[<variant>]"``, a stable test id."""
        return f"{self.case.name}[{self.variant}]"


def expand(case: OpCase) -> list[CaseVariant]:
    """Every variant of ``case`` that applies to it."""
    operands = (*case.inputs, *case.outputs)
    has_f32 = any(a.type in (T.TENSOR_FLOAT32, T.FLOAT32) for a in operands)
    # A quantised operation keeps its FLOAT32 scalars (NNAPI requires them: SOFTMAX's beta).
    quant_params = (any(a.type in _QUANT_TYPES for a in operands)
                    and any(a.type == T.FLOAT32 for a in operands))
    auto_tensors = any(a.role == "auto" and not a.scalar for a in case.inputs)
    auto_scalars = any(a.role == "auto" and a.scalar and not a.omitted for a in case.inputs)
    applicable = {
        "base": True,
        "float16": has_f32 and not quant_params,
        "relaxed": has_f32 and not quant_params,
        "consts": auto_tensors,
        "params_as_inputs": auto_scalars,
        "dynamic_output": True,
    }
    wanted = case.variants if case.variants is not None else VARIANTS
    result = []
    for name in wanted:
        if name not in applicable:
            raise ValueError(f"case {case.name}: unknown variant {name!r}")
        if applicable[name] and name not in case.skip:
            result.append(_make_variant(case, name))
    return result


def _make_variant(case: OpCase, variant: str) -> CaseVariant:
    inputs, outputs = case.inputs, case.outputs
    if variant == "float16":
        inputs = tuple(_to_float16(a) for a in inputs)
        outputs = tuple(_to_float16(a) for a in outputs)
    elif variant == "consts":
        inputs = tuple(replace(a, role="const") if a.role == "auto" and not a.scalar else a
                       for a in inputs)
    elif variant == "params_as_inputs":
        inputs = tuple(replace(a, role="input") if a.role == "auto" and a.scalar
                       and not a.omitted else a for a in inputs)
    elif variant == "dynamic_output":
        outputs = tuple(replace(a, dims=(0,) * len(a.dims)) for a in outputs)
    return CaseVariant(case, variant, inputs, outputs, relaxed=variant == "relaxed",
                       reference=case.reference)


_QUANT_TYPES = frozenset(_SPEC_CLAMPS) - {T.TENSOR_INT32}
_FLOAT16_OF = {T.TENSOR_FLOAT32: T.TENSOR_FLOAT16, T.FLOAT32: T.FLOAT16}


def _to_float16(arg: Arg) -> Arg:
    new_type = _FLOAT16_OF.get(arg.type)
    if new_type is None:
        return arg
    value = arg.value
    if value is not None and arg.role != "output":
        value = (np.asarray(value, dtype=np.float16) if not arg.scalar
                 else float(np.float16(value)))
    return replace(arg, type=new_type, value=value)


def to_nchw(case: OpCase, *, layout_input: int, tensors: Sequence[int] = (0,),
            outputs: Sequence[int] = (0,), name: str | None = None) -> OpCase:
    """The NCHW twin of an NHWC case: 4-D data of the listed inputs/outputs transposed and the
    BOOL layout input at ``layout_input`` set to true; the reference is wrapped to match."""
    to_c = (0, 3, 1, 2)
    to_l = (0, 2, 3, 1)

    def convert(arg: Arg) -> Arg:
        dims = tuple(arg.dims[k] for k in to_c) if len(arg.dims) == 4 else arg.dims
        value = arg.value
        if value is not None:
            value = np.transpose(np.asarray(value), to_c)
        return replace(arg, dims=dims, value=value)

    new_inputs = list(case.inputs)
    for i in tensors:
        new_inputs[i] = convert(new_inputs[i])
    new_inputs[layout_input] = replace(new_inputs[layout_input], value=True)
    new_outputs = list(case.outputs)
    for j in outputs:
        new_outputs[j] = convert(new_outputs[j])
    reference = case.reference
    wrapped = None
    if reference is not None:
        ref = reference

        def wrapped(*args: Any) -> list[Any]:
            args_l = list(args)
            for i in tensors:
                if args_l[i] is not None:
                    args_l[i] = np.transpose(args_l[i], to_l)
            args_l[layout_input] = False
            results = list(ref(*args_l))
            for j in outputs:
                results[j] = np.transpose(np.asarray(results[j]), to_c)
            return results

    return replace(case, name=name or f"{case.name}_nchw", inputs=tuple(new_inputs),
                   outputs=tuple(new_outputs), reference=wrapped)

