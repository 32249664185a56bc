"""Run a .nnrt file in this (fresh) process and print what ran where, as JSON.

Usage: python aot_run.py MODEL.nnrt INPUT.npy EXPECTED.npy DRIVER...
"""

from __future__ import annotations

import json
import sys

import anyio
import numpy as np

import nnrt


async def main(path: str, given: str, expected: str, drivers: list[str]) -> None:
    model = nnrt.load(path)
    x = np.load(given)
    async with nnrt.Runtime(drivers=drivers, workers=1) as rt:
        compiled = await rt.compile(model)
        (out,) = await compiled.execute([x])
        np.testing.assert_allclose(out, np.load(expected), rtol=1e-5, atol=1e-6)
        steps = [{"driver": s.driver, "source": s.source, "note": s.note,
                  "operations": list(s.operations)} for s in compiled.placement().steps]
    print(json.dumps({"steps": steps, "aot": model.aot is not None}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
