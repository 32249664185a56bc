"""``check_driver``: the reference driver and a tiny plugin pass; broken drivers fail, named.

The broken drivers are real subclasses overriding one hook each. The plugin driver's factory is
defined at module level so that the process checks can serve it from a worker
(``test_check_driver:make_plugin_driver``; pytest's prepend import mode puts this directory on
``sys.path``, which the worker inherits).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt.errors import BadData
from nnrt.hal.base import ExecutionControl, ExecutionResult, PreparedModel, PrepareOptions
from nnrt.hal.conformance.kit import ConformanceReport, check_driver
from nnrt.hal.plugin import (
    CompiledResult,
    CompilerPlugin,
    Dispatch,
    PartitionResult,
    PluginDriver,
)
from nnrt.model.model import Model
from nnrt.model.types import OperandLifetime, OperandType, OperationType
from nnrt.reference.driver import ReferenceDriver, ReferencePreparedModel

Array = np.ndarray[Any, Any]

# -- broken drivers -----------------------------------------------------------------------------


class _OffByOnePrepared(ReferencePreparedModel):
    def _execute(self, inputs: list[Array], control: ExecutionControl) -> Sequence[Array]:
        results = super()._execute(inputs, control)
        if self.model.operations[0].type != OperationType.ADD:
            return results
        return [r + r.dtype.type(1) for r in results]


class OffByOneAddDriver(ReferenceDriver):
    """The reference driver with an ADD kernel that adds one too many."""

    def _prepare(self, model: Model, options: PrepareOptions, cache: Any) -> PreparedModel:
        return _OffByOnePrepared(model)


class WrongLengthDriver(ReferenceDriver):
    """Answers one flag too many from ``_supported_operations``."""

    def _supported_operations(self, model: Model) -> list[bool]:
        return [True] * (len(model.operations) + 1)


class _IgnoringPrepared(ReferencePreparedModel):
    def execute(self, inputs: Sequence[Array], *, outputs: Sequence[Array | None] | None = None,
                **kwargs: Any) -> ExecutionResult:
        return super().execute(inputs, **kwargs)  # drops the caller's destinations


class IgnoresDestinationsDriver(ReferenceDriver):
    """Leaves the caller's output destinations untouched."""

    def _prepare(self, model: Model, options: PrepareOptions, cache: Any) -> PreparedModel:
        return _IgnoringPrepared(model)


# -- a tiny compiler plugin: float32 ADD of two model inputs, activation constant ----------------

