"""magika's file-type classifier (``standard_v3_3`` of the magika 1.0.3 wheel) imported by nnrt:
synthetic files turned into the model's input exactly as magika does, probabilities within 1e-4 of
onnxruntime, and the right file-type labels.

magika's features (``Magika._extract_features_from_seekable`` in the wheel): read at most
``block_size`` bytes from the start and from the end of the file; ``lstrip()`` the first block
and keep its first ``beg_size`` bytes, padded at the end with ``padding_token`` (256);
``rstrip()`` the last block and keep its last ``end_size`` bytes, padded at the start. The model
input is ``beg + end``, one row of 2048 int32 per file; the label is ``target_labels_space`` at
the argmax of the 214 probabilities.
"""

from __future__ import annotations

import io
import json
import struct
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from oracle import assert_close, ort_session

import nnrt
import nnrt.onnx

pytestmark = [pytest.mark.network, pytest.mark.anyio]

Array = np.ndarray[Any, Any]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def features(content: bytes, config: dict[str, Any]) -> list[int]:
    """magika's model input for one file (see the module docstring)."""
    block, pad = config["block_size"], config["padding_token"]
    beg_size, end_size = config["beg_size"], config["end_size"]
    if config["mid_size"] != 0 or config["use_inputs_at_offsets"]:
        raise ValueError("this magika model needs features the test does not build")
    n = min(block, len(content))
    beg = list(content[:n].lstrip()[:beg_size])
    end = list(content[len(content) - n:].rstrip())[-end_size:] if n else []
    return beg + [pad] * (beg_size - len(beg)) + [pad] * (end_size - len(end)) + end


PYTHON = b'''import os
import sys


def main(argv):
    """Print the arguments."""
    for i, arg in enumerate(argv):
        print(f"{i}: {arg}")
    return 0


class Counter:
    def __init__(self):
        self.n = 0

    def bump(self) -> int:
        self.n += 1
        return self.n


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''

C = b'''#include <stdio.h>
#include <stdlib.h>

static int square(int x) {
    return x * x;
}

