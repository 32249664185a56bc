"""An ``onnx.backend`` for nnrt: ONNX models run through ``nnrt.onnx.load`` and the reference
interpreter, with results in the dtypes and shapes the ONNX graph declares.

::

    from nnrt.onnx.backend import NnrtBackend

    rep = NnrtBackend.prepare(model_proto)       # imports the model once
    (y,) = rep.run([x])                          # or rep.run({"x": x}); also rep.run(...)["y"]

This is what ``onnx.backend.test.BackendTest`` drives (``tests/onnx_backend``). nnrt holds ONNX
``int64`` tensors as int32 and ONNX scalars as ``[1]`` tensors; the adapter undoes both on the
way out (int32 results of ``int64`` outputs are widened, ``[1]`` results of rank-0 outputs
reshaped) and accepts ``int64`` and rank-0 inputs. Any other difference from the declared output
type is returned as computed, for the caller's checks to see. Only the ``CPU`` device exists: the
models run in-process on :func:`nnrt.reference.run`.

**Inputs bound at run time.** nnrt builds an NNAPI model ahead of execution, so values such as a
Reshape's shape, a Slice's starts or a TopK's K must be known when the model is imported (in
exported models they are initializers or computed from shapes). When a graph takes such a value
as a graph *input* (as onnx's node tests do), ``prepare`` cannot import it; the rep then imports
the model at ``run``, with the fewest trailing graph inputs turned into constants holding the
given values (:attr:`NnrtBackendRep.bound_inputs` names them), and re-imports when those values
change. The operator still runs on the runtime tensors it is given; only its parameters are
fixed, as they are in a real model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

import nnrt.onnx
import nnrt.reference
from nnrt.errors import BadData
from nnrt.model.model import Model
from nnrt.onnx.errors import UnsupportedOnnxModel
from nnrt.onnx.importer import MAX_OPSET

__all__ = ["NnrtBackend", "NnrtBackendRep", "prepare", "run_model", "run_node",
           "supports_device"]

Array = np.ndarray[Any, Any]

#: Keyword arguments ``onnx.backend.test`` passes to ``prepare`` along with the model: the
#: comparison tolerances of a test, which concern the runner, not the backend.
_RUNNER_KWARGS = frozenset({"rtol", "atol"})

def _only_needs_constants(exc: UnsupportedOnnxModel) -> bool:
    """Whether every node ``exc`` reports fails only for want of a known input."""
    return all(node.needs_constant for node in exc.nodes)


class _OutputSpec:
    """What the ONNX graph declares for one output: element type and (if known) rank."""

    def __init__(self, value_info: Any) -> None:
        self.name: str = value_info.name
        tensor_type = value_info.type.tensor_type
        self.dtype: np.dtype[Any] | None = (
            np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
            if value_info.type.HasField("tensor_type") and tensor_type.elem_type else None)
        #: The declared rank, or None when the graph leaves it unknown.
        self.rank: int | None = (len(tensor_type.shape.dim)
                                 if tensor_type.HasField("shape") else None)

    def to_onnx(self, result: Array) -> Array:
        """nnrt's ``result`` for this output in ONNX form (int64 widened, the 8/16-bit and
        uint32 integers held in TENSOR_INT32 — always in their type's range — converted back,
        rank 0 restored)."""
        arr = np.asarray(result)
        if (self.dtype is not None and self.dtype.kind in "iu" and self.dtype != arr.dtype
                and arr.dtype == np.int32):
            arr = arr.astype(self.dtype)
        if self.rank == 0 and arr.shape == (1,):
            arr = arr.reshape(())
        return arr


class NnrtBackendRep(BackendRep):
    """An ONNX model prepared for nnrt, ready to run many times (what ``prepare`` returns)."""

    def __init__(self, proto: Any, model: Model | None,
                 input_shapes: Mapping[str, Sequence[int]] | None = None) -> None:
        graph = proto.graph
        initialized = {t.name for t in graph.initializer}
        inputs = [i for i in graph.input if i.name not in initialized]
        #: The names of the ONNX graph's inputs, in order (initializers listed as inputs aside).
        self.input_names = [i.name for i in inputs]
        self._input_dtypes = {i.name: np.dtype(helper.tensor_dtype_to_np_dtype(
            i.type.tensor_type.elem_type)) for i in inputs if i.type.HasField("tensor_type")}
        self._outputs = [_OutputSpec(o) for o in graph.output]
        #: The names of the ONNX graph's outputs, in order.
        self.output_names = [o.name for o in self._outputs]
        #: The imported model (of the latest run, when inputs are bound at run time).
        self.model = model
        #: The graph inputs imported as constants of their run-time values (see the module
        #: docstring); empty when the model imports as it is.
        self.bound_inputs: tuple[str, ...] = ()
        self._proto = proto
        self._input_shapes = dict(input_shapes or {})
        self._imported = model  # None: imported at run, with inputs bound
        self._bound_key: tuple[Any, ...] | None = None

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Run on ``inputs``: a sequence in graph-input order, a mapping by input name, or one
        array for a one-input graph. Returns the outputs as a tuple that is also indexable by
        output name."""
        if kwargs:
            raise TypeError(f"NnrtBackendRep.run: unexpected keyword arguments {sorted(kwargs)}")
        values = self._by_name(inputs)
        model = self._imported if self._imported is not None else self._bind(values)
        feeds = [_feed(values[name]) for name in self.input_names
                 if name not in self.bound_inputs]
        results = nnrt.reference.run(model, feeds)
        outputs = [spec.to_onnx(r) for spec, r in zip(self._outputs, results, strict=True)]
        return namedtupledict("Outputs", self.output_names)(*outputs)

    def _by_name(self, inputs: Any) -> dict[str, Any]:
        if isinstance(inputs, Mapping):
            values = {str(name): value for name, value in inputs.items()}
            unknown = sorted(set(values) - set(self.input_names))
            missing = [name for name in self.input_names if name not in values]
            if unknown or missing:
                raise BadData(f"inputs {unknown} are not graph inputs, {missing} are missing "
                              f"(graph inputs: {self.input_names})")
            return values
        given = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
        if len(given) != len(self.input_names):
            raise BadData(f"expected {len(self.input_names)} inputs {self.input_names}, got "
                          f"{len(given)}")
        return dict(zip(self.input_names, given, strict=True))

    def _bind(self, values: Mapping[str, Any]) -> Model:
        """The model imported with the fewest trailing inputs bound to ``values``."""
        bound = list(self.bound_inputs)
        while True:
            constants = {name: self._constant(name, values[name]) for name in bound}
            key = tuple((name, a.dtype.str, a.shape, a.tobytes())
                        for name, a in constants.items())
            if key == self._bound_key and self.model is not None:
                return self.model
            shapes = {k: v for k, v in self._input_shapes.items() if k not in constants}
            try:
                model = nnrt.onnx.load(_with_constants(self._proto, constants),
                                       input_shapes=shapes)
            except UnsupportedOnnxModel as exc:
                free = [n for n in reversed(self.input_names) if n not in bound]
                if not free or not _only_needs_constants(exc):
                    raise
                bound.append(free[0])
                continue
            self.model, self.bound_inputs, self._bound_key = model, tuple(bound), key
            return model

    def _constant(self, name: str, value: Any) -> Array:
        arr = np.asarray(value)
        declared = self._input_dtypes.get(name, arr.dtype)
        if arr.dtype != declared:
            converted = arr.astype(declared)
            if arr.dtype.kind not in "iub" or not np.array_equal(converted, arr):
                raise BadData(f"input {name!r}: {arr.dtype} values given for a {declared} "
                              "input that nnrt must import as a constant")
            arr = converted
        return arr


