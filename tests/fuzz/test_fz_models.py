"""Fuzzing models through validation, the wire format and two drivers.

* random NNAPI API call sequences through ``Model`` and ``finish()``;
* valid models (every conformance variant, random float32 chains) through
  ``model_from_wire(model_to_wire(m))``, then the reference and ``cpu`` drivers (HAL, in
  process), which must agree;
* hostile wire dicts (mutated valid models, random values) straight into ``model_from_wire``.

Never anything but an nnrt error (:func:`fuzz_kit.check_error`), and whatever passes
validation runs on the reference interpreter without a Python crash.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from fuzz_kit import budget, check_error, corpus_files, count, load_msgpack
from fz_models import chain_models, run_on, variant_model, zero_feed
from hostile import DEEP, deep_list, mutate
from hypothesis import given
from hypothesis import strategies as st

import nnrt
from nnrt import OperandType as T
from nnrt.drivers.cpu import CpuDriver
from nnrt.errors import BadData
from nnrt.model.types import OperandLifetime, OperationType
from nnrt.model.wire import model_from_wire, model_to_wire
from nnrt.ops._framework.registry import definitions
from nnrt.reference.driver import ReferenceDriver
from nnrt.testing.check import tolerance

REFERENCE = ReferenceDriver()
CPU = CpuDriver(optimize_after=0)


class FakePool:
    """A ConstantMemory of random bytes, the only pool (id 1) the fuzzed models may name."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data = random.Random(size).randbytes(size)

    def view(self, offset: int, length: int) -> memoryview:
        return memoryview(self._data)[offset:offset + length]


POOL = FakePool(4096)


def resolve(pool_id: int, path: str) -> FakePool:
    if pool_id != 1:
        raise BadData(f"{path}: unknown pool {pool_id}")
    return POOL


# -- random API call sequences -------------------------------------------------------------

_TYPES = list(T)
_OPS = sorted(definitions())
_DIMS = st.lists(st.sampled_from([0, 1, 2, 3, 4, 7, 2**31 - 1, -1]), max_size=5)
_SCALES = st.sampled_from([0.0, 0.5, 1.0, -1.0, float("nan"), float("inf")])
_ZERO_POINTS = st.sampled_from([0, 1, -1, 127, 128, 300])


def _value_for(data: st.DataObject, t: T, dims: list[int]) -> Any:
    from nnrt.model.operand import dtype_of, is_scalar

    if is_scalar(t):
        return data.draw(st.sampled_from([0, 1, -1, 2, 3, 0.5, True, False, 2**31]))
    if not dims or any(d <= 0 for d in dims) or math.prod(dims) > 256:
        return data.draw(st.sampled_from([None, np.zeros(3, np.float32), [1, 2]]))
    dtype = dtype_of(t) if t != T.SUBGRAPH else np.dtype(np.float32)
    seed = data.draw(st.integers(0, 2**32 - 1))
    values = np.random.default_rng(seed).integers(-3, 5, dims)
    return (values > 0) if dtype.kind == "b" else values.astype(dtype)


@budget(ci=100, long=10000)
@given(data=st.data())
def test_random_api_models(data: st.DataObject) -> None:
    count("models.api")
    model = nnrt.Model()
    try:
        n = data.draw(st.integers(0, 8), "operands")
        kinds = []
        for _ in range(n):
            t = data.draw(st.sampled_from(_TYPES))
            dims = data.draw(_DIMS)
            index = model.add_operand(t, dims, data.draw(_SCALES), data.draw(_ZERO_POINTS))
            kind = data.draw(st.sampled_from(["input", "output", "const", "none", "temp"]))
            kinds.append(kind)
            if kind == "const":
                model.set_operand_value(index, _value_for(data, t, dims))
            elif kind == "none":
                model.set_operand_value(index, None)
        index_st = st.integers(-1, n)
        for _ in range(data.draw(st.integers(0, 4), "operations")):
            op = data.draw(st.sampled_from(_OPS))
            model.add_operation(op, data.draw(st.lists(index_st, max_size=8)),
                                data.draw(st.lists(index_st, min_size=1, max_size=3)))
        inputs = [i for i, k in enumerate(kinds) if k == "input"]
        outputs = [i for i, k in enumerate(kinds) if k == "output"]
        model.identify_inputs_and_outputs(inputs, outputs)
        model.relax_computation_float32_to_float16(data.draw(st.booleans()))
        model.finish()
    except Exception as exc:
        check_error(exc, "Model API")
        return
    count("models.api.valid")
    _through_wire_and_reference(model)


