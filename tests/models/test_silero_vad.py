"""silero-vad's voice-activity detectors (the ONNX files of the silero-vad 6.2.3 wheel) imported by
nnrt: a stream of 512-sample chunks at 16 kHz — silence, a synthetic voice, noise — run chunk by
chunk carrying the LSTM state, as silero's own ``OnnxWrapper`` does (each chunk is prefixed with
the last 64 samples of the previous one), through ``nnrt.reference.run`` and through the
runtime's ``cpu`` driver, against onnxruntime; and the speech probabilities tell the voice from
silence and noise.

The silero wheel ships no audio, so the voice is synthesised: a glottal pulse train (pitch
gliding around 120 Hz, harmonics falling ~7 dB per octave) shaped by the first three formants of
a sequence of vowels, one per 0.25 s syllable, with a syllabic amplitude envelope. onnxruntime
gives it speech probabilities of 0.8-1.0; silence and noise stay below 0.1 until the hangover.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from oracle import assert_close, ort_session

import nnrt
import nnrt.onnx

pytestmark = [pytest.mark.network, pytest.mark.anyio]

MODELS = ["silero_vad_16k_op15.onnx", "silero_vad_op18_ifless.onnx"]
RATE, CHUNK, CONTEXT = 16_000, 512, 64
SHAPES = {"input": [1, CONTEXT + CHUNK], "state": [2, 1, 128], "sr": []}
#: The stream: this many chunks of silence, then voice, then noise.
SILENCE, VOICE, NOISE = 16, 48, 16
#: (F1, F2, F3) in Hz of the vowels /a/, /i/, /u/, /e/, /o/.
VOWELS = [(730, 1090, 2440), (270, 2290, 3010), (300, 870, 2240), (530, 1840, 2480),
          (570, 840, 2410)]

Array = np.ndarray[Any, Any]
#: One chunk step: (input [1, 576], state) -> (speech probability, next state).
Step = Callable[[Array, Array], tuple[float, Array]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def synthetic_voice(samples: int) -> Array:
    """Vowel-like voiced speech (see the module docstring), peak 0.3."""
    t = np.arange(samples) / RATE
    pitch = 120 + 25 * np.sin(2 * np.pi * 0.7 * t) + 10 * np.sin(2 * np.pi * 3.1 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / RATE
    source = sum(np.sin(k * phase) / k ** 1.2 for k in range(1, 40))
    syllable = RATE // 4
    out = np.zeros(samples)
    for i, start in enumerate(range(0, samples, syllable)):
        piece = source[start:start + syllable]
        freqs = np.fft.rfftfreq(len(piece), 1 / RATE)
        envelope = sum(1 / (1 + ((freqs - f) / (60 + 0.05 * f)) ** 2)
                       for f in VOWELS[i % len(VOWELS)])
        shaped = np.fft.irfft(np.fft.rfft(piece) * envelope, len(piece))
        out[start:start + syllable] = shaped * np.sin(np.pi * np.arange(len(piece))
                                                      / len(piece)) ** 0.5
    out += 0.002 * np.random.default_rng(0).standard_normal(samples)
    return np.asarray(0.3 * out / np.abs(out).max(), np.float32)


def audio_stream() -> Array:
    """Silence, voice, then white noise (std 0.03), in whole chunks."""
    noise = 0.03 * np.random.default_rng(3).standard_normal(NOISE * CHUNK)
    return np.concatenate([np.zeros(SILENCE * CHUNK, np.float32),
                           synthetic_voice(VOICE * CHUNK), noise.astype(np.float32)])


def chunks() -> list[Array]:
    """The chunks of :func:`audio_stream` without their context."""
    audio = audio_stream()
    return [audio[i:i + CHUNK] for i in range(0, len(audio), CHUNK)]


def run_stream(step: Step) -> tuple[Array, Array]:
    """Speech probability per chunk and the final state, carrying state and context."""
    state = np.zeros((2, 1, 128), np.float32)
    context = np.zeros(CONTEXT, np.float32)
    probabilities = []
    for chunk in chunks():
        x = np.concatenate([context, chunk])[None]
        probability, state = step(x, state)
        probabilities.append(probability)
        context = x[0, -CONTEXT:]
    return np.array(probabilities, np.float32), state


@dataclass
class Vad:
    """One silero model: its path, the nnrt import, and onnxruntime's results on the stream."""

    path: Path
    model: nnrt.Model
    probabilities: Array
    state: Array


