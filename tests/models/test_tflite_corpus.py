"""The TFLite corpus: every .tflite of the mediapipe 0.10.14 wheel, imported with
``nnrt.tflite.load`` and run on the reference interpreter and through the runtime at its
defaults, each output within 1e-4 of its scale of LiteRT's reference kernels
(``OpResolverType.BUILTIN_REF``), or of LiteRT's XNNPACK delegate for the models only it can
run, with a looser tolerance where :mod:`litert_oracle` says why. The models LiteRT cannot run
are listed with the custom ops it lacks, and a test checks that it indeed still fails on them.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from conftest import WHEELS, cached_wheel
from litert_oracle import CORPUS, TOLERANCE, assert_close, inputs_for, litert_run, scaled_error

import nnrt
import nnrt.reference

pytestmark = [pytest.mark.network, pytest.mark.anyio]

RUNNABLE = [name for name, m in CORPUS.items() if m.oracle is not None]
#: The models LiteRT's reference kernels cannot run: name -> the custom ops they lack.
UNRESOLVED = {name: m.custom_ops for name, m in CORPUS.items() if m.custom_ops}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _nnrt_tflite() -> ModuleType:
    """``nnrt.tflite``, or skip while it does not exist (any other import error fails)."""
    try:
        import nnrt.tflite
    except ModuleNotFoundError as exc:
        if exc.name != "nnrt.tflite":
            raise
        pytest.skip("nnrt.tflite not built yet")
    return nnrt.tflite


def test_the_corpus_is_every_tflite_model_of_the_wheel() -> None:
    with zipfile.ZipFile(cached_wheel("mediapipe")) as archive:
        in_wheel = {n for n in archive.namelist() if n.endswith(".tflite")}
    listed = {f"mediapipe/modules/{m.file}" for m in CORPUS.values()}
    assert in_wheel == listed
    assert set(WHEELS["mediapipe"][1]) == listed


@pytest.mark.parametrize("name", list(UNRESOLVED))
def test_litert_reference_kernels_still_cannot_run_the_listed_models(
        name: str, mediapipe_modules: Path) -> None:
    model = CORPUS[name]
    path = mediapipe_modules / model.file
    resolvers = ["reference"] if model.oracle == "xnnpack" else ["reference", "xnnpack"]
    for resolver in resolvers:
        with pytest.raises(RuntimeError, match="unresolved custom op") as failure:
            litert_run(path, inputs_for(path), resolver)
        assert str(failure.value).split("unresolved custom op: ")[1].split(".")[0] in \
            model.custom_ops, f"{name} on {resolver}: {failure.value}"


@pytest.mark.parametrize("name", [n for n in RUNNABLE if CORPUS[n].oracle == "reference"])
def test_litert_xnnpack_agrees_with_its_reference_kernels_within_the_tolerance(
        name: str, mediapipe_modules: Path) -> None:
    """The tolerances are attainable: LiteRT's own two kernel sets meet them."""
    path = mediapipe_modules / CORPUS[name].file
    feeds = inputs_for(path)
    want = litert_run(path, feeds, "reference")
    got = litert_run(path, feeds, "xnnpack")
    errors = [scaled_error(g, w) for g, w in zip(got, want, strict=True)]
    assert max(errors) <= CORPUS[name].tolerance, errors
    if CORPUS[name].tolerance > TOLERANCE:
        assert CORPUS[name].why, f"{name}: a looser tolerance needs its reason"


@pytest.mark.parametrize("name", RUNNABLE)
async def test_each_model_matches_litert_on_the_reference_interpreter_and_the_runtime(
        name: str, mediapipe_modules: Path) -> None:
    tflite = _nnrt_tflite()
    model_info = CORPUS[name]
    assert model_info.oracle is not None
    path = mediapipe_modules / model_info.file
    feeds = inputs_for(path, seed=1)
    want = litert_run(path, feeds, model_info.oracle)
    model = tflite.load(path)
    for k, (g, w) in enumerate(zip(nnrt.reference.run(model, feeds), want, strict=True)):
        assert_close(g, w, model_info.tolerance, f"{name}, reference interpreter, output {k}")
    async with nnrt.Runtime() as rt:
        compiled = await rt.compile(model)
        got = await compiled.execute(feeds)
        await compiled.release()
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_close(np.asarray(g), w, model_info.tolerance, f"{name}, runtime, output {k}")
