"""The driver base classes: argument checks, unsupported ops, deadlines, cancellation, sizes."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from sample_drivers import ONES, add_mul, chain

import nnrt
from nnrt import OperandType as T
from nnrt.hal import (
    Cancelled,
    DriverInfo,
    ExecutionResult,
    PerformanceInfo,
    PrepareOptions,
    load_driver,
)
from nnrt.hal.buffers import BufferDesc
from nnrt.reference.driver import ReferenceDriver


@pytest.fixture
def driver() -> ReferenceDriver:
    return ReferenceDriver()


def test_info_describes_the_reference_driver(driver: ReferenceDriver) -> None:
    info = driver.info()
    assert (info.name, info.version, info.device_type, info.feature_level) == (
        "reference", nnrt.__version__, "cpu", 8)
    assert info.performance == PerformanceInfo(1.0, 1.0)
    assert DriverInfo.from_wire(info.to_wire()) == info
    assert driver.cache_files_needed() == (0, 0)


@pytest.mark.parametrize(("change", "field"), [
    ({"name": ""}, "driver info.name"),
    ({"device_type": "tpu"}, "driver info.device_type"),
    ({"feature_level": True}, "driver info.feature_level"),
    ({"feature_level": 99}, "driver info.feature_level"),
    ({"performance": {"exec_time": -1.0, "power_usage": 1.0}},
     "driver info.performance.exec_time"),
    ({"performance": {"exec_time": 1.0}}, "driver info.performance: missing"),
    ({"extra": 1}, "driver info: unknown fields ['extra']"),
])
def test_driver_info_from_wire_names_the_bad_field(change: dict[str, object], field: str) -> None:
    data = {**ReferenceDriver().info().to_wire(), **change}
    with pytest.raises(nnrt.BadData, match=field.replace("[", r"\[").replace("]", r"\]")):
        DriverInfo.from_wire(data)
    with pytest.raises(nnrt.BadData, match="expected a map"):
        DriverInfo.from_wire([1, 2])


def test_prepare_options_are_checked() -> None:
    assert PrepareOptions(preference=2, priority=110) == PrepareOptions(  # type: ignore[arg-type]
        nnrt.ExecutionPreference.SUSTAINED_SPEED, nnrt.Priority.HIGH)
    with pytest.raises(nnrt.BadData, match=r"prepare options\.priority"):
        PrepareOptions(priority=5)  # type: ignore[arg-type]
    with pytest.raises(nnrt.BadData, match="options must be PrepareOptions"):
        ReferenceDriver().prepare(chain(1), "fast")  # type: ignore[arg-type]


def test_unfinished_model_is_bad_state(driver: ReferenceDriver) -> None:
    m = nnrt.Model()
    x = m.add_operand(T.TENSOR_FLOAT32, (1, 4))
    with pytest.raises(nnrt.BadState, match="prepare: the model is not finished"):
        driver.prepare(m)
    with pytest.raises(nnrt.BadState, match="supported_operations"):
        driver.supported_operations(m)
    with pytest.raises(nnrt.BadData, match=r"expected an nnrt\.Model"):
        driver.prepare(x)  # type: ignore[arg-type]


def test_unsupported_operations_are_listed() -> None:
    driver = load_driver("sample_drivers:NoAddDriver")
    model = add_mul()  # ops: ADD, MUL, ADD
    assert driver.supported_operations(model) == [False, True, False]
    with pytest.raises(nnrt.Unsupported) as info:
        driver.prepare(model)
    message = str(info.value)
    assert "operation 0 (ADD): not supported by driver reference" in message
    assert "operation 2 (ADD)" in message and "MUL" not in message


def test_reference_driver_reports_unsupported_like_reference_run(driver: ReferenceDriver
                                                                 ) -> None:
    # Quantised RSQRT (NNAPI feature level 7) validates but has no reference kernel.
    m = nnrt.Model()
    a = m.add_operand(T.TENSOR_QUANT8_ASYMM, (2,), 0.5, 0)
    out = m.add_operand(T.TENSOR_QUANT8_ASYMM, (2,), 0.5, 0)
    m.add_operation(nnrt.OperationType.RSQRT, [a], [out])
    m.identify_inputs_and_outputs([a], [out])
    m.finish()
    assert driver.supported_operations(m) == [False]
    with pytest.raises(nnrt.Unsupported) as from_driver:
        driver.prepare(m)
    with pytest.raises(nnrt.Unsupported) as from_run:
        nnrt.reference.run(m, [np.zeros(2, np.uint8)])
    assert str(from_driver.value) == str(from_run.value)


@pytest.mark.parametrize(("inputs", "message"), [
    ([], r"expected 1 inputs \(x\), got 0"),
    ([ONES, ONES], r"expected 1 inputs \(x\), got 2"),
    ([np.ones((1, 5), np.float32)], r"input 'x' \(input 0, .*: shape \(1, 5\) does not match"),
    ([np.ones((1, 4), np.complex64)], "expected numeric data"),
    ([[["a", "b", "c", "d"]]], "expected numeric data"),
    ([None], r"input 'x' \(input 0, .*: no value given"),
])
def test_bad_inputs_are_bad_data(driver: ReferenceDriver, inputs: list[object],
                                 message: str) -> None:
    with driver.prepare(chain(1)) as prepared, pytest.raises(nnrt.BadData, match=message):
        prepared.execute(inputs)  # type: ignore[arg-type]


def test_execute_returns_outputs_and_timing(driver: ReferenceDriver) -> None:
    with driver.prepare(add_mul()) as prepared:
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        c = np.full((2, 3), 2.0, np.float32)
        result = prepared.execute([a, c.tolist()])  # type: ignore[list-item]  # coerced like run
        assert isinstance(result, ExecutionResult)
        np.testing.assert_array_equal(result.outputs[0], a + c)
        np.testing.assert_array_equal(result.outputs[1], a * c + a)
        timing = result.timing
        assert isinstance(timing.on_device_ns, int) and isinstance(timing.in_driver_ns, int)
        assert 0 <= timing.on_device_ns <= timing.in_driver_ns


def test_deadline_in_the_past_is_missed(driver: ReferenceDriver) -> None:
    with driver.prepare(chain(2)) as prepared:
        with pytest.raises(nnrt.DeadlineMissed, match="before the execution started"):
            prepared.execute([ONES], deadline=time.monotonic() - 1.0)
        with pytest.raises(nnrt.BadData, match="deadline must be"):
            prepared.execute([ONES], deadline=float("nan"))
        assert prepared.execute([ONES], deadline=time.monotonic() + 60).outputs


def test_deadline_passing_during_execution_is_missed(driver: ReferenceDriver) -> None:
    deadline = time.monotonic() + 0.05
    polls = []

    def wait_past_deadline() -> bool:  # the first poll outlives the deadline
        polls.append(1)
        while time.monotonic() <= deadline:
            time.sleep(0.005)
        return False

    with (driver.prepare(chain(3)) as prepared,
          pytest.raises(nnrt.DeadlineMissed, match="between two operations")):
        prepared.execute([ONES], deadline=deadline, should_stop=wait_past_deadline)
    assert len(polls) == 1


def test_should_stop_cancels_between_operations(driver: ReferenceDriver) -> None:
    polls: list[int] = []

    def stop_at_second_poll() -> bool:
        polls.append(1)
        return len(polls) >= 2

    with driver.prepare(chain(5)) as prepared:
        with pytest.raises(Cancelled, match="should_stop"):
            prepared.execute([ONES], should_stop=stop_at_second_poll)
        assert len(polls) == 2  # polled before op 1 and op 2; stopped before running op 2
        assert issubclass(Cancelled, nnrt.OpFailed)
        def broken() -> bool:
            raise ZeroDivisionError("poll failed")

        with pytest.raises(nnrt.OpFailed, match=r"should_stop\(\) raised ZeroDivisionError"):
            prepared.execute([ONES], should_stop=broken)
        with pytest.raises(nnrt.BadData, match="should_stop must be callable"):
            prepared.execute([ONES], should_stop=True)  # type: ignore[arg-type]
        assert prepared.execute([ONES], should_stop=lambda: False).outputs


def test_output_sizes_too_small_carry_every_shape(driver: ReferenceDriver) -> None:
    a = np.ones((2, 3), np.float32)
    with driver.prepare(add_mul()) as prepared:
        assert prepared.execute([a, a], output_sizes=[24, 24]).outputs
        with pytest.raises(nnrt.OutputInsufficientSize) as info:
            prepared.execute([a, a], output_sizes=[24, 23])
        assert info.value.shapes == [(2, 3), (2, 3)]
        assert "output 1 needs 24 bytes" in str(info.value) and "output 0" not in str(info.value)
        with pytest.raises(nnrt.BadData, match="output_sizes has 1 entries"):
            prepared.execute([a, a], output_sizes=[24])
        with pytest.raises(nnrt.BadData, match=r"output_sizes\[1\] must be a byte count"):
            prepared.execute([a, a], output_sizes=[24, -1])


def test_released_model_refuses_to_execute(driver: ReferenceDriver) -> None:
    prepared = driver.prepare(chain(1))
    with prepared:
        prepared.execute([ONES])
    assert prepared.released
    prepared.release()  # idempotent
    with pytest.raises(nnrt.BadState, match="released"):
        prepared.execute([ONES])


def test_cache_and_allocation_are_not_supported_by_default(driver: ReferenceDriver) -> None:
    from nnrt.cache import CacheFiles

    with pytest.raises(nnrt.OpFailed, match="prepare_from_cache is not supported by driver "
                                            "reference"):
        driver.prepare_from_cache(chain(1), CacheFiles(bytes(32), (), ()))
    with pytest.raises(nnrt.BadData, match="token must be 32 bytes"):
        CacheFiles(b"short", (), ())
    with pytest.raises(nnrt.BadData, match=r"cache must be nnrt\.cache\.CacheFiles"):
        driver.prepare_from_cache(chain(1), None)  # type: ignore[arg-type]
    with pytest.raises(nnrt.CacheError, match="expected 0 model and 0 data cache files"):
        driver.prepare(chain(1), cache=CacheFiles(bytes(32), (5,), ()))
    with pytest.raises(nnrt.BadData, match="BufferDesc"):
        driver.allocate(None, [])  # type: ignore[arg-type]

    class NoBuffers(ReferenceDriver):
        _allocate = nnrt.hal.Driver._allocate  # the base hook: memory domains are optional

    plain = NoBuffers()
    with plain.prepare(chain(1)) as prepared, pytest.raises(
            nnrt.OpFailed, match="allocate is not supported by driver reference"):
        plain.allocate(BufferDesc(), [(prepared, "input", 0, 1.0)])


def test_a_prepared_model_runs_on_several_threads_at_once(driver: ReferenceDriver) -> None:
    model = chain(4)
    errors: list[BaseException] = []
    with driver.prepare(model) as prepared:

        def work(k: int) -> None:
            x = np.full((1, 4), float(k), np.float32)
            try:
                for _ in range(200):
                    (y,) = prepared.execute([x]).outputs
                    np.testing.assert_array_equal(y, x * 5)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    assert not errors, errors


def test_a_crashing_hook_is_op_failed() -> None:
    with pytest.raises(nnrt.OpFailed, match="driver reference: prepare failed: RuntimeError"):
        load_driver("sample_drivers:CrashingDriver").prepare(chain(1))


class _KindsDriver(ReferenceDriver):
    def __init__(self, kinds: object) -> None:
        self.kinds = kinds

    def _memory_kinds(self) -> frozenset[str]:
        return self.kinds  # type: ignore[return-value]


def test_memory_kinds_default_and_checked() -> None:
    assert ReferenceDriver().memory_kinds() == frozenset({"memfd", "mmap_fd", "blob"})
    for bad in (["memfd"], frozenset({"ashmem"})):
        with pytest.raises(nnrt.OpFailed, match="_memory_kinds"):
            _KindsDriver(bad).memory_kinds()


def test_constant_in_an_unmappable_kind_is_unsupported() -> None:
    with nnrt.Memory.create(64) as memory:
        model = nnrt.Model()
        x = model.add_operand(T.TENSOR_FLOAT32, (4,))
        w = model.add_operand(T.TENSOR_FLOAT32, (4,))
        act = model.add_operand(T.INT32)
        y = model.add_operand(T.TENSOR_FLOAT32, (4,))
        model.set_operand_value_from_memory(w, memory, 0, 16)
        model.set_operand_value(act, 0)
        model.add_operation(nnrt.OperationType.ADD, [x, w, act], [y])
        model.identify_inputs_and_outputs([x], [y])
        model.finish()
        assert _KindsDriver(frozenset({"memfd"})).supported_operations(model) == [True]
        driver = _KindsDriver(frozenset({"blob"}))
        assert driver.supported_operations(model) == [False]
        with pytest.raises(nnrt.Unsupported, match="operand 1 is a constant in memfd memory"):
            driver.prepare(model)
