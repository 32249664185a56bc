"""``nnrt.tflite.load``: names, signatures, dynamic dims, constants in place, unsupported
operators, and malformed files (``BadData`` naming the field)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb

import nnrt
import nnrt.reference
import nnrt.tflite
from nnrt.memory import find_memory
from nnrt.model.types import OperandLifetime
from tests.unit.tflite.flatbuffers_kit import B, TfliteFile, litert_run, pack


def _fc_file(signature: dict | None = None, dynamic: bool = False) -> tuple[bytes, np.ndarray]:  # type: ignore[type-arg]
    f = TfliteFile()
    x = f.tensor((1, 64), name="serving_x", signature=(-1, 64) if dynamic else None)
    w = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32)
    wt = f.const(w, name="weights")
    y = f.tensor((1, 32), name="serving_y", signature=(-1, 32) if dynamic else None)
    f.op(B.FULLY_CONNECTED, [x, wt, -1], [y], fb.FullyConnectedOptionsT())
    return f.finish([x], [y], signature), w


def test_names_and_constants_referenced_in_place(tmp_path: Path) -> None:
    data, _ = _fc_file()
    path = tmp_path / "fc.tflite"
    path.write_bytes(data)
    model = nnrt.tflite.load(path)
    assert [model.operands[i].name for i in model.inputs] == ["serving_x"]
    assert [model.operands[i].name for i in model.outputs] == ["serving_y"]
    weights = [o for o in model.operands if o.dims == (32, 64)]
    assert weights and weights[0].lifetime == OperandLifetime.CONSTANT_REFERENCE
    x = np.ones((1, 64), np.float32)
    (got,) = nnrt.reference.run(model, {"serving_x": x})
    np.testing.assert_allclose(got, litert_run(data, [x])[0], rtol=1e-5, atol=1e-5)
    assert find_memory(np.zeros(1)) is None


def test_signature_names_and_dynamic_batch() -> None:
    data, _ = _fc_file({"key": "serving_default", "inputs": {"input": 0},
                        "outputs": {"output": 2}}, dynamic=True)
    model = nnrt.tflite.load(data)
    assert model.operands[model.inputs[0]].name == "input"
    assert model.operands[model.inputs[0]].dims == (0, 64)
    x = np.random.default_rng(2).standard_normal((3, 64)).astype(np.float32)
    (got,) = nnrt.reference.run(model, {"input": x})
    np.testing.assert_allclose(got, litert_run(data, [x])[0], rtol=1e-5, atol=1e-5)
    pinned = nnrt.tflite.load(data, input_shapes={"input": (4, 64)})
    assert pinned.operands[pinned.inputs[0]].dims == (4, 64)
    with pytest.raises(nnrt.BadData, match=r"no signature 'other'.*serving_default"):
        nnrt.tflite.load(data, signature="other")
    with pytest.raises(nnrt.BadData, match="input_shapes"):
        nnrt.tflite.load(data, input_shapes={"nope": (1, 64)})


def test_unsupported_operators_reported_together() -> None:
    f = TfliteFile()
    x, a, b, c = (f.tensor((2, 3)) for _ in range(4))
    f.op(B.CUSTOM, [x], [a], custom=b"MyOp")
    f.op(B.RELU, [a], [b])  # reads a failed operator's output: not reported again
    f.op(B.CUMSUM, [x, f.const(np.asarray(0, np.int32))], [c])
    with pytest.raises(nnrt.tflite.UnsupportedTfliteModel) as info:
        nnrt.tflite.load(f.finish([x], [b, c]))
    ops = [o.op for o in info.value.operators]
    assert ops == ["CUSTOM(MyOp)", "CUMSUM"]
    assert "operator 0 (CUSTOM(MyOp))" in str(info.value)


def _model() -> object:
    f = TfliteFile()
    x, y = f.tensor((2, 3)), f.tensor((2, 3))
    f.op(B.ADD, [x, f.const(np.ones((2, 3), np.float32))], [y], fb.AddOptionsT())
    return f.model([x], [y])


def test_truncated_and_wrong_identifier() -> None:
    data = pack(_model())
    for cut in (0, 7, 20, len(data) // 2, len(data) - 9):
        with pytest.raises(nnrt.BadData, match="tflite"):
            nnrt.tflite.load(data[:cut])
    with pytest.raises(nnrt.BadData, match="file identifier"):
        nnrt.tflite.load(data[:4] + b"XXXX" + data[8:])


def test_every_flipped_byte_is_bad_data_or_a_model() -> None:
    data = bytearray(pack(_model()))
    for i in range(len(data)):
        for value in (0x00, 0xFF, 0x7F):
            mutated = bytearray(data)
            mutated[i] = value
            with contextlib.suppress(nnrt.BadData, nnrt.tflite.UnsupportedTfliteModel):
                nnrt.tflite.load(bytes(mutated))


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda m: setattr(m.subgraphs[0].tensors[2], "buffer", 99),
     r"subgraphs\[0\].tensors\[2\].buffer: 99 out of range \(2 buffers\)"),
    (lambda m: m.subgraphs[0].operators[0].inputs.__setitem__(0, 12),
     r"subgraphs\[0\].operators\[0\].inputs\[0\]: 12 out of range \(3 tensors\)"),
    (lambda m: m.subgraphs[0].inputs.__setitem__(0, 5),
     r"subgraphs\[0\].inputs\[0\]: 5 out of range"),
    (lambda m: setattr(m.subgraphs[0].operators[0], "opcodeIndex", 4),
     r"operators\[0\].opcode_index: 4 out of range"),
    (lambda m: setattr(m.subgraphs[0].tensors[0], "shape", np.asarray([1 << 30] * 4, np.int32)),
     r"subgraphs\[0\].tensors\[0\].shape"),
    (lambda m: setattr(m.subgraphs[0].tensors[0], "shape", np.asarray([-2, 3], np.int32)),
     r"negative dim"),
    (lambda m: setattr(m.buffers[1], "data", np.zeros(5, np.uint8)),
     r"tensors\[2\].buffer: buffer 1 holds 5 bytes"),
    (lambda m: (setattr(m.buffers[1], "offset", 10 ** 6), setattr(m.buffers[1], "size", 24)),
     r"buffers\[1\]: offset 1000000 size 24 lies outside"),
])
def test_out_of_range_fields_name_the_field(mutate: object, field: str) -> None:
    model = _model()
    mutate(model)  # type: ignore[operator]
    with pytest.raises(nnrt.BadData, match=field):
        nnrt.tflite.load(pack(model))


def test_cyclic_subgraph_references() -> None:
    model = _model()
    loop = fb.OperatorT()
    loop.opcodeIndex = 1
    loop.inputs = np.asarray([0], np.int32)
    loop.outputs = np.asarray([2], np.int32)
    loop.builtinOptionsType = fb.BuiltinOptions.WhileOptions
    options = fb.WhileOptionsT()
    options.condSubgraphIndex = options.bodySubgraphIndex = 0
    loop.builtinOptions = options
    model.subgraphs[0].operators.append(loop)  # type: ignore[attr-defined]
    code = fb.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = B.WHILE
    model.operatorCodes.append(code)  # type: ignore[attr-defined]
    with pytest.raises(nnrt.BadData, match="cyclic"):
        nnrt.tflite.load(pack(model))
    options.bodySubgraphIndex = 3
    with pytest.raises(nnrt.BadData, match=r"body_subgraph_index|bodySubgraphIndex"):
        nnrt.tflite.load(pack(model))
