"""The reference interpreter: run a finished model in-process on numpy kernels.

``nnrt.reference.run(model, inputs)`` is the executable specification every driver is checked
against.
"""

from nnrt.ops._framework.support import check_supported as check_supported
from nnrt.ops._framework.support import unsupported_reason as unsupported_reason
from nnrt.reference.interpreter import run as run

__all__ = ["check_supported", "run", "unsupported_reason"]