@pytest.fixture(scope="module", params=MODELS)
def vad(request: pytest.FixtureRequest, silero_dir: Path) -> Vad:
    path = silero_dir / request.param
    session = ort_session(path)
    rate = np.array(RATE, np.int64)

    def ort_step(x: Array, state: Array) -> tuple[float, Array]:
        out, new_state = session.run(None, {"input": x, "state": state, "sr": rate})
        return float(out[0, 0]), new_state

    probabilities, state = run_stream(ort_step)
    return Vad(path, nnrt.onnx.load(path, input_shapes=SHAPES), probabilities, state)


def test_the_model_keeps_the_onnx_names(vad: Vad) -> None:
    session = ort_session(vad.path)
    operands = vad.model.operands
    assert [operands[i].name for i in vad.model.inputs] == [i.name for i in session.get_inputs()]
    assert [operands[i].name for i in vad.model.outputs] == ["output", "stateN"]


@pytest.fixture(scope="module")
def reference_run(vad: Vad) -> tuple[Array, Array]:
    """The stream through ``nnrt.reference.run``: probabilities and final state."""
    rate = np.array([RATE], np.int64)

    def step(x: Array, state: Array) -> tuple[float, Array]:
        out, new_state = nnrt.reference.run(vad.model, {"input": x, "state": state, "sr": rate})
        assert out.shape == (1, 1) and new_state.shape == (2, 1, 128)
        return float(out[0, 0]), new_state

    return run_stream(step)


def test_reference_matches_onnxruntime(vad: Vad, reference_run: tuple[Array, Array]) -> None:
    probabilities, state = reference_run
    assert_close(probabilities, vad.probabilities, f"{vad.path.name}: speech probabilities")
    assert_close(state, vad.state, f"{vad.path.name}: final state")


async def stream_through_runtime(vad: Vad, driver: str
                                 ) -> tuple[Array, Array, nnrt.PlacementReport]:
    """The stream through a runtime on ``driver`` (reference as fallback): probabilities,
    final state, and the compiled model's placement."""
    rate = np.array([RATE], np.int64)
    async with nnrt.Runtime(drivers=[driver], workers=1) as rt:
        with warnings.catch_warnings():  # how the model splits is the benchmark's concern
            warnings.simplefilter("ignore", nnrt.PartitionWarning)
            compiled = await rt.compile(vad.model, devices=[driver])
        state = np.zeros((2, 1, 128), np.float32)
        context = np.zeros(CONTEXT, np.float32)
        probabilities = []
        for chunk in chunks():
            x = np.concatenate([context, chunk])[None]
            out, state = await compiled.execute({"input": x, "state": state, "sr": rate},
                                                copy=True)
            probabilities.append(float(out[0, 0]))
            context = x[0, -CONTEXT:]
        placement = compiled.placement()
        await compiled.release()
    return np.array(probabilities, np.float32), state, placement


async def test_runtime_on_the_cpu_driver_matches_onnxruntime(vad: Vad) -> None:
    probabilities, state, _ = await stream_through_runtime(vad, "cpu")
    assert_close(probabilities, vad.probabilities,
                 f"{vad.path.name}: speech probabilities through the runtime")
    assert_close(state, vad.state, f"{vad.path.name}: final state through the runtime")


async def test_runtime_on_the_litert_driver_matches_onnxruntime(vad: Vad) -> None:
    pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")
    probabilities, state, placement = await stream_through_runtime(vad, "litert")
    assert_close(probabilities, vad.probabilities,
                 f"{vad.path.name}: speech probabilities on litert")
    assert_close(state, vad.state, f"{vad.path.name}: final state on litert")
    # the LSTM model runs whole on litert; the IF-less one keeps its IF on the reference
    assert {o.driver for o in placement.operations if o.type_name != "IF"} == {"litert"}


def test_voice_is_told_from_silence_and_noise(vad: Vad,
                                             reference_run: tuple[Array, Array]) -> None:
    p = reference_run[0]
    silence, voice, noise = p[:SILENCE], p[SILENCE:SILENCE + VOICE], p[SILENCE + VOICE:]
    assert silence.max() < 0.1, silence
    assert voice.mean() > 0.8 and np.median(voice) > 0.9, voice
    assert noise[-1] < 0.5 and noise[-4:].mean() < noise[:4].mean(), noise
    # the same speech / no-speech decision as onnxruntime wherever onnxruntime is not on the edge
    clear = np.abs(vad.probabilities - 0.5) > 1e-3
    np.testing.assert_array_equal((p > 0.5)[clear], (vad.probabilities > 0.5)[clear])


