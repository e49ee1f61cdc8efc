"""Every fact about the dataset's dtypes, in one table.

The names are the canonical ones of schema/common.json (`float8_e4m3`, not torch's
`float8_e4m3fn`). Libraries appear by name only, so this module imports neither torch nor
numpy (the core install has neither): `getattr(torch, TORCH_TENSOR_DTYPES[name])` where torch is at hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Optional


@dataclass(frozen=True)
class DType:
    name: str
    bits: int  # of one value
    float_max: Optional[float] = None  # largest finite value of a float dtype
    int_range: Optional[tuple[int, int]] = None  # (min, max) of an integer dtype
    torch: Optional[str] = None  # torch attribute name
    torch_packed: bool = False  # torch's dtype holds two values per element (the shape differs)
    numpy: Optional[str] = None  # numpy dtype name, where numpy has the dtype
    safetensors: Optional[str] = None  # dtype code in a safetensors header
    flashinfer: Optional[str] = None  # FlashInfer-Trace's name; None where it has none


# In the order of schema/common.json's dtype enum.
_TABLE = (
    DType("float32", 32, float_max=3.4028234663852886e38, torch="float32", numpy="float32", safetensors="F32",
          flashinfer="float32"),
    DType("float16", 16, float_max=65504.0, torch="float16", numpy="float16", safetensors="F16",
          flashinfer="float16"),
    DType("bfloat16", 16, float_max=3.3895313892515355e38, torch="bfloat16", safetensors="BF16",
          flashinfer="bfloat16"),
    # The OCP e4m3 "fn" encoding (no infinities), which torch and FlashInfer-Trace call float8_e4m3fn.
    DType("float8_e4m3", 8, float_max=448.0, torch="float8_e4m3fn", safetensors="F8_E4M3",
          flashinfer="float8_e4m3fn"),
    DType("float8_e5m2", 8, float_max=57344.0, torch="float8_e5m2", safetensors="F8_E5M2", flashinfer="float8_e5m2"),
    DType("float4_e2m1", 4, float_max=6.0, torch="float4_e2m1fn_x2", torch_packed=True, safetensors="F4",
          flashinfer="float4_e2m1"),
    DType("int8", 8, int_range=(-2**7, 2**7 - 1), torch="int8", numpy="int8", safetensors="I8", flashinfer="int8"),
    DType("bool", 8, torch="bool", numpy="bool", safetensors="BOOL", flashinfer="bool"),
    DType("int16", 16, int_range=(-2**15, 2**15 - 1), torch="int16", numpy="int16", safetensors="I16",
          flashinfer="int16"),
    DType("int32", 32, int_range=(-2**31, 2**31 - 1), torch="int32", numpy="int32", safetensors="I32",
          flashinfer="int32"),
    DType("int64", 64, int_range=(-2**63, 2**63 - 1), torch="int64", numpy="int64", safetensors="I64",
          flashinfer="int64"),
    DType("uint8", 8, int_range=(0, 255), torch="uint8", numpy="uint8", safetensors="U8"),
)
DTYPE: Mapping[str, DType] = MappingProxyType({d.name: d for d in _TABLE})

DTYPE_BITS = {d.name: d.bits for d in _TABLE}
DTYPE_BYTES = {d.name: d.bits / 8 if d.bits % 8 else d.bits // 8 for d in _TABLE}
FLOAT_MAX = {d.name: d.float_max for d in _TABLE if d.float_max is not None}
FP8_MAX = {d.name: d.float_max for d in _TABLE if d.float_max is not None and d.bits == 8}
INT_RANGE = {d.name: d.int_range for d in _TABLE if d.int_range is not None}
NUMPY_NAMES = {d.name: d.numpy for d in _TABLE if d.numpy}
FLASHINFER_NAMES = {d.name: d.flashinfer for d in _TABLE if d.flashinfer}
SAFETENSORS_DTYPES = {d.safetensors: d.name for d in _TABLE if d.safetensors}  # header code -> dtype
# torch's spelling in code, e.g. "torch.float8_e4m3fn" (packed dtypes included: a name, not a tensor).
TORCH_NAMES = {d.name: f"torch.{d.torch}" for d in _TABLE if d.torch}
# dtype -> torch attribute of the dtype a tensor of the definition's shape holds it in (packed float4 has none).
TORCH_TENSOR_DTYPES = {d.name: d.torch for d in _TABLE if d.torch and not d.torch_packed}
# Short spellings of the canonical dtypes (the legacy Kernel Signature format writes them): its reader renames them,
# and a canonical or FlashInfer-Trace file that uses one gets the schema's error with the canonical name as the fix
# (neither format has them).
SHORT_NAMES = MappingProxyType({"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp8_e4m3": "float8_e4m3",
                                "fp8_e5m2": "float8_e5m2", "fp4_e2m1": "float4_e2m1"})

# Other spellings a foreign file may use for a canonical dtype, with what a rename to it loses (None: nothing).
# The torch and FlashInfer-Trace names come from the table above; the rest are the spellings seen in the wild.
OTHER_SPELLINGS: Mapping[str, tuple[str, Optional[str]]] = MappingProxyType({
    **{short: (name, None) for short, name in SHORT_NAMES.items()},  # Kernel Signature (seed 001): fp32, bf16 ...
    **{d.torch: (d.name, None) for d in _TABLE if d.torch and d.torch != d.name and not d.torch_packed},
    **{d.flashinfer: (d.name, None) for d in _TABLE if d.flashinfer and d.flashinfer != d.name},
    **{d.torch: (d.name, f"packs two values per byte (torch {d.torch}); the canonical shape counts values, "
                         "check the last axis") for d in _TABLE if d.torch_packed},
    "float4_e2m1fn": ("float4_e2m1", None),  # FlashInfer-Trace files written before its float4_e2m1
    # torch names flashinfer-bench does not use but exports from torch code do.
    "float8_e4m3fnuz": ("float8_e4m3", "is the fnuz encoding (no negative zero, exponent bias 8); "
                                       "the canonical float8_e4m3 is the OCP fn encoding, so values differ"),
    "float8_e5m2fnuz": ("float8_e5m2", "is the fnuz encoding (no negative zero, exponent bias 16); "
                                       "the canonical float8_e5m2 is the OCP encoding, so values differ"),
})
