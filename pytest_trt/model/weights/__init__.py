"""A model's weights: the one weight store, the model identity, and converted weight sets' layout.

* :mod:`~pytest_trt.model.weights.store` - :class:`WeightStore`: lazy, memory-mapped, read-only access to
  initializer values; external references validated at load;
* :mod:`~pytest_trt.model.weights.singlefile` - reading a model's structure without its weights (a big
  single-file model through a memory map and a protobuf wire-format scan);
* :mod:`~pytest_trt.model.weights.identity` - the model identity (structure + each initializer's bytes) and
  the digest memo that spares re-reading unchanged files;
* :mod:`~pytest_trt.model.weights.convert` - FP16/BF16 conversion and the layout of a weight set.

Weight sets themselves (cache entries, binding references to ONNX Runtime and TensorRT) are in
:mod:`pytest_trt.realize.weight_sets`, which sits above the cache. See docs/DESIGN.md "Weights".
"""

from .convert import (
    ALIGN,
    BF16_MAX,
    FP16_MAX,
    Slot,
    bf16_bits_to_fp32,
    convert_values,
    round_to,
    set_file_name,
    set_layout,
    to_bf16_bits,
    to_fp16,
    widen_to_fp32,
)
from .identity import (
    MEMO_DIR,
    RACY_SECONDS,
    DigestMemo,
    current_memo,
    model_identity,
    structure_bytes,
    use_memo,
)
from .singlefile import SCAN_BYTES, inline_small_external, read_structure
from .store import INLINE_BYTES, ExternalRef, WeightStore, external_info, tensor_nbytes

__all__ = [
    "ALIGN", "BF16_MAX", "FP16_MAX", "INLINE_BYTES", "MEMO_DIR", "RACY_SECONDS", "SCAN_BYTES", "DigestMemo",
    "ExternalRef", "Slot", "WeightStore", "bf16_bits_to_fp32", "convert_values", "current_memo", "external_info",
    "inline_small_external", "model_identity", "read_structure", "round_to", "set_file_name", "set_layout",
    "structure_bytes", "tensor_nbytes", "to_bf16_bits", "to_fp16", "use_memo", "widen_to_fp32",
]
