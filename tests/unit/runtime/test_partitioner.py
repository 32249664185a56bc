"""The partitioner: drivers chosen by preference, maximal acyclic partitions, placement report."""

from __future__ import annotations

import random

import numpy as np
import pytest
from partition_graphs import OpSpec, build, check_partitioning, random_case, random_spec, support

import nnrt
from nnrt.model.types import ExecutionPreference as Pref
from nnrt.reference.driver import ReferenceDriver
from nnrt.runtime.compile.partitioner import (
    STEP_COST,
    DriverSupport,
    Partition,
    Partitioning,
    partition_model,
)

ALL, NONE = True, False


def greedy(model: nnrt.Model, supports: list[DriverSupport], *args: object, **kwargs: object
           ) -> Partitioning:
    """Every operation on its fastest driver, grouped maximally (no step cost)."""
    return partition_model(model, supports, *args, step_cost=0, **kwargs)  # type: ignore[arg-type]


def groups_of(result: Partitioning) -> list[tuple[str, tuple[int, ...]]]:
    """Each partition's driver and operations (sorted by index; run order may differ)."""
    return [(p.driver, tuple(sorted(p.operations))) for p in result.partitions]


def test_a_chain_on_one_driver_is_one_partition() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("ADD", [1, 0]), ("MUL", [2, 2])])
    supports = [support("acme", [ALL] * 4, 0.5), support("reference", [ALL] * 4)]
    result = greedy(model, supports)
    assert groups_of(result) == [("acme", (0, 1, 2, 3))]
    check_partitioning(model, supports, result, Pref.FAST_SINGLE_ANSWER)


def test_alternating_drivers_make_one_partition_per_operation() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("RELU", [1]), ("TANH", [2])])
    supports = [support("acme", [ALL, NONE, ALL, NONE], 0.5), support("reference", [ALL] * 4)]
    result = greedy(model, supports)
    assert groups_of(result) == [("acme", (0,)), ("reference", (1,)), ("acme", (2,)),
                                 ("reference", (3,))]


def test_a_diamond_on_one_driver_is_one_partition() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("RELU", [0]), ("ADD", [1, 2])])
    supports = [support("acme", [ALL] * 4, 0.5), support("reference", [ALL] * 4)]
    assert groups_of(greedy(model, supports)) == [("acme", (0, 1, 2, 3))]


def test_a_diamond_with_one_side_elsewhere_splits_without_a_cycle() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("RELU", [0]), ("ADD", [1, 2])])
    supports = [support("acme", [ALL, NONE, ALL, ALL], 0.5), support("reference", [ALL] * 4)]
    result = greedy(model, supports)
    assert len(result.partitions) == 3
    check_partitioning(model, supports, result, Pref.FAST_SINGLE_ANSWER)


def test_an_independent_operation_listed_in_between_does_not_split() -> None:
    # A(acme) -> B(acme), with C(reference) created between them: LiteRT's contiguous runs
    # make two acme partitions
    model = build([("RELU", ["x0"]), ("TANH", ["x0"]), ("RELU", [0])])
    supports = [support("acme", [ALL, NONE, ALL], 0.5), support("reference", [ALL] * 3)]
    result = greedy(model, supports)
    assert sorted(groups_of(result)) == [("acme", (0, 2)), ("reference", (1,))]
    check_partitioning(model, supports, result, Pref.FAST_SINGLE_ANSWER)


def test_parallel_branches_separated_by_an_unrelated_operation_share_a_partition() -> None:
    spec: list[OpSpec] = [("RELU", ["x0"]), ("MUL", [0, 0]),           # acme branch 1
            ("TANH", ["x1"]),                            # reference, unrelated to both
            ("RELU", ["x0"]), ("SUB", [3, 3])]           # acme branch 2
    model = build(spec, inputs=2)
    flags = [ALL, ALL, NONE, ALL, ALL]
    supports = [support("acme", flags, 0.5), support("reference", [ALL] * 5)]
    result = greedy(model, supports)
    assert sorted(groups_of(result)) == [("acme", (0, 1, 3, 4)), ("reference", (2,))]