def _constants_alike(wire: Any) -> Any:
    """``wire`` with CONSTANT_REFERENCE written as CONSTANT_COPY: a constant of at most 128
    bytes read from memory travels by value and comes back as a copy (NNAPI's rule)."""
    if isinstance(wire, dict):
        return {k: (int(OperandLifetime.CONSTANT_COPY) if k == "lifetime" and v == int(
            OperandLifetime.CONSTANT_REFERENCE) else _constants_alike(v)) for k, v in wire.items()}
    if isinstance(wire, list):
        return [_constants_alike(v) for v in wire]
    return wire


def _through_wire_and_reference(model: nnrt.Model) -> None:
    """A finished model survives the wire unchanged and runs (or refuses) cleanly."""
    wire = model_to_wire(model)
    again = model_from_wire(wire)
    assert _constants_alike(model_to_wire(again)) == _constants_alike(wire)
    feed = zero_feed(again)
    if feed is None:
        return
    try:
        REFERENCE.prepare(again).execute(feed)
    except Exception as exc:
        check_error(exc, "reference execute of a model that passed validation")


# -- valid models: the wire and two drivers ------------------------------------------------

def _agree(model: nnrt.Model, feed: list[Any], tol: tuple[float, float], where: str) -> None:
    wire = model_to_wire(model)
    rebuilt = model_from_wire(wire)
    assert model_to_wire(rebuilt) == wire, f"{where}: the wire round trip changed the model"
    try:
        expected = run_on(REFERENCE, rebuilt, feed)
    except nnrt.BadData:
        return  # data-dependent refusal (e.g. an index out of range in a mutated feed)
    except Exception as exc:
        check_error(exc, f"{where}: reference")
        raise
    assert expected is not None
    got = run_on(CPU, rebuilt, feed)
    if got is None:
        return
    count("models.agree.cpu")
    atol, rtol = tol
    for j, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have.shape == want.shape and have.dtype == want.dtype, (where, j)
        scale = max(1.0, float(np.max(np.abs(want), initial=0.0))) if want.dtype.kind == "f" \
            else 1.0
        np.testing.assert_allclose(have, want, rtol=rtol * 10, atol=atol * 10 * scale,
                                   equal_nan=True, err_msg=f"{where}: output {j}")


@budget(ci=150, long=8000)
@given(index=st.integers(0, 10**6))
def test_conformance_variants_survive_the_wire_and_agree(index: int) -> None:
    count("models.variants")
    model, feed, variant = variant_model(index)
    tol = max((tolerance(variant, arg) for arg in variant.outputs), default=(1e-5, 1e-5))
    _agree(model, feed, tol, variant.id)


@budget(ci=50, long=3000)
@given(chain=chain_models())
def test_random_chains_agree(chain: tuple[nnrt.Model, list[Any]]) -> None:
    count("models.chains")
    model, feed = chain
    _agree(model, feed, (1e-5, 1e-5), "chain")


# -- hostile wire dicts ----------------------------------------------------------------------

