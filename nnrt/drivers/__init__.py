"""Built-in drivers. ``reference`` runs every operation on the numpy kernels (the CPU fallback).

Load drivers by name with ``nnrt.hal.load_driver("reference")``; this package only holds
their implementations.
"""
