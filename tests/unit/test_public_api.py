"""The public surface: the facade re-exports exactly what it lists, with NNAPI names and codes."""

from __future__ import annotations

import inspect

import nnrt
from nnrt import OperandType, OperationType
from nnrt.model.operation import operation_name
from nnrt.model.types import NNAPI_OPERATIONS


def test_facade_exports_match_all() -> None:
    public = {name for name in dir(nnrt) if not name.startswith("_")}
    assert set(nnrt.__all__) <= public
    for name in nnrt.__all__:
        obj = getattr(nnrt, name)
        if inspect.isclass(obj):
            assert obj.__doc__, f"nnrt.{name} has no docstring"


def test_model_low_level_api_names() -> None:
    for method in ("add_operand", "set_operand_value", "set_operand_value_from_memory",
                   "set_operand_symm_per_channel_quant_params", "set_operand_value_from_model",
                   "add_operation", "identify_inputs_and_outputs",
                   "relax_computation_float32_to_float16", "finish"):
        assert callable(getattr(nnrt.Model, method)), method
    params = list(inspect.signature(nnrt.Model.add_operand).parameters)
    assert params[:5] == ["self", "type", "dims", "scale", "zero_point"]


def test_operand_type_codes() -> None:
    assert [(t.name, int(t)) for t in OperandType] == [
        ("FLOAT32", 0), ("INT32", 1), ("UINT32", 2), ("TENSOR_FLOAT32", 3), ("TENSOR_INT32", 4),
        ("TENSOR_QUANT8_ASYMM", 5), ("BOOL", 6), ("TENSOR_QUANT16_SYMM", 7),
        ("TENSOR_FLOAT16", 8), ("TENSOR_BOOL8", 9), ("FLOAT16", 10),
        ("TENSOR_QUANT8_SYMM_PER_CHANNEL", 11), ("TENSOR_QUANT16_ASYMM", 12),
        ("TENSOR_QUANT8_SYMM", 13), ("TENSOR_QUANT8_ASYMM_SIGNED", 14), ("SUBGRAPH", 15)]


def test_operation_type_codes() -> None:
    assert len(NNAPI_OPERATIONS) == 106
    assert [int(t) for t in NNAPI_OPERATIONS] == list(range(106))
    extensions = [t for t in OperationType if t.is_extension]
    assert extensions and all(int(t) >> 16 == 1 for t in extensions)
    assert operation_name(OperationType.NNRT_ERF) == "com.nnrt.ERF"
    assert operation_name(OperationType.ADD) == "ADD"
    assert operation_name(0x2_0000) == "<131072>"
    spot = {"ADD": 0, "CONV_2D": 3, "SOFTMAX": 25, "TRANSPOSE": 37, "CAST": 45, "GATHER": 51,
            "QUANTIZE": 72, "TOPK_V2": 90, "TRANSPOSE_CONV_2D": 91,
            "RESIZE_NEAREST_NEIGHBOR": 94, "IF": 96, "WHILE": 97, "ELU": 98, "HARD_SWISH": 99,
            "FILL": 100, "RANK": 101, "BATCH_MATMUL": 102, "PACK": 103, "MIRROR_PAD": 104,
            "REVERSE": 105}
    for name, code in spot.items():
        assert OperationType[name] == code


def test_other_enums() -> None:
    assert [int(p) for p in nnrt.ExecutionPreference] == [0, 1, 2]
    assert (nnrt.Priority.LOW, nnrt.Priority.MEDIUM, nnrt.Priority.HIGH) == (90, 100, 110)
    assert nnrt.Priority.DEFAULT == nnrt.Priority.MEDIUM
    assert [int(f) for f in nnrt.FusedActivation] == [0, 1, 2, 3]
    assert [(x.name, int(x)) for x in nnrt.OperandLifetime][:6] == [
        ("TEMPORARY_VARIABLE", 0), ("SUBGRAPH_INPUT", 1), ("SUBGRAPH_OUTPUT", 2),
        ("CONSTANT_COPY", 3), ("CONSTANT_REFERENCE", 4), ("NO_VALUE", 5)]


def test_errors_share_one_root() -> None:
    for name in ("BadData", "BadState", "OpFailed", "OutputInsufficientSize", "Unmappable",
                 "UnavailableDevice", "DeadlineMissed", "ResourceExhausted", "CacheError",
                 "Unsupported"):
        cls = getattr(nnrt, name)
        assert issubclass(cls, nnrt.NnrtError)
        assert cls.__doc__ and "raised" in cls.__doc__.lower()
    err = nnrt.OutputInsufficientSize("too small", [(2, 3)])
    assert err.shapes == [(2, 3)]
