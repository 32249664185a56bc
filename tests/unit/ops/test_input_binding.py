"""InputBinder and the plan's result checks: the one-comparison paths decide exactly what the
general checks decide (exact arrays pass as given, anything else is checked or refused)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt.model.binding import InputBinder
from nnrt.reference.interpreter import ExecutionPlan


def _two_input_model() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3))
    y = b.input("y", (2, 3))
    b.output(b.add(x, y))
    return b.build()


def _int_model() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("i", (2,), "int32")
    b.output(b.add(x, x))
    return b.build()


def _dynamic_model() -> nnrt.Model:
    m = nnrt.Model()
    a = m.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (0, 3))
    c = m.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (1, 3))
    act = m.add_operand(nnrt.OperandType.INT32)
    out = m.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (0, 3))
    m.set_operand_value(c, np.ones((1, 3), np.float32))
    m.set_operand_value(act, nnrt.FusedActivation.NONE)
    m.add_operation(nnrt.OperationType.ADD, [a, c, act], [out])
    m.identify_inputs_and_outputs([a], [out])
    m.finish()
    return m


class _RaisingDtype:
    """Not an array: reading its ``dtype`` raises something other than AttributeError."""

    shape = (2, 3)

    @property
    def dtype(self) -> Any:
        raise RuntimeError("no dtype here")


def test_exact_arrays_are_bound_as_given_in_a_new_list() -> None:
    binder = InputBinder(_two_input_model())
    x, y = np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)
    given = [x, y]
    bound = binder.bind(given)
    assert bound is not given
    assert bound[0] is x and bound[1] is y


@pytest.mark.parametrize("value", [
    np.ones((2, 3), np.float64),                       # another dtype: converted
    [[1, 2, 3], [4, 5, 6]],                            # a nested list: converted
    np.ones((2, 3), np.dtype(">f4")),                  # other byte order: converted
    np.ones((2, 3), np.float32).view(np.recarray),     # a subclass: through the general path
])
def test_inputs_not_in_exact_form_get_the_general_checks(value: Any) -> None:
    binder = InputBinder(_two_input_model())
    bound = binder.bind([value, np.zeros((2, 3), np.float32)])
    assert bound[0].dtype == np.float32 and bound[0].shape == (2, 3)
    np.testing.assert_array_equal(bound[0], np.asarray(value, np.float32))


@pytest.mark.parametrize(("inputs", "message"), [
    ([np.ones((2, 3), np.float32)], r"expected 2 inputs \(x, y\), got 1"),
    ([np.ones((2, 3), np.float32)] * 3, r"expected 2 inputs \(x, y\), got 3"),
    ([np.ones((3, 2), np.float32), np.ones((2, 3), np.float32)], "input 0"),
    ([np.ones((2, 3), np.float32), _RaisingDtype()], "input 1"),
    ([np.ones((2, 3), np.float32), None], "input 1"),
])
def test_wrong_inputs_are_refused_naming_the_input(inputs: list[Any], message: str) -> None:
    with pytest.raises(nnrt.BadData, match=message):
        InputBinder(_two_input_model()).bind(inputs)


def test_dynamic_inputs_are_checked_one_by_one() -> None:
    binder = InputBinder(_dynamic_model())
    (bound,) = binder.bind([np.ones((5, 3), np.float32)])
    assert bound.shape == (5, 3)
    with pytest.raises(nnrt.BadData, match="input 0"):
        binder.bind([np.ones((5, 4), np.float32)])


def test_plan_results_static_and_dynamic_shapes() -> None:
    """A one-output step of static dims takes the one-test check; a dynamic one the general
    checks; both give the right values, shape after shape."""
    static = ExecutionPlan(_two_input_model())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(3):
        (out,) = static.execute([x, x])
        np.testing.assert_array_equal(out, 2 * x)
        assert out.dtype == np.float32 and out.shape == (2, 3)
    dynamic = ExecutionPlan(_dynamic_model())
    for rows in (1, 4, 1, 7):
        (out,) = dynamic.execute([np.zeros((rows, 3), np.float32)])
        assert out.shape == (rows, 3)
        np.testing.assert_array_equal(out, np.ones((rows, 3), np.float32))


def test_missing_inputs_are_named_as_the_caller_names_them() -> None:
    binder = InputBinder(_two_input_model())
    with pytest.raises(nnrt.BadData, match=r"^input 'y' is missing \(the model's inputs: 'x', "
                                           r"'y'\)$"):
        binder.bind({"x": np.ones((2, 3), np.float32)})
    with pytest.raises(nnrt.BadData, match=r"^input 'x' \(input 0, operand 0, "
                                           r"TENSOR_FLOAT32\[2, 3\]\): shape \(3, 2\)"):
        binder.bind({"x": np.ones((3, 2), np.float32), "y": np.ones((2, 3), np.float32)})


def test_arrays_of_another_dtype_are_converted_only_when_no_value_changes() -> None:
    binder = InputBinder(_two_input_model())
    y = np.ones((2, 3), np.float32)
    exact = np.array([[0.5, 1.0, -2.0], [3.25, 0.0, 1e6]])  # float64 holding float32 values
    for value in (exact, np.array([[0.5, 1, -2], [3.25, 0, 1e4]], np.float16),
                  np.array([[0, 1, -2], [3, 0, 2**24]], np.int64), np.ones((2, 3), np.int8),
                  exact.tolist(), [[0.1, 0.2, 0.3], [1, 2, 3]]):
        (x, _) = binder.bind([value, y])
        assert x.dtype == np.float32
        np.testing.assert_array_equal(x, np.asarray(value, np.float32))
    with pytest.raises(nnrt.BadData, match=r"^input 'x' \(input 0, .*\): float64 values would "
                       r"change as float32 \(element 0: 0\.1 -> 0\.10000000149011612\); "
                       r"convert the array first \(\.astype\(numpy\.float32\)\)"):
        binder.bind([np.full((2, 3), 0.1), y])
    with pytest.raises(nnrt.BadData, match=r"int64 values would change as float32 "
                       r"\(element 5: 16777217 -> 16777216\.0\)"):
        binder.bind([np.array([[0, 0, 0], [0, 0, 2**24 + 1]], np.int64), y])
    with pytest.raises(nnrt.BadData, match="without changing values"):  # floats into ints: never
        InputBinder(_int_model()).bind([np.array([1.5, 2.0], np.float32)])


def test_a_dict_by_name_binds_in_model_order_whatever_its_key_order() -> None:
    binder = InputBinder(_two_input_model())
    x, y = np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)
    bound = binder.bind({"y": y, "x": x})
    assert bound[0] is x and bound[1] is y
    with pytest.raises(nnrt.BadData, match="no input named 'z'"):
        binder.bind({"x": x, "z": y})


def test_int64_for_an_int32_input_is_narrowed_only_when_every_value_fits() -> None:
    binder = InputBinder(_int_model())
    (i,) = binder.bind([np.array([7, -(2**31)], np.int64)])
    assert i.dtype == np.int32 and i.tolist() == [7, -(2**31)]
    with pytest.raises(nnrt.BadData, match=r"^input 'i' \(input 0, .*2147483648"):
        binder.bind([np.array([7, 2**31], np.int64)])
