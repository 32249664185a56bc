"""The ``nnrt`` command."""