def _with_constants(proto: Any, constants: Mapping[str, Array]) -> Any:
    """``proto`` with the graph inputs named in ``constants`` turned into initializers."""
    if not constants:
        return proto
    bound = onnx.ModelProto()
    bound.CopyFrom(proto)
    kept = [i for i in bound.graph.input if i.name not in constants]
    del bound.graph.input[:]
    bound.graph.input.extend(kept)
    bound.graph.initializer.extend(numpy_helper.from_array(value, name)
                                   for name, value in constants.items())
    return bound


def _feed(value: Any) -> Any:
    """An input value as nnrt takes it: ONNX scalars travel in ``[1]`` tensors."""
    arr = np.asarray(value)
    return arr.reshape(1) if arr.ndim == 0 else arr


class NnrtBackend(Backend):
    """The ``onnx.backend.base.Backend`` of nnrt (device ``CPU``: the reference interpreter)."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """Whether ``device`` (an ``onnx.backend`` device string) is one nnrt runs on: ``CPU``."""
        try:
            return bool(Device(device).type == DeviceType.CPU)
        except (AttributeError, ValueError):
            return False

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> NnrtBackendRep:
        """Check and import ``model`` (an ``onnx.ModelProto``, its bytes or a path).

        ``input_shapes=`` is passed to :func:`nnrt.onnx.load`. Raises ``ValueError`` for a
        device other than ``CPU``, ``onnx.checker.ValidationError`` for an invalid model and
        ``nnrt.onnx.UnsupportedOnnxModel`` listing the nodes nnrt cannot import — unless they
        only lack the values of graph inputs, which ``run`` then binds (see the module
        docstring).
        """
        input_shapes = kwargs.pop("input_shapes", None)
        unexpected = sorted(set(kwargs) - _RUNNER_KWARGS)
        if unexpected:
            raise TypeError(f"NnrtBackend.prepare: unexpected keyword arguments {unexpected}")
        if not cls.supports_device(device):
            raise ValueError(f"nnrt's ONNX backend runs on device 'CPU' only, not {device!r}")
        proto = _model_proto(model)
        # a path is checked as a file, so that its external-data references can be
        onnx.checker.check_model(os.fspath(model) if isinstance(model, str | os.PathLike)
                                 else proto)
        try:
            imported = nnrt.onnx.load(model, input_shapes=input_shapes)
        except UnsupportedOnnxModel as exc:
            if not _only_needs_constants(exc):
                raise
            imported = None
        return NnrtBackendRep(proto, imported, input_shapes)

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[Any, ...]:
        """``prepare(model, device, **kwargs).run(inputs)``."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: Any, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple[np.dtype[Any], tuple[int, ...]]] | None = None,
                 **kwargs: Any) -> tuple[Any, ...]:
        """Run one ``NodeProto`` on ``inputs`` (its present inputs in order, or by name).

        The node is wrapped in a one-node model at ``opset_version=`` (default: the newest
        opset nnrt imports); output types come from ``outputs_info`` (dtype, shape) pairs or,
        without them, from ONNX shape inference.
        """
        super().run_node(node, inputs, device, outputs_info, **kwargs)  # onnx.checker.check_node
        opset = int(kwargs.get("opset_version", MAX_OPSET))
        present = [name for name in node.input if name]
        arrays = (dict(inputs) if isinstance(inputs, Mapping)
                  else dict(zip(present, inputs, strict=True)))
        graph_inputs = [helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(np.asarray(arrays[name]).dtype),
            np.shape(arrays[name])) for name in present]
        outputs = [name for name in node.output if name]
        if outputs_info is not None:
            graph_outputs = [helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)
                for name, (dtype, shape) in zip(outputs, outputs_info, strict=True)]
        else:
            graph_outputs = _inferred_outputs(node, graph_inputs, outputs, opset)
        model = helper.make_model(
            helper.make_graph([node], f"{node.op_type}_node", graph_inputs, graph_outputs),
            opset_imports=[helper.make_opsetid("", opset)])
        return cls.prepare(model, device).run(arrays)


