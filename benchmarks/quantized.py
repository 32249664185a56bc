"""A quantised CNN on nnrt (through the runtime, warm) vs onnxruntime running the same model.

Run: .venv/bin/python benchmarks/quantized.py [--runs N] [--batches 1,8] [--variants a,b]

The model: the PP-OCR mobile v2.0 text-direction classifier of the rapidocr 3.10.0 wheel (the
real-model corpus, from the test cache of ``tests/models``: ``pip download`` once, reused
offline), upgraded to opset 13 (per-axis DequantizeLinear), pre-processed and quantised by
``onnxruntime.quantization`` (``quant_pre_process``, then ``quantize_static`` in the QDQ format
calibrated on 8 synthetic 48x192 text lines) in the
variants of ``tests/models/test_quantized_models.py``: ``u8`` (uint8 activations and weights, per
tensor) and ``s8`` (int8 activations, int8 weights per channel). Each runs at batch 1 and 8
(48x192 synthetic text lines).

nnrt: ``nnrt.onnx.load`` (dynamic dims kept) -> ``rt.compile(model)`` on a runtime at its
defaults (every installed built-in driver, one worker each) -> ``compiled.execute`` timed end
to end from the caller (``perf_counter_ns``) after a warm-up that lets the cpu driver's
stage-2 autotuning finish. onnxruntime: ``InferenceSession`` with ``intra_op_num_threads`` 1
(sequential execution; its QDQ graph transformers on, as by default), ``run`` timed the same
way, in the same process. Reports medians, where nnrt's steps run, and the share of output
elements within one quantisation step of onnxruntime's.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper, version_converter
from onnxruntime import quantization

import nnrt
import nnrt.onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "models"), str(ROOT)]

from timing import median_execute_ms, median_ms  # noqa: E402

Array = np.ndarray[Any, Any]
Q = quantization.QuantType

#: Executions before timing (the cpu driver starts optimising after 32) and the seconds then
#: given to its background stage-2 autotuning.
WARM_EXECUTIONS = 40
STAGE2_SECONDS = 3.0
CLASSIFIER = "rapidocr/models/ch_ppocr_mobile_v2.0_cls_mobile.onnx"
#: variant -> (description, quantize_static keyword arguments).
VARIANTS = {
    "u8": ("uint8, per tensor", {"activation_type": Q.QUInt8, "weight_type": Q.QUInt8,
                                 "per_channel": False}),
    "s8": ("int8, weights per channel", {"activation_type": Q.QInt8, "weight_type": Q.QInt8,
                                         "per_channel": True}),
}


def _text_lines(count: int, seed: int) -> Array:
    """Synthetic 48x192 text-line crops (dark strokes on white, half upside down), normalised
    as the classifier expects (``(x - 0.5) / 0.5``)."""
    rng = np.random.default_rng(seed)
    images = np.ones((count, 3, 48, 192), np.float32)
    for image in images:
        for k in range(int(rng.integers(5, 12))):
            x, y = 8 + 15 * k + int(rng.integers(0, 5)), int(rng.integers(10, 20))
            image[:, y:y + int(rng.integers(10, 25)), x:x + int(rng.integers(3, 10))] = (
                rng.random() * 0.3)
        if rng.random() < 0.5:
            image[:] = image[:, ::-1, ::-1]
    return (images - 0.5) / 0.5


class _Calibration(quantization.CalibrationDataReader):  # type: ignore[misc]
    def __init__(self, count: int) -> None:
        self._feeds = iter([{"x": _text_lines(1, seed)} for seed in range(count)])

    def get_next(self) -> dict[str, Array] | None:
        return next(self._feeds, None)


def _classifier() -> Path | None:
    from conftest import fetch  # noqa: PLC0415 - tests/models/conftest.py: the test cache

    try:
        return fetch("rapidocr") / CLASSIFIER
    except BaseException as exc:  # pytest.skip: no network and nothing cached
        print(f"# rapidocr: unavailable ({exc})", file=sys.stderr)
        return None


def _quantized(source: Path, directory: Path, options: dict[str, Any]) -> bytes:
    prepared, target = directory / "pre.onnx", directory / "quantized.onnx"
    upgraded = directory / "opset13.onnx"  # per-axis DequantizeLinear needs opset 13
    onnx.save(version_converter.convert_version(onnx.load(str(source)), 13), str(upgraded))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantization.quant_pre_process(str(upgraded), str(prepared), skip_symbolic_shape=True)
        quantization.quantize_static(str(prepared), str(target), _Calibration(8),
                                     quant_format=quantization.QuantFormat.QDQ, **options)
    return target.read_bytes()


def _output_step(data: bytes) -> float:
    """The scale of the DequantizeLinear giving the (first) graph output."""
    model = onnx.load_model_from_string(data)
    producer = {o: node for node in model.graph.node for o in node.output}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    node = producer[model.graph.output[0].name]
    while node.op_type == "Identity":
        node = producer[node.input[0]]
    return float(inits[node.input[1]].reshape(-1)[0])


def _ort(data: bytes, feeds: dict[str, Array], runs: int) -> tuple[float, list[Array]]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, feeds)
    return median_ms(lambda: session.run(None, feeds), runs), outputs


async def _rows(rt: nnrt.Runtime, variant: str, source: Path, batches: list[int],
                runs: int) -> list[tuple[Any, ...]]:
    """One compiled model per variant (dynamic dims kept), timed at each batch."""
    description, options = VARIANTS[variant]
    with tempfile.TemporaryDirectory() as directory:
        data = _quantized(source, Path(directory), options)
    step = _output_step(data)
    model = nnrt.onnx.load(onnx.load_model_from_string(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a PartitionWarning is part of what we measure
        compiled = await rt.compile(model)
    rows = []
    for batch in batches:
        feeds = {"x": _text_lines(batch, 100 + batch)}
        ort1, want = _ort(data, feeds, runs)
        got = await compiled.execute(feeds)
        for _ in range(WARM_EXECUTIONS):
            await compiled.execute(feeds)
        await anyio.sleep(STAGE2_SECONDS)
        ours = await median_execute_ms(compiled, feeds, runs)
        agree = float(np.mean(np.abs(np.asarray(got[0]).reshape(want[0].shape) - want[0])
                              <= step * (1 + 1e-3)))
        latest = compiled.variants.latest if compiled.variants is not None else compiled
        placement = ", ".join(f"{s.driver}:{len(s.operations)}"
                              for s in latest.placement().steps)
        rows.append((description, batch, ours, ort1, agree, placement))
        print(f"# {description} b{batch}: nnrt {ours:.3f} ms, ort1 {ort1:.3f} ms, "
              f"{agree:.2%} within one step [{placement}]", file=sys.stderr)
    await compiled.release()
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"any of {', '.join(VARIANTS)}")
    args = parser.parse_args()
    source = _classifier()
    if source is None:
        return
    batches = [int(b) for b in args.batches.split(",")]
    rows = []
    async with nnrt.Runtime(workers=1) as rt:
        for variant in args.variants.split(","):
            rows += await _rows(rt, variant, source, batches, args.runs)
    print("| PP-OCR classifier, static QDQ | batch | nnrt defaults (ms) | onnxruntime 1 thread "
          "(ms) | nnrt / ort-1 | target met | outputs within one step | steps (driver:ops) |")
    print("|---|---:|---:|---:|---:|---|---:|---|")
    for description, batch, ours, ort1, agree, placement in rows:
        target = max(1.2 * ort1, ort1 + 0.1)
        print(f"| {description} | {batch} | {ours:.3f} | {ort1:.3f} | {ours / ort1:.2f}x | "
              f"{'yes' if ours <= target else 'no'} (<= {target:.3f}) | {agree:.2%} | "
              f"{placement} |")
    print("\nTarget: nnrt <= max(1.2 x onnxruntime-1, onnxruntime-1 + 0.1 ms).")
    print(f"\nMachine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, numpy {np.__version__}, onnxruntime {ort.__version__}, "
          f"{platform.platform()}")


if __name__ == "__main__":
    anyio.run(main)
