"""Device buffers without processes: check_roles (every rule), DeviceBuffer state and resizing."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nnrt
from nnrt.hal.buffers import (
    BufferDesc,
    BufferSpec,
    HostBuffer,
    RoleOperand,
    check_roles,
)
from nnrt.hal.discovery import load_driver
from nnrt.model.builder import ModelBuilder
from nnrt.model.operand import ChannelQuant, Operand
from nnrt.model.types import OperandType as T
from nnrt.reference.driver import ReferenceDriver

F32 = T.TENSOR_FLOAT32


def role(dims: tuple[int, ...] = (2, 3), *, key: object = "m", io: str = "input",
         index: int = 0, frequency: float = 1.0, type: T = F32, scale: float = 0.0,
         zero_point: int = 0, channel_quant: ChannelQuant | None = None) -> RoleOperand:
    operand = Operand(type, dims, scale, zero_point, channel_quant=channel_quant)
    return RoleOperand(f"{io} {index} of {key}", key, io, index, frequency,  # type: ignore[arg-type]
                       operand)


# -- check_roles: accepted ----------------------------------------------------------------------

@pytest.mark.parametrize(("desc", "roles", "dims"), [
    (BufferDesc(), [role()], (2, 3)),
    (BufferDesc((2, 3)), [role((0, 3))], (2, 3)),
    (BufferDesc((0, 3)), [role((2, 0))], (2, 3)),
    (BufferDesc(), [role(()), role((0, 4), key="n")], (0, 4)),
    (BufferDesc(()), [role(())], None),
    (BufferDesc(None), [role((0, 0), io="output")], (0, 0)),
    (BufferDesc(), [role((2, 0)), role((0, 3), io="output")], (2, 3)),  # in and out of one
    (BufferDesc(), [role(frequency=1e-9), role(key="n", frequency=1)], (2, 3)),
    (BufferDesc([4, 1]), [role((4, 1))], (4, 1)),  # a list is accepted, stored as a tuple
])
def test_accepted_roles_deduce_the_most_specific_dims(desc: BufferDesc,
                                                      roles: list[RoleOperand],
                                                      dims: tuple[int, ...] | None) -> None:
    spec = check_roles(desc, roles)
    assert spec.dims == dims
    assert spec.type == F32 and spec.dtype == np.float32


def test_spec_size() -> None:
    assert check_roles(BufferDesc(), [role((2, 3))]).nbytes == 24
    assert check_roles(BufferDesc(), [role((0, 3))]).nbytes is None
    assert check_roles(BufferDesc(), [role(())]).nbytes is None


def test_quantisation_is_carried() -> None:
    q = role(type=T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=3)
    spec = check_roles(BufferDesc(), [q, role(type=T.TENSOR_QUANT8_ASYMM, scale=0.5,
                                              zero_point=3, key="n")])
    assert (spec.scale, spec.zero_point, spec.dtype) == (0.5, 3, np.uint8)


# -- check_roles: rejected ----------------------------------------------------------------------

PER_CHANNEL = T.TENSOR_QUANT8_SYMM_PER_CHANNEL

REJECTED: dict[str, tuple[object, list[RoleOperand], str]] = {
    "no role": (BufferDesc(), [], "at least one role"),
    "not a desc": ((2, 3), [role()], "BufferDesc"),
    "frequency 0": (BufferDesc(), [role(frequency=0.0)], "frequency"),
    "frequency > 1": (BufferDesc(), [role(frequency=1.5)], "frequency"),
    "frequency NaN": (BufferDesc(), [role(frequency=math.nan)], "frequency"),
    "frequency negative": (BufferDesc(), [role(frequency=-0.5)], "frequency"),
    "frequency bool": (BufferDesc(), [role(frequency=True)], "frequency"),
    "frequency str": (BufferDesc(), [role(frequency="1")], "frequency"),  # type: ignore[arg-type]
    "scalar": (BufferDesc(), [role((), type=T.FLOAT32)], "tensors only"),
    "same role twice": (BufferDesc(), [role(), role(frequency=0.5)], "the same role twice"),
    "one model, two inputs": (BufferDesc(), [role(), role(index=1)], "twice"),
    "one model, two outputs": (BufferDesc(), [role(io="output"), role(io="output", index=1)],
                               "twice among the output roles"),
    "type": (BufferDesc(), [role(), role(key="n", type=T.TENSOR_INT32)], "differ in type"),
    "scale": (BufferDesc(), [role(type=T.TENSOR_QUANT8_ASYMM, scale=0.5),
                             role(key="n", type=T.TENSOR_QUANT8_ASYMM, scale=0.25)],
              "differ in scale"),
    "zero point": (BufferDesc(), [role(type=T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=1),
                                  role(key="n", type=T.TENSOR_QUANT8_ASYMM, scale=0.5)],
                   "differ in zero point"),
    "per-channel": (BufferDesc(), [
        role(type=PER_CHANNEL, channel_quant=ChannelQuant(0, (0.5, 0.5))),
        role(key="n", type=PER_CHANNEL, channel_quant=ChannelQuant(0, (0.5, 0.25)))],
        "per-channel"),
    "desc dims": (BufferDesc((5, 3)), [role()], r"desc dims \[5, 3\]"),
    "desc rank": (BufferDesc((2, 3, 1)), [role()], "rank 3 vs 2"),
    "role dims": (BufferDesc(), [role((2, 3)), role((2, 4), key="n")], "input 0 of n dims"),
    "role rank": (BufferDesc(), [role((2, 3)), role((6,), key="n")], "rank 2 vs 1"),
    "pairwise, via unknowns": (BufferDesc(), [role((2, 0)), role((0, 3), key="n"),
                                              role((3, 3), key="o")], "input 0 of m dims"),
    "negative desc dim": (BufferDesc, [], "dims"),
    "desc dims of strings": (BufferDesc, [], "dims"),
}


@pytest.mark.parametrize("case", REJECTED)
def test_rejected_roles_name_the_culprit(case: str) -> None:
    desc, roles, message = REJECTED[case]
    with pytest.raises(nnrt.BadData, match=message):
        if desc is BufferDesc:  # the desc itself is rejected
            BufferDesc((-1, 3) if "negative" in case else ("a",))  # type: ignore[arg-type]
        else:
            check_roles(desc, roles)  # type: ignore[arg-type]


# -- Driver.allocate ----------------------------------------------------------------------------

def state_model(n: int = 4) -> nnrt.Model:
    b = ModelBuilder()
    x, s = b.input("x", (n,)), b.input("s", (n,))
    b.output(b.add(x, s))
    return b.build()


def test_driver_allocate_checks_and_refuses() -> None:
    driver = ReferenceDriver(max_buffer_bytes=16, allow_unknown=False)
    with driver.prepare(state_model()) as prepared:
        buffer = driver.allocate(BufferDesc(), [(prepared, "input", 1, 1.0),
                                                (prepared, "output", 0, 1.0)])
        assert buffer.spec.dims == (4,) and not buffer.initialized
        with pytest.raises(nnrt.BadData, match=r"roles\[0\]: input index 2 is out of range"):
            driver.allocate(BufferDesc(), [(prepared, "input", 2, 1.0)])
        with pytest.raises(nnrt.BadData, match="'input' or 'output'"):
            driver.allocate(BufferDesc(), [(prepared, "in", 0, 1.0)])
        with pytest.raises(nnrt.BadData, match="PreparedModel"):
            driver.allocate(BufferDesc(), [("model", "input", 0, 1.0)])  # type: ignore[list-item]
    with driver.prepare(state_model(0)) as prepared, pytest.raises(nnrt.OpFailed,
                                                                   match="unknown size"):
        driver.allocate(BufferDesc((0,)), [(prepared, "input", 0, 1.0)])
    big = ReferenceDriver(max_buffer_bytes=8)
    with big.prepare(state_model()) as prepared:
        with pytest.raises(nnrt.OpFailed, match="16 bytes exceeds the 8-byte limit"):
            big.allocate(BufferDesc(), [(prepared, "input", 0, 1.0)])
        prepared.release()
        with pytest.raises(nnrt.BadState, match="released"):
            big.allocate(BufferDesc(), [(prepared, "input", 0, 1.0)])


def test_a_plugin_driver_keeps_buffers_in_host_memory_its_dispatch_computes_into() -> None:
    driver = load_driver("cpu")  # any compiler plugin: the adapter allocates
    with driver.prepare(state_model()) as prepared:
        buffer = driver.allocate(BufferDesc(), [(prepared, "output", 0, 1.0)])
        assert isinstance(buffer, HostBuffer) and buffer.spec.dims == (4,)
        target = buffer.destination((4,))
        assert target is not None
        x = np.arange(4, dtype=np.float32)
        result = prepared.execute([x, x], outputs=[target])
        assert np.shares_memory(result.outputs[0], target)  # computed in place
        buffer.write(result.outputs[0])
        np.testing.assert_array_equal(buffer.read(), x * 2)
        buffer.release()


# -- DeviceBuffer state -------------------------------------------------------------------------

def spec(dims: tuple[int, ...] | None) -> BufferSpec:
    return BufferSpec(F32, 0.0, 0, None, dims)


def test_state_uninitialised_written_invalidated_released() -> None:
    buffer = HostBuffer(spec((2, 2)))
    assert not buffer.initialized and buffer.dims == (2, 2)
    with pytest.raises(nnrt.OpFailed, match="uninitialised"):
        buffer.read()
    data = np.arange(4, dtype=np.float32).reshape(2, 2)
    buffer.write(data)
    data[0, 0] = 99  # the buffer holds a copy
    view = buffer.read()
    assert buffer.initialized and view.tolist() == [[0, 1], [2, 3]]
    assert not view.flags.writeable
    buffer.invalidate()
    with pytest.raises(nnrt.OpFailed, match="uninitialised"):
        buffer.read()
    buffer.write(np.ones((2, 2), np.float32))  # re-initialised
    assert buffer.read().sum() == 4
    buffer.release()
    buffer.release()  # idempotent
    with pytest.raises(nnrt.OpFailed, match="freed"):
        buffer.read()
    with pytest.raises(nnrt.OpFailed, match="freed"):
        buffer.write(np.ones((2, 2), np.float32))
    assert "freed" in repr(buffer)


@pytest.mark.parametrize(("data", "error", "message"), [
    (np.ones((2, 2), np.int32), nnrt.BadData, "int32"),
    (np.ones((2, 3), np.float32), nnrt.BadData, "does not fit"),
    (np.ones((4,), np.float32), nnrt.BadData, "does not fit"),
    ([[1.0, 2.0], [3.0, 4.0]], nnrt.BadData, "ndarray"),
])
def test_a_failed_write_leaves_it_uninitialised(data: object, error: type[Exception],
                                                message: str) -> None:
    buffer = HostBuffer(spec((2, 2)))
    buffer.write(np.zeros((2, 2), np.float32))
    with pytest.raises(error, match=message):
        buffer.write(data)  # type: ignore[arg-type]
    assert not buffer.initialized
    with pytest.raises(nnrt.OpFailed):
        buffer.read()


def test_dynamic_dims_resize_within_the_limit() -> None:
    buffer = HostBuffer(spec((0, 3)), max_bytes=48)
    assert buffer.dims == (0, 3)
    for rows in (1, 4, 2):
        data = np.full((rows, 3), rows, np.float32)
        buffer.write(data)
        assert buffer.dims == (rows, 3)
        np.testing.assert_array_equal(buffer.read(), data)
    with pytest.raises(nnrt.OpFailed, match="cannot grow to 60 bytes"):
        buffer.write(np.ones((5, 3), np.float32))
    assert not buffer.initialized and buffer.dims == (0, 3)
    unknown_rank = HostBuffer(spec(None))
    unknown_rank.write(np.ones((2, 2, 2), np.float32))
    assert unknown_rank.dims == (2, 2, 2)
    unknown_rank.write(np.ones(5, np.float32))
    assert unknown_rank.read().shape == (5,)


def test_bits_survive_a_write_and_read() -> None:
    bits = np.random.default_rng(1).integers(0, 2**32, 256, dtype=np.uint32)
    data = bits.view(np.float32)  # NaN payloads, -0, denormals
    buffer = HostBuffer(spec((256,)))
    buffer.write(data)
    assert buffer.read().tobytes() == data.tobytes()
