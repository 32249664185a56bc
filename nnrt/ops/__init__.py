"""Operations: NNAPI validation rules, shape functions and numpy reference kernels.

Each family module registers its operations when imported; this package imports every family
explicitly (no scanning), so ``nnrt.ops._framework.registry.lookup`` sees them all: Python runs
this file before any module under ``nnrt.ops`` is imported. The framework families are written
against is the internal :mod:`nnrt.ops._framework`.
"""

from nnrt.ops import (  # noqa: F401 - imported for their registrations
    activation,
    bidirectional_lstm,
    bidirectional_rnn,
    binary,
    comparison,
    control,
    conv,
    conversion,
    detection,
    erf,
    gather,
    gather_nd,
    keypoint,
    layer_norm,
    lookup,
    lsh,
    lstm,
    matmul,
    multinomial,
    normalization,
    pad,
    pooling,
    proposals,
    qlstm,
    quantized_lstm,
    reduce,
    reshape,
    resize,
    rnn,
    roi,
    sequence_lstm,
    shape_op,
    slicing,
    softmax,
    space,
    ssd,
    svdf,
    tensor,
    transpose_conv,
    unary,
)
