"""Driver conformance, part 1: the per-operation conformance cases run through a driver's HAL.

Every case variant of :mod:`nnrt.testing` (or a seeded sample of them) whose one-operation model
the driver supports is prepared, executed through the public HAL methods and compared by
:func:`nnrt.testing.check_variant` as a driver's (quantised outputs within NNAPI's one step, also
where a case pins the reference's exact rounding). Variants the driver does not support are
skipped. Also picks the *probe*: one supported case model the HAL and process checks exercise.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.hal.base import Driver
from nnrt.model.model import Model
from nnrt.model.operand import is_scalar
from nnrt.model.types import OperationType
from nnrt.testing.cases import all_cases
from nnrt.testing.check import build, check_variant
from nnrt.testing.spec import CaseVariant, expand

__all__ = ["Failure", "OpResults", "Probe", "all_variants", "find_probe", "find_unsupported",
           "representative_variants", "run_variants", "select_variants"]

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Failure:
    """One conformance failure: where (a variant id or a check name) and what went wrong."""

    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


@dataclass(frozen=True)
class OpResults:
    """What running the case variants gave: counts, failures and the first unsupported one."""

    run: int
    skipped: int
    failures: tuple[Failure, ...]
    unsupported: CaseVariant | None


@dataclass(frozen=True)
class Probe:
    """A supported case variant with static shapes and tensor inputs, built once."""

    variant: CaseVariant
    model: Model
    feed: list[Any]


class _NotSupported(Exception):
    """The driver does not support a variant's operation (internal control flow)."""


class _StageFailed(Exception):
    """A HAL call failed while running a variant; the message names the call."""


def all_variants() -> list[CaseVariant]:
    """Every conformance variant of every case, in case order."""
    return [v for case in all_cases() for v in expand(case)]


def select_variants(count: int | None, seed: int) -> list[CaseVariant]:
    """Every variant (``count`` None), or a seeded sample of ``count`` kept in case order."""
    variants = all_variants()
    if count is None or count >= len(variants):
        return variants
    chosen = sorted(random.Random(seed).sample(range(len(variants)), count))
    return [variants[i] for i in chosen]


def representative_variants() -> list[CaseVariant]:
    """The first variant, in case order, of each (operation, variant kind, type of the first
    tensor operand): every operation on every tensor type its cases use, each in every form
    (constants, parameters as inputs, dynamic outputs, float16, relaxed) it takes; about an
    eighth of :func:`all_variants`, for a driver whose full run is a test of its own."""
    chosen: dict[tuple[object, ...], CaseVariant] = {}
    for variant in all_variants():
        tensors = [a.type for a in (*variant.inputs, *variant.outputs) if not a.scalar]
        key = (variant.case.op, variant.variant, tensors[0] if tensors else None)
        chosen.setdefault(key, variant)
    return list(chosen.values())


def execute_on(driver: Driver, model: Model, feed: Sequence[Any]) -> list[Array]:
    """Prepare ``model`` on ``driver``, execute it once on ``feed`` and release it.

    Raises :class:`_NotSupported` if the driver does not support every operation, and
    :class:`_StageFailed` naming the HAL call that raised. The driver sees copies of the
    inputs; changing them is a failure.
    """
    flags = _stage("supported_operations", driver.supported_operations, model)
    if not all(flags):
        raise _NotSupported
    inputs = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in feed]
    prepared = _stage("prepare", driver.prepare, model)
    try:
        result = _stage("execute", prepared.execute, inputs)
    finally:
        _stage("release", prepared.release)
    for k, (given, original) in enumerate(zip(inputs, feed, strict=True)):
        if isinstance(original, np.ndarray) and not np.array_equal(
                given, original, equal_nan=original.dtype.kind == "f"):
            raise _StageFailed(f"execute changed the caller's input {k}")
    return list(result.outputs)


def _stage(name: str, call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except Exception as exc:
        raise _StageFailed(f"{name} raised {type(exc).__name__}: {exc}") from exc


def run_variants(driver: Driver, variants: Sequence[CaseVariant]) -> OpResults:
    """Run each variant the driver supports; count the others as skipped."""
    run = skipped = 0
    failures: list[Failure] = []
    unsupported: CaseVariant | None = None

    def runner(model: Model, feed: list[Any]) -> list[Array]:
        return execute_on(driver, model, feed)

    for variant in variants:
        try:
            check_variant(variant, runner, driver=True)
        except _NotSupported:
            skipped += 1
            if unsupported is None:
                unsupported = variant
            continue
        except AssertionError as exc:
            failures.append(_failure(variant, str(exc)))
        except _StageFailed as exc:
            failures.append(Failure(variant.id, str(exc)))
        except Exception as exc:  # building or comparing broke: still this variant's failure
            failures.append(Failure(variant.id, f"{type(exc).__name__}: {exc}"))
        run += 1
    return OpResults(run, skipped, tuple(failures), unsupported)


def _failure(variant: CaseVariant, message: str) -> Failure:
    """``check_variant`` messages start with the variant id: keep the rest as the detail."""
    prefix = variant.id
    detail = message[len(prefix):].lstrip(": ") if message.startswith(prefix) else message
    return Failure(variant.id, detail or message)


def _base_variants() -> list[CaseVariant]:
    """The ``base`` variant of every case, ADD cases first (the usual probe)."""
    variants = [v for case in all_cases() for v in expand(case) if v.variant == "base"]
    return sorted(variants, key=lambda v: v.case.op != OperationType.ADD)


def _probe_shape_ok(model: Model, feed: Sequence[Any]) -> bool:
    """Tensor inputs only (at least one, all dims known) and static output shapes."""
    if not feed or not all(isinstance(v, np.ndarray) and v.ndim > 0 for v in feed):
        return False
    operands, inferred = model.operands, model.inferred_dims
    for k in model.inputs:
        dims = operands[k].dims
        if is_scalar(operands[k].type) or not dims or not all(d > 0 for d in dims):
            return False
    return all(inferred[k] and all(d > 0 for d in inferred[k]) for k in model.outputs)


def find_probe(driver: Driver) -> Probe | None:
    """The first base variant the driver supports fit for the HAL checks, or None."""
    for variant in _base_variants():
        model, feed = build(variant)
        if not _probe_shape_ok(model, feed):
            continue
        try:
            flags = driver.supported_operations(model)
        except Exception:
            continue
        if all(flags):
            return Probe(variant, model, feed)
    return None


def find_unsupported(driver: Driver, known: CaseVariant | None) -> CaseVariant | None:
    """``known``, or the first base variant the driver does not support (None: it runs all)."""
    if known is not None:
        return known
    for variant in _base_variants():
        model, _ = build(variant)
        try:
            flags = driver.supported_operations(model)
        except Exception:
            continue
        if not all(flags):
            return variant
    return None
