"""Stage 2: autotuning each matrix-product and convolution call on its real shapes.

:func:`autotune` compiles the partition again (the same passes as stage 1), then, for every
call of a kernel with variants (:data:`~nnrt.drivers.cpu.kernels.tuned.VARIANTS`), runs the
stage-1 kernel and each applicable variant on arrays of the call's exact shapes (the real
pre-packed weights, random activations), checks each variant's result against the stage-1
kernel's, and keeps the fastest (best of ``runs`` timed runs each; a variant must beat the
stage-1 kernel by :data:`MARGIN`). The chosen variants are written
into the graph (kernel name, arguments, constant layout), memory is planned again (variants
without an im2col matrix free its slot), and the program is generated and encoded as a module
with ``"stage": 2`` and the choices. The caller loads it through the dispatch, which checks
it like any module.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.drivers.cpu.codegen import generate
from nnrt.drivers.cpu.compiler import compile_partition
from nnrt.drivers.cpu.graph import Graph, Node, Ref
from nnrt.drivers.cpu.kernels import KERNELS
from nnrt.drivers.cpu.kernels.tuned import VARIANTS
from nnrt.drivers.cpu.memplan import plan_memory
from nnrt.drivers.cpu.module import encode_module
from nnrt.model.model import Model

__all__ = ["MARGIN", "Trial", "TunedModule", "autotune", "close_enough"]

Array = np.ndarray[Any, Any]
#: A candidate: kernel name, its arguments, constants to replace (value id -> new contents).
Candidate = tuple[str, list[Any], dict[int, Array]]
_CONV_COLS = 4  # index of the im2col buffer among a conv call's arguments
#: A variant replaces the stage-1 kernel only if its best time is below this fraction of the
#: stage-1 kernel's (timings are noisy; a tie keeps the kernel stage 1 was measured with).
MARGIN = 0.9


@dataclass(frozen=True)
class Trial:
    """One candidate timed for one call: the call's first operation, kernel, best time."""

    op: int
    kernel: str
    seconds: float


@dataclass(frozen=True)
class TunedModule:
    """The stage-2 module, the kernel chosen per tuned operation, and every trial."""

    module: bytes
    choices: tuple[tuple[int, str], ...]
    trials: tuple[Trial, ...]