def _inferred_outputs(node: Any, graph_inputs: list[Any], outputs: list[str],
                      opset: int) -> list[Any]:
    """The value infos ONNX shape inference gives ``node``'s outputs."""
    probe = helper.make_model(
        helper.make_graph([node], "probe", graph_inputs,
                          [helper.make_empty_tensor_value_info(name) for name in outputs]),
        opset_imports=[helper.make_opsetid("", opset)])
    inferred = shape_inference.infer_shapes(probe, strict_mode=True)
    known = {v.name: v for v in (*inferred.graph.value_info, *inferred.graph.output)
             if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type}
    missing = [name for name in outputs if name not in known]
    if missing:
        raise ValueError(f"run_node: ONNX shape inference gives no type for outputs {missing} "
                         f"of the {node.op_type} node; pass outputs_info=")
    return [known[name] for name in outputs]


def _model_proto(model: Any) -> Any:
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, bytes | bytearray | memoryview):
        return onnx.load_model_from_string(bytes(model))
    if isinstance(model, str | os.PathLike):
        return onnx.load(os.fspath(model), load_external_data=False)
    raise TypeError(f"NnrtBackend.prepare: expected an onnx.ModelProto, bytes or a path, got "
                    f"{type(model).__name__}")


prepare = NnrtBackend.prepare
run_model = NnrtBackend.run_model
run_node = NnrtBackend.run_node
supports_device = NnrtBackend.supports_device
