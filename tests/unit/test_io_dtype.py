"""What callers see of a model's inputs and outputs: int64 held as TENSOR_INT32 inside (io_dtype),
named dims (dim_names)."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import nnrt
import nnrt.reference
from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.model.wire import model_from_wire, model_to_wire


def ids_model() -> nnrt.Model:
    """y = ids + 1 (int64 in, int64 out) and z = ids * 2 (int32 out)."""
    b = nnrt.ModelBuilder()
    ids = b.input("ids", (0,), dtype="int64")
    y = b.add(ids, b.constant(np.ones(1, np.int32)))
    z = b.mul(ids, b.constant(np.full(1, 2, np.int32)))
    b.output(y, z, names=["y", "z"], io_dtypes=["int64", None])
    return b.build()


def test_int64_inputs_and_outputs_keep_their_dtype_for_callers() -> None:
    model = ids_model()
    assert [i.dtype for i in model.input_info] == [np.dtype(np.int64)]
    assert [o.dtype for o in model.output_info] == [np.dtype(np.int64), np.dtype(np.int32)]
    assert model.operands[model.inputs[0]].type == T.TENSOR_INT32
    y, z = nnrt.reference.run(model, {"ids": np.array([1, -5, 2**31 - 2], np.int64)})
    assert y.dtype == np.int64 and z.dtype == np.int32
    np.testing.assert_array_equal(y, [2, -4, 2**31 - 1])


def test_int64_values_beyond_int32_are_refused_naming_the_input() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 'ids'.*2147483648"):
        nnrt.reference.run(ids_model(), {"ids": np.array([0, 2**31], np.int64)})


def test_io_dtype_travels_on_the_wire_and_is_checked() -> None:
    model = ids_model()
    wire = model_to_wire(model)
    back = model_from_wire(wire)
    assert [o.dtype for o in back.output_info] == [np.dtype(np.int64), np.dtype(np.int32)]
    wire["operands"][model.inputs[0]]["io_dtype"] = 7
    with pytest.raises(nnrt.BadData, match=r"model.operands\[0\].io_dtype: expected a string"):
        model_from_wire(wire)
    wire["operands"][model.inputs[0]]["io_dtype"] = "int16"
    with pytest.raises(nnrt.BadData, match=r"model.operands\[0\]: .*io_dtype 'int16'"):
        model_from_wire(wire)


def test_io_dtype_is_for_int32_boundary_operands_only() -> None:
    m = nnrt.Model()
    with pytest.raises(nnrt.BadData, match="io_dtype 'int64' is not one of a TENSOR_FLOAT32"):
        m.add_operand(T.TENSOR_FLOAT32, (2,), io_dtype="int64")
    a = m.add_operand(T.TENSOR_INT32, (2,))
    inner = m.add_operand(T.TENSOR_INT32, (2,), io_dtype="int64")
    out = m.add_operand(T.TENSOR_INT32, (2,))
    none = m.add_operand(T.INT32)
    m.set_operand_value(none, 0)
    m.add_operation(Op.ADD, [a, a, none], [inner])
    m.add_operation(Op.ADD, [inner, a, none], [out])
    m.identify_inputs_and_outputs([a], [out])
    with pytest.raises(nnrt.BadData, match="operand 1: io_dtype 'int64' is for model inputs"):
        m.finish()


def test_the_runtime_returns_int64_outputs() -> None:
    async def main() -> None:
        async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
            compiled = await rt.compile(ids_model())
            assert compiled.outputs[0].dtype == np.int64
            y, z = await compiled.execute({"ids": np.arange(4, dtype=np.int64)})
            assert y.dtype == np.int64 and z.dtype == np.int32
            np.testing.assert_array_equal(y, np.arange(4) + 1)

    anyio.run(main)


def test_named_dims_reach_callers_and_travel_on_the_wire() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", ("batch", 3), dtype="float32")
    y = b.relu(x)
    b.name_dims(y, ["batch", None])
    b.output(y, names=["y"])
    model = b.build()
    assert model.input_info[0].shape == ("batch", 3)
    assert str(model.input_info[0]) == "x: float32[batch, 3]"
    assert model.output_info[0].shape == ("batch", None)  # the builder infers static dims only
    back = model_from_wire(model_to_wire(model))
    assert back.input_info[0].shape == ("batch", 3)
    assert back.output_info[0].shape == ("batch", None)
    wire = model_to_wire(model)
    for bad, why in (([7, None], "expected None or a string"), (["batch"], "1 names for 2 dims"),
                     (["batch", "channels"], "dim 1 is known"), ("batch", "expected a list")):
        wire["operands"][model.inputs[0]]["dim_names"] = bad
        with pytest.raises(nnrt.BadData, match=rf"model.operands\[0\].dim_names.*{why}"):
            model_from_wire(wire)
