"""PaddleOCR's PP-OCRv4 text detector (as the rapidocr-onnxruntime 1.4.4 wheel ships it) on the
litert driver: it imports unmodified, runs as one litert step within 1e-4 of onnxruntime, and
with the example vendor plugin named too (it accelerates only ADD and MUL, 201 of the 387
operations) the placement stays a handful of steps, each move explained.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from oracle import assert_close, ort_session

import nnrt
import nnrt.onnx

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")
pytestmark = [pytest.mark.network, pytest.mark.anyio]

Array = np.ndarray[Any, Any]
#: The example vendor plugin (examples/vendor_plugin), importable by module:factory.
VENDOR = str(Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin")
ACME = "acme_npu:make_driver"
#: A 320x320 image keeps the test quick; benchmarks/onnx_models.py runs 640x640.
SHAPE = (1, 3, 320, 320)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def detector(ppocr_detector: Path) -> tuple[nnrt.Model, Array, Array]:
    """The imported model, an input image and onnxruntime's probability map for it."""
    proto = onnx.load(str(ppocr_detector))
    model = nnrt.onnx.load(proto, input_shapes={"x": list(SHAPE)})
    image = np.random.default_rng(3).random(SHAPE, dtype=np.float32)
    (want,) = ort_session(ppocr_detector).run(None, {"x": image})
    return model, image, want


async def test_the_detector_runs_as_one_litert_step(
        detector: tuple[nnrt.Model, Array, Array]) -> None:
    model, image, want = detector
    async with nnrt.Runtime(drivers=["litert"], workers=1) as rt:
        compiled = await rt.compile(model)
        steps = compiled.placement().steps
        assert [(s.driver, len(s.operations)) for s in steps] == [
            ("litert", len(model.operations))]
        (got,) = await compiled.execute([image])
    assert_close(got, want, "PP-OCRv4 detector probability map")


async def test_with_a_vendor_plugin_named_the_placement_stays_a_handful_of_steps(
        detector: tuple[nnrt.Model, Array, Array]) -> None:
    model, image, want = detector
    if VENDOR not in sys.path:
        sys.path.insert(0, VENDOR)  # the workers inherit the client's sys.path
    async with nnrt.Runtime(drivers=[ACME, "litert"], workers=1) as rt:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "many partitions" warning either
            compiled = await rt.compile(model)
        placement = compiled.placement()
        assert len(placement.steps) <= 5
        add = next(op for op in placement.operations if op.type_name == "ADD")
        assert add.driver == "litert"
        assert "a step of its own on acme" in add.rejected[ACME] if ACME in add.rejected \
            else "a step of its own on" in next(iter(add.rejected.values()))
        (got,) = await compiled.execute([image])
    assert_close(got, want, "PP-OCRv4 detector probability map")
