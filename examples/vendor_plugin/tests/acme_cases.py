"""Models and helpers shared by the acme-npu tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nnrt
import numpy as np
from nnrt.model.operand import dtype_of
from nnrt.model.subgraph import outline

from acme_npu import AcmeDispatch, AcmePlugin

Array = np.ndarray[Any, Any]

#: Operation indices of :func:`mixed_model`, by what they are.
ADD0, SUB1, DIV2, MUL3, ADD16_4, MUL5, ADD6 = range(7)


def mixed_model() -> nnrt.Model:
    """Seven operations: float32 ADD/SUB/MUL with broadcasting, constants (a large one by
    reference) and activations, split by a DIV; and a float16 ADD beside them."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3, 4))
    y = b.input("y", (4,))
    h = b.input("h", (4,), "float16")
    a = b.add(x, y)                                                     # 0
    s = b.sub(a, np.linspace(-2, 2, 3, dtype=np.float32).reshape(3, 1), "relu6")  # 1
    d = b.div(s, x)                                                     # 2
    big = np.linspace(-1.5, 1.5, 72, dtype=np.float32).reshape(3, 2, 3, 4)  # 288 B
    m = b.mul(d, b.constant(big), "relu1")                              # 3
    h2 = b.add(h, h)                                                    # 4
    o = b.mul(m, m)                                                     # 5
    e = b.add(o, a, "relu")                                             # 6
    b.output(s, e, h2)
    return b.build()


def broadcast_model() -> nnrt.Model:
    """ADD/MUL/ADD over broadcasting shapes with a >128-byte constant (CONSTANT_REFERENCE)."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 3, 1))
    y = b.input("y", (2, 1, 8))
    weights = b.constant(np.arange(48, dtype=np.float32).reshape(2, 3, 8) / 7)
    p = b.mul(x, y)
    q = b.add(p, weights, "relu")
    r = b.add(q, x)
    b.output(r, p)
    return b.build()


def random_inputs(model: nnrt.Model, seed: int = 0) -> list[Array]:
    """Random inputs for every model input (shapes from the model)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for k in model.inputs:
        operand = model.operands[k]
        values = rng.uniform(-4, 4, model.inferred_dims[k])
        arrays.append(values.astype(dtype_of(operand.type)))
    return arrays


def invoke(module: bytes, entry: str, model: nnrt.Model, inputs: Sequence[Array]
           ) -> list[Array]:
    """Load ``entry`` of ``module`` and run it on ``inputs`` into fresh outputs."""
    dispatch = AcmeDispatch()
    program = dispatch.load(module, entry)
    outputs = [np.full(model.inferred_dims[k], np.nan, np.float32) for k in model.outputs]
    dispatch.invoke(program, inputs, outputs)
    dispatch.unload(program)
    return outputs


def run_split(model: nnrt.Model, groups: Sequence[Sequence[int]], soc: str
              ) -> list[Array]:
    """Run ``model`` as a plan: each group (in order) outlined and run on the Acme NPU if the
    plugin selected all of it, else on the reference interpreter; one compile for all."""
    plugin = AcmePlugin()
    selected = plugin.partition(model, soc).selected
    outlined = [outline(model, group) for group in groups]
    npu = [i for i, group in enumerate(groups) if all(op in selected for op in group)]
    compiled = plugin.compile([outlined[i].model for i in npu], soc)
    calls = dict(zip(npu, compiled.calls, strict=True))
    model_inputs = random_inputs(model)
    values = dict(zip(model.inputs, model_inputs, strict=True))
    for i, part in enumerate(outlined):
        inputs = [values[k] for k in part.inputs]
        if i in calls:
            module, entry = calls[i]
            results = invoke(compiled.modules[module], entry, part.model, inputs)
        else:
            results = nnrt.reference.run(part.model, inputs)
        values.update(zip(part.outputs, results, strict=True))
    expected = nnrt.reference.run(model, model_inputs)
    for k, want in zip(model.outputs, expected, strict=True):
        np.testing.assert_array_equal(values[k], want)
    return [values[k] for k in model.outputs]
