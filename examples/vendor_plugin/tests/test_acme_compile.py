"""compile -> load -> invoke gives exactly what the reference interpreter gives."""

from __future__ import annotations

import nnrt
import numpy as np
import pytest
from nnrt.model.subgraph import outline

from acme_npu import AcmePlugin
from acme_npu.bytecode import HEADER, MAGIC, VERSION, Opcode, SlotKind
from acme_npu.loader import decode

from acme_cases import (
    ADD0,
    ADD6,
    ADD16_4,
    DIV2,
    MUL3,
    MUL5,
    SUB1,
    broadcast_model,
    invoke,
    mixed_model,
    random_inputs,
    run_split,
)


@pytest.mark.parametrize("activation", [None, "relu", "relu1", "relu6"])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_each_op_and_activation_matches_reference(op: str, activation: str | None) -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3, 4))
    y = b.input("y", (3, 1))
    b.output(getattr(b, op)(x, y, activation))
    model = b.build()
    inputs = random_inputs(model, seed=len(op))
    compiled = AcmePlugin().compile([model], "acme-n2")
    assert compiled.calls == ((0, "partition_0"),)
    got = invoke(compiled.modules[0], "partition_0", model, inputs)
    np.testing.assert_array_equal(got[0], nnrt.reference.run(model, inputs)[0])


def test_broadcasting_constants_and_intermediate_outputs() -> None:
    model = broadcast_model()
    inputs = random_inputs(model, seed=3)
    module = AcmePlugin().compile([model], "acme-n1").modules[0]
    got = invoke(module, "partition_0", model, inputs)
    for g, want in zip(got, nnrt.reference.run(model, inputs), strict=True):
        np.testing.assert_array_equal(g, want)
    program = decode(module, "partition_0")
    kinds = [slot.kind for slot in program.slots]
    assert kinds.count(SlotKind.CONSTANT) == 1 and kinds.count(SlotKind.OUTPUT) == 2
    assert [ins.opcode for ins in program.instructions] == [Opcode.MUL, Opcode.ADD, Opcode.ADD]


def test_partitions_of_a_mixed_model_match_reference_on_each_soc() -> None:
    model = mixed_model()
    for soc, groups in (("acme-n2", [[ADD0, SUB1], [MUL3, MUL5, ADD6]]),
                        ("acme-n1", [[ADD0], [MUL3, MUL5, ADD6]])):
        plugin = AcmePlugin()
        assert set(plugin.partition(model, soc).selected) == {op for g in groups for op in g}
        parts = [outline(model, group) for group in groups]
        compiled = plugin.compile([p.model for p in parts], soc)
        assert len(compiled.modules) == 1
        assert compiled.calls == ((0, "partition_0"), (0, "partition_1"))
        for i, part in enumerate(parts):
            inputs = random_inputs(part.model, seed=i)
            got = invoke(compiled.modules[0], f"partition_{i}", part.model, inputs)
            for g, want in zip(got, nnrt.reference.run(part.model, inputs), strict=True):
                np.testing.assert_array_equal(g, want)


def test_two_partition_module_runs_the_whole_model_as_a_plan() -> None:
    groups = [[ADD0, SUB1], [DIV2], [MUL3, MUL5, ADD6], [ADD16_4]]
    outputs = run_split(mixed_model(), groups, "acme-n2")  # compares with reference.run
    assert [o.dtype for o in outputs] == [np.float32, np.float32, np.float16]


def test_two_partition_module_on_acme_n1() -> None:
    run_split(mixed_model(), [[ADD0], [SUB1, DIV2], [MUL3, MUL5, ADD6], [ADD16_4]], "acme-n1")


def test_module_header() -> None:
    module = AcmePlugin().compile([broadcast_model(), broadcast_model()], "acme-n2").modules[0]
    magic, version, entries, soc, size = HEADER.unpack_from(module)
    assert (magic, version, entries, size) == (MAGIC, VERSION, 2, len(module))
    assert soc.rstrip(b"\0") == b"acme-n2"


def test_compile_refuses_what_partition_rejects() -> None:
    model = mixed_model()
    with pytest.raises(nnrt.Unsupported, match=r"operation 0 \(DIV\): DIV is not accelerated"):
        AcmePlugin().compile([outline(model, [DIV2]).model], "acme-n2")
    with pytest.raises(nnrt.Unsupported, match="SUB is not available on acme-n1"):
        AcmePlugin().compile([outline(model, [SUB1]).model], "acme-n1")


def test_forbid_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_FORBID_COMPILE", "1")
    with pytest.raises(RuntimeError, match=r"^acme: compile called although "
                                           r"ACME_FORBID_COMPILE=1$"):
        AcmePlugin().compile([broadcast_model()], "acme-n1")
    monkeypatch.setenv("ACME_FORBID_COMPILE", "0")
    assert AcmePlugin().compile([broadcast_model()], "acme-n1").modules