def close_enough(got: Array, want: Array) -> bool:
    """Whether two results agree within float32 tolerance (relative to ``want``'s scale)."""
    if got.shape != want.shape:
        return False
    finite = want[np.isfinite(want)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    return bool(np.allclose(got, want, rtol=1e-4, atol=1e-4 * scale, equal_nan=True))


def _const(graph: Graph, arg: Any, uses: dict[int, int]) -> Array | None:
    """The contents of ``arg`` if it is a constant only this call reads."""
    if not isinstance(arg, Ref):
        return None
    value = graph.values[arg.value]
    return value.const if value.const is not None and uses.get(arg.value) == 1 else None


def _variant(graph: Graph, node: Node, name: str, uses: dict[int, int]) -> Candidate | None:
    """``node`` rewritten to call variant ``name``, or None where it does not apply."""
    args = list(node.args)
    if name in ("fc_dot", "batch_matmul_dot"):
        return name, args, {}
    if name == "fc_nt":
        wt = _const(graph, args[1], uses)
        if wt is None:
            return None
        return name, args, {args[1].value: np.ascontiguousarray(wt.T)}
    if name == "batch_matmul_bt":
        b = _const(graph, args[1], uses)
        if b is None or args[3] is not False:
            return None
        return name, args, {args[1].value: np.ascontiguousarray(np.swapaxes(b, -1, -2))}
    if name in ("conv_window", "conv_taps"):
        args[_CONV_COLS] = None
        return name, args, {}
    return None


class _Bench:
    """Concrete arrays for a call's arguments: constants as compiled, others random."""

    def __init__(self, graph: Graph, seed: int = 0) -> None:
        self.graph = graph
        self._rng = np.random.default_rng(seed)
        self._arrays: dict[int, Array] = {}

    def array(self, value: int, overrides: dict[int, Array]) -> Array:
        if value in overrides:
            return overrides[value]
        v = self.graph.values[value]
        if v.const is not None:
            return v.const
        if value not in self._arrays:
            self._arrays[value] = (np.zeros(v.shape, np.float32) if v.temp else
                                   self._rng.standard_normal(v.shape).astype(np.float32))
        return self._arrays[value]

    def args(self, args: list[Any], overrides: dict[int, Array]) -> list[Any]:
        def one(arg: Any) -> Any:
            if isinstance(arg, Ref):
                return self.array(arg.value, overrides)
            if isinstance(arg, tuple):
                return tuple(one(a) for a in arg)
            return arg
        return [one(a) for a in args]


def _time(kernel: Callable[..., Any], out: Array, args: list[Any], runs: int,
          stop: threading.Event) -> float | None:
    best = float("inf")
    for _ in range(runs):
        if stop.is_set():
            return None
        start = time.perf_counter()
        kernel(out, *args)
        best = min(best, time.perf_counter() - start)
    return best


def _tune_node(graph: Graph, node: Node, uses: dict[int, int], bench: _Bench, runs: int,
               stop: threading.Event) -> tuple[Candidate, list[Trial]] | None:
    """The fastest correct candidate for ``node`` and the trials (None if stopped)."""
    stage1: Candidate = (node.kernel, list(node.args), {})
    candidates = [stage1] + [c for name in VARIANTS[node.kernel]
                             if (c := _variant(graph, node, name, uses))]
    shape = graph.values[node.out].shape
    want = np.empty(shape, np.float32)
    trials: list[Trial] = []
    best: tuple[float, Candidate] = (float("inf"), stage1)
    with np.errstate(all="ignore"):
        KERNELS[node.kernel](want, *bench.args(node.args, {}))
        for candidate in candidates:
            name, args, overrides = candidate
            kernel, out = KERNELS[name], np.empty(shape, np.float32)
            concrete = bench.args(args, overrides)
            kernel(out, *concrete)  # warm-up, and the check against the stage-1 kernel
            if candidate is not stage1 and not close_enough(out, want):
                continue
            seconds = _time(kernel, out, concrete, runs, stop)
            if seconds is None:
                return None
            trials.append(Trial(node.ops[0], name, seconds))
            limit = best[0] if candidate is stage1 or best[1] is not stage1 else best[0] * MARGIN
            if seconds < limit:
                best = (seconds, candidate)
    return best[1], trials


def autotune(model: Model, entry: str, stop: threading.Event, *, runs: int = 5
             ) -> TunedModule | None:
    """The stage-2 module of partition ``model`` as function ``entry`` (None if ``stop`` was
    set meanwhile)."""
    part = compile_partition(model, entry)
    graph = part.graph
    uses = graph.use_counts()
    bench = _Bench(graph)
    choices: list[tuple[int, str]] = []
    trials: list[Trial] = []
    for node in graph.nodes:
        if node.kernel not in VARIANTS or not node.ops:
            continue
        tuned = _tune_node(graph, node, uses, bench, runs, stop)
        if tuned is None:
            return None
        (name, args, overrides), node_trials = tuned
        trials.extend(node_trials)
        choices.append((node.ops[0], name))
        if name == node.kernel:
            continue
        node.kernel, node.args = name, args
        node.temps = tuple(t for t in node.temps if Ref(t) in args)
        for value, contents in overrides.items():
            graph.values[value].const = contents
            graph.values[value].shape = tuple(contents.shape)
    if stop.is_set():
        return None
    plan = plan_memory(graph)
    generated = generate(graph, plan, entry)
    module = encode_module({entry: generated.program}, [entry], generated.tensors,
                           {entry: plan.size}, stage=2, choices=choices)
    return TunedModule(module, tuple(choices), tuple(trials))
