"""Driver conformance, part 2: named checks of the HAL protocol, run in this process.

Each check is a function of a :class:`HalContext` that returns quietly when the driver behaves,
raises ``AssertionError`` saying what is wrong, or :class:`SkipCheck` when it does not apply.
Results are compared with :func:`nnrt.testing.check_variant` on the probe's case variant.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nnrt.errors import BadData, BadState, DeadlineMissed, Unsupported
from nnrt.hal.base import MAX_CACHE_FILES, Driver, DriverInfo, PreparedModel
from nnrt.hal.conformance.operations import Probe, find_unsupported
from nnrt.model.builder import ModelBuilder
from nnrt.model.model import Model
from nnrt.testing.check import build, check_variant
from nnrt.testing.spec import CaseVariant

__all__ = ["HAL_CHECKS", "HalContext", "SkipCheck", "compare"]

Array = np.ndarray[Any, Any]

#: Executions per thread in the concurrency check.
_ROUNDS = 25
_JOIN_SECONDS = 60.0
_SENTINEL = 0xA5
_SLACK = 8


class SkipCheck(Exception):
    """A check does not apply to this driver; the message says why."""


@dataclass
class HalContext:
    """What the HAL checks work with: the driver, its factory and the chosen case models."""

    driver: Driver
    factory: Callable[[], Driver]
    probe: Probe | None
    unsupported: CaseVariant | None


def compare(variant: CaseVariant, outputs: Sequence[Any], what: str) -> None:
    """``AssertionError`` if ``outputs`` are not ``variant``'s expected results."""
    try:
        check_variant(variant, lambda model, feed: outputs, driver=True)
    except AssertionError as exc:
        raise AssertionError(f"{what}: {exc}") from None


def _probe(ctx: HalContext) -> Probe:
    if ctx.probe is None:
        raise SkipCheck("the driver supports no conformance case with tensor inputs and static "
                        "output shapes")
    return ctx.probe


def _expect(error: type[Exception], what: str, call: Callable[[], object]) -> str:
    """Run ``call``; '' if it raised ``error``, else a problem description."""
    try:
        result = call()
    except error:
        return ""
    except Exception as exc:
        return f"{what}: raised {type(exc).__name__} ({exc}), expected {error.__name__}"
    if isinstance(result, PreparedModel):
        result.release()
    return f"{what}: returned normally, expected {error.__name__}"


# -- the checks ---------------------------------------------------------------------------------

def check_info(ctx: HalContext) -> None:
    """``info()`` is a valid DriverInfo, stable across calls and across driver instances."""
    first, second = ctx.driver.info(), ctx.driver.info()
    if not isinstance(first, DriverInfo):
        raise AssertionError(f"info() returned {type(first).__name__}, expected DriverInfo")
    if first != second:
        raise AssertionError(f"info() changed between two calls: {first} then {second}")
    if DriverInfo.from_wire(first.to_wire()) != first:
        raise AssertionError(f"info() does not survive the wire: {first}")
    other = ctx.factory().info()
    if other != first:
        raise AssertionError(f"a second driver from the factory reports {other}, the first "
                             f"{first}")


def _multi_op_model() -> Model:
    b = ModelBuilder()
    x, y = b.input("x", (2, 3)), b.input("y", (2, 3))
    s = b.add(x, y)
    m = b.mul(s, x, activation="relu")
    b.output(b.softmax(b.reshape(m, (3, 2))), b.relu(s))
    return b.build()


def check_supported_operations(ctx: HalContext) -> None:
    """One bool per operation, stable, agreeing with ``support()`` (reasons for the others)."""
    models = [("a 5-operation model", _multi_op_model())]
    if ctx.probe is not None:
        models.append((f"case {ctx.probe.variant.id}", ctx.probe.model))
    if ctx.unsupported is not None:
        models.append((f"case {ctx.unsupported.id}", build(ctx.unsupported)[0]))
    for name, model in models:
        count = len(model.operations)
        try:
            flags = ctx.driver.supported_operations(model)
            support = ctx.driver.support(model)
        except Exception as exc:
            raise AssertionError(f"{name} ({count} operations): {type(exc).__name__}: "
                                 f"{exc}") from exc
        if not isinstance(flags, list) or len(flags) != count or not all(
                isinstance(f, bool) for f in flags):
            raise AssertionError(f"{name}: supported_operations returned {flags!r:.80}, "
                                 f"expected {count} bools")
        if ctx.driver.supported_operations(model) != flags:
            raise AssertionError(f"{name}: supported_operations answered differently twice")
        if support.supported != flags:
            raise AssertionError(f"{name}: support() says {support.supported}, "
                                 f"supported_operations {flags}")
        missing = {i for i, ok in enumerate(flags) if not ok} - set(support.reasons)
        bad = [i for i, r in support.reasons.items() if not isinstance(r, str) or not r]
        if missing or bad:
            raise AssertionError(f"{name}: support() gives no reason for unsupported "
                                 f"operations {sorted(missing | set(bad))}")