int main(int argc, char **argv) {
    int total = 0;
    for (int i = 0; i < argc; i++) {
        total += square(atoi(argv[i]));
    }
    printf("%d\\n", total);
    return EXIT_SUCCESS;
}
'''

HTML = b'''<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Release notes</title>
<style>
body { font-family: sans-serif; margin: 2em; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ccc; padding: 4px; }
</style>
</head>
<body>
<div id="main">
<h1>Release notes</h1>
<p>The runtime now imports <b>ONNX</b> models and runs them on the <i>cpu</i> driver.</p>
<table>
<tr><th>Model</th><th>Latency</th></tr>
<tr><td>VAD</td><td>0.4 ms</td></tr>
<tr><td>Classifier</td><td>1.2 ms</td></tr>
</table>
<form action="/search" method="get"><input type="text" name="q"><button>Go</button></form>
<p>See the <a href="docs/index.html">documentation</a> for details.</p>
</div>
</body>
</html>
'''


def json_document() -> bytes:
    doc = {"name": "nnrt", "version": "0.1.0", "dependencies": {"numpy": ">=1.26"},
           "items": [{"id": i, "label": f"item {i}", "tags": ["a", "b"], "score": i * 0.5}
                     for i in range(20)]}
    return json.dumps(doc, indent=2).encode()


def png_image() -> bytes:
    """A valid 32x32 RGB PNG (gradient)."""
    width, height = 32, 32
    rows = b"".join(b"\x00" + bytes((x * 8) % 256 for x in range(width * 3))
                    for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def zip_archive() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.txt", "hello world\n" * 50)
        archive.writestr("dir/b.py", PYTHON)
    return buffer.getvalue()


#: file -> (its bytes, the label magika must give it).
FILES = {"main.py": (PYTHON, "python"), "main.c": (C, "c"), "notes.html": (HTML, "html"),
         "package.json": (json_document(), "json"), "image.png": (png_image(), "png"),
         "bundle.zip": (zip_archive(), "zip")}


@pytest.fixture(scope="module")
def config(magika_dir: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((magika_dir / "config.min.json").read_text())
    return loaded


@pytest.fixture(scope="module")
def batch(config: dict[str, Any]) -> Array:
    return np.array([features(content, config) for content, _ in FILES.values()], np.int32)


@pytest.fixture(scope="module")
def expected(magika_dir: Path, batch: Array) -> Array:
    """onnxruntime's probabilities for the batch."""
    (probabilities,) = ort_session(magika_dir / "model.onnx").run(None, {"bytes": batch})
    result: Array = probabilities
    return result


def labels_of(probabilities: Array, config: dict[str, Any]) -> list[str]:
    return [config["target_labels_space"][int(k)] for k in np.argmax(probabilities, axis=1)]


def test_features_match_magikas_rules(config: dict[str, Any]) -> None:
    short = features(b"  \n{\"a\": 1}\n\n", config)  # beg is lstripped, end rstripped
    assert len(short) == 2048
    assert short[:10] == list(b"{\"a\": 1}\n\n") and short[10:1024] == [256] * 1014
    assert short[1024:-11] == [256] * 1013 and short[-11:] == list(b"  \n{\"a\": 1}")
    long = bytes(range(256)) * 40  # 10240 bytes: the first and last 4096-byte blocks only
    row = features(long, config)
    assert row[:1024] == list(long[:1024]) and row[1024:] == list(long[-1024:])


def test_reference_matches_onnxruntime(magika_dir: Path, batch: Array, expected: Array,
                                       config: dict[str, Any]) -> None:
    model = nnrt.onnx.load(magika_dir / "model.onnx", input_shapes={"bytes": list(batch.shape)})
    (probabilities,) = nnrt.reference.run(model, {"bytes": batch})
    assert_close(probabilities, expected, "magika probabilities")
    assert labels_of(probabilities, config) == labels_of(expected, config)
    assert labels_of(probabilities, config) == [label for _, label in FILES.values()]
    assert np.all(probabilities.max(axis=1) > 0.9)


async def test_runtime_on_the_cpu_driver_matches_onnxruntime(
        magika_dir: Path, batch: Array, expected: Array, config: dict[str, Any]) -> None:
    one = nnrt.onnx.load(magika_dir / "model.onnx", input_shapes={"bytes": [1, 2048]})
    model = nnrt.onnx.load(magika_dir / "model.onnx", input_shapes={"bytes": list(batch.shape)})
    async with nnrt.Runtime(drivers=["cpu"], workers=1) as rt:
        with warnings.catch_warnings():  # how the model splits is the benchmark's concern
            warnings.simplefilter("ignore", nnrt.PartitionWarning)
            compiled = await rt.compile(model, devices=["cpu"])
            single = await rt.compile(one, devices=["cpu"])
        (probabilities,) = await compiled.execute({"bytes": batch}, copy=True)
        rows = [(await single.execute({"bytes": row[None]}, copy=True))[0] for row in batch]
        await compiled.release()
        await single.release()
    assert_close(probabilities, expected, "magika probabilities through the runtime (batch 6)")
    assert_close(np.concatenate(rows), expected, "magika probabilities, one file at a time")
    assert labels_of(probabilities, config) == [label for _, label in FILES.values()]


async def test_runtime_on_the_litert_driver_runs_it_whole(
        magika_dir: Path, batch: Array, expected: Array, config: dict[str, Any]) -> None:
    pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")
    model = nnrt.onnx.load(magika_dir / "model.onnx", input_shapes={"bytes": list(batch.shape)})
    async with nnrt.Runtime(drivers=["litert"], workers=1) as rt:
        compiled = await rt.compile(model)
        assert compiled.steps == 1 and compiled.device == "litert"  # int32 input, softmax
        (probabilities,) = await compiled.execute({"bytes": batch}, copy=True)
        await compiled.release()
    assert_close(probabilities, expected, "magika probabilities on litert (batch 6)")
    assert labels_of(probabilities, config) == [label for _, label in FILES.values()]
