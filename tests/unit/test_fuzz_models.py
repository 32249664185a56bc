"""Seeded random single-operation models: finish() and run() either succeed or raise nnrt errors.

A malformed model must never crash an op's validate / prepare / execute with a Python error
(IndexError, TypeError, ...), which the framework would report as an "internal error".
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt import OperandType as T
from nnrt.model.operand import dtype_of, is_scalar
from nnrt.ops._framework.registry import definitions

_TENSOR_TYPES = [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_BOOL8,
                 T.TENSOR_QUANT8_ASYMM]
_SCALAR_TYPES = [T.INT32, T.FLOAT32, T.BOOL, T.FLOAT16]
MODELS_PER_OP = 40


def _random_value(rng: random.Random, t: T, dims: tuple[int, ...]) -> Any:
    dtype = dtype_of(t)
    if is_scalar(t):
        if t == T.BOOL:
            return rng.random() < 0.5
        if t == T.INT32:
            return rng.choice([-3, -1, 0, 1, 2, 3, 4, 7, 100])
        return rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0])
    shape = tuple(dims)
    if dtype.kind == "b":
        return np.random.default_rng(rng.randrange(2**32)).random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -3), min(info.max, 5)
        return np.random.default_rng(rng.randrange(2**32)).integers(lo, hi, shape).astype(dtype)
    return np.random.default_rng(rng.randrange(2**32)).uniform(-2, 2, shape).astype(dtype)


def _operand(rng: random.Random, m: nnrt.Model, like: tuple[T, tuple[int, ...]] | None
             ) -> tuple[int, T, tuple[int, ...]]:
    roll = rng.random()
    if roll < 0.35:
        t = rng.choice(_SCALAR_TYPES)
        dims: tuple[int, ...] = ()
    elif like is not None and roll < 0.7:
        t, dims = like
    else:
        t = rng.choice(_TENSOR_TYPES)
        dims = tuple(rng.choice([1, 2, 3, 4]) for _ in range(rng.choice([1, 2, 3, 4, 4])))
    quant = t == T.TENSOR_QUANT8_ASYMM
    return m.add_operand(t, dims, 0.5 if quant else 0.0, 1 if quant else 0), t, dims


def _fuzz_one(rng: random.Random, op: nnrt.OperationType) -> None:
    m = nnrt.Model()
    first_type = rng.choice(_TENSOR_TYPES[:3])
    first_dims = tuple(rng.choice([1, 2, 3, 4]) for _ in range(rng.choice([1, 2, 3, 4])))
    x = m.add_operand(first_type, first_dims)
    ins, model_inputs, feed = [x], [x], [_random_value(rng, first_type, first_dims)]
    for _ in range(rng.randrange(0, 13)):
        index, t, dims = _operand(rng, m, (first_type, first_dims))
        if rng.random() < 0.05:
            m.set_operand_value(index, None)
        elif is_scalar(t) or rng.random() < 0.5:
            m.set_operand_value(index, _random_value(rng, t, dims))
        else:
            model_inputs.append(index)
            feed.append(_random_value(rng, t, dims))
        ins.append(index)
    outs = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        t = rng.choice([first_type, first_type, *_TENSOR_TYPES])
        quant = t == T.TENSOR_QUANT8_ASYMM
        dims = rng.choice([(), first_dims, tuple(0 for _ in first_dims)])
        outs.append(m.add_operand(t, dims, 0.5 if quant else 0.0, 0))
    m.add_operation(op, ins, outs)
    m.identify_inputs_and_outputs(model_inputs, outs)
    try:
        m.finish()
    except nnrt.BadData:
        return
    try:
        nnrt.reference.run(m, feed)
    except (nnrt.BadData, nnrt.Unsupported):
        return
    except nnrt.OpFailed as exc:
        pytest.fail(f"{op.name}: run failed instead of validating: {exc}")


@pytest.mark.parametrize("op", sorted(definitions()), ids=lambda op: op.name)
def test_random_models_fail_cleanly(op: nnrt.OperationType) -> None:
    rng = random.Random(f"nnrt-fuzz-{op.name}")
    for _ in range(MODELS_PER_OP):
        try:
            _fuzz_one(rng, op)
        except nnrt.BadData:
            pass
        except nnrt.OpFailed as exc:
            if "internal error" in str(exc):
                pytest.fail(f"{op.name}: {exc}")
            raise


# -- mutations of valid conformance cases: reach prepare / execute with near-valid data ---------

MUTATIONS_PER_CASE = 3


def _mutate(rng: random.Random, variant: Any) -> Any:
    from dataclasses import replace

    inputs = list(variant.inputs)
    outputs = list(variant.outputs)
    kind = rng.choice(["scalar", "values", "dims", "drop", "out_dims"])
    # a SUBGRAPH argument (IF / WHILE) holds a model, not values: mutations leave it alone
    slots = [i for i, a in enumerate(inputs) if not a.omitted and a.type != T.SUBGRAPH]
    if kind == "scalar":
        scalars = [i for i in slots if inputs[i].scalar]
        if scalars:
            i = rng.choice(scalars)
            inputs[i] = replace(inputs[i], value=_random_value(rng, inputs[i].type, ()))
    elif kind == "values":
        tensors = [i for i in slots if not inputs[i].scalar]
        if tensors:
            i = rng.choice(tensors)
            arg = inputs[i]
            value = _random_value(rng, arg.type, arg.dims)
            if arg.type == T.TENSOR_INT32:
                value = np.asarray(value) * rng.choice([1, 3, -7])
            inputs[i] = replace(arg, value=value)
    elif kind == "dims":
        tensors = [i for i in slots if not inputs[i].scalar]
        if tensors:
            i = rng.choice(tensors)
            arg = inputs[i]
            dims = list(arg.dims)
            if dims and rng.random() < 0.7:
                dims[rng.randrange(len(dims))] = rng.choice([1, 2, 3, 5])
            elif rng.random() < 0.5:
                dims.append(rng.choice([1, 2]))
            elif dims:
                dims.pop()
            dims_t = tuple(dims) or (1,)
            inputs[i] = replace(arg, dims=dims_t, value=_random_value(rng, arg.type, dims_t))
    elif kind == "drop" and len(inputs) > 1:
        inputs.pop()
    elif kind == "out_dims":
        j = rng.randrange(len(outputs))
        outputs[j] = replace(outputs[j], dims=tuple(rng.choice([0, 1, 2]) for _ in
                                                    range(rng.choice([0, 1, 2, 4]))))
    return replace(variant, inputs=tuple(inputs), outputs=tuple(outputs))


def _case_names() -> list[str]:
    from nnrt.testing.cases import all_cases

    return [c.name for c in all_cases()]


@pytest.mark.parametrize("name", _case_names())
def test_mutated_cases_fail_cleanly(name: str) -> None:
    from nnrt.testing import build, expand
    from nnrt.testing.cases import all_cases

    case = next(c for c in all_cases() if c.name == name)
    base = expand(case)[0]
    rng = random.Random(f"nnrt-mutate-{name}")
    for _ in range(MUTATIONS_PER_CASE):
        variant = _mutate(rng, base)
        try:
            model, feed = build(variant)
            nnrt.reference.run(model, feed)
        except (nnrt.BadData, nnrt.Unsupported):
            continue
        except nnrt.OpFailed as exc:
            pytest.fail(f"{name}: a mutated model crashed a kernel instead of being refused: "
                        f"{exc}")
