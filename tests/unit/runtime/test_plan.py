"""Execution plans: outlined steps, where their inputs come from, and sequential runs."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np
import pytest
from partition_graphs import OpSpec, build, random_case, random_inputs, support

import nnrt
from nnrt.reference.driver import ReferenceDriver
from nnrt.runtime.compile.partitioner import Partition, Partitioning, partition_model
from nnrt.runtime.compile.plan import Plan, Runner, Source, build_plan

Array = np.ndarray[Any, Any]


@contextmanager
def reference_runners(plan: Plan) -> Iterator[dict[int, Runner]]:
    """One reference-driver prepared model per step (released afterwards)."""
    driver = ReferenceDriver()
    with ExitStack() as stack:
        runners: dict[int, Runner] = {}
        for step in plan.steps:
            prepared = driver.prepare(step.outlined.model)
            stack.callback(prepared.release)
            runners[step.index] = (
                lambda xs, p=prepared: p.execute(xs).outputs)  # type: ignore[misc]
        yield runners


def x(seed: int = 0) -> Array:
    return np.random.default_rng(seed).uniform(-1, 1, (2, 3)).astype(np.float32)


def plan_for(model: nnrt.Model, flags: Sequence[bool]) -> Plan:
    """Operations flagged run on "acme", the others on the fallback."""
    return build_plan(model, partition_model(model, [support("acme", flags, 0.5)]))


def test_a_chain_across_two_drivers() -> None:
    # x0 -> 0 (acme) -> 1 (reference) -> 2 (acme); output 2 and also output 0
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("MUL", [1, "x0"])], outputs=[2, 0])
    plan = plan_for(model, [True, False, True])
    assert [(s.index, s.driver, s.outlined.operations) for s in plan.steps] == [
        (0, "acme", (0,)), (1, "reference", (1,)), (2, "acme", (2,))]
    first, second, third = plan.steps
    assert first.sources == (Source(None, 0),) and first.depends == ()
    assert len(first.outlined.outputs) == 1  # read by step 1 and by the model output
    assert second.sources == (Source(0, 0),) and second.depends == (0,)
    assert set(third.sources) == {Source(1, 0), Source(None, 0)} and third.depends == (1,)
    assert plan.outputs == (Source(2, 0), Source(0, 0))
    assert plan.input_count == 1
    with reference_runners(plan) as runners:
        got = plan.run([x()], runners)
    expected = nnrt.reference.run(model, [x()])
    assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))


def test_one_step_takes_every_model_input_directly() -> None:
    model = build([("ADD", ["x1", "x0"]), ("RELU", [0])], inputs=3)
    plan = plan_for(model, [True, True])
    (step,) = plan.steps
    # the unused input 2 is fed to no step
    assert step.sources == (Source(None, 1), Source(None, 0)) and step.depends == ()
    assert plan.outputs == (Source(0, 0),)
    with reference_runners(plan) as runners:
        got = plan.run([x(1), x(2), x(3)], runners)
    assert np.array_equal(got[0], nnrt.reference.run(model, [x(1), x(2), x(3)])[0])


def test_a_step_with_several_outputs_feeding_several_steps() -> None:
    spec: list[OpSpec] = [("RELU", ["x0"]), ("TANH", ["x0"]),           # acme: two outputs leave it
            ("SUB", [0, 1]), ("ADD", [1, 1]),            # reference
            ("MUL", [2, 3])]                             # acme again
    model = build(spec)
    plan = plan_for(model, [True, True, False, False, True])
    assert [s.driver for s in plan.steps] == ["acme", "reference", "acme"]
    producer = plan.steps[0].outlined.outputs
    assert len(producer) == 2
    assert set(plan.steps[1].sources) == {Source(0, 0), Source(0, 1)}
    assert plan.steps[2].depends == (1,)
    with reference_runners(plan) as runners:
        got = plan.run([x(4)], runners)
    assert np.array_equal(got[0], nnrt.reference.run(model, [x(4)])[0])


def test_random_plans_match_the_reference_interpreter() -> None:
    rng = random.Random(99)
    for _ in range(100):
        model, supports, preference = random_case(rng)
        plan = build_plan(model, partition_model(model, supports, preference))
        for step in plan.steps:
            for src in step.sources:
                assert src.step is None or src.step in step.depends
            assert all(d < step.index for d in step.depends)
        inputs = random_inputs(rng, model)
        with reference_runners(plan) as runners:
            got = plan.run(inputs, runners)
        expected = nnrt.reference.run(model, inputs)
        assert len(got) == len(expected)
        for a, b in zip(got, expected, strict=True):
            assert np.array_equal(a, b, equal_nan=True)


def test_run_checks_inputs_runners_and_results() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0])])
    plan = plan_for(model, [True, False])
    with reference_runners(plan) as runners:
        with pytest.raises(nnrt.BadData, match="expected 1 inputs, got 2"):
            plan.run([x(), x()], runners)
        with pytest.raises(nnrt.BadData, match=r"no runner for steps \[1\]"):
            plan.run([x()], {0: runners[0]})
        bad = dict(runners)
        bad[0] = lambda xs: [xs[0], xs[0]]
        with pytest.raises(nnrt.OpFailed, match=r"step 0 \(driver acme\) returned 2 outputs"):
            plan.run([x()], bad)


def test_partitions_out_of_order_or_incomplete_are_bad_data() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0])])
    good = partition_model(model, [support("acme", [True, False], 0.5)])
    reordered = Partitioning(good.partitions[::-1], good.placement)
    with pytest.raises(nnrt.BadData, match="not in a topological order"):
        build_plan(model, reordered)
    with pytest.raises(nnrt.BadData, match=r"operations \[1\] are in no partition"):
        build_plan(model, Partitioning((Partition("acme", (0,)),), good.placement))
    twice = (Partition("acme", (0,)), Partition("reference", (1, 0)))
    with pytest.raises(nnrt.BadData, match="already placed"):
        build_plan(model, Partitioning(twice, good.placement))
    with pytest.raises(nnrt.BadState):
        build_plan(nnrt.Model(), good)
