"""Real nnrt models of small elementwise graphs, fake driver answers, and an independent checker
of every property a partitioning must have (used by test_partitioner.py and test_plan.py)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from nnrt import Model
from nnrt import OperandType as T
from nnrt.hal.info import PerformanceInfo
from nnrt.model.types import ExecutionPreference, OperationType
from nnrt.runtime.compile.partitioner import DriverSupport, Partitioning

UNARY = ("RELU", "TANH")
BINARY = ("ADD", "MUL", "SUB")
SHAPE = (2, 3)

#: One operation: its type name and what it reads (an int: that operation's output; a str
#: "xK": model input K).
OpSpec = tuple[str, Sequence["int | str"]]


def build(spec: Sequence[OpSpec], outputs: Sequence[int] | None = None, inputs: int = 1,
          creation: Sequence[int] | None = None) -> Model:
    """A finished model of float32 [2, 3] tensors: operation ``j`` of ``spec`` computes its
    output from its inputs. Outputs are ``outputs`` (default: operations nobody reads).
    ``creation`` (a permutation of the spec) is the order operations are added in; operation
    ``creation[p]`` of the spec becomes model operation ``p`` (default: spec order)."""
    model = Model()
    xs = [model.add_operand(T.TENSOR_FLOAT32, SHAPE, name=f"x{k}") for k in range(inputs)]
    outs = [model.add_operand(T.TENSOR_FLOAT32, SHAPE) for _ in spec]
    act = model.add_operand(T.INT32)
    model.set_operand_value(act, 0)
    order = list(creation) if creation is not None else list(range(len(spec)))
    for j in order:
        name, reads = spec[j]
        ins = [xs[int(r[1:])] if isinstance(r, str) else outs[r] for r in reads]
        if name in BINARY:
            ins.append(act)
        model.add_operation(OperationType[name], ins, [outs[j]])
    if outputs is None:
        read = {r for _, reads in spec for r in reads if isinstance(r, int)}
        outputs = [j for j in range(len(spec)) if j not in read]
    model.identify_inputs_and_outputs(xs, [outs[j] for j in outputs])
    return model.finish()


def support(name: str, flags: Sequence[bool], exec_time: float = 1.0, power: float = 1.0,
            groups: dict[int, int] | None = None, reasons: dict[int, str] | None = None
            ) -> DriverSupport:
    """A fake driver's answer; unsupported operations get the reason "no <name> kernel"."""
    why = reasons if reasons is not None else {
        i: f"no {name} kernel" for i, ok in enumerate(flags) if not ok}
    return DriverSupport(name, list(flags), why, groups or {},
                         PerformanceInfo(exec_time, power))


def random_spec(rng: random.Random, count: int, inputs: int) -> list[OpSpec]:
    """A random DAG: each operation reads model inputs or earlier operations (recent ones more
    often, so chains, diamonds and parallel branches all appear)."""
    spec: list[OpSpec] = []
    for j in range(count):
        name = rng.choice(UNARY + BINARY)
        reads: list[int | str] = []
        for _ in range(1 if name in UNARY else 2):
            if j == 0 or rng.random() < 0.15:
                reads.append(f"x{rng.randrange(inputs)}")
            else:
                reads.append(max(0, j - 1 - int(rng.expovariate(0.4))))
        spec.append((name, reads))
    return spec


def random_case(rng: random.Random) -> tuple[Model, list[DriverSupport], ExecutionPreference]:
    """A random model, 2 to 4 fake drivers (the "reference" fallback among them, supporting
    everything, half of the time) and a random preference."""
    count, inputs = rng.randint(1, 60), rng.randint(1, 3)
    spec = random_spec(rng, count, inputs)
    extra = [j for j in range(count) if rng.random() < 0.1]
    read = {r for _, reads in spec for r in reads if isinstance(r, int)}
    outputs = sorted({j for j in range(count) if j not in read} | set(extra))
    # half of the time, operations are created in a random (not topological) order
    creation = rng.sample(range(count), count) if rng.random() < 0.5 else list(range(count))
    model = build(spec, outputs, inputs, creation)
    speeds = (0.25, 0.5, 1.0, 2.0)
    supports = []
    for d in range(rng.randint(2, 4)):
        p = rng.uniform(0.2, 0.9)
        flags = [rng.random() < p for _ in range(count)]
        groups: dict[int, int] = {}
        if rng.random() < 0.5:
            for i, ok in enumerate(flags):
                g = rng.choice((None, 0, 1, 2))
                if ok and g is not None:
                    groups[i] = g
        supports.append(support(f"d{d}", flags, rng.choice(speeds), rng.choice(speeds), groups))
    if rng.random() < 0.5:
        supports.insert(rng.randrange(len(supports) + 1), support("reference", [True] * count))
    return model, supports, rng.choice(list(ExecutionPreference))