def check_unsupported_prepare(ctx: HalContext) -> None:
    """Preparing a model with an unsupported operation raises ``Unsupported`` naming it."""
    variant = find_unsupported(ctx.driver, ctx.unsupported)
    if variant is None:
        raise SkipCheck("the driver supports every base conformance case")
    model, _ = build(variant)
    op_name = model.operations[0].type.name
    try:
        prepared = ctx.driver.prepare(model)
    except Unsupported as exc:
        if op_name not in str(exc):
            raise AssertionError(f"case {variant.id}: Unsupported does not name {op_name}: "
                                 f"{exc}") from None
        return
    except Exception as exc:
        raise AssertionError(f"case {variant.id}: prepare raised {type(exc).__name__} ({exc}), "
                             "expected Unsupported") from exc
    prepared.release()
    raise AssertionError(f"case {variant.id}: prepare of an unsupported {op_name} succeeded, "
                         "expected Unsupported")


def _wrong_dtype(value: Array) -> Array:
    dtype = np.complex64 if value.dtype.kind == "f" else np.float32
    return np.zeros(value.shape, dtype)


def check_bad_inputs(ctx: HalContext) -> None:
    """Wrong input count, dtype or shape raise ``BadData``; the model stays usable."""
    probe = _probe(ctx)
    feed = probe.feed
    first: Array = feed[0]
    bad_calls = {
        "one input too many": [*feed, first],
        "one input missing": feed[:-1],
        f"input 0 as {_wrong_dtype(first).dtype}": [_wrong_dtype(first), *feed[1:]],
        f"input 0 with shape {(*first.shape, 2)}": [np.zeros((*first.shape, 2), first.dtype),
                                                    *feed[1:]],
        f"input 0 with shape {(first.shape[0] + 1, *first.shape[1:])}":
            [np.zeros((first.shape[0] + 1, *first.shape[1:]), first.dtype), *feed[1:]],
    }
    with ctx.driver.prepare(probe.model) as prepared:
        problems = [p for what, inputs in bad_calls.items() if (p := _expect(
            BadData, f"execute with {what}", functools.partial(prepared.execute, inputs)))]
        if problems:
            raise AssertionError(f"case {probe.variant.id}: " + "; ".join(problems))
        compare(probe.variant, prepared.execute(feed).outputs,
                "execute after rejected requests")


def check_release(ctx: HalContext) -> None:
    """Execute after ``release()`` raises ``BadState``; releasing twice is harmless."""
    probe = _probe(ctx)
    prepared = ctx.driver.prepare(probe.model)
    prepared.release()
    prepared.release()
    problem = _expect(BadState, "execute after release", lambda: prepared.execute(probe.feed))
    if problem:
        raise AssertionError(problem)


def check_deadline(ctx: HalContext) -> None:
    """An expired deadline raises ``DeadlineMissed``; a distant one does not."""
    probe = _probe(ctx)
    with ctx.driver.prepare(probe.model) as prepared:
        problem = _expect(DeadlineMissed, "execute with a deadline 1 s ago",
                          lambda: prepared.execute(probe.feed, deadline=time.monotonic() - 1))
        if problem:
            raise AssertionError(problem)
        result = prepared.execute(probe.feed, deadline=time.monotonic() + 3600)
        compare(probe.variant, result.outputs, "execute with a deadline in an hour")


