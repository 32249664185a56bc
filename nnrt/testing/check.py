"""Build, run and check conformance case variants against any runner (driver, interpreter)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.model import Model
from nnrt.model.operand import dtype_of
from nnrt.model.types import OperandType
from nnrt.ops.quant import is_quantized
from nnrt.testing.spec import FLOAT16_TOL, FLOAT32_TOL, QUANT_TOL, Arg, CaseVariant

__all__ = ["Runner", "build", "check_variant", "expected_outputs", "quant_tolerance",
           "tolerance"]

#: Runs a finished model on a list of inputs and returns its outputs.
Runner = Callable[[Model, list[Any]], Sequence[Any]]

T = OperandType


def build(variant: CaseVariant) -> tuple[Model, list[Any]]:
    """The one-operation model of ``variant`` and the input values to feed it."""
    model = Model()
    op_inputs: list[int] = []
    model_inputs: list[int] = []
    feed: list[Any] = []
    for arg in variant.inputs:
        index = _add(model, arg)
        op_inputs.append(index)
        if arg.omitted:
            model.set_operand_value(index, None)
        elif arg.type == T.SUBGRAPH:
            model.set_operand_value_from_model(index, arg.value)
        elif arg.role in ("const",) or (arg.role == "auto" and arg.scalar):
            model.set_operand_value(index, arg.value)
        else:
            model_inputs.append(index)
            feed.append(arg.value)
    op_outputs = [_add(model, arg) for arg in variant.outputs]
    model.add_operation(variant.case.op, op_inputs, op_outputs)
    model.identify_inputs_and_outputs(model_inputs, op_outputs)
    model.relax_computation_float32_to_float16(variant.relaxed)
    return model.finish(), feed


def _add(model: Model, arg: Arg) -> int:
    index = model.add_operand(arg.type, arg.dims, arg.scale, arg.zero_point)
    if arg.channel_quant is not None:
        model.set_operand_symm_per_channel_quant_params(index, *arg.channel_quant)
    return index


def expected_outputs(variant: CaseVariant) -> list[np.ndarray[Any, Any]]:
    """The expected outputs: literal values, or the case's float64 reference on the inputs."""
    if variant.reference is None:
        return [np.asarray(arg.value) for arg in variant.outputs]
    args = [_reference_arg(arg) for arg in variant.inputs]
    return [np.asarray(r) for r in variant.reference(*args)]


def _reference_arg(arg: Arg) -> Any:
    if arg.omitted:
        return None
    if arg.scalar:
        return arg.value
    arr = np.asarray(arg.value, dtype=dtype_of(arg.type))
    if arr.dtype.kind == "f":
        return arr.astype(np.float64)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    return arr


def tolerance(variant: CaseVariant, arg: Arg) -> tuple[float, float]:
    """(atol, rtol) for a float output of ``variant``."""
    if variant.case.tolerance is not None:
        return variant.case.tolerance
    if arg.type == T.TENSOR_FLOAT16 or variant.relaxed:
        return FLOAT16_TOL
    return FLOAT32_TOL


def quant_tolerance(variant: CaseVariant, *, driver: bool = False) -> int:
    """The absolute tolerance, in quantisation steps, for a quantised output of ``variant``:
    the case's own (a case may pin the reference's exact rounding: ties, double roundings),
    for a ``driver`` at least NNAPI's (one step: what NNAPI's CTS allows a driver)."""
    if variant.case.tolerance is not None:
        steps = int(variant.case.tolerance[0])
        return max(steps, QUANT_TOL) if driver else steps
    return QUANT_TOL


def check_variant(variant: CaseVariant, runner: Runner, *, driver: bool = False) -> None:
    """Run ``variant`` through ``runner``; raise AssertionError describing any mismatch.

    ``driver``: ``runner`` is a driver, held to NNAPI's tolerance for quantised outputs even
    where the case pins the reference interpreter's exact rounding (:func:`quant_tolerance`).
    """
    model, feed = build(variant)
    actual = list(runner(model, feed))
    expected = expected_outputs(variant)
    if len(actual) != len(variant.outputs):
        raise AssertionError(f"{variant.id}: {len(actual)} outputs, expected "
                             f"{len(variant.outputs)}")
    for j, (arg, got, want) in enumerate(zip(variant.outputs, actual, expected, strict=True)):
        got = np.asarray(got)
        where = f"{variant.id} output {j}"
        dtype = dtype_of(arg.type)
        if got.dtype != dtype:
            raise AssertionError(f"{where}: dtype {got.dtype}, expected {dtype}")
        if got.shape != want.shape:
            raise AssertionError(f"{where}: shape {got.shape}, expected {want.shape}")
        if dtype.kind == "f":
            atol, rtol = tolerance(variant, arg)
            _check_close(where, got.astype(np.float64), want.astype(np.float64), atol, rtol)
        elif is_quantized(arg.type):
            _check_steps(where, got, want, quant_tolerance(variant, driver=driver))
        elif not np.array_equal(got, want.astype(dtype)):
            raise AssertionError(f"{where}: got\n{got}\nexpected\n{want}")


def _check_steps(where: str, got: np.ndarray[Any, Any], want: np.ndarray[Any, Any],
                 atol: int) -> None:
    err = np.abs(got.astype(np.int64) - np.asarray(want).astype(np.int64))
    if np.any(err > atol):
        bad = np.argwhere(err > atol)[:5]
        detail = ", ".join(f"{tuple(int(k) for k in i)}: got {got[tuple(i)]!r} want "
                           f"{want[tuple(i)]!r}" for i in bad)
        raise AssertionError(f"{where}: {int((err > atol).sum())} values more than {atol} "
                             f"quantisation step(s) off; first: {detail}")


def _check_close(where: str, got: np.ndarray[Any, Any], want: np.ndarray[Any, Any],
                 atol: float, rtol: float) -> None:
    both_nan = np.isnan(got) & np.isnan(want)
    same_inf = np.isinf(want) & (got == want)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got - want)
        ok = both_nan | same_inf | (err <= atol + rtol * np.abs(want))
    if not np.all(ok):
        bad = np.argwhere(~ok)[:5]
        detail = ", ".join(f"{tuple(int(k) for k in i)}: got {got[tuple(i)]!r} want "
                           f"{want[tuple(i)]!r}" for i in bad)
        raise AssertionError(f"{where}: {int((~ok).sum())} values outside atol={atol:g} "
                             f"rtol={rtol:g}; first: {detail}")
