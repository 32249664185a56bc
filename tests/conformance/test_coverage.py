"""The conformance cases cover the reference kernels: every op, every dtype a kernel implements."""

from __future__ import annotations

from collections import defaultdict

import pytest

from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.ops._framework.registry import definitions
from nnrt.testing import expand
from nnrt.testing.cases import all_cases

SCOPE = """
ADD SUB MUL DIV MAXIMUM MINIMUM POW ABS EXP LOG SQRT RSQRT NEG SIN FLOOR RELU RELU1 RELU6 LOGISTIC
TANH ELU HARD_SWISH PRELU SOFTMAX LOG_SOFTMAX FULLY_CONNECTED BATCH_MATMUL CONV_2D DEPTHWISE_CONV_2D
GROUPED_CONV_2D TRANSPOSE_CONV_2D AVERAGE_POOL_2D MAX_POOL_2D L2_POOL_2D L2_NORMALIZATION
LOCAL_RESPONSE_NORMALIZATION INSTANCE_NORMALIZATION RESHAPE SQUEEZE EXPAND_DIMS TRANSPOSE
CONCATENATION SPLIT PACK PAD PAD_V2 MIRROR_PAD MEAN REDUCE_SUM REDUCE_MAX REDUCE_MIN REDUCE_PROD
REDUCE_ANY REDUCE_ALL ARGMAX ARGMIN GATHER SLICE STRIDED_SLICE TILE CAST EQUAL NOT_EQUAL GREATER
GREATER_EQUAL LESS LESS_EQUAL LOGICAL_AND LOGICAL_OR LOGICAL_NOT SELECT RESIZE_BILINEAR
RESIZE_NEAREST_NEIGHBOR DEPTH_TO_SPACE SPACE_TO_DEPTH BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND
CHANNEL_SHUFFLE QUANTIZE DEQUANTIZE FILL RANK REVERSE TOPK_V2 EMBEDDING_LOOKUP
""".split()

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


def test_scope_has_85_operations() -> None:
    assert len(SCOPE) == len(set(SCOPE)) == 85


@pytest.mark.parametrize("name", SCOPE)
def test_operation_is_implemented_and_covered(name: str) -> None:
    op = Op[name]
    definition = definitions().get(op)
    assert definition is not None, f"{name} has no reference kernel"
    assert _COUNT[op] >= 3, f"{name} has only {_COUNT[op]} conformance cases"
    missing = definition.kernel_types - _COVERED[op]
    assert not missing, f"{name}: no conformance case for {sorted(t.name for t in missing)}"
