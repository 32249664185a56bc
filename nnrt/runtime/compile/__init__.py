"""Compiling a model across drivers (NNAPI's CompilationBuilder and ExecutionPlan).

:mod:`~nnrt.runtime.compile.compilation` asks each driver what it supports, places operations
(:mod:`~nnrt.runtime.compile.partitioner`, :mod:`~nnrt.runtime.compile.grouping`), outlines
steps (:mod:`~nnrt.runtime.compile.plan`), prepares them with the compile cache
(:mod:`~nnrt.runtime.compile.caching`) and reports the placement
(:mod:`~nnrt.runtime.compile.placement`). Constants travel by reference
(:mod:`~nnrt.runtime.compile.constants`); :mod:`~nnrt.runtime.compile.aot` does the same offline
for ``.nnrt`` files.
"""
