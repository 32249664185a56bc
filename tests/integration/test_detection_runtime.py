"""Detection operations through the whole runtime: the cpu driver computes the scores, the
reference driver keeps the boxes (BOX_WITH_NMS_LIMIT) and pools them (ROI_ALIGN); outputs whose
length depends on the values — zero boxes included — come back with their actual shapes."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

pytestmark = pytest.mark.anyio

F = T.TENSOR_FLOAT32


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def detection_model() -> nnrt.Model:
    """``logistic(logits)`` scores two boxes of one class; the kept boxes are pooled 2 x 2 from
    an 8 x 8 feature map."""
    m = nnrt.Model()

    def const(type_: T, dims: tuple[int, ...], value: object) -> int:
        index = m.add_operand(type_, dims)
        m.set_operand_value(index, value)
        return index

    logits = m.add_operand(F, (2, 2), name="logits")
    image = m.add_operand(F, (1, 8, 8, 1), name="image")
    scores = m.add_operand(F, (2, 2))
    m.add_operation(Op.LOGISTIC, [logits], [scores])
    boxes = const(F, (2, 8), np.array([[0, 0, 4, 4, 0, 0, 4, 4], [0, 0, 4, 4, 4, 4, 8, 8]],
                                      np.float32))
    batches = const(T.TENSOR_INT32, (2,), np.zeros(2, np.int32))
    kept_scores, kept_boxes = m.add_operand(F, (0,)), m.add_operand(F, (0, 4))
    classes, kept_batches = m.add_operand(T.TENSOR_INT32, (0,)), m.add_operand(T.TENSOR_INT32, (0,))
    m.add_operation(Op.BOX_WITH_NMS_LIMIT, [
        scores, boxes, batches, const(T.FLOAT32, (), 0.5), const(T.INT32, (), -1),
        const(T.INT32, (), 0), const(T.FLOAT32, (), 0.4), const(T.FLOAT32, (), 1.0),
        const(T.FLOAT32, (), 0.5)], [kept_scores, kept_boxes, classes, kept_batches])
    pooled = m.add_operand(F, (0, 2, 2, 1))
    m.add_operation(Op.ROI_ALIGN, [
        image, kept_boxes, kept_batches, const(T.INT32, (), 2), const(T.INT32, (), 2),
        const(T.FLOAT32, (), 1.0), const(T.FLOAT32, (), 1.0), const(T.INT32, (), 2),
        const(T.INT32, (), 2), const(T.BOOL, (), False)], [pooled])
    m.identify_inputs_and_outputs([logits, image], [kept_scores, kept_boxes, pooled])
    return m.finish()


async def test_kept_boxes_of_any_number_travel_back() -> None:
    model = detection_model()
    image = np.arange(64, dtype=np.float32).reshape(1, 8, 8, 1)
    async with nnrt.Runtime(drivers=["cpu", "reference"], workers=1) as rt:
        compiled = await rt.compile(model, step_cost=0)
        drivers = [op.driver for op in compiled.placement().operations]
        assert drivers == ["cpu", "reference", "reference"]
        for logits, kept in (([[0, 4], [0, 3]], 2), ([[0, -4], [0, 2]], 1),
                             ([[0, -4], [0, -3]], 0)):
            scores, boxes, pooled = await compiled.execute(
                {"logits": np.array(logits, np.float32), "image": image})
            assert scores.shape == (kept,) and boxes.shape == (kept, 4)
            assert pooled.shape == (kept, 2, 2, 1)
            expected = 1 / (1 + np.exp(-np.sort(np.array(logits, np.float32)[:, 1])[::-1]))
            np.testing.assert_allclose(scores, expected[:kept], rtol=1e-6)
        # the box (4, 4)-(8, 8) alone: per cell the mean of 2 x 2 bilinear samples of the
        # linear image 8 y + x, at 4.5 / 5.5 and 6.5 / 7.5 — the last clamped to the border, 7
        _, boxes, pooled = await compiled.execute(
            {"logits": np.array([[0, -4], [0, 2]], np.float32), "image": image})
        np.testing.assert_array_equal(boxes, [[4, 4, 8, 8]])
        np.testing.assert_allclose(pooled.reshape(2, 2), [[45.0, 46.75], [59.0, 60.75]])
