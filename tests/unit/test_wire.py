"""The model wire format: exact round trips, msgpack safety, and hostile input → BadData only."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import numpy as np
import pytest

import nnrt
from nnrt import OperandLifetime as L
from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.model.wire import MAX_SUBGRAPH_DEPTH, model_from_wire, model_to_wire
from nnrt.testing import build, expand
from nnrt.testing.cases import all_cases
from nnrt.testing.spec import VARIANTS

Wire = dict[str, Any]


def _through_msgpack(data: Wire) -> Any:
    return msgpack.unpackb(msgpack.packb(data, use_bin_type=True), raw=False)


def _round_trip(model: nnrt.Model) -> nnrt.Model:
    return model_from_wire(_through_msgpack(model_to_wire(model)))


def _same_model(a: nnrt.Model, b: nnrt.Model, where: str = "model") -> None:
    """Operands (every field, values byte for byte), operations and model fields are equal."""
    assert b.finished, where
    assert (a.inputs, a.outputs, a.relaxed) == (b.inputs, b.outputs, b.relaxed), where
    assert a.operations == b.operations, where
    assert len(a.operands) == len(b.operands), where
    for i, (x, y) in enumerate(zip(a.operands, b.operands, strict=True)):
        at = f"{where}.operands[{i}]"
        assert (x.type, x.dims, x.scale, x.zero_point, x.lifetime, x.name, x.channel_quant) == (
            y.type, y.dims, y.scale, y.zero_point, y.lifetime, y.name, y.channel_quant), at
        vx, vy = a.constant_value(i), b.constant_value(i)
        assert (vx is None) == (vy is None), at
        if vx is not None and vy is not None:
            assert (vx.dtype, vx.shape, vx.tobytes()) == (vy.dtype, vy.shape, vy.tobytes()), at
        assert (x.subgraph is None) == (y.subgraph is None), at
        if x.subgraph is not None and y.subgraph is not None:
            _same_model(x.subgraph, y.subgraph, f"{at}.subgraph")


def _outcome(model: nnrt.Model, feed: list[Any]) -> Any:
    try:
        return [(o.dtype, o.shape, o.tobytes()) for o in map(np.asarray,
                                                               nnrt.reference.run(model, feed))]
    except nnrt.NnrtError as exc:
        return (type(exc), str(exc))


# -- round trips --------------------------------------------------------------------------------

ALL_VARIANTS = [v for case in all_cases() for v in expand(case)]


def _one_case_per_operation() -> set[str]:
    first: dict[Op, str] = {}
    for case in all_cases():
        first.setdefault(case.op, case.name)
    return set(first.values())


RUN_CASES = _one_case_per_operation()


@pytest.mark.parametrize("variant_name", VARIANTS)
def test_every_conformance_model_round_trips(variant_name: str) -> None:
    """Every variant keeps its operands and operations; one case per operation also runs."""
    variants = [v for v in ALL_VARIANTS if v.variant == variant_name]
    assert variants
    for variant in variants:
        model, feed = build(variant)
        wire = model_to_wire(model)
        back = model_from_wire(_through_msgpack(wire))
        _same_model(model, back, variant.id)
        assert model_to_wire(back) == wire, variant.id
        if variant.case.name in RUN_CASES:
            assert _outcome(back, feed) == _outcome(model, feed), variant.id


def test_builder_model_keeps_names_and_results() -> None:
    rng = np.random.default_rng(0)
    b = nnrt.ModelBuilder()
    x = b.input("image", (1, 6, 6, 2))
    w = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
    y = b.conv2d(x, b.constant(w), b.constant(np.zeros(3, np.float32)), padding="same",
                 activation="relu")
    b.output(b.softmax(b.reshape(b.max_pool2d(y, 2), (1, -1))), names=["probs"])
    model = b.build()
    back = _round_trip(model)
    _same_model(model, back)
    assert back.find_input("image") == 0
    assert back.operand(back.outputs[0]).name == "probs"
    image = rng.standard_normal((1, 6, 6, 2)).astype(np.float32)
    assert _outcome(back, [image]) == _outcome(model, [image])


class _Pool:
    """A minimal read-only memory pool (the ConstantMemory protocol)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    @property
    def size(self) -> int:
        return len(self._data)

    def view(self, offset: int, length: int) -> memoryview:
        return memoryview(self._data)[offset:offset + length]