def test_groups_around_another_driver_stay_apart() -> None:
    # A(acme) -> B(reference) -> C(acme) and A -> C: merging A and C would make a cycle
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("ADD", [0, 1])])
    supports = [support("acme", [ALL, NONE, ALL], 0.5), support("reference", [ALL] * 3)]
    result = greedy(model, supports)
    assert groups_of(result) == [("acme", (0,)), ("reference", (1,)), ("acme", (2,))]
    check_partitioning(model, supports, result, Pref.FAST_SINGLE_ANSWER)


def test_merging_absorbs_the_operation_between_two_groups() -> None:
    # 0 -> 1 -> 2 all acme, plus 0 -> 2: seeds in any order must end as one partition
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("ADD", [0, 1])], creation=[2, 0, 1])
    supports = [support("acme", [ALL] * 3, 0.5)]
    result = greedy(model, supports)
    assert len(result.partitions) == 1
    check_partitioning(model, supports, result, Pref.FAST_SINGLE_ANSWER)


def test_cut_indices_split_a_chain() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("RELU", [1]), ("TANH", [2]),
                   ("RELU", [3])])
    acme = support("acme", [ALL] * 5, 0.5, groups={0: 0, 1: 0, 2: 1, 3: 1})
    result = greedy(model, [acme])
    # operation 4 has no index: compatible only with other operations without one
    assert groups_of(result) == [("acme", (0, 1)), ("acme", (2, 3)), ("acme", (4,))]
    check_partitioning(model, [acme], result, Pref.FAST_SINGLE_ANSWER)


def test_same_cut_index_merges_parallel_branches() -> None:
    model = build([("RELU", ["x0"]), ("TANH", ["x0"]), ("RELU", [0]), ("TANH", [1])])
    acme = support("acme", [ALL] * 4, 0.5, groups={0: 7, 1: 3, 2: 7, 3: 3})
    result = greedy(model, [acme])
    assert sorted(groups_of(result)) == [("acme", (0, 2)), ("acme", (1, 3))]


@pytest.mark.parametrize(("preference", "chosen", "other", "why"), [
    (Pref.FAST_SINGLE_ANSWER, "fast", "frugal", "exec_time 0.5 < 2.0"),
    (Pref.SUSTAINED_SPEED, "fast", "frugal", "exec_time 0.5 < 2.0"),
    (Pref.LOW_POWER, "frugal", "fast", "power_usage 0.25 < 2.0"),
])
def test_preference_chooses_by_time_or_power(preference: Pref, chosen: str, other: str,
                                             why: str) -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0])])
    supports = [support("frugal", [ALL, ALL], exec_time=2.0, power=0.25),
                support("fast", [ALL, ALL], exec_time=0.5, power=2.0)]
    result = greedy(model, supports, preference)
    assert groups_of(result) == [(chosen, (0, 1))]
    assert result.placement[0].rejected == {
        other: f"supported, but {chosen} is preferred ({why})"}


def test_ties_go_to_the_earlier_driver() -> None:
    model = build([("RELU", ["x0"])])
    supports = [support("first", [ALL]), support("second", [ALL])]
    result = greedy(model, supports)
    assert result.placement[0].driver == "first"
    assert result.placement[0].rejected == {
        "second": "supported, but first is preferred (exec_time 1.0 = 1.0, earlier in device "
                  "order)"}


