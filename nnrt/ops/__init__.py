"""Operations: NNAPI validation rules, shape functions and numpy reference kernels.

Each family module registers its operations when imported; this package imports every family
explicitly (no scanning), so ``nnrt.ops.registry.lookup`` sees them all.
"""

from nnrt.ops import (  # noqa: F401 - imported for their registrations
    activation,
    binary,
    comparison,
    conv,
    conversion,
    gather,
    matmul,
    normalization,
    pad,
    pooling,
    reduce,
    reshape,
    resize,
    slicing,
    softmax,
    space,
    tensor,
    transpose_conv,
    unary,
)