def test_values_set_from_memory_travel_by_value() -> None:
    big = np.arange(64, dtype=np.float32)
    small = np.arange(4, dtype=np.float32)
    pool = _Pool(b"\0" * 8 + big.tobytes() + small.tobytes())
    m = nnrt.Model()
    x = m.add_operand(T.TENSOR_FLOAT32, (4,))
    w_big = m.add_operand(T.TENSOR_FLOAT32, (64,))
    w_small = m.add_operand(T.TENSOR_FLOAT32, (4,))
    act = m.add_operand(T.INT32)
    mid = m.add_operand(T.TENSOR_FLOAT32, (4,))
    out = m.add_operand(T.TENSOR_FLOAT32, (4,))
    m.set_operand_value_from_memory(w_big, pool, 8, 256)
    m.set_operand_value_from_memory(w_small, pool, 264, 16)
    m.set_operand_value(act, 0)
    m.add_operation(Op.ADD, [x, w_small, act], [mid])
    m.add_operation(Op.ADD, [mid, w_small, act], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    wire = model_to_wire(m)
    assert wire["operands"][w_big]["value"] == big.tobytes()
    back = model_from_wire(_through_msgpack(wire))
    assert back.operand(w_big).lifetime == L.CONSTANT_REFERENCE
    assert back.operand(w_big).location is None  # a copy, not a reference to the pool
    assert back.operand(w_small).lifetime == L.CONSTANT_COPY  # small values are copied
    np.testing.assert_array_equal(back.constant_value(w_big), big)
    (y,) = nnrt.reference.run(back, [np.ones(4, np.float32)])
    np.testing.assert_array_equal(y, 1 + 2 * small)


def _add_model(extra_subgraph: nnrt.Model | None = None) -> nnrt.Model:
    """y = x + c (ADD on 1x2), optionally carrying an unused SUBGRAPH operand."""
    m = nnrt.Model()
    x = m.add_operand(T.TENSOR_FLOAT32, (1, 2), name="x")
    c = m.add_operand(T.TENSOR_FLOAT32, (1, 2))
    act = m.add_operand(T.INT32)
    y = m.add_operand(T.TENSOR_FLOAT32, (1, 2), name="y")
    m.set_operand_value(c, np.array([[1.0, 2.0]], np.float32))
    m.set_operand_value(act, 0)
    m.add_operation(Op.ADD, [x, c, act], [y])
    if extra_subgraph is not None:
        s = m.add_operand(T.SUBGRAPH)
        m.set_operand_value_from_model(s, extra_subgraph)
    m.identify_inputs_and_outputs([x], [y])
    return m.finish()


def _nested(levels: int) -> nnrt.Model:
    model = _add_model()
    for _ in range(levels):
        model = _add_model(model)
    return model


def _if_model() -> nnrt.Model:
    m = nnrt.Model()
    cond = m.add_operand(T.TENSOR_BOOL8, (1,))
    then_s, else_s = m.add_operand(T.SUBGRAPH), m.add_operand(T.SUBGRAPH)
    x = m.add_operand(T.TENSOR_FLOAT32, (1, 2))
    y = m.add_operand(T.TENSOR_FLOAT32, (1, 2))
    m.set_operand_value_from_model(then_s, _add_model())
    m.set_operand_value_from_model(else_s, _nested(1))
    m.add_operation(Op.IF, [cond, then_s, else_s, x], [y])
    m.identify_inputs_and_outputs([cond, x], [y])
    return m.finish()


def test_subgraph_models_round_trip_nested() -> None:
    model = _if_model()
    wire = model_to_wire(model)
    assert wire["operands"][1]["lifetime"] == L.SUBGRAPH
    assert isinstance(wire["operands"][2]["subgraph"]["operands"][4]["subgraph"], dict)
    _same_model(model, model_from_wire(_through_msgpack(wire)))


def test_subgraphs_nest_up_to_the_limit_and_no_deeper() -> None:
    deepest = _nested(MAX_SUBGRAPH_DEPTH)
    _same_model(deepest, _round_trip(deepest))
    with pytest.raises(nnrt.BadData, match=r"nest deeper than 16"):
        model_to_wire(_add_model(deepest))
    too_deep = model_to_wire(_add_model())
    too_deep["operands"].append({"type": 15, "dims": [], "scale": 0.0, "zero_point": 0,
                                 "lifetime": int(L.SUBGRAPH),
                                 "subgraph": model_to_wire(deepest)})
    with pytest.raises(nnrt.BadData,
                       match=r"^model(\.operands\[4\]\.subgraph){17}: subgraphs nest deeper"):
        model_from_wire(too_deep)


def test_unfinished_model_is_refused() -> None:
    with pytest.raises(nnrt.BadState, match="finished"):
        model_to_wire(nnrt.Model())
    with pytest.raises(nnrt.BadData, match=r"expected an nnrt\.Model"):
        model_to_wire({"operands": []})  # type: ignore[arg-type]


def test_wire_is_plain_data() -> None:
    def walk(value: Any) -> Iterator[Any]:
        yield value
        if isinstance(value, dict):
            assert all(isinstance(k, str) for k in value)
            for v in value.values():
                yield from walk(v)
        elif isinstance(value, list):
            for v in value:
                yield from walk(v)

    plain = (dict, list, str, bytes, int, float, bool)
    wire = model_to_wire(_if_model())
    assert all(type(v) in plain for v in walk(wire))
    assert _through_msgpack(wire) == wire


# -- hostile input ------------------------------------------------------------------------------
# The ADD model's wire: operands 0 x (input), 1 c (CONSTANT_COPY [1, 2]), 2 act (INT32 constant),
# 3 y (output); one ADD operation.

Mutation = Callable[[Wire], Any]


def _set(*path_and_value: Any) -> Mutation:
    """A mutation setting ``wire[path...] = value`` (the last argument)."""
    *path, value = path_and_value

    def mutate(wire: Wire) -> Wire:
        target: Any = wire
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return wire
    return mutate


def _drop(*path: Any) -> Mutation:
    def mutate(wire: Wire) -> Wire:
        target: Any = wire
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
        return wire
    return mutate


def _with_operand(**fields: Any) -> Mutation:
    """Append an operand (SUBGRAPH, lifetime SUBGRAPH by default) with ``fields``."""
    def mutate(wire: Wire) -> Wire:
        operand = {"type": int(T.SUBGRAPH), "dims": [], "scale": 0.0, "zero_point": 0,
                   "lifetime": int(L.SUBGRAPH), **fields}
        wire["operands"].append(operand)
        return wire
    return mutate


def _self_nesting(wire: Wire) -> Any:
    return _with_operand(subgraph=wire)(wire)


def _cycle(wire: Wire) -> Wire:
    wire["operands"].append({**wire["operands"][0], "lifetime": int(L.TEMPORARY_VARIABLE)})
    add = wire["operations"][0]
    wire["operations"] = [{**add, "inputs": [4, 1, 2], "outputs": [3]},
                          {**add, "inputs": [3, 1, 2], "outputs": [4]}]
    return wire


def _fan_out(wire: Wire) -> Wire:
    """Each level lists one shared child 100,000 times: over the operand budget at level 10."""
    for _ in range(12):
        wire = {**wire, "operands": [{"type": int(T.SUBGRAPH), "dims": [], "scale": 0.0,
                                      "zero_point": 0, "lifetime": int(L.SUBGRAPH),
                                      "subgraph": wire}] * 100_000}
    return wire


def _big_constants(wire: Wire) -> Wire:
    big = {"type": int(T.TENSOR_FLOAT32), "dims": [16 << 20], "scale": 0.0, "zero_point": 0,
           "lifetime": int(L.CONSTANT_REFERENCE), "value": bytes(64 << 20)}
    wire["operands"].extend([big] * 33)  # 33 x 64 MiB > 2 GiB, one shared bytes object
    return wire


BAD: dict[str, tuple[Mutation, str]] = {
    "not_a_map": (lambda w: [w], r"^model: expected a map, got list"),
    "missing_field": (_drop("operands"), r"^model: missing field 'operands'"),
    "unknown_field": (_set("extra", 1), r"^model: unknown field 'extra'"),
    "non_str_key": (_set(1, 2), r"^model: unknown field 1"),
    "operands_not_a_list": (_set("operands", {}),
                            r"^model\.operands: expected a list, got dict"),
    "operand_not_a_map": (_set("operands", 1, "x"), r"^model\.operands\[1\]: expected a map"),
    "unknown_operand_type": (_set("operands", 1, "type", 99),
                             r"^model\.operands\[1\]\.type: unknown OperandType code 99"),
    "bool_as_operand_type": (_set("operands", 1, "type", True),
                             r"^model\.operands\[1\]\.type: expected an integer, got True"),
    "float_as_operand_type": (_set("operands", 1, "type", 3.0),
                              r"^model\.operands\[1\]\.type: expected an integer, got 3\.0"),
    "negative_dim": (_set("operands", 0, "dims", [1, -1]),
                     r"^model\.operands\[0\]\.dims\[1\]: -1 is out of range"),
    "bool_as_dim": (_set("operands", 0, "dims", [True, 2]),
                    r"^model\.operands\[0\]\.dims\[0\]: expected an integer, got True"),
    "huge_dim": (_set("operands", 0, "dims", [1, 2**40]),
                 r"^model\.operands\[0\]\.dims\[1\]: 1099511627776 is out of range"),
    "dims_not_a_list": (_set("operands", 0, "dims", (1, 2)),
                        r"^model\.operands\[0\]\.dims: expected a list, got tuple"),
    "rank_17": (_set("operands", 0, "dims", [1] * 17),
                r"^model\.operands\[0\]\.dims: 17 entries exceed the limit of 16"),
    "scalar_with_dims": (_set("operands", 2, "dims", [1]),
                         r"^model\.operands\[2\]: operand 2: scalar INT32 must have no dims"),
    "contradicting_output_dims": (_set("operands", 3, "dims", [1, 3]),
                                  r"^model: operation 0 \(ADD\).*contradict"),
    "nan_scale": (_set("operands", 0, "scale", float("nan")),
                  r"^model\.operands\[0\]\.scale: expected a finite number, got nan"),
    "str_scale": (_set("operands", 0, "scale", "0.5"),
                  r"^model\.operands\[0\]\.scale: expected a number, got '0\.5'"),
    "huge_int_scale": (_set("operands", 0, "scale", 10**400),
                       r"^model\.operands\[0\]\.scale: .* is too large for a float"),
    "scale_on_float_tensor": (_set("operands", 0, "scale", 0.5),
                              r"^model\.operands\[0\]: .*takes no quantisation"),
    "zero_point_out_of_int32": (_set("operands", 0, "zero_point", 2**40),
                                r"^model\.operands\[0\]\.zero_point: 1099511627776 is out of"),
    "unknown_lifetime": (_set("operands", 1, "lifetime", 42),
                         r"^model\.operands\[1\]\.lifetime: unknown OperandLifetime code 42"),
    "value_length_mismatch": (
        _set("operands", 1, "value", b"\0" * 4),
        r"^model\.operands\[1\]\.value: 4 bytes, but TENSOR_FLOAT32 with dims \[1, 2\] needs 8"),
    "value_not_bytes": (_set("operands", 1, "value", "\0" * 8),
                        r"^model\.operands\[1\]\.value: expected bytes, got str"),
    "value_as_bytearray": (_set("operands", 1, "value", bytearray(8)),
                           r"^model\.operands\[1\]\.value: expected bytes, got bytearray"),
    "value_on_input": (_set("operands", 0, "value", b"\0" * 8),
                       r"^model\.operands\[0\]\.value: only CONSTANT_COPY / CONSTANT_REFERENCE"),
    "constant_without_value": (_drop("operands", 1, "value"),
                               r"^model\.operands\[1\]: a CONSTANT_COPY operand needs a 'value'"),
    "oversized_constant_copy": (
        lambda w: _set("operands", 1, "value", bytes(256))(_set("operands", 1, "dims", [64])(w)),
        r"^model\.operands\[1\]\.value: a CONSTANT_COPY value holds at most 128 bytes"),
    "unspecified_constant_dims": (
        lambda w: _set("operands", 1, "value", b"")(_set("operands", 1, "dims", [0, 2])(w)),
        r"^model\.operands\[1\]: .*a constant needs fully specified dims"),
    "bool_byte_2": (
        lambda w: _set("operands", 2, "value", b"\2")(_set("operands", 2, "type", 6)(w)),
        r"^model\.operands\[2\]\.value: boolean values must be bytes 0 or 1"),
    "name_not_str": (_set("operands", 0, "name", 5),
                     r"^model\.operands\[0\]\.name: expected a string"),
    "name_too_long": (_set("operands", 0, "name", "x" * 70_000),
                      r"^model\.operands\[0\]\.name: expected a string of at most 65536"),
    "unknown_operation_type": (_set("operations", 0, "type", 9999),
                               r"^model\.operations\[0\]\.type: unknown OperationType code 9999"),
    "negative_operation_type": (_set("operations", 0, "type", -1),
                                r"^model\.operations\[0\]\.type: unknown OperationType code -1"),
    "dangling_operation_input": (
        _set("operations", 0, "inputs", [0, 99, 2]),
        r"^model\.operations\[0\]\.inputs\[1\]: operand index 99 is out of range \(the model "
        r"has 4 operands\)"),
    "negative_operation_output": (_set("operations", 0, "outputs", [-1]),
                                  r"^model\.operations\[0\]\.outputs\[0\]: operand index -1"),
    "operation_without_outputs": (_set("operations", 0, "outputs", []),
                                  r"^model\.operations\[0\]: .*needs at least one output"),
    "operation_writes_a_constant": (_set("operations", 0, "outputs", [1]),
                                    r"^model: .*operand 1 is a constant copy and cannot be"),
    "dangling_model_input": (_set("inputs", [7]),
                             r"^model\.inputs\[0\]: operand index 7 is out of range"),
    "input_lifetime_disagrees": (
        _set("operands", 0, "lifetime", int(L.TEMPORARY_VARIABLE)),
        r"^model\.operands\[0\]\.lifetime: TEMPORARY_VARIABLE does not agree with model\.inputs"),
    "output_not_listed": (_set("outputs", []),
                          r"^model\.operands\[3\]\.lifetime: SUBGRAPH_OUTPUT does not agree"),
    "input_listed_twice": (_set("inputs", [0, 0]), r"^model: model input: operand 0 is listed"),
    "int_as_relaxed": (_set("relaxed", 1), r"^model\.relaxed: expected a bool, got 1"),
    "cycle": (_cycle, r"^model: the graph has a cycle: operations 0 \(ADD\), 1 \(ADD\)"),
    "output_never_written": (_set("operations", []),
                             r"^model: model output 0 \(operand 3\) is never written"),
    "huge_operand_count": (lambda w: _set("operands", [w["operands"][0]] * 1_000_001)(w),
                           r"^model\.operands: 1000001 entries exceed the limit of 1000000"),
    "huge_operation_count": (lambda w: _set("operations", w["operations"] * 1_000_001)(w),
                             r"^model\.operations: 1000001 entries exceed the limit"),
    "operand_budget_across_subgraphs": (
        _fan_out, r"\.subgraph: counting every subgraph, 1\d{6} operands"),
    "constant_bytes_over_2_gib": (
        _big_constants,
        r"^model\.operands\[\d+\]\.value: constant values exceed the limit of 2147483648"),
    "self_nesting": (_self_nesting,
                     r"^model(\.operands\[4\]\.subgraph){17}: subgraphs nest deeper"),
    "subgraph_without_model": (_with_operand(),
                               r"^model\.operands\[4\]: a SUBGRAPH operand needs a 'subgraph'"),
    "subgraph_on_input": (lambda w: _set("operands", 0, "subgraph", copy.deepcopy(w))(w),
                          r"^model\.operands\[0\]\.subgraph: only an operand of lifetime"),
    "subgraph_with_value": (
        _with_operand(lifetime=int(L.CONSTANT_COPY), value=b""),
        r"^model\.operands\[4\]\.value: a SUBGRAPH operand cannot have a constant value"),
    "bad_field_inside_subgraph": (
        lambda w: _with_operand(subgraph=_set("operands", 1, "type", 99)(copy.deepcopy(w)))(w),
        r"^model\.operands\[4\]\.subgraph\.operands\[1\]\.type: unknown OperandType code 99"),
    "channel_quant_on_float": (
        _set("operands", 1, "channel_quant", {"channel_dim": 0, "scales": [1.0]}),
        r"^model\.operands\[1\]: .*per-channel quantisation needs TENSOR_QUANT8_SYMM_PER"),
    "bool_channel_dim": (
        _set("operands", 1, "channel_quant", {"channel_dim": True, "scales": [1.0]}),
        r"^model\.operands\[1\]\.channel_quant\.channel_dim: expected an integer, got True"),
    "str_channel_scale": (
        _set("operands", 1, "channel_quant", {"channel_dim": 0, "scales": ["a"]}),
        r"^model\.operands\[1\]\.channel_quant\.scales\[0\]: expected a number, got 'a'"),
    "channel_quant_missing_scales": (
        _set("operands", 1, "channel_quant", {"channel_dim": 0}),
        r"^model\.operands\[1\]\.channel_quant: missing field 'scales'"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_malformed_wire_raises_bad_data_naming_the_field(name: str) -> None:
    mutate, match = BAD[name]
    data = mutate(model_to_wire(_add_model()))
    with pytest.raises(nnrt.BadData, match=match):
        model_from_wire(data)


HOSTILE: list[Any] = [None, True, -1, 2**31, 2**64, 0.5, float("inf"), "x", b"\0", [], [1.5], {},
                      {"type": 0}]


_DROP = object()


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``value`` with ``new`` at ``path`` (``_DROP`` deletes it); the rest is shared."""
    if not path:
        return new
    key, rest = path[0], path[1:]
    result: Any = dict(value) if isinstance(value, dict) else list(value)
    if not rest and new is _DROP:
        del result[key]
    else:
        result[key] = _replaced(value[key], rest, new)
    return result


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every position (path of keys / indices) in a wire value, containers included."""
    if path:
        yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for k, item in enumerate(value):
            yield from _leaves(item, (*path, k))


def _per_channel_model() -> nnrt.Model:
    for case in all_cases():
        for variant in expand(case):
            if any(arg.channel_quant is not None for arg in variant.inputs):
                return build(variant)[0]
    raise AssertionError("no conformance case uses per-channel quantisation")


@pytest.mark.parametrize("make", [_add_model, _if_model, _per_channel_model],
                         ids=["add", "if", "per_channel"])
def test_any_replaced_or_removed_field_gives_bad_data_or_a_model(
        make: Callable[[], nnrt.Model]) -> None:
    wire = model_to_wire(make())
    checked = 0
    for path in _leaves(wire):
        if "subgraph" in path[:-1]:
            continue  # inside a subgraph: the same fields as the "add" model's
        for value in [*HOSTILE, _DROP]:
            with contextlib.suppress(nnrt.BadData):
                assert model_from_wire(_replaced(wire, path, value)).finished
            checked += 1
    assert checked > 100
