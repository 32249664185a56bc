"""The compile pipeline of one partition: fold, lower and pack, fold per-channel affine
constants into convolutions, fuse, plan memory, generate.

:func:`compile_partition` runs the passes in order and returns a :class:`CompiledPartition`
holding the generated program (and its listing), its tensors and arena size, plus what each
pass did (for tests and tools): the folded operations, the graph after fusion and the memory
plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.drivers.cpu.codegen import generate
from nnrt.drivers.cpu.conv_fold import fold_channel_affine
from nnrt.drivers.cpu.folding import fold_constants
from nnrt.drivers.cpu.fusion import elide_output_copies, fuse_activations, fuse_in_place
from nnrt.drivers.cpu.graph import Graph
from nnrt.drivers.cpu.lowering import lower
from nnrt.drivers.cpu.memplan import MemoryPlan, plan_memory
from nnrt.drivers.cpu.module import encode_module
from nnrt.model.model import Model

__all__ = ["CompiledPartition", "compile_module", "compile_partition"]

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class CompiledPartition:
    """One partition compiled to an entry point, with each pass's outcome."""

    entry: str
    #: The entry point's program map (:mod:`nnrt.drivers.cpu.program`).
    program: dict[str, Any]
    #: The program as readable text (tests and tools).
    source: str
    tensors: dict[str, Array]
    scratch: int
    folded: tuple[int, ...]
    graph: Graph
    plan: MemoryPlan
    activations_fused: int
    in_place_fused: int
    copies_elided: int
    #: MUL / ADD calls folded into the convolutions before them.
    affine_folded: int = 0


def compile_partition(model: Model, entry: str) -> CompiledPartition:
    """Compile the finished ``model`` (every operation supported) as function ``entry``."""
    values, folded = fold_constants(model)
    graph = lower(model, values, folded)
    affine = fold_channel_affine(graph)
    activations = fuse_activations(graph)
    in_place = fuse_in_place(graph)
    elided = elide_output_copies(graph)
    plan = plan_memory(graph)
    generated = generate(graph, plan, entry)
    return CompiledPartition(entry, generated.program, generated.listing, generated.tensors,
                             plan.size, folded, graph, plan, activations, in_place, elided,
                             affine)


def compile_module(model: Model, entry: str) -> bytes:
    """The bytecode module of ``model`` compiled as entry point ``entry``."""
    part = compile_partition(model, entry)
    return encode_module({entry: part.program}, [entry], part.tensors, {entry: part.scratch})