def random_inputs(rng: random.Random, model: Model) -> list[np.ndarray]:
    """Values in [-1, 1) for every model input."""
    gen = np.random.default_rng(rng.randrange(2**32))
    return [gen.uniform(-1, 1, SHAPE).astype(np.float32) for _ in model.inputs]


def op_successors(model: Model) -> list[set[int]]:
    """Per operation, the operations that read one of its outputs."""
    producer = {k: i for i, op in enumerate(model.operations) for k in op.outputs}
    succ: list[set[int]] = [set() for _ in model.operations]
    for i, op in enumerate(model.operations):
        for k in op.inputs:
            if k in producer:
                succ[producer[k]].add(i)
    return succ


def _closure(succ: Sequence[set[int]]) -> list[set[int]]:
    """Per node, every node reachable by one or more edges (plain DFS)."""
    reach: list[set[int]] = []
    for start in range(len(succ)):
        seen: set[int] = set()
        stack = list(succ[start])
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(succ[n])
        reach.append(seen)
    return reach


def expected_driver(supports: Sequence[DriverSupport], op: int, preference: ExecutionPreference,
                    fallback: str) -> str:
    """The driver the rules pick for ``op``: best metric, then device order, else fallback."""
    metric = "power_usage" if preference == ExecutionPreference.LOW_POWER else "exec_time"
    ranked = sorted((getattr(s.performance, metric), k) for k, s in enumerate(supports)
                    if s.supported[op])
    return supports[ranked[0][1]].driver if ranked else fallback


def check_partitioning(model: Model, supports: Sequence[DriverSupport], result: Partitioning,
                       preference: ExecutionPreference, fallback: str = "reference", *,
                       greedy: bool = True) -> None:
    """Assert every property of a correct, maximal partitioning (independently computed);
    ``greedy``: every operation is on its fastest driver (else: on a driver that takes it)."""
    count = len(model.operations)
    by_name = {s.driver: s for s in supports}
    parts = result.partitions
    part_of: dict[int, int] = {}
    run_position = {op: p for p, op in enumerate(model.run_order)}
    for p, partition in enumerate(parts):
        assert partition.operations, "empty partition"
        in_order = sorted(partition.operations, key=run_position.__getitem__)
        assert list(partition.operations) == in_order, "operations not in run order"
        for op in partition.operations:
            assert op not in part_of, f"operation {op} placed twice"
            part_of[op] = p
    assert sorted(part_of) == list(range(count)), "some operation is not placed"
    assert len(result.placement) == count
    for i, placed in enumerate(result.placement):
        assert (placed.operation, placed.partition) == (i, part_of[i])
        assert placed.driver == parts[part_of[i]].driver
        fastest = expected_driver(supports, i, preference, fallback)
        if greedy or fastest == fallback:
            assert placed.driver == fastest
        else:
            assert by_name[placed.driver].supported[i], f"operation {i} on a driver without it"
        assert placed.type_name == model.operations[i].type.name
        assert set(placed.rejected) == {s.driver for s in supports} - {placed.driver}

    def cut(op: int) -> int | None:
        s = by_name.get(parts[part_of[op]].driver)
        return s.groups.get(op) if s is not None and s.supported[op] else None

    keys = [(parts[p].driver, cut(parts[p].operations[0])) for p in range(len(parts))]
    for p, partition in enumerate(parts):
        assert {cut(op) for op in partition.operations} == {keys[p][1]}, "mixed cut indices"
    succ = op_successors(model)
    reach = _closure(succ)
    quotient: list[set[int]] = [set() for _ in parts]
    for i in range(count):
        for j in succ[i]:
            if part_of[i] != part_of[j]:
                assert part_of[i] < part_of[j], "partitions are not in topological order"
                quotient[part_of[i]].add(part_of[j])
    for p, partition in enumerate(parts):  # convex: no path leaves and re-enters
        inside = set(partition.operations)
        after = set().union(*(reach[op] for op in inside)) - inside
        for op in after:
            assert not reach[op] & inside, f"partition {p} is not convex (via operation {op})"
    qreach = _closure(quotient)
    for p in range(len(parts)):  # maximal: merging any compatible pair makes a cycle
        for q in range(p + 1, len(parts)):
            if keys[p] == keys[q]:
                assert any(q in qreach[r] for r in qreach[p] if r != q), (
                    f"partitions {p} and {q} ({keys[p]}) could merge")