_MAGIC = b"ADD1"
_ACTIVATIONS = {0: (None, None), 1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


class AddPlugin(CompilerPlugin):
    """Selects float32 ADDs of two model inputs with a constant activation."""

    name = "com.example.test.add"
    version = "1.0"
    soc_manufacturer = "Example"
    supported_hardware = "npu"
    soc_models = ("add-1",)

    def partition(self, model: Model, soc_model: str | None) -> PartitionResult:
        selected: dict[int, int | None] = {}
        rejected: dict[int, str] = {}
        for index, op in enumerate(model.operations):
            reason = self._reason(model, op.type, op.inputs, op.outputs)
            if reason is None:
                selected[index] = None
            else:
                rejected[index] = reason
        return PartitionResult(selected, rejected)

    @staticmethod
    def _reason(model: Model, op: OperationType, inputs: Sequence[int],
                outputs: Sequence[int]) -> str | None:
        if op != OperationType.ADD:
            return f"{op.name} is not ADD"
        operands = model.operands
        if any(operands[k].type != OperandType.TENSOR_FLOAT32 for k in (*inputs[:2], *outputs)):
            return "only float32 tensors"
        if any(operands[k].lifetime != OperandLifetime.SUBGRAPH_INPUT for k in inputs[:2]):
            return "both addends must be model inputs"
        if model.constant_value(inputs[2]) is None:
            return "the activation must be a constant"
        return None

    def compile(self, partitions: Sequence[Model], soc_model: str | None) -> CompiledResult:
        modules = []
        for model in partitions:
            act = int(np.asarray(model.constant_value(model.operations[0].inputs[2])))
            modules.append(_MAGIC + bytes([act]))
        return CompiledResult(tuple(modules), tuple((i, "add") for i in range(len(modules))))


class AddDispatch(Dispatch):
    """Runs ``ADD1 <activation>`` bytecode."""

    def load(self, bytecode: bytes, entry_point: str) -> Any:
        if len(bytecode) != 5 or bytecode[:4] != _MAGIC or bytecode[4] not in _ACTIVATIONS or (
                entry_point != "add"):
            raise BadData("not ADD1 bytecode")
        return _ACTIVATIONS[bytecode[4]]

    def invoke(self, executable: Any, inputs: Sequence[Array], outputs: Sequence[Array]) -> None:
        low, high = executable
        np.add(inputs[0], inputs[1], out=outputs[0])
        if low is not None or high is not None:
            np.clip(outputs[0], low, high, out=outputs[0])


def make_plugin_driver() -> PluginDriver:
    """The tiny plugin as a driver."""
    return PluginDriver(AddPlugin(), AddDispatch())


# -- tests --------------------------------------------------------------------------------------


def test_reference_driver_passes() -> None:
    report = check_driver("reference", variants=300)
    assert isinstance(report, ConformanceReport) and report.ok
    assert report.driver == "reference"
    assert report.variants_run == 300 and report.variants_skipped == 0
    assert report.variants_failed == report.checks_failed == 0
    assert report.checks_run == 13  # 9 HAL checks (one skipped: it supports all) + 4 process
    assert [s.split(":")[0] for s in report.checks_skipped] == ["unsupported_prepare"]


def test_tiny_plugin_driver_passes() -> None:
    report = check_driver(make_plugin_driver)
    # the ADD cases' base and relaxed variants: fed, float32, static shapes
    assert report.variants_run >= 8, report
    assert report.variants_skipped > 5000
    assert report.checks_run == 14 and not report.checks_skipped


def test_off_by_one_add_fails_naming_the_variants() -> None:
    with pytest.raises(AssertionError) as info:
        check_driver(OffByOneAddDriver, variants=400, process=False)
    message = str(info.value)
    assert "add_act0[base]" in message and ": 6 values outside" in message
    assert "bad_inputs" in message and "deadline" in message  # the probe is an ADD


def test_wrong_length_support_answer_fails() -> None:
    with pytest.raises(AssertionError) as info:
        check_driver(WrongLengthDriver, variants=20, process=False)
    message = str(info.value)
    assert "supported_operations: a 5-operation model (5 operations)" in message
    assert "_supported_operations() must return a list of 5 bools" in message
    assert "20 case variants run (20 failed" in message


def test_ignored_output_destinations_fail() -> None:
    with pytest.raises(AssertionError) as info:
        check_driver(IgnoresDestinationsDriver, variants=20, process=False)
    message = str(info.value)
    assert "1 failures" in message
    assert "output_destinations: case add_act0[base] output 0: the result is not in the " \
           "caller's destination" in message


def test_process_checks_need_an_importable_factory() -> None:
    def make() -> ReferenceDriver:  # a local function: the worker could not import it
        return ReferenceDriver()

    report = check_driver(make, variants=0)
    assert report.variants_run == 0 and report.checks_run == 9
    assert any(s.startswith("process: ") for s in report.checks_skipped)


def test_process_checks_catch_a_broken_driver_in_the_worker() -> None:
    with pytest.raises(AssertionError) as info:
        check_driver(OffByOneAddDriver, variants=0)
    message = str(info.value)
    assert "  - process.execute" in message
    assert "executed by the worker: add_act0[base] output 0: 6 values outside" in message


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_bad_arguments(bad: Any) -> None:
    with pytest.raises(BadData, match="variants"):
        check_driver("reference", variants=bad)
    with pytest.raises(BadData, match="factory"):
        check_driver(nnrt.Model, variants=0)  # type: ignore[arg-type]


def test_a_driver_is_held_to_nnapis_one_step_where_a_case_pins_exact_rounding() -> None:
    from nnrt.testing.check import check_variant
    from nnrt.testing.spec import OpCase, expand, i32s, q8

    case = OpCase("add_exact_tie", OperationType.ADD, (q8([1], 0.5, 0), q8([0], 0.5, 0), i32s(0)),
                  (q8([1], 0.5, 0),), variants=("base",), tolerance=(0.0, 0.0))
    variant = expand(case)[0]
    one_off = np.array([2], np.uint8)
    check_variant(variant, lambda model, feed: [one_off], driver=True)
    with pytest.raises(AssertionError, match="more than 0 quantisation step"):
        check_variant(variant, lambda model, feed: [one_off])
    with pytest.raises(AssertionError, match="more than 1 quantisation step"):
        check_variant(variant, lambda model, feed: [one_off + 1], driver=True)
