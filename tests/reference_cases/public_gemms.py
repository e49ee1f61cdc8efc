"""The independent check of MiniMax-M2's public bfloat16 GEMMs (gemm_n256_k3072, gemm_n8192_k3072, gemm_n3072_k6144):
the family dataset/families/minimax_m2_public_gemms.json, which `kerneltrace definitions` renders from
gemm_n3072_k3072 with other N and K. The check: llama.py's float64 GEMM at the real K, N shrunk where the weight is
large (every column is the same dot product over K).
"""

from __future__ import annotations

from .common import families
from .llama import gemm_case

CASES = {s["name"]: gemm_case(**({"N": 256} if s["axes"]["N"]["value"] > 256 else {}))
         for f in families("minimax_m2_public_gemms") for s in f["siblings"]}