#: The batch left unknown (0): one model serves any number of streams at once.
DYNAMIC = {"input": [0, CONTEXT + CHUNK], "state": [2, 0, 128], "sr": []}
STREAMS = 3


def _stream_inputs(k: int) -> list[Array]:
    """The first chunks of stream ``k``: the audio shifted by ``k`` chunks, with context."""
    audio = np.roll(audio_stream(), -k * 7 * CHUNK)
    return [audio[i:i + CONTEXT + CHUNK][None] for i in range(0, 8 * CHUNK, CHUNK)]


async def test_a_dynamic_batch_of_streams_matches_onnxruntime(vad: Vad) -> None:
    """Imported with an unknown batch, the model runs three streams in one execution per chunk
    (the LSTM's batch unknown at import), as onnxruntime does."""
    model = nnrt.onnx.load(vad.path, input_shapes=DYNAMIC)
    assert model.input_info[0].shape[0] in (None, "batch")
    session = ort_session(vad.path)
    rate, ort_rate = np.array([RATE], np.int64), np.array(RATE, np.int64)
    streams = [_stream_inputs(k) for k in range(STREAMS)]
    async with nnrt.Runtime() as rt:
        compiled = await rt.compile(model)
        state = ort_state = np.zeros((2, STREAMS, 128), np.float32)
        for step in range(len(streams[0])):
            x = np.concatenate([s[step] for s in streams])
            out, state = await compiled.execute({"input": x, "state": state, "sr": rate},
                                                copy=True)
            want, ort_state = session.run(None, {"input": x, "state": ort_state,
                                                 "sr": ort_rate})
            assert_close(out, want, f"{vad.path.name}: step {step}, batch of {STREAMS}")
        await compiled.release()


async def test_concurrent_streams_are_batched_and_equal_one_by_one(vad: Vad) -> None:
    """Three streams executing concurrently are merged (silero's state carries the batch on
    axis 1, ``sr`` is shared) and get what they get one by one."""
    model = nnrt.onnx.load(vad.path, input_shapes=DYNAMIC)
    rate = np.array([RATE], np.int64)
    streams = [_stream_inputs(k) for k in range(STREAMS)]
    batching = nnrt.Batching(max_batch=4, max_delay=0.05,
                             dims={"state": 1, "stateN": 1, "sr": None})
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        alone = await rt.compile(model)
        batched = await rt.compile(model, batching=batching)
        expected = []
        for stream in streams:
            state = np.zeros((2, 1, 128), np.float32)
            outs = []
            for x in stream:
                out, state = await alone.execute({"input": x, "state": state, "sr": rate},
                                                 copy=True)
                outs.append(out)
            expected.append(outs)
        got: list[list[Array]] = [[] for _ in streams]

        async def run(k: int) -> None:
            state = np.zeros((2, 1, 128), np.float32)
            for x in streams[k]:
                out, state = await batched.execute({"input": x, "state": state, "sr": rate},
                                                   copy=True)
                got[k].append(out)

        async with anyio.create_task_group() as tg:
            for k in range(STREAMS):
                tg.start_soon(run, k)
        batcher = batched.batcher
        assert batcher is not None and batcher.executions < batcher.requests  # merged
        for k in range(STREAMS):  # the reference kernels are batch-independent: bit for bit
            np.testing.assert_array_equal(np.concatenate(got[k]), np.concatenate(expected[k]))


def test_the_ifless_model_imports_unmodified_with_every_dim_dynamic(silero_dir: Path) -> None:
    """No input_shapes at all: batch and samples stay unknown (its reflect padding checked at
    execution), and the reference matches onnxruntime at two batch sizes."""
    path = silero_dir / "silero_vad_op18_ifless.onnx"
    model = nnrt.onnx.load(path)
    assert [info.shape for info in model.input_info] == [
        ("batch", "sequence"), (1,), (2, "batch", 128)]
    session = ort_session(path)
    rng = np.random.default_rng(5)
    for batch in (1, 3):
        x = (rng.standard_normal((batch, CONTEXT + CHUNK)) * 0.1).astype(np.float32)
        state = (rng.standard_normal((2, batch, 128)) * 0.1).astype(np.float32)
        want = session.run(None, {"input": x, "state": state, "sr": np.array(RATE, np.int64)})
        got = nnrt.reference.run(model, {"input": x, "state": state,
                                         "sr": np.array([RATE], np.int64)})
        for g, w in zip(got, want, strict=True):
            assert_close(g, w, f"ifless silero at batch {batch}")
