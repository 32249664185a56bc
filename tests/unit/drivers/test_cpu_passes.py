"""The cpu compiler's passes, each on its own: folding, packing, fusion, memory plan, codegen."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_models import benchmark_module

import nnrt
from nnrt.drivers.cpu import compile_partition
from nnrt.drivers.cpu.compiler import compile_module
from nnrt.drivers.cpu.folding import fold_constants
from nnrt.drivers.cpu.fusion import fuse_activations, fuse_in_place
from nnrt.drivers.cpu.graph import Graph
from nnrt.drivers.cpu.lowering import lower
from nnrt.drivers.cpu.memplan import MemoryPlan, plan_memory

BENCH = benchmark_module()
Op = nnrt.OperationType


def _graph(model: nnrt.Model) -> Graph:
    values, folded = fold_constants(model)
    return lower(model, values, folded)


def test_folding_evaluates_constant_subgraphs_and_removes_their_ops() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3))
    w = b.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    wt = b.transpose(w, (1, 0))                       # constant: folded
    scale = b.mul(b.constant(np.full((3,), 2.0, np.float32)),
                  np.full((1,), 0.5, np.float32))  # constant: folded
    b.output(b.mul(b.add(x, wt), scale))
    model = b.build()
    values, folded = fold_constants(model)
    assert folded == (0, 1)
    np.testing.assert_array_equal(values[model.operations[0].outputs[0]],
                                  np.arange(6, dtype=np.float32).reshape(3, 2).T)
    part = compile_partition(model, "partition_0")
    assert part.folded == (0, 1)
    assert [n.kernel for n in part.graph.nodes] == ["add", "mul"]
    assert "transpose" not in part.source


def test_a_fully_constant_model_is_folded_to_a_copy() -> None:
    b = nnrt.ModelBuilder()
    a = b.constant(np.ones((2, 2), np.float32))
    b.output(b.relu(b.sub(a, np.full((1,), 3.0, np.float32))))
    part = compile_partition(b.build(), "partition_0")
    assert [n.kernel for n in part.graph.nodes] == ["copy"]
    assert next(iter(part.tensors.values())).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_weights_are_prepacked_in_kernel_layouts() -> None:
    rng = np.random.default_rng(1)
    fc_w = rng.standard_normal((4, 10)).astype(np.float32)
    conv_w = rng.standard_normal((5, 3, 3, 2)).astype(np.float32)
    dw_w = rng.standard_normal((1, 3, 3, 2)).astype(np.float32)
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 6, 6, 2))
    y = b.depthwise_conv2d(x, dw_w, np.zeros(2, np.float32))
    y = b.conv2d(y, conv_w, np.zeros(5, np.float32), padding="valid")
    y = b.reshape(y, (-1, 10))
    b.output(b.fully_connected(y, fc_w, np.zeros(4, np.float32)))
    part = compile_partition(b.build(), "partition_0")
    packed = [a for a in part.tensors.values() if a.ndim == 2]
    assert any(a.shape == (9, 2) and np.array_equal(a, dw_w.reshape(9, 2)) for a in packed)
    assert any(a.shape == (18, 5) and np.array_equal(a, conv_w.reshape(5, 18).T) for a in packed)
    fc = [a for a in packed if a.shape == (10, 4)]
    assert fc and np.array_equal(fc[0], fc_w.T) and fc[0].flags.c_contiguous


def test_activation_fusion_merges_relu_into_fc_and_add() -> None:
    model, _ = BENCH.mlp(1)
    graph = _graph(model)
    assert [n.kernel for n in graph.nodes] == ["fc", "relu", "fc", "relu", "fc", "softmax"]
    assert fuse_activations(graph) == 2
    assert [n.kernel for n in graph.nodes] == ["fc", "fc", "fc", "softmax"]
    assert [n.args[3] for n in graph.nodes[:3]] == [1, 1, 0]
    assert graph.nodes[0].ops == (0, 1)


def test_activation_fusion_keeps_an_observable_intermediate() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (4,))
    s = b.add(x, x)
    b.output(b.relu(s), s)            # s is a model output: relu must stay separate
    graph = _graph(b.build())
    assert fuse_activations(graph) == 0


def test_in_place_fusion_turns_a_mul_add_rsqrt_chain_into_one_buffer() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (3, 4))
    y = b.add(b.mul(x, x), np.ones(4, np.float32))
    y = b.operation(Op.RSQRT, y)[0]
    b.output(b.mul(b.relu(y), np.full((1,), 2.0, np.float32)))
    model = b.build()
    graph = _graph(model)
    fuse_activations(graph)
    assert [n.kernel for n in graph.nodes] == ["mul", "add", "rsqrt", "relu", "mul"]
    assert fuse_in_place(graph) == 4
    roots = {graph.root(n.out) for n in graph.nodes}
    assert len(roots) == 1
    part = compile_partition(model, "partition_0")
    assert part.scratch == 0          # the whole chain computes in the caller's output
    assert "slot(" not in part.source


def _check_plan(graph: Graph, plan: MemoryPlan) -> None:
    """Liveness oracle: recompute live ranges naively and check slots of live values."""
    intervals = {}
    for position, node in enumerate(graph.nodes):
        touched = [*graph.reads(node), node.out, *node.temps]
        for value in touched:
            root = graph.root(value)
            if plan.offset(root) is None:
                continue
            first, last = intervals.get(root, (position, position))
            intervals[root] = (min(first, position), max(last, position))
    by_root = {b.root: b for b in plan.buffers}
    assert set(intervals) == set(by_root)
    for root, (first, last) in intervals.items():
        buffer = by_root[root]
        assert (buffer.start, buffer.end) == (first, last)
        assert buffer.size >= int(np.prod(graph.values[root].shape))
        assert buffer.offset + buffer.size <= plan.size
    buffers = list(by_root.values())
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            live_together = a.start <= b.end and b.start <= a.end
            overlap = a.offset < b.offset + b.size and b.offset < a.offset + a.size
            assert not (live_together and overlap), (a, b)


@pytest.mark.parametrize("make", ["mlp", "cnn", "transformer"])
def test_memory_plan_reuses_slots_and_never_overlaps_live_values(make: str) -> None:
    model, _ = getattr(BENCH, make)(2)
    part = compile_partition(model, "partition_0")
    _check_plan(part.graph, part.plan)
    assert part.plan == plan_memory(part.graph)
    total = sum(b.size for b in part.plan.buffers)
    assert part.plan.size < total     # some slot is reused


def test_model_outputs_are_written_straight_into_the_output_arrays() -> None:
    model, _ = BENCH.cnn(1)
    part = compile_partition(model, "partition_0")
    assert "softmax(y0, " in part.source
    model, _ = BENCH.transformer(1)
    part = compile_partition(model, "partition_0")
    assert part.copies_elided == 1 and "copy(" not in part.source
    assert "view(y0, (32, 128))" in part.source


def test_compilation_is_deterministic() -> None:
    for make in (BENCH.mlp, BENCH.cnn, BENCH.transformer):
        model, _ = make(1)
        assert compile_module(model, "partition_0") == compile_module(model, "partition_0")
        again, _ = make(1)
        assert compile_module(model, "partition_0") == compile_module(again, "partition_0")


def test_generated_code_calls_kernels_with_out_arguments() -> None:
    model, _ = BENCH.mlp(1)
    source = compile_partition(model, "partition_0").source
    lines = source.splitlines()
    assert lines[0] == "def partition_0(inputs, outputs, scratch):"
    assert lines[-1] == "    return None"
    assert sum(line.strip().startswith("fc(") for line in lines) == 3
