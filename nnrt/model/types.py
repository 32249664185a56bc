"""NNAPI enumerations with their exact names and codes.

These mirror ``OperandCode``, ``OperationCode``, the operand lifetimes, ``FuseCode``,
``PaddingCode``, ``PreferenceCode`` and ``PriorityCode`` of ``NeuralNetworks.h`` so that models,
tools and tests written against NNAPI carry over unchanged.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "EXTENSION_PREFIX_SHIFT",
    "NNAPI_OPERATIONS",
    "NNRT_EXTENSION",
    "NNRT_MAX_RANK",
    "NNRT_RANK_EXTENSION",
    "ExecutionPreference",
    "FusedActivation",
    "OperandLifetime",
    "OperandType",
    "OperationType",
    "PaddingCode",
    "Priority",
]


class OperandType(IntEnum):
    """Operand types (NNAPI ``OperandCode``). ``SUBGRAPH`` is NNAPI's ``MODEL`` (a subgraph)."""

    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_QUANT16_SYMM = 7
    TENSOR_FLOAT16 = 8
    TENSOR_BOOL8 = 9
    FLOAT16 = 10
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11
    TENSOR_QUANT16_ASYMM = 12
    TENSOR_QUANT8_SYMM = 13
    TENSOR_QUANT8_ASYMM_SIGNED = 14
    SUBGRAPH = 15


class OperationType(IntEnum):
    """Operation types: NNAPI's ``OperationCode`` (all 106) and nnrt's extension operations.

    Extension operations follow NNAPI's extension mechanism: an operation type is
    ``prefix << 16 | code`` where ``prefix`` names an extension. nnrt's own extension,
    ``com.nnrt`` (:data:`NNRT_EXTENSION`), holds operations that ONNX models need and NNAPI
    lacks; its prefix is fixed at 1. The reference driver implements them and the cpu driver
    accelerates ERF and LAYER_NORMALIZATION; other drivers report them unsupported and the
    partitioner falls back. Their qualified names
    (``com.nnrt.ERF``) come from :func:`nnrt.model.operation.operation_name`; ``.name`` is the
    Python identifier (``NNRT_ERF``).
    """

    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28
    BATCH_TO_SPACE_ND = 29
    DIV = 30
    MEAN = 31
    PAD = 32
    SPACE_TO_BATCH_ND = 33
    SQUEEZE = 34
    STRIDED_SLICE = 35
    SUB = 36
    TRANSPOSE = 37
    ABS = 38
    ARGMAX = 39
    ARGMIN = 40
    AXIS_ALIGNED_BBOX_TRANSFORM = 41
    BIDIRECTIONAL_SEQUENCE_LSTM = 42
    BIDIRECTIONAL_SEQUENCE_RNN = 43
    BOX_WITH_NMS_LIMIT = 44
    CAST = 45
    CHANNEL_SHUFFLE = 46
    DETECTION_POSTPROCESSING = 47
    EQUAL = 48
    EXP = 49
    EXPAND_DIMS = 50
    GATHER = 51
    GENERATE_PROPOSALS = 52
    GREATER = 53
    GREATER_EQUAL = 54
    GROUPED_CONV_2D = 55
    HEATMAP_MAX_KEYPOINT = 56
    INSTANCE_NORMALIZATION = 57
    LESS = 58
    LESS_EQUAL = 59
    LOG = 60
    LOGICAL_AND = 61
    LOGICAL_NOT = 62
    LOGICAL_OR = 63
    LOG_SOFTMAX = 64
    MAXIMUM = 65
    MINIMUM = 66
    NEG = 67
    NOT_EQUAL = 68
    PAD_V2 = 69
    POW = 70
    PRELU = 71
    QUANTIZE = 72
    QUANTIZED_16BIT_LSTM = 73
    RANDOM_MULTINOMIAL = 74
    REDUCE_ALL = 75
    REDUCE_ANY = 76
    REDUCE_MAX = 77
    REDUCE_MIN = 78
    REDUCE_PROD = 79
    REDUCE_SUM = 80
    ROI_ALIGN = 81
    ROI_POOLING = 82
    RSQRT = 83
    SELECT = 84
    SIN = 85
    SLICE = 86
    SPLIT = 87
    SQRT = 88
    TILE = 89
    TOPK_V2 = 90
    TRANSPOSE_CONV_2D = 91
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92
    UNIDIRECTIONAL_SEQUENCE_RNN = 93
    RESIZE_NEAREST_NEIGHBOR = 94
    QUANTIZED_LSTM = 95
    IF = 96
    WHILE = 97
    ELU = 98
    HARD_SWISH = 99
    FILL = 100
    RANK = 101
    BATCH_MATMUL = 102
    PACK = 103
    MIRROR_PAD = 104
    REVERSE = 105

    # -- extension "com.nnrt" (prefix 1) --------------------------------------------------------
    NNRT_ERF = 0x1_0000
    NNRT_LAYER_NORMALIZATION = 0x1_0001
    NNRT_GATHER_ND = 0x1_0002
    NNRT_SHAPE = 0x1_0003

    @property
    def is_extension(self) -> bool:
        """Whether this is an extension operation (not one of NNAPI's own)."""
        return int(self) >> EXTENSION_PREFIX_SHIFT != 0


#: An extension operation's type is ``prefix << EXTENSION_PREFIX_SHIFT | code`` (as in NNAPI).
EXTENSION_PREFIX_SHIFT = 16

#: nnrt's own extension: its name and its (fixed) prefix.
NNRT_EXTENSION = ("com.nnrt", 1)

#: nnrt's higher-rank extension of NNAPI operations: the operations NNAPI caps at rank 4 that
#: real models use at higher rank (data movement, element-wise, reductions, SOFTMAX,
#: BATCH_MATMUL) take tensors up to :data:`NNRT_MAX_RANK`; a model using one above NNAPI's own
#: limit lists this name in ``Model.extensions`` (docs/model.md).
NNRT_RANK_EXTENSION = "com.nnrt.rank6"

#: The highest rank nnrt takes for the operations of :data:`NNRT_RANK_EXTENSION`.
NNRT_MAX_RANK = 6

#: The 106 operations NNAPI itself defines, in code order.
NNAPI_OPERATIONS: tuple[OperationType, ...] = tuple(
    op for op in OperationType if not op.is_extension)


class OperandLifetime(IntEnum):
    """Where an operand's value comes from (NNAPI HAL ``OperandLifeTime``)."""

    TEMPORARY_VARIABLE = 0
    SUBGRAPH_INPUT = 1
    SUBGRAPH_OUTPUT = 2
    CONSTANT_COPY = 3
    CONSTANT_REFERENCE = 4
    NO_VALUE = 5
    SUBGRAPH = 6


class FusedActivation(IntEnum):
    """Activation fused into an operation's output (NNAPI ``FuseCode``)."""

    NONE = 0
    RELU = 1
    RELU1 = 2
    RELU6 = 3


class PaddingCode(IntEnum):
    """Implicit padding schemes (NNAPI ``PaddingCode``)."""

    SAME = 1
    VALID = 2


class ExecutionPreference(IntEnum):
    """What a compilation optimises for (NNAPI ``PreferenceCode``)."""

    LOW_POWER = 0
    FAST_SINGLE_ANSWER = 1
    SUSTAINED_SPEED = 2


class Priority(IntEnum):
    """Relative priority of a compilation's work (NNAPI ``PriorityCode``)."""

    LOW = 90
    MEDIUM = 100
    HIGH = 110
    DEFAULT = MEDIUM
