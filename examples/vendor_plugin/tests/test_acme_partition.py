"""What the Acme plugin selects on each SoC model, and why it rejects the rest."""

from __future__ import annotations

import nnrt
import numpy as np
import pytest
from nnrt.hal.plugin import PluginDriver
from nnrt.model.types import OperandType, OperationType

from acme_npu import AcmeDispatch, AcmePlugin

from acme_cases import ADD0, ADD6, ADD16_4, DIV2, MUL3, MUL5, SUB1, mixed_model


def test_plugin_describes_itself() -> None:
    plugin = AcmePlugin()
    assert (plugin.name, plugin.version) == ("com.example.acme", "1.0")
    assert (plugin.soc_manufacturer, plugin.supported_hardware) == ("Acme", "npu")
    assert plugin.soc_models == ("acme-n1", "acme-n2")


def test_acme_n2_selects_float32_add_sub_mul() -> None:
    result = AcmePlugin().partition(mixed_model(), "acme-n2")
    assert dict(result.selected) == dict.fromkeys([ADD0, SUB1, MUL3, MUL5, ADD6])
    assert set(result.rejected) == {DIV2, ADD16_4}
    assert result.rejected[DIV2] == ("DIV is not accelerated by the Acme NPU: only float32 "
                                     "ADD/SUB/MUL")
    assert "TENSOR_FLOAT16" in result.rejected[ADD16_4]
    assert result.rejected[ADD16_4].startswith("ADD with input 0")
    assert result.rejected[ADD16_4].endswith("only float32 ADD/SUB/MUL")


def test_acme_n1_has_no_sub() -> None:
    result = AcmePlugin().partition(mixed_model(), "acme-n1")
    assert set(result.selected) == {ADD0, MUL3, MUL5, ADD6}
    assert result.rejected[SUB1] == "SUB is not available on acme-n1 (it is on acme-n2)"


def test_default_soc_is_the_first() -> None:
    assert set(AcmePlugin().partition(mixed_model(), None).rejected) == {SUB1, DIV2, ADD16_4}


def test_unknown_soc_is_refused() -> None:
    with pytest.raises(nnrt.BadData, match=r"unknown SoC model 'acme-n9'.*acme-n1, acme-n2"):
        AcmePlugin().partition(mixed_model(), "acme-n9")
    with pytest.raises(nnrt.BadData, match="unknown SoC model"):
        PluginDriver(AcmePlugin(), AcmeDispatch(), soc_model="acme-n9")


def test_driver_support_reports_the_reasons() -> None:
    driver = PluginDriver(AcmePlugin(), AcmeDispatch(), soc_model="acme-n1")
    support = driver.support(mixed_model())
    assert support.supported == [True, False, False, True, False, True, True]
    assert support.reasons[SUB1].startswith("SUB is not available on acme-n1")
    assert support.reasons[DIV2].startswith("DIV is not accelerated")
    assert support.groups == {}


def test_activation_must_be_constant() -> None:
    model = nnrt.Model()
    x = model.add_operand(OperandType.TENSOR_FLOAT32, (2,))
    act = model.add_operand(OperandType.INT32)
    out = model.add_operand(OperandType.TENSOR_FLOAT32, (2,))
    model.add_operation(OperationType.MUL, [x, x, act], [out])
    model.identify_inputs_and_outputs([x, act], [out])
    model.finish()
    reason = AcmePlugin().partition(model, "acme-n2").rejected[0]
    assert reason == "MUL: the fused activation (input 2, operand 1) must be a constant"


def test_dynamic_shapes_are_rejected() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 3))
    b.output(b.add(x, np.ones(3, np.float32)))
    reason = AcmePlugin().partition(b.build(), "acme-n2").rejected[0]
    assert reason == "ADD: input 0 (operand 0) has no static shape of rank 1..4"


def test_other_float32_ops_are_rejected_by_name() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 2))
    b.output(b.relu(b.add(x, x)))
    result = AcmePlugin().partition(b.build(), "acme-n1")
    assert set(result.selected) == {0}
    assert result.rejected == {1: "RELU is not accelerated by the Acme NPU: only float32 "
                                  "ADD/SUB/MUL"}
