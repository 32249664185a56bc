"""Structurally realistic models built in the tests (:mod:`builders`): a transformer encoder block
and a ResNet-style CNN, serialized to bytes, imported at fixed batch (and sequence) sizes or with
them dynamic, run
through the runtime on the ``cpu`` driver (the reference driver takes what it does not) and by
``nnrt.reference.run``, against onnxruntime."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import onnx
import pytest
from builders import resnet_cnn, transformer_block
from oracle import assert_close, ort_session

import nnrt
import nnrt.onnx

pytestmark = pytest.mark.anyio

Array = np.ndarray[Any, Any]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


#: id -> (model, input shape)
CASES = {
    "transformer-b1-s16-d64": (lambda: transformer_block(d=64, heads=4, seed=1), (1, 16, 64)),
    "transformer-b8-s64-d128": (lambda: transformer_block(d=128, heads=8, seed=2), (8, 64, 128)),
    "transformer-b2-s32-d96": (lambda: transformer_block(d=96, heads=6, seed=3), (2, 32, 96)),
    "resnet-b1": (lambda: resnet_cnn(seed=4), (1, 3, 32, 32)),
    "resnet-b8": (lambda: resnet_cnn(seed=5), (8, 3, 32, 32)),
}


def _case(name: str) -> tuple[bytes, Array, Array]:
    """The model's bytes, an input, and onnxruntime's output for it."""
    build, shape = CASES[name]
    data = build().SerializeToString()
    x = np.random.default_rng(len(name)).standard_normal(shape).astype(np.float32)
    (want,) = ort_session(data).run(None, {"x": x})
    return data, x, want


@pytest.mark.parametrize("name", sorted(CASES))
async def test_runtime_on_the_cpu_driver_matches_onnxruntime(name: str) -> None:
    data, x, want = _case(name)
    model = nnrt.onnx.load(data, input_shapes={"x": list(x.shape)})
    async with nnrt.Runtime(drivers=["cpu"], workers=1) as rt:
        with warnings.catch_warnings():  # how the model splits is the benchmark's concern
            warnings.simplefilter("ignore", nnrt.PartitionWarning)
            compiled = await rt.compile(model, devices=["cpu"])
        assert "cpu" in compiled.placement().drivers()
        for _ in range(2):  # the second run reuses the compiled steps
            (got,) = await compiled.execute({"x": x}, copy=True)
            assert_close(got, want, f"{name} through the runtime")
        await compiled.release()


@pytest.mark.parametrize("name", ["transformer-b1-s16-d64", "resnet-b1"])
def test_reference_matches_onnxruntime(name: str) -> None:
    data, x, want = _case(name)
    model = nnrt.onnx.load(onnx.load_model_from_string(data), input_shapes={"x": list(x.shape)})
    (got,) = nnrt.reference.run(model, {"x": x})
    assert_close(got, want, f"{name} on the reference interpreter")


def test_the_shape_subgraph_folds_away() -> None:
    """PyTorch-style Shape -> Gather -> Unsqueeze -> Concat chains feeding Reshape leave no
    operation behind once the batch and sequence sizes are fixed."""
    model = nnrt.onnx.load(transformer_block(d=64, heads=4), input_shapes={"x": [2, 16, 64]})
    names = {op.type.name for op in model.operations}
    assert not names & {"SHAPE", "GATHER", "CONCATENATION", "EXPAND_DIMS"}, names


async def test_a_dynamic_batch_and_sequence_stay_dynamic_and_run_at_every_size() -> None:
    """Imported without input_shapes, each model serves several batch (and sequence) sizes
    from one compiled model, a variant per shape."""
    for build, shapes in ((lambda: resnet_cnn(seed=6), [(1, 3, 32, 32), (3, 3, 32, 32)]),
                          (lambda: transformer_block(d=64, heads=4, seed=7),
                           [(1, 16, 64), (2, 24, 64)])):
        data = build().SerializeToString()
        model = nnrt.onnx.load(data)
        assert not isinstance(model.input_info[0].shape[0], int)  # dynamic (named)
        session = ort_session(data)
        async with nnrt.Runtime(drivers=["cpu", "reference"], workers=1) as rt:
            compiled = await rt.compile(model)
            for shape in shapes:
                x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
                (got,) = await compiled.execute({"x": x})
                assert_close(got, session.run(None, {"x": x})[0], f"at {shape}")
            assert compiled.variants is not None and compiled.variants.prepared == 2


def test_a_batch_that_contradicts_the_model_is_refused() -> None:
    with pytest.raises(nnrt.BadData, match="does not fit the model's declared shape"):
        nnrt.onnx.load(resnet_cnn(size=32), input_shapes={"x": [1, 3, 16, 16]})
