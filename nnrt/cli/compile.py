"""``nnrt compile MODEL -o OUT --driver NAME [--soc SOC]``: ahead-of-time compilation.

``MODEL`` is a ``.nnrt`` file, an ONNX file (``.onnx``) or a TFLite file (``.tflite``, with
``--signature``), the last two imported with ``--input-shape`` values fixing their dynamic
dims; the output is a ``.nnrt`` file holding the model and the
compiled partitions."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

__all__ = ["compile_file"]



def compile_file(source: str, target: str, drivers: Sequence[str] | None, soc: str | None,
                 stream: TextIO, *, input_shapes: Mapping[str, Sequence[int]] | None = None,
                 step_cost: float | None = None, quiet: bool = False,
                 signature: str | None = None) -> int:
    """Compile the model file ``source`` (``.nnrt``, or ``.onnx`` / ``.tflite`` imported with
    ``input_shapes`` and, for ``.tflite``, ``signature``) for ``drivers`` (default: the
    compiler plugins among the default drivers) into ``target``; returns 0."""
    import nnrt  # noqa: PLC0415
    from nnrt.cli.progress import Progress  # noqa: PLC0415
    from nnrt.cli.run import load_model_file  # noqa: PLC0415
    from nnrt.errors import BadData  # noqa: PLC0415
    from nnrt.hal.discovery import default_drivers, load_driver  # noqa: PLC0415
    from nnrt.hal.plugin import PluginDriver  # noqa: PLC0415
    from nnrt.runtime.compile.aot import compile_ahead  # noqa: PLC0415
    from nnrt.runtime.compile.partitioner import STEP_COST  # noqa: PLC0415
    from nnrt.runtime.compile.specialize import open_inputs  # noqa: PLC0415

    model = load_model_file(source, input_shapes, quiet=quiet, signature=signature)
    if drivers is None:
        drivers = [name for name in default_drivers()
                   if isinstance(load_driver(name), PluginDriver)]
        if not drivers:
            raise BadData("no compiler plugin among the default drivers: name one with "
                          "--driver")
    loaded = []
    targeted = False
    for name in drivers:
        driver = load_driver(name)
        if soc is not None and isinstance(driver, PluginDriver) and (
                soc in driver.plugin.soc_models):
            driver, targeted = driver.with_soc(soc), True
        loaded.append(driver)
    if soc is not None and not targeted:
        raise BadData(f"--soc {soc}: none of the drivers {', '.join(drivers)} targets it")
    bars: list[Progress] = []  # made once the partition count is known

    def progress(done: int, total: int, driver: str) -> None:
        if not bars:
            bars.append(Progress(total, stream=stream, quiet=quiet))
        bars[0].update(done, f"compiling partition {done + 1} on {driver}" if driver else "done")

    aot, modules = compile_ahead(model, loaded, progress=progress,
                                 step_cost=STEP_COST if step_cost is None else step_cost)
    for bar in bars:
        bar.close()
    nnrt.save(model, target, aot=aot, modules=modules)
    covered = sum(len(r.operations) for r in aot.dispatches)
    stream.write(f"{target}: {len(aot.dispatches)} partition(s) compiled ahead of time "
                 f"({covered} of {len(model.operations)} operations) for "
                 f"{', '.join(sorted({r.driver for r in aot.dispatches})) or 'no driver'}; "
                 "the rest runs on the fallback at run time\n")
    if open_inputs(model):
        stream.write(f"{target}: its inputs have unknown dims, which the compiling drivers "
                     "need known: the runtime prepares it per input shape when it runs "
                     "(--input-shape NAME=DIMS compiles one shape ahead of time)\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(compile_file(sys.argv[1], sys.argv[2], sys.argv[3:], None, sys.stderr))
