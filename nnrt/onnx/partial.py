"""Output dims of an operation whose inputs have unknown dims: what is known, 0 for the rest.

NNAPI's shape inference (each operation's ``prepare``) gives up — unknown rank — as soon as an
input dim is unknown; the importer needs the rank and every dim that does not depend on the
unknown ones (a converter decides by them: is this dim 1, how many axes are there). This module
runs ``prepare`` twice, with every unknown input dim set to one large probe value and then to
another: an output dim equal in both runs does not depend on the unknown dims (no operation's
output dim is the same function value at both probes unless it is constant in them — but for
clamping, see below), one that differs is unknown. A run that fails (broadcasting a probe
against a known dim, a parameter only known at execution) leaves the rank unknown.

STRIDED_SLICE clamps its bounds to the input's dims, so an output dim can equal a bound at
both probes yet be smaller at execution: its dims are unknown wherever the input's are.
"""

from __future__ import annotations

from nnrt.model.model import Model
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops._framework.registry import lookup

__all__ = ["partial_shapes"]

#: The values unknown dims take in the two runs: large (no kernel, stride or pad reaches
#: them), different, and far apart so a dim computed from them differs between the runs.
_PROBES = (1_000_003, 3_000_017)


def partial_shapes(model: Model, op_index: int) -> list[tuple[int, ...]] | None:
    """The output dims (0 = unknown) of operation ``op_index`` of the model being built, or
    None when not even the ranks are known."""
    op = model.operations[op_index]
    definition = lookup(op.type)
    if definition is None:
        return None
    runs = []
    for probe in _PROBES:
        def dims(k: int, probe: int = probe) -> tuple[int, ...]:
            return tuple(d if d else probe for d in model.operands[k].dims)

        ctx = OperationContext(model.operands, op, op_index, definition, relaxed=model.relaxed,
                               dims=dims, constant=model.constant_value)
        try:
            runs.append([tuple(int(d) for d in s) for s in definition.prepare(ctx)])
        except Exception:  # Unknown, BadData at a probe: the rank stays unknown
            return None
    first, second = runs
    if [len(s) for s in first] != [len(s) for s in second]:
        return None
    shapes = [tuple(a if a == b else 0 for a, b in zip(s1, s2, strict=True))
              for s1, s2 in zip(first, second, strict=True)]
    if op.type == OperationType.STRIDED_SLICE:
        source = model.operands[op.inputs[0]].dims
        if len(shapes[0]) != len(source):  # shrunk axes: which output dim is which is unclear
            return None
        shapes[0] = tuple(0 if not d else s for d, s in zip(source, shapes[0], strict=True))
    return shapes
