"""The operation framework (internal): what operation families are written against.

:mod:`~nnrt.ops._framework.registry` (one definition per operation type),
:mod:`~nnrt.ops._framework.context` (what ``validate`` / ``prepare`` / ``execute`` see),
:mod:`~nnrt.ops._framework.inference` (static shape inference at ``Model.finish``) and
:mod:`~nnrt.ops._framework.support` (whether the reference kernels take an operation).
"""
