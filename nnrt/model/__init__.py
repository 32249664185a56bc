"""The NNAPI model: operand and operation types, ``Model``, ``ModelBuilder``, validation."""

from nnrt.model.builder import ModelBuilder as ModelBuilder
from nnrt.model.model import Model as Model
from nnrt.model.operand import Operand as Operand
from nnrt.model.operation import Operation as Operation
from nnrt.model.types import ExecutionPreference as ExecutionPreference
from nnrt.model.types import FusedActivation as FusedActivation
from nnrt.model.types import OperandLifetime as OperandLifetime
from nnrt.model.types import OperandType as OperandType
from nnrt.model.types import OperationType as OperationType
from nnrt.model.types import PaddingCode as PaddingCode
from nnrt.model.types import Priority as Priority

__all__ = ["ExecutionPreference", "FusedActivation", "Model", "ModelBuilder", "Operand",
           "OperandLifetime", "OperandType", "Operation", "OperationType", "PaddingCode",
           "Priority"]
