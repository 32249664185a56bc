"""nnrt's version, the single source: ``pyproject.toml`` and ``nnrt.__version__`` read it."""

__version__ = "0.1.0"