def test_placement_reports_driver_partition_and_reasons() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("ADD", [1, 0])])
    supports = [support("acme", [ALL, NONE, ALL], 0.5, reasons={1: "no TANH on the NPU"}),
                support("cpu", [ALL, ALL, NONE], 0.75, reasons={2: "no ADD"})]
    result = greedy(model, supports)
    assert [p.driver for p in result.partitions] == ["acme", "cpu", "acme"]
    first, second, third = result.placement
    assert (first.operation, first.type_name, first.driver, first.partition) == (
        0, "RELU", "acme", 0)
    assert first.rejected == {"cpu": "supported, but acme is preferred (exec_time 0.5 < 0.75)"}
    assert (second.type_name, second.driver, second.partition) == ("TANH", "cpu", 1)
    assert second.rejected == {"acme": "not supported: no TANH on the NPU"}
    assert (third.driver, third.partition, third.rejected) == (
        "acme", 2, {"cpu": "not supported: no ADD"})


def test_operations_nobody_supports_run_on_the_fallback() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("RELU", [1])])
    supports = [support("acme", [ALL, NONE, ALL], 0.5), support("dsp", [NONE, NONE, ALL])]
    result = greedy(model, supports, fallback="reference")
    assert groups_of(result) == [("acme", (0,)), ("reference", (1,)), ("acme", (2,))]
    assert result.placement[1].rejected == {
        "acme": "not supported: no acme kernel; runs on the fallback driver",
        "dsp": "not supported: no dsp kernel; runs on the fallback driver"}


def test_without_fallback_every_unsupported_operation_is_listed() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("ADD", [1, 0]), ("MUL", [2, 2])])
    supports = [support("acme", [ALL, NONE, NONE, ALL], reasons={1: "r1", 2: "r2"}),
                support("cpu", [ALL, NONE, NONE, NONE], reasons={1: "c1"})]
    with pytest.raises(nnrt.Unsupported) as info:
        greedy(model, supports, fallback=None)
    message = str(info.value)
    assert "operation 1 (TANH): acme: r1; cpu: c1" in message
    assert "operation 2 (ADD): acme: r2; cpu: no reason given" in message
    assert "operation 0" not in message and "operation 3" not in message


def test_real_driver_answers() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0])])
    driver = ReferenceDriver()
    info = driver.info()
    record = DriverSupport.of(info.name, driver.support(model), info.performance)
    result = greedy(model, [record])
    assert result.partitions == (Partition("reference", (0, 1)),)


@pytest.mark.parametrize(("supports", "match"), [
    ("acme", "sequence"),
    ([object()], "expected a DriverSupport"),
    ([support("a", [ALL]), support("a", [ALL])], "repeated"),
    ([support("a", [ALL, ALL])], "1 bools"),
    ([support("a", [ALL], groups={5: 0})], "groups"),
    ([support("a", [ALL], groups={0: -1})], "groups"),
])
def test_malformed_answers_are_bad_data(supports: object, match: str) -> None:
    model = build([("RELU", ["x0"])])
    with pytest.raises(nnrt.BadData, match=match):
        greedy(model, supports)  # type: ignore[arg-type]


def test_unfinished_model_and_bad_arguments() -> None:
    with pytest.raises(nnrt.BadState):
        partition_model(nnrt.Model(), [])
    model = build([("RELU", ["x0"])])
    with pytest.raises(nnrt.BadData, match="preference"):
        partition_model(model, [], 7)
    with pytest.raises(nnrt.BadData, match="fallback"):
        partition_model(model, [], fallback="")


def test_random_dags_are_partitioned_correctly_and_maximally() -> None:
    rng = random.Random(20240606)
    for _ in range(500):
        model, supports, preference = random_case(rng)
        result = greedy(model, supports, preference)
        check_partitioning(model, supports, result, preference)
        assert greedy(model, supports, preference) == result  # deterministic


def test_a_large_model() -> None:
    rng = random.Random(7)
    count = 1200
    model = build(random_spec(rng, count, 2), inputs=2)
    supports = [support(f"d{d}", [rng.random() < 0.6 for _ in range(count)], 0.5 + d)
                for d in range(3)]
    result = greedy(model, supports)
    check_partitioning(model, supports, result, Pref.FAST_SINGLE_ANSWER)


