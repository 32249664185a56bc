"""Models with inputs of unknown dims: one compiled model, a prepared variant per input shape."""

from __future__ import annotations

import itertools
from pathlib import Path

import anyio
import numpy as np
import pytest
from service_client import running_service

import nnrt
from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op

pytestmark = pytest.mark.anyio

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10


def batch_model() -> nnrt.Model:
    """y = relu(x @ W + 1) with x of shape [?, 4]: the batch is dynamic."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 4))
    (mm,) = b.operation(Op.BATCH_MATMUL, x, b.constant(W), False, False)
    b.output(b.add(mm, b.constant(np.ones(3, np.float32)), activation="relu"), names=["y"])
    return b.build()


def reshape_model() -> nnrt.Model:
    """y = reshape(x, shape computed from constants) + 1, x of shape [?, 6]: the target shape
    is an int computation (ADD of two constants), folded when the variant is made."""
    m = nnrt.Model()
    x = m.add_operand(T.TENSOR_FLOAT32, (0, 6), name="x")
    base, offset, shape = (m.add_operand(T.TENSOR_INT32, (2,)) for _ in range(3))
    m.set_operand_value(base, np.array([-2, 3], np.int32))
    m.set_operand_value(offset, np.array([1, 1], np.int32))
    none = m.add_operand(T.INT32)
    m.set_operand_value(none, 0)
    m.add_operation(Op.ADD, [base, offset, none], [shape])
    reshaped = m.add_operand(T.TENSOR_FLOAT32, (0, 0))
    m.add_operation(Op.RESHAPE, [x, shape], [reshaped])
    one = m.add_operand(T.TENSOR_FLOAT32, (1,))
    m.set_operand_value(one, np.ones(1, np.float32))
    y = m.add_operand(T.TENSOR_FLOAT32, (0, 0), name="y")
    m.add_operation(Op.ADD, [reshaped, one, none], [y])
    m.identify_inputs_and_outputs([x], [y])
    return m.finish()


def expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ W + 1, 0)


async def test_three_shapes_interleaved_prepare_once_each_on_a_compiling_driver() -> None:
    async with nnrt.Runtime(drivers=["cpu", "reference"], workers=1) as rt:
        compiled = await rt.compile(batch_model())
        assert compiled.variants is not None and compiled.variants.shapes == []
        before = rt.statistics().pools["cpu"].prepared
        rng = np.random.default_rng(0)
        for batch in itertools.islice(itertools.cycle((1, 5, 2)), 100):
            x = rng.standard_normal((batch, 4)).astype(np.float32)
            (y,) = await compiled.execute({"x": x})
            np.testing.assert_allclose(y, expected(x), rtol=1e-6, atol=1e-6)
        assert rt.statistics().pools["cpu"].prepared - before == 3
        assert compiled.variants.prepared == 3
        assert sorted(compiled.variants.shapes) == [((1, 4),), ((2, 4),), ((5, 4),)]
        assert compiled.placement().steps[0].driver == "cpu"  # the static variant's
        await compiled.release()
        with pytest.raises(nnrt.BadState, match="released"):
            await compiled.execute({"x": np.ones((1, 4), np.float32)})


async def test_the_least_recently_used_variant_is_released_beyond_the_limit() -> None:
    async with nnrt.Runtime(drivers=["cpu", "reference"], workers=1) as rt:
        compiled = await rt.compile(batch_model(), shape_variants=2)
        assert compiled.variants is not None
        for batch in (1, 2, 1, 3):  # 3 evicts 2 (1 was used after it)
            (y,) = await compiled.execute([np.ones((batch, 4), np.float32)])
            np.testing.assert_allclose(y, expected(np.ones((batch, 4), np.float32)), rtol=1e-6)
        assert compiled.variants.shapes == [((1, 4),), ((3, 4),)]
        assert compiled.variants.prepared == 3
        await compiled.execute([np.ones((2, 4), np.float32)])  # prepared again
        assert compiled.variants.prepared == 4
        with pytest.raises(nnrt.BadData, match="shape_variants"):
            await rt.compile(batch_model(), shape_variants=0)


async def test_concurrent_first_requests_of_a_shape_prepare_it_once() -> None:
    async with nnrt.Runtime(drivers=["cpu", "reference"], workers=2) as rt:
        compiled = await rt.compile(batch_model())
        results: dict[int, np.ndarray] = {}

        async def one(k: int) -> None:
            (results[k],) = await compiled.execute([np.full((3, 4), k, np.float32)])

        async with anyio.create_task_group() as tg:
            for k in range(20):
                tg.start_soon(one, k)
        assert compiled.variants is not None and compiled.variants.prepared == 1
        for k, y in results.items():
            np.testing.assert_allclose(y, expected(np.full((3, 4), k, np.float32)), rtol=1e-6)


async def test_impossible_shapes_name_the_input_and_the_dim() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(batch_model())
        with pytest.raises(nnrt.BadData, match=r"input 'x'.*dim 1 is 5, the model needs 4"):
            await compiled.execute({"x": np.ones((2, 5), np.float32)})
        with pytest.raises(nnrt.BadData, match=r"input 'x'.*rank 3, the model needs rank 2"):
            await compiled.execute({"x": np.ones((2, 4, 1), np.float32)})
        reshaped = await rt.compile(reshape_model())
        with pytest.raises(nnrt.BadData, match=r"input shapes x=\[3, 6\]: .*RESHAPE"):
            await reshaped.execute({"x": np.ones((3, 6), np.float32)})  # 18 rows of 4?
        assert compiled.variants is not None and compiled.variants.prepared == 0


async def test_shape_computations_fold_into_a_static_variant() -> None:
    async with nnrt.Runtime(drivers=["cpu", "reference"], workers=1) as rt:
        compiled = await rt.compile(reshape_model())
        for rows in (2, 4):
            x = np.arange(rows * 6, dtype=np.float32).reshape(rows, 6)
            (y,) = await compiled.execute([x])
            np.testing.assert_array_equal(y, x.reshape(-1, 4) + 1)
            report = compiled.placement()
            assert [s.driver for s in report.steps] == ["cpu"], str(report)


async def test_device_memories_run_the_model_as_it_is() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(batch_model())
        out = await rt.allocate(nnrt.BufferDesc(), [], [nnrt.BufferRole(compiled, 0)])
        for batch in (1, 3):
            x = np.ones((batch, 4), np.float32)
            await compiled.execute([x], outputs=[out])
            np.testing.assert_allclose(await out.copy_to(), expected(x), rtol=1e-6)
        assert compiled.variants is not None and compiled.variants.prepared == 0


async def test_variants_use_the_compile_cache_per_shape(tmp_path: Path) -> None:
    token = bytes(range(32))
    for run in range(2):
        async with nnrt.Runtime(drivers=["cpu", "reference"], workers=1,
                                cache_dir=tmp_path / "cache") as rt:
            compiled = await rt.compile(batch_model(), token=token)
            for batch in (1, 2):
                await compiled.execute([np.ones((batch, 4), np.float32)])
            stats = rt.statistics().pools["cpu"]
            assert (stats.cache_misses, stats.cache_hits) == ((2, 0) if run == 0 else (0, 2))


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_shared_mode_prepares_variants_in_the_service(tmp_path: Path) -> None:
    path = str(tmp_path / "nnrt.sock")
    with running_service(path, extra=["--driver", "cpu", "--driver", "reference"]):
        async with nnrt.Runtime(connect=path) as rt:
            compiled = await rt.compile(batch_model())
            for batch in (2, 1, 2):
                x = np.full((batch, 4), batch, np.float32)
                (y,) = await compiled.execute([x])
                np.testing.assert_allclose(y, expected(x), rtol=1e-6)
            stats = await rt.refresh_statistics()
            assert stats.pools["cpu"].prepared == 2


async def test_a_request_waiting_for_another_s_prepare_keeps_its_deadline() -> None:
    async with nnrt.Runtime(drivers=["cpu", "reference"], workers=1) as rt:
        compiled = await rt.compile(batch_model())
        outcome: dict[str, object] = {}

        async def first() -> None:
            (outcome["first"],) = await compiled.execute([np.ones((7, 4), np.float32)])

        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            assert compiled.variants is not None
            while not compiled.variants._pending:  # the first request prepares the variant
                await anyio.sleep(0.001)
            with pytest.raises(nnrt.DeadlineMissed, match=r"\[\[7, 4\]\] was being prepared"):
                await compiled.execute([np.ones((7, 4), np.float32)], timeout=0.0)
        np.testing.assert_allclose(outcome["first"], expected(np.ones((7, 4), np.float32)),
                                   rtol=1e-6)
