"""acme-npu: the (fictional) Acme NPU for nnrt, as a compiler plugin and its dispatch.

nnrt loads it through the ``nnrt.drivers`` entry point ``com.example.acme`` =
``acme_npu:make_driver``. This module only re-exports.
"""

from acme_npu.dispatch import AcmeDispatch as AcmeDispatch
from acme_npu.driver import make_driver as make_driver
from acme_npu.plugin import AcmePlugin as AcmePlugin

__version__ = "1.0"

__all__ = ["AcmeDispatch", "AcmePlugin", "make_driver"]