def _cost(model: nnrt.Model, supports: list[DriverSupport], result: Partitioning) -> float:
    """The placement cost model (docs/architecture.md), computed here from its definition."""
    from nnrt.runtime.compile.partitioner import ELEMENT_COST, OPERATION_COST

    ratio = {s.driver: s.performance.exec_time for s in supports}
    total = STEP_COST * len(result.partitions)
    for placed in result.placement:
        op = model.operations[placed.operation]
        elements = sum(int(np.prod([max(d, 1) for d in model.inferred_dims[k]]))
                       for k in op.outputs)
        total += ratio.get(placed.driver, 1.0) * (OPERATION_COST + ELEMENT_COST * elements)
    return total


def test_a_step_that_does_not_pay_for_itself_joins_its_neighbours() -> None:
    model = build([("RELU", ["x0"]), ("TANH", [0]), ("RELU", [1]), ("TANH", [2])])
    supports = [support("acme", [ALL, NONE, ALL, NONE], 0.5), support("reference", [ALL] * 4)]
    result = partition_model(model, supports)
    assert groups_of(result) == [("reference", (0, 1, 2, 3))]
    assert "a step of its own on acme would cost more" in result.placement[0].rejected["acme"]
    check_partitioning(model, supports, result, Pref.FAST_SINGLE_ANSWER, greedy=False)
    assert _cost(model, supports, result) < _cost(model, supports, greedy(model, supports))


def test_a_driver_much_faster_on_big_tensors_keeps_its_own_steps() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 512, 512))  # 262,144 elements per operation
    b.output(b.tanh(b.relu(b.tanh(b.relu(x)))))
    model = b.build()
    supports = [support("acme", [ALL, NONE, ALL, NONE], 0.1), support("reference", [ALL] * 4)]
    result = partition_model(model, supports)
    assert [p.driver for p in result.partitions] == ["acme", "reference", "acme", "reference"]


def test_random_dags_consolidate_to_no_higher_cost() -> None:
    rng = random.Random(20261127)
    fewer = 0
    for _ in range(300):
        model, supports, preference = random_case(rng)
        if preference != Pref.FAST_SINGLE_ANSWER:
            continue
        result = partition_model(model, supports, preference)
        check_partitioning(model, supports, result, preference, greedy=False)
        assert partition_model(model, supports, preference) == result  # deterministic
        split = greedy(model, supports, preference)
        assert _cost(model, supports, result) <= _cost(model, supports, split) + 1e-6
        fewer += len(result.partitions) < len(split.partitions)
    assert fewer > 10  # the cost model did merge steps


def test_the_placement_report_is_compact_unless_verbose() -> None:
    from nnrt.runtime.compile.placement import (
        OperationReport,
        PlacementReport,
        StepReport,
        index_ranges,
    )

    assert index_ranges([5, 0, 1, 2, 9, 3, 10]) == "0-3, 5, 9-10" and index_ranges([]) == "-"
    ops = tuple(OperationReport(i, "ADD" if i != 7 else "TANH", "litert" if i != 7 else
                                "reference", 0 if i < 7 else (1 if i == 7 else 2),
                                {"acme": "not supported: no TANH"} if i == 7 else
                                {"reference": "supported, but litert is preferred (...)"})
                for i in range(300))
    steps = (StepReport(0, "litert", tuple(range(7)), "compiled"),
             StepReport(1, "reference", (7,), "compiled"),
             StepReport(2, "litert", tuple(range(8, 300)), "compiled"))
    report = PlacementReport(ops, steps)
    assert str(report).splitlines() == [
        "3 step(s) on litert, reference",
        "  step 0: litert [compiled] 7 operation(s): 0-6",
        "  step 1: reference [compiled] 1 operation(s): 7",
        "  step 2: litert [compiled] 292 operation(s): 8-299",
        "  not on acme: 1 x TANH: not supported: no TANH"]
    verbose = report.describe(verbose=True).splitlines()
    assert len(verbose) == 5 + 300 and verbose[5 + 7].startswith("  operation 7 (TANH) -> ")
