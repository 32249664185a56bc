"""The conformance cases cover the reference kernels: every op, every dtype a kernel implements."""

from __future__ import annotations

from collections import defaultdict

import pytest

from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.ops._framework.registry import definitions
from nnrt.testing import expand
from nnrt.testing.cases import all_cases

#: Operations with a reference kernel but no conformance cases, and why.
EXEMPT = {
    Op.RANDOM_MULTINOMIAL: "random samples: the kit compares values, tests/unit/ops checks the "
                           "distribution",
}
#: Fewer cases than the usual minimum of 3, where NNAPI publishes fewer examples.
MIN_CASES = {Op.QUANTIZED_16BIT_LSTM: 2}  # V1_2 quantized_lstm.mod.py has two examples
SCOPE = sorted(op.name for op in definitions() if op not in EXEMPT)

_CASES = all_cases()
_COVERED: dict[Op, set[T]] = defaultdict(set)
_COUNT: dict[Op, int] = defaultdict(int)
for _case in _CASES:
    _COUNT[_case.op] += 1
    _definition = definitions().get(_case.op)
    if _definition is None:
        continue
    for _variant in expand(_case):
        slot = _definition.type_input
        if slot < len(_variant.inputs) and not _variant.inputs[slot].omitted:
            _COVERED[_case.op].add(_variant.inputs[slot].type)


def test_scope_is_every_operation_with_a_kernel() -> None:
    nnapi = [op for op in Op if not op.name.startswith("NNRT_")]
    # every NNAPI operation has a reference kernel now, and all but EXEMPT have cases
    assert all(op in definitions() for op in nnapi), [op.name for op in nnapi
                                                      if op not in definitions()]
    assert len(SCOPE) == len(definitions()) - len(EXEMPT) >= 100


@pytest.mark.parametrize("name", SCOPE)
def test_operation_is_implemented_and_covered(name: str) -> None:
    op = Op[name]
    definition = definitions().get(op)
    assert definition is not None, f"{name} has no reference kernel"
    least = MIN_CASES.get(op, 3)
    assert _COUNT[op] >= least, f"{name} has only {_COUNT[op]} conformance cases"
    missing = definition.kernel_types - _COVERED[op]
    assert not missing, f"{name}: no conformance case for {sorted(t.name for t in missing)}"