def check_cache_files(ctx: HalContext) -> None:
    """``cache_files_needed()`` is two ints from 0 to MAX_CACHE_FILES."""
    needed = ctx.driver.cache_files_needed()
    if not (isinstance(needed, tuple) and len(needed) == 2 and all(
            type(n) is int and 0 <= n <= MAX_CACHE_FILES for n in needed)):
        raise AssertionError(f"cache_files_needed() returned {needed!r:.80}, expected two ints "
                             f"from 0 to {MAX_CACHE_FILES}")


def check_output_destinations(ctx: HalContext) -> None:
    """Outputs given as ``outputs=`` land in the caller's buffers, and nowhere past them."""
    probe = _probe(ctx)
    with ctx.driver.prepare(probe.model) as prepared:
        plain = prepared.execute(probe.feed).outputs
        buffers = [np.full(a.nbytes + _SLACK, _SENTINEL, np.uint8) for a in plain]
        result = prepared.execute(probe.feed, outputs=buffers).outputs
    for j, (got, buf) in enumerate(zip(result, buffers, strict=True)):
        where = f"case {probe.variant.id} output {j}"
        if not np.shares_memory(got, buf):
            raise AssertionError(f"{where}: the result is not in the caller's destination")
        size = plain[j].nbytes
        if buf[:size].tobytes() != np.ascontiguousarray(got).tobytes():
            raise AssertionError(f"{where}: the destination does not hold the result")
        if np.any(buf[size:] != _SENTINEL):
            raise AssertionError(f"{where}: bytes past the output's {size} were written")
    compare(probe.variant, [np.array(b[:a.nbytes]).view(a.dtype).reshape(a.shape)
                            for a, b in zip(plain, buffers, strict=True)],
            "the destination buffers")


def _reversed_variant(variant: CaseVariant) -> CaseVariant:
    """``variant`` with each float tensor input's elements reversed (same values, new order),
    when its expected outputs are computed by a reference; else ``variant`` itself."""
    if variant.reference is None:
        return variant
    inputs = tuple(replace(a, value=np.ascontiguousarray(np.flip(a.value)))
                   if not a.scalar and isinstance(a.value, np.ndarray) and a.value.dtype.kind
                   == "f" and a.role != "const" else a for a in variant.inputs)
    return replace(variant, inputs=inputs)


def check_concurrent_execute(ctx: HalContext) -> None:
    """Two threads executing one prepared model (different inputs) both get right results."""
    probe = _probe(ctx)
    variants = [probe.variant, _reversed_variant(probe.variant)]
    feeds = [probe.feed, build(variants[1])[1]]
    errors: list[str] = []
    with ctx.driver.prepare(probe.model) as prepared:

        def work(k: int) -> None:
            try:
                for n in range(_ROUNDS):
                    compare(variants[k], prepared.execute(feeds[k]).outputs,
                            f"thread {k}, execution {n}")
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(_JOIN_SECONDS)
        if any(thread.is_alive() for thread in threads):
            raise AssertionError(f"case {probe.variant.id}: concurrent executions did not "
                                 f"finish in {_JOIN_SECONDS:.0f} s")
    if errors:
        raise AssertionError(f"case {probe.variant.id}: " + "; ".join(errors[:2]))


def check_independent_prepares(ctx: HalContext) -> None:
    """Preparing one model twice gives two prepared models; releasing one spares the other."""
    probe = _probe(ctx)
    first = ctx.driver.prepare(probe.model)
    try:
        with ctx.driver.prepare(probe.model) as second:
            if second is first:
                raise AssertionError("prepare returned the same object twice")
            compare(probe.variant, first.execute(probe.feed).outputs, "first prepared model")
            first.release()
            compare(probe.variant, second.execute(probe.feed).outputs,
                    "second prepared model after releasing the first")
    finally:
        first.release()


#: The HAL checks in the order they run: (name, check).
HAL_CHECKS: tuple[tuple[str, Callable[[HalContext], None]], ...] = (
    ("info", check_info),
    ("supported_operations", check_supported_operations),
    ("unsupported_prepare", check_unsupported_prepare),
    ("bad_inputs", check_bad_inputs),
    ("execute_after_release", check_release),
    ("deadline", check_deadline),
    ("cache_files_needed", check_cache_files),
    ("output_destinations", check_output_destinations),
    ("concurrent_execute", check_concurrent_execute),
    ("independent_prepares", check_independent_prepares),
)