def _base_wire(data: st.DataObject) -> dict[str, Any]:
    if data.draw(st.booleans(), "chain?"):
        model, _ = data.draw(chain_models())
    else:
        model, _, _ = variant_model(data.draw(st.integers(0, 10**6)))
    wire = model_to_wire(model)
    if data.draw(st.booleans(), "ref?"):  # a constant by reference to the fake pool
        consts = [op for op in wire["operands"] if "value" in op and op["type"] in (
            T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM)]
        if consts:
            operand = data.draw(st.sampled_from(consts))
            length = len(operand.pop("value"))
            operand["lifetime"] = int(OperandLifetime.CONSTANT_REFERENCE)
            operand["ref"] = [1, data.draw(st.sampled_from([0, 4, 3, 4096 - length, 4096])),
                              length]
    return wire


def _from_wire(wire: Any, where: str) -> None:
    try:
        model = model_from_wire(wire, memories=resolve)
    except Exception as exc:
        check_error(exc, where)
        return
    count("models.wire.valid")
    _through_wire_and_reference(model)


@budget(ci=150, long=15000)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1), mutations=st.integers(1, 6))
def test_mutated_wire_models(data: st.DataObject, seed: int, mutations: int) -> None:
    count("models.wire.mutated")
    wire = mutate(random.Random(seed), _base_wire(data), mutations)
    _from_wire(wire, f"mutated wire model (seed {seed}, {mutations} mutations)")


_PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats()
    | st.text(max_size=8) | st.binary(max_size=16),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["operands", "operations", "inputs", "outputs", "relaxed", "type",
                         "dims", "scale", "zero_point", "lifetime", "value", "ref", "name",
                         "subgraph", "channel_quant", "x"]), inner, max_size=6),
    max_leaves=30)


@budget(ci=150, long=10000)
@given(wire=_PLAIN)
def test_random_wire_values(wire: Any) -> None:
    count("models.wire.random")
    _from_wire(wire, "random wire value")


def test_corpus_wire_models_replay() -> None:
    """Saved hostile wire models (corpus/wire_models) are refused cleanly or run."""
    files = list(corpus_files("wire_models"))
    assert files, "the corpus of wire models is empty"
    for path in files:
        _from_wire(load_msgpack(path), path.name)


# -- regressions -------------------------------------------------------------------------------

def _empty_model(**fields: Any) -> dict[str, Any]:
    return {"operands": [], "operations": [], "inputs": [], "outputs": [], "relaxed": False,
            **fields}


@pytest.mark.parametrize("field", ["relaxed", "inputs", "operands", "operations"])
def test_deeply_nested_field_is_bad_data(field: str) -> None:
    """Bug found by fuzzing: msgpack carries up to 1024 levels of nesting, and the error
    message's ``repr`` of such a value raised RecursionError out of ``model_from_wire``."""
    value = deep_list(DEEP)
    with pytest.raises(BadData):
        model_from_wire(_empty_model(**{field: value}))


def test_deeply_nested_operand_field_is_bad_data() -> None:
    operand = {"type": 0, "dims": [], "scale": 0.0, "zero_point": 0, "lifetime": 0,
               "name": deep_list(DEEP)}
    with pytest.raises(BadData):
        model_from_wire(_empty_model(operands=[operand]))


def test_subgraphs_nested_too_deep_are_bad_data() -> None:
    """Nested SUBGRAPH operands past the limit are refused, not recursed into."""
    wire: dict[str, Any] = _empty_model()
    for _ in range(40):
        wire = _empty_model(operands=[{"type": int(T.SUBGRAPH), "dims": [], "scale": 0.0,
                                       "zero_point": 0,
                                       "lifetime": int(OperandLifetime.SUBGRAPH),
                                       "subgraph": wire}])
    with pytest.raises(BadData, match="nest deeper"):
        model_from_wire(wire)


def test_unknown_operation_codes_are_bad_data() -> None:
    assert max(int(op) for op in OperationType) < 2**31
    with pytest.raises(BadData):
        model_from_wire(_empty_model(operations=[{"type": 2**31 - 1, "inputs": [],
                                                  "outputs": []}]))
