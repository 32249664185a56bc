"""Cache tokens: the app token derived from a model's content, and the per-step hash chain."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import nnrt
from nnrt.model.builder import ModelBuilder
from nnrt.runtime.compile import caching
from nnrt.runtime.compile.caching import model_token, step_token
from nnrt.runtime.compile.constants import PlacedConstants, place_constants

APP = bytes(range(32))
BASE = dict(operations=[0, 1, 2], driver="cpu", version="1.0", preference=1, priority=100)


def model(weight: float = 1.0, name: str = "x", dims: tuple[int, ...] = (2, 3)) -> nnrt.Model:
    b = ModelBuilder()
    x = b.input(name, dims)
    y = b.add(x, b.constant(np.full(dims, weight, np.float32)))
    b.output(b.relu(y))
    return b.build()


def test_model_token_is_stable_and_content_addressed() -> None:
    assert model_token(model()) == model_token(model())
    assert len(model_token(model())) == 32
    assert model_token(model(name="renamed")) == model_token(model())  # names do not count
    assert model_token(model(weight=1.0 + 1e-6)) != model_token(model())  # every constant byte
    assert model_token(model(dims=(3, 2))) != model_token(model())


def test_big_constants_by_reference_are_hashed_too() -> None:
    with nnrt.Memory.create(4 * 1024) as memory:
        def with_memory(value: float) -> nnrt.Model:
            memory.ndarray(np.float32, (1024,))[:] = value
            m = nnrt.Model()
            a = m.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (1024,))
            c = m.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (1024,))
            act = m.add_operand(nnrt.OperandType.INT32)
            out = m.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (1024,))
            m.set_operand_value_from_memory(c, memory, 0, 4096)
            m.set_operand_value(act, 0)
            m.add_operation(nnrt.OperationType.ADD, [a, c, act], [out])
            m.identify_inputs_and_outputs([a], [out])
            return m.finish()

        first = model_token(with_memory(1.0))
        assert model_token(with_memory(1.0)) == first
        assert model_token(with_memory(2.0)) != first


def test_step_token_is_deterministic() -> None:
    assert step_token(APP, **BASE) == step_token(APP, **BASE)  # type: ignore[arg-type]
    assert step_token(APP, **{**BASE, "operations": [2, 1, 0]}) == step_token(  # type: ignore[arg-type]
        APP, **BASE)  # the partition is a set of operations


@pytest.mark.parametrize("change", [
    {"driver": "com.example.acme"}, {"version": "1.1"}, {"preference": 0}, {"priority": 90},
    {"operations": [0, 1]}, {"operations": [0, 1, 3]}])
def test_step_token_differs_for_every_input(change: dict[str, object]) -> None:
    assert step_token(APP, **{**BASE, **change}) != step_token(APP, **BASE)  # type: ignore[arg-type]


def test_step_token_differs_for_the_app_token() -> None:
    other = bytes(31) + b"\x01"
    assert step_token(other, **BASE) != step_token(APP, **BASE)  # type: ignore[arg-type]
    with pytest.raises(nnrt.BadData, match="32 bytes"):
        step_token(b"short", **BASE)  # type: ignore[arg-type]


def _large(weight: float = 0.5) -> nnrt.Model:
    """A model whose constant (4 KiB) is packed into shared memory for the workers."""
    return model(weight, dims=(32, 32))


def test_constants_are_packed_while_the_token_is_derived() -> None:
    big = _large()
    placed, token = anyio.run(lambda: caching.placed_with_token(big, derive_token=True))
    assert placed.packed is not None
    with placed.packed:
        assert token == model_token(big)
        ((pool, offset, length),) = placed.refs.values()
        assert pool == placed.packed.id and length == 32 * 32 * 4
        packed = placed.packed.ndarray(np.float32, (32, 32), offset)
        assert (packed == 0.5).all()
        del packed
    placed, token = anyio.run(lambda: caching.placed_with_token(big, derive_token=False))
    assert token is None and placed.packed is not None
    placed.packed.close()


def test_a_failed_token_closes_the_packed_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[PlacedConstants] = []

    def place(model: nnrt.Model) -> PlacedConstants:
        made.append(place_constants(model))
        return made[-1]

    def fail(model: nnrt.Model) -> bytes:
        raise nnrt.BadData("model_token: subgraphs nested more than 16 deep")

    monkeypatch.setattr(caching, "place_constants", place)
    monkeypatch.setattr(caching, "model_token", fail)
    with pytest.raises(nnrt.BadData, match="nested"):  # as it is: no exception group
        anyio.run(lambda: caching.placed_with_token(_large(), derive_token=True))
    assert made[0].packed is not None and made[0].packed.closed
