"""The TFLite corpus (the .tflite models of the mediapipe 0.10.14 wheel) and LiteRT as its oracle.

The oracle is ``ai_edge_litert.interpreter.Interpreter`` with ``OpResolverType.BUILTIN_REF``:
TFLite's reference kernels, no delegate. LiteRT's default (the XNNPACK delegate, one thread) is
what nnrt is timed against, and the oracle of the two selfie-segmentation models, whose MediaPipe
custom op only the XNNPACK delegate implements. Errors are measured against each output's scale:
``max|got - want| <= tolerance * max(1, max|want|)``. Elementwise relative error is the wrong
measure here: the detectors regress pixel coordinates (values up to ~300) through deep residual
sums, and where those cancel to near zero, LiteRT's own XNNPACK and reference kernels differ by
over 1e-4 of the element (palm and pose detection, pose landmarks) while agreeing to ~4e-6 of
the output's scale.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

__all__ = ["CORPUS", "TOLERANCE", "TfliteModel", "assert_close", "corpus_modules", "inputs_for",
           "litert_run", "scaled_error"]

Array = np.ndarray[Any, Any]
#: nnrt's outputs must be within this of the oracle's, relative to each output's scale.
TOLERANCE = 1e-4


@dataclass(frozen=True)
class TfliteModel:
    """One corpus model: its file under ``mediapipe/modules`` and how it is checked."""

    file: str
    #: "reference" (LiteRT's BUILTIN_REF kernels), "xnnpack" (LiteRT's default: the reference
    #: kernels lack a custom op the delegate implements) or None (LiteRT cannot run it at all).
    oracle: str | None = "reference"
    #: The custom ops the reference kernels lack (named in LiteRT's error).
    custom_ops: tuple[str, ...] = ()
    tolerance: float = TOLERANCE
    #: Why ``tolerance`` is looser than :data:`TOLERANCE`, when it is.
    why: str = ""


#: name -> model: every .tflite of the mediapipe 0.10.14 wheel.
CORPUS: dict[str, TfliteModel] = {
    "face_detection_short_range": TfliteModel("face_detection/face_detection_short_range.tflite"),
    "face_detection_full_range_sparse": TfliteModel(
        "face_detection/face_detection_full_range_sparse.tflite"),
    "face_landmark": TfliteModel("face_landmark/face_landmark.tflite"),
    "face_landmark_with_attention": TfliteModel(
        "face_landmark/face_landmark_with_attention.tflite", oracle=None, custom_ops=(
            "Landmarks2TransformMatrix", "TransformTensorBilinear", "TransformLandmarks")),
    "hand_landmark_full": TfliteModel("hand_landmark/hand_landmark_full.tflite"),
    "hand_landmark_lite": TfliteModel("hand_landmark/hand_landmark_lite.tflite"),
    "hand_recrop": TfliteModel("holistic_landmark/hand_recrop.tflite"),
    "iris_landmark": TfliteModel("iris_landmark/iris_landmark.tflite"),
    "palm_detection_full": TfliteModel("palm_detection/palm_detection_full.tflite"),
    "palm_detection_lite": TfliteModel("palm_detection/palm_detection_lite.tflite"),
    "pose_detection": TfliteModel("pose_detection/pose_detection.tflite"),
    "pose_landmark_full": TfliteModel(
        "pose_landmark/pose_landmark_full.tflite", tolerance=1e-3,
        why="output 2 (Identity_2, the 256x256 segmentation logits, up to ~1350 on these inputs) "
            "comes out of five RESIZE_BILINEAR upsamplings summed with deep residual branches; "
            "LiteRT's own fp32 kernels (XNNPACK vs reference) differ on it by 1.4e-4 of its "
            "scale (9e-4 on smooth images in [-1, 1]). Every other output: under 2e-5."),
    # The selfie masks are sigmoid outputs, all under 1e-4 (many exactly 0) on random inputs: at
    # these inputs their check is weak (a real photo with a person is not in the wheel).
    "selfie_segmentation": TfliteModel(
        "selfie_segmentation/selfie_segmentation.tflite", oracle="xnnpack",
        custom_ops=("Convolution2DTransposeBias",)),
    "selfie_segmentation_landscape": TfliteModel(
        "selfie_segmentation/selfie_segmentation_landscape.tflite", oracle="xnnpack",
        custom_ops=("Convolution2DTransposeBias",)),
}


def _interpreter(path: Path, resolver: str) -> Interpreter:
    kind = OpResolverType.BUILTIN_REF if resolver == "reference" else OpResolverType.AUTO
    interpreter = Interpreter(model_path=str(path), experimental_op_resolver_type=kind,
                              num_threads=1)
    interpreter.allocate_tensors()  # unresolved custom ops fail here
    return interpreter


def inputs_for(path: Path, seed: int = 0) -> dict[str, Array]:
    """Seeded inputs by name at the model's input shapes (dynamic dims as 1): floats uniform in
    [0, 1) (every corpus model takes an image normalised to [0, 1] or [-1, 1])."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for detail in Interpreter(model_path=str(path)).get_input_details():
        shape = tuple(1 if d < 0 else int(d) for d in detail["shape_signature"])
        dtype = np.dtype(detail["dtype"])
        if dtype.kind == "f":
            feeds[detail["name"]] = rng.random(shape, dtype=np.float32).astype(dtype)
        else:
            info = np.iinfo(dtype)
            feeds[detail["name"]] = rng.integers(max(info.min, -128), min(info.max, 127) + 1,
                                                 shape).astype(dtype)
    return feeds


def litert_run(path: Path, feeds: dict[str, Array], resolver: str = "reference") -> list[Array]:
    """The model's outputs on LiteRT (``resolver``: "reference" or "xnnpack"), in the order of
    its subgraph's outputs; raises RuntimeError naming the op LiteRT cannot resolve."""
    interpreter = _interpreter(path, resolver)
    for detail in interpreter.get_input_details():
        if tuple(detail["shape"]) != feeds[detail["name"]].shape:
            interpreter.resize_tensor_input(detail["index"], feeds[detail["name"]].shape)
            interpreter.allocate_tensors()
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], feeds[detail["name"]])
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


def scaled_error(got: Array, want: Array) -> float:
    """``max|got - want|`` over ``max(1, max|want|)``."""
    want64 = np.asarray(want, np.float64)
    scale = max(1.0, float(np.max(np.abs(want64)))) if want64.size else 1.0
    return float(np.max(np.abs(np.asarray(got, np.float64) - want64))) / scale \
        if want64.size else 0.0


def assert_close(got: Array, want: Array, tolerance: float, what: str) -> None:
    """``got`` has ``want``'s shape and dtype kind and is within ``tolerance`` of its scale."""
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, LiteRT {want.shape}"
    assert got.dtype.kind == want.dtype.kind, f"{what}: dtype {got.dtype}, LiteRT {want.dtype}"
    error = scaled_error(got, want)
    assert error <= tolerance, f"{what}: error {error:.3g} of the output's scale > {tolerance:g}"


def corpus_modules() -> Path | None:
    """``mediapipe/modules`` in the test cache, for the benchmarks (None, said why on stderr,
    when it cannot be had: no network and nothing cached)."""
    from conftest import fetch

    try:
        return fetch("mediapipe") / "mediapipe" / "modules"
    except BaseException as exc:  # pytest.skip: no network and nothing cached
        print(f"# mediapipe: unavailable ({exc})", file=sys.stderr)
        return None
