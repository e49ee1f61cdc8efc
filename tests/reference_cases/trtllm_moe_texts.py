"""Texts of the TRT-LLM fused MoE definitions (trtllm_moe_render.py): references, baselines, einsum cascades and
descriptions, by kind (fp4, fp4_routed, fp8) and routing (renormalize, llama4). @TOP_K@ is the definition's top k.
"""

from __future__ import annotations

DEQUANT = '''

def dequantize_mxfp4(blocks, scales):
    """[rows, K / 2] uint8 e2m1 codes (two per byte: element 2i in the LOW nibble, 2i + 1 in the high nibble) and
    [rows, K / 32] uint8 e8m0 scales -> [rows, K] float32 weights."""
    rows = blocks.shape[0]
    codes = torch.stack([blocks & 0x0F, blocks >> 4], dim=-1).reshape(rows, -1).to(torch.int32)  # [rows, K]
    sign = 1.0 - 2.0 * ((codes >> 3) & 1).to(torch.float32)  # bit 3
    exponent = ((codes >> 1) & 3).to(torch.float32)  # bits 2..1, bias 1
    mantissa = (codes & 1).to(torch.float32)  # bit 0
    normal = torch.pow(2.0, exponent - 1.0) * (1.0 + 0.5 * mantissa)
    subnormal = 0.5 * mantissa  # exponent field 0: 0 or 0.5
    values = sign * torch.where(exponent > 0, normal, subnormal)  # +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}
    scale = torch.pow(2.0, scales.to(torch.float32) - 127.0)  # e8m0: 2 ** (byte - 127), one per 32 values
    return (values.reshape(rows, -1, 32) * scale[:, :, None]).reshape(rows, -1)
'''

ROUTE = {
    "renormalize": '''

def route(routing_logits):
    """Renormalize (routing_method_type 1): the top_k largest logits (ties: the lower expert id), then the
    softmax of those top_k logits (TopK -> Softmax)."""
    top_k = @TOP_K@  # num_experts_per_tok
    logits = routing_logits.to(torch.float32)
    rows = torch.arange(logits.shape[0], device=logits.device)
    remaining = logits.clone()
    ids = torch.empty(logits.shape[0], top_k, dtype=torch.int64, device=logits.device)
    for j in range(top_k):
        e = torch.argmax(remaining, dim=-1)  # the first maximum: the lower id wins a tie
        ids[:, j] = e
        remaining[rows, e] = float("-inf")
    weights = torch.softmax(logits.gather(1, ids), dim=-1)  # over the picked logits only
    return ids, weights
''',
    "llama4": '''

def route(routing_logits):
    """Llama4 (routing_method_type 3): the largest logit (ties: the lower expert id), its weight the sigmoid of
    that logit (Top-1 -> Sigmoid); routing_bias and routed_scaling_factor play no part."""
    logits = routing_logits.to(torch.float32)
    ids = torch.argmax(logits, dim=-1, keepdim=True)  # [T, 1], the first maximum
    weights = torch.sigmoid(logits.gather(1, ids))
    return ids, weights
''',
    "packed": '''

def unpack(topk_ids):
    """Packed pre-computed routing: (expert_id << 16) | bfloat16 bits of the weight."""
    ids = (topk_ids >> 16).to(torch.int64)  # high 16 bits: the expert id
    bits = (topk_ids & 0xFFFF).to(torch.int32)  # low 16 bits: the weight's bfloat16 bits
    weights = (bits << 16).view(torch.float32)  # a bfloat16 widens to the float32 with those high 16 bits
    return ids, weights
''',
}

FP4_BODY = '''

def run(@FIRST@, hidden_states, gemm1_weights, gemm1_weights_scale, gemm2_weights, gemm2_weights_scale):
    ids, weights = @ROUTE_CALL@  # [T, top_k] expert ids and routing weights
    num_tokens, hidden_size = hidden_states.shape
    num_experts, gemm1_out_size, _ = gemm1_weights.shape
    intermediate_size = gemm1_out_size // 2
    x = hidden_states.to(torch.float32)
    output = torch.zeros(num_tokens, hidden_size, dtype=torch.float32, device=x.device)
    for e in range(num_experts):
        hit = ids == e  # [T, top_k]
        tok = hit.any(dim=1).nonzero()[:, 0]  # tokens that picked expert e
        if tok.numel() == 0:
            continue
        w_tok = (weights * hit).sum(dim=1)[tok]  # their routing weight for it
        W1 = dequantize_mxfp4(gemm1_weights[e], gemm1_weights_scale[e])  # [2I, H]
        W2 = dequantize_mxfp4(gemm2_weights[e], gemm2_weights_scale[e])  # [H, I]
        h = x[tok] @ W1.T  # [Tk, 2I], float32 accumulation
        up, gate = h[:, :intermediate_size], h[:, intermediate_size:]  # rows [0, I) up, [I, 2I) gate
        act = gate / (1.0 + torch.exp(-gate)) * up  # SiLU(gate) * up
        act = act.to(torch.bfloat16).to(torch.float32)  # the kernel keeps the activation in bfloat16
        y = act @ W2.T  # [Tk, H]
        output.index_add_(0, tok, y * w_tok[:, None])  # the routing weight scales the expert's output
    return {"output": output.to(torch.bfloat16)}
'''

FP8_BODY = '''

def run(routing_logits, hidden_states, gemm1_weights, output1_scales_scalar, output1_scales_gate_scalar,
        gemm2_weights, output2_scales_scalar):
    ids, weights = route(routing_logits)  # [T, top_k] expert ids and routing weights
    num_tokens, hidden_size = hidden_states.shape
    num_experts, gemm1_out_size, _ = gemm1_weights.shape
    intermediate_size = gemm1_out_size // 2
    x = hidden_states.to(torch.float32)  # float8 values, exact in float32
    output = torch.zeros(num_tokens, hidden_size, dtype=torch.float32, device=x.device)
    for e in range(num_experts):
        hit = ids == e  # [T, top_k]
        tok = hit.any(dim=1).nonzero()[:, 0]  # tokens that picked expert e
        if tok.numel() == 0:
            continue
        w_tok = (weights * hit).sum(dim=1)[tok]  # their routing weight for it
        h = x[tok] @ gemm1_weights[e].to(torch.float32).T  # [Tk, 2I], float32 accumulation
        up = h[:, :intermediate_size] * output1_scales_scalar[e]  # rows [0, I): up
        gate = h[:, intermediate_size:] * output1_scales_gate_scalar[e]  # rows [I, 2I): gate
@WEIGHT_IN@        act = gate / (1.0 + torch.exp(-gate)) * up  # SiLU(gate) * up, float32 (not re-quantised)
        y = (act @ gemm2_weights[e].to(torch.float32).T) * output2_scales_scalar[e]  # [Tk, H]
        output.index_add_(0, tok, y@WEIGHT_OUT@)
    return {"output": output.to(torch.bfloat16)}
'''

LLAMA4_IN = ("        # use_routing_scales_on_input: the routing weight scales gemm1's output rows (= the input)\n"
             "        up = up * w_tok[:, None]\n"
             "        gate = gate * w_tok[:, None]\n")


def _fp4(route: str) -> str:
    first, call = ("topk_ids", "unpack(topk_ids)") if route == "packed" else ("routing_logits", "route(routing_logits)")
    return "import torch\n" + DEQUANT + ROUTE[route] + FP4_BODY.replace("@FIRST@", first).replace("@ROUTE_CALL@", call)


def _fp8(route: str) -> str:
    llama4 = route == "llama4"
    body = FP8_BODY.replace("@WEIGHT_IN@", LLAMA4_IN if llama4 else "")
    body = body.replace("@WEIGHT_OUT@", "" if llama4 else " * w_tok[:, None]")
    return "import torch\n" + ROUTE[route] + body


REFERENCES = {("fp4", "renormalize"): _fp4("renormalize"), ("fp4", "llama4"): _fp4("llama4"),
              ("fp4_routed", "renormalize"): _fp4("packed"), ("fp4_routed", "llama4"): _fp4("packed"),
              ("fp8", "renormalize"): _fp8("renormalize"), ("fp8", "llama4"): _fp8("llama4")}

B_ROUTE = {
    "renormalize": '''def _route(logits):
    l = logits.float()
    ids = torch.sort(l, dim=-1, descending=True, stable=True).indices[:, :@TOP_K@]
    return ids, torch.softmax(l.gather(1, ids), dim=-1)
''',
    "llama4": '''def _route(logits):
    l = logits.float()
    ids = torch.sort(l, dim=-1, descending=True, stable=True).indices[:, :1]
    return ids, torch.sigmoid(l.gather(1, ids))
''',
    "packed": '''def _route(topk_ids):
    ids = (topk_ids >> 16).long()
    w = (topk_ids & 0xFFFF).to(torch.int16).view(torch.bfloat16).float()
    return ids, w
''',
}

B_FP4 = '''import torch
import torch.nn.functional as F

_E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


@ROUTE@

def _dequant(blocks, scales):  # table look-up of both nibbles, ldexp by the e8m0 exponents
    lut = torch.tensor(_E2M1, dtype=torch.float32, device=blocks.device)
    v = torch.stack([lut[(blocks & 15).long()], lut[(blocks >> 4).long()]], dim=-1).flatten(-2)
    s = torch.ldexp(torch.ones_like(scales, dtype=torch.float32), scales.int() - 127)
    return (v.unflatten(-1, (-1, 32)) * s[..., None]).flatten(-2)


def run(@FIRST@, hidden_states, gemm1_weights, gemm1_weights_scale, gemm2_weights, gemm2_weights_scale):
    # (token, pick) pairs sorted by expert; per expert F.linear on its dequantised weights; index_add_ back.
    T, H = hidden_states.shape
    I = gemm1_weights.shape[1] // 2
    ids, w = _route(@FIRST@)
    x = hidden_states.float()
    tok = torch.arange(T, device=ids.device)[:, None].expand_as(ids).reshape(-1)
    exp, wt = ids.reshape(-1), w.reshape(-1)
    order = torch.argsort(exp, stable=True)
    tok, exp, wt = tok[order], exp[order], wt[order]
    counts = torch.bincount(exp, minlength=gemm1_weights.shape[0]).tolist()
    out = torch.zeros(T, H, dtype=torch.float32, device=x.device)
    start = 0
    for e, n in enumerate(counts):
        if n == 0:
            continue
        t = tok[start:start + n]
        h = F.linear(x[t], _dequant(gemm1_weights[e], gemm1_weights_scale[e]))
        a = (F.silu(h[:, I:]) * h[:, :I]).bfloat16().float()
        y = F.linear(a, _dequant(gemm2_weights[e], gemm2_weights_scale[e]))
        out.index_add_(0, t, y * wt[start:start + n, None])
        start += n
    return {"output": out.to(torch.bfloat16)}
'''

B_FP8 = '''import torch
import torch.nn.functional as F


@ROUTE@

def run(routing_logits, hidden_states, gemm1_weights, output1_scales_scalar, output1_scales_gate_scalar,
        gemm2_weights, output2_scales_scalar):
    # (token, pick) pairs sorted by expert; per expert F.linear on the float8 weights widened; index_add_ back.
    T, H = hidden_states.shape
    I = gemm1_weights.shape[1] // 2
    ids, w = _route(routing_logits)
    x = hidden_states.float()
    tok = torch.arange(T, device=ids.device)[:, None].expand_as(ids).reshape(-1)
    exp, wt = ids.reshape(-1), w.reshape(-1)
    order = torch.argsort(exp, stable=True)
    tok, exp, wt = tok[order], exp[order], wt[order]
    counts = torch.bincount(exp, minlength=gemm1_weights.shape[0]).tolist()
    out = torch.zeros(T, H, dtype=torch.float32, device=x.device)
    start = 0
    for e, n in enumerate(counts):
        if n == 0:
            continue
        t, ws = tok[start:start + n], wt[start:start + n, None]
        h = F.linear(x[t], gemm1_weights[e].float())
        scale = torch.cat([output1_scales_scalar[e].expand(I), output1_scales_gate_scalar[e].expand(I)])
        h = h * scale@SCALE_IN@
        y = F.linear(F.silu(h[:, I:]) * h[:, :I], gemm2_weights[e].float()) * output2_scales_scalar[e]
        out.index_add_(0, t, y@SCALE_OUT@)
        start += n
    return {"output": out.to(torch.bfloat16)}
'''


def _b_fp4(route: str) -> str:
    first = "topk_ids" if route == "packed" else "routing_logits"
    return B_FP4.replace("@ROUTE@", B_ROUTE[route]).replace("@FIRST@", first)


def _b_fp8(route: str) -> str:
    llama4 = route == "llama4"
    return B_FP8.replace("@ROUTE@", B_ROUTE[route]).replace("@SCALE_IN@", " * ws" if llama4 else "") \
        .replace("@SCALE_OUT@", "" if llama4 else " * ws")


_B_FP4_TEXT = ("Routing vectorised (a stable torch.sort of the logits, or the packed ids unpacked); (token, pick) pairs "
               "sorted by expert; MXFP4 dequantised by a 16-entry table and torch.ldexp; per expert F.linear and "
               "F.silu, the activation rounded to bfloat16; index_add_ scatter.")
_B_FP8_TEXT = ("Routing vectorised with a stable torch.sort; (token, pick) pairs sorted by expert; per expert F.linear "
               "on the widened float8 weights, the per-expert output scales as one [2I] vector; index_add_ scatter.")
BASELINES = {("fp4", r): (_b_fp4(r), _B_FP4_TEXT) for r in ("renormalize", "llama4")}
BASELINES.update({("fp4_routed", r): (_b_fp4("packed"), _B_FP4_TEXT) for r in ("renormalize", "llama4")})
BASELINES.update({("fp8", r): (_b_fp8(r), _B_FP8_TEXT) for r in ("renormalize", "llama4")})

_E_HEAD = '''{% set ROWS = seq_len * @TOP_K@ %}
{% set ACTIVE = [num_experts, ROWS] | min %}
workload:
  rank_sizes:
    T: {{ seq_len }}
    E: {{ num_experts }}
    K: @TOP_K@
    H: {{ hidden_size }}
    O: {{ gemm1_out_size }}
    I: {{ intermediate_size }}
    R: {{ ROWS }}
@RANKS@  iteration_space_shape:
    e: 0 <= e < {{ ACTIVE }}
  einsums:
'''
_E_ROUTE = '''  - name: Routing
    tensor_accesses:
    - {name: routing_logits, projection: [t, e]}
    - {name: topk_ids, projection: [t, k], output: true}
    - {name: topk_weights, projection: [t, k], output: true}
'''
_E_UNPACK = '''  - name: Unpack
    tensor_accesses:
    - {name: topk_ids, projection: [t, k]}
    - {name: pick_ids, projection: [t, k], output: true}
    - {name: topk_weights, projection: [t, k], output: true}
'''
_E_FP4 = '''  - name: DequantizeW1
    is_copy_operation: true
    tensor_accesses:
    - {name: gemm1_weights, projection: {E: e, O: o, HP: h // 2}}
    - {name: gemm1_weights_scale, projection: {E: e, O: o, HB: h // 32}}
    - {name: w1, projection: [e, o, h], output: true}
  - name: DequantizeW2
    is_copy_operation: true
    tensor_accesses:
    - {name: gemm2_weights, projection: {E: e, H: h, IP: i // 2}}
    - {name: gemm2_weights_scale, projection: {E: e, H: h, IB: i // 32}}
    - {name: w2, projection: [e, h, i], output: true}
  - name: DispatchRows
    is_copy_operation: true
    tensor_accesses:
    - {name: hidden_states, projection: [t, h]}
    - {name: @IDS@, projection: [t, k]}
    - {name: x_rows, projection: [r, h], output: true}
  - name: GatherW1
    is_copy_operation: true
    tensor_accesses:
    - {name: w1, projection: [e, o, h]}
    - {name: w1_rows, projection: [r, o, h], output: true}
  - name: GatherW2
    is_copy_operation: true
    tensor_accesses:
    - {name: w2, projection: [e, h, i]}
    - {name: w2_rows, projection: [r, h, i], output: true}
  - name: Gemm1
    compute_dtype: bfloat16
    tensor_accesses:
    - {name: x_rows, projection: [r, h]}
    - {name: w1_rows, projection: [r, o, h]}
    - {name: h1, projection: [r, o], output: true}
  - name: SiluAndMul
    tensor_accesses:
    - {name: h1, projection: [r, o]}
    - {name: act, projection: {R: r, I: o // 2}, output: true}
  - name: Gemm2
    compute_dtype: bfloat16
    tensor_accesses:
    - {name: act, projection: [r, i]}
    - {name: w2_rows, projection: [r, h, i]}
    - {name: y, projection: [r, h], output: true}
  - name: Combine
    tensor_accesses:
    - {name: y, projection: [r, h]}
    - {name: topk_weights, projection: {T: r, K: '0'}}
    - {name: output, projection: {T: r, H: h}, output: true}
  bits_per_value: {Intermediates: 32, x_rows | act: 16}
'''
_E_FP8 = '''  - name: DispatchRows
    is_copy_operation: true
    tensor_accesses:
    - {name: hidden_states, projection: [t, h]}
    - {name: topk_ids, projection: [t, k]}
    - {name: x_rows, projection: [r, h], output: true}
  - name: GatherWeights
    is_copy_operation: true
    tensor_accesses:
    - {name: gemm1_weights, projection: [e, o, h]}
    - {name: gemm2_weights, projection: [e, h, i]}
    - {name: output1_scales_scalar, projection: [e]}
    - {name: output1_scales_gate_scalar, projection: [e]}
    - {name: output2_scales_scalar, projection: [e]}
    - {name: w1_rows, projection: [r, o, h], output: true}
    - {name: w2_rows, projection: [r, h, i], output: true}
    - {name: s1_rows, projection: [r, o], output: true}
    - {name: s2_rows, projection: [r], output: true}
  - name: Gemm1
    tensor_accesses:
    - {name: x_rows, projection: [r, h]}
    - {name: w1_rows, projection: [r, o, h]}
    - {name: h1, projection: [r, o], output: true}
  - name: Scale1
    tensor_accesses:
    - {name: h1, projection: [r, o]}
    - {name: s1_rows, projection: [r, o]}
    - {name: h1s, projection: [r, o], output: true}
  - name: SiluAndMul
    tensor_accesses:
    - {name: h1s, projection: [r, o]}
    - {name: act, projection: {R: r, I: o // 2}, output: true}
  - name: Gemm2
    tensor_accesses:
    - {name: act, projection: [r, i]}
    - {name: w2_rows, projection: [r, h, i]}
    - {name: y, projection: [r, h], output: true}
  - name: Scale2
    tensor_accesses:
    - {name: y, projection: [r, h]}
    - {name: s2_rows, projection: [r]}
    - {name: ys, projection: [r, h], output: true}
  - name: Combine
    tensor_accesses:
    - {name: ys, projection: [r, h]}
    - {name: topk_weights, projection: {T: r, K: '0'}}
    - {name: output, projection: {T: r, H: h}, output: true}
  bits_per_value: {Intermediates: 32, x_rows | w1_rows | w2_rows | act: 8}
'''
_FP4_RANKS = '''    HP: {{ hidden_size_packed }}
    HB: {{ num_hidden_blocks }}
    IP: {{ intermediate_size_packed }}
    IB: {{ num_intermediate_blocks }}
'''
_C_FP4 = ('''# TRT-LLM fused MoE with MXFP4 weights and bfloat16 activations, @ROUTING@.
# MXFP4: the weights are decoded as the kernel reads them (a view: a copy, free) from the packed codes (4 bits a
# weight) and the e8m0 scales (one byte per 32 weights); bfloat16 activations times e2m1 weights run on the
# bfloat16 tensor cores (compute_dtype: no unit multiplies bfloat16 by e2m1 faster). Which rows go to which
# expert is data, so copies (free) dispatch the rows and gather their experts' weights. The activation between
# the GEMMs is bfloat16. Model of the data: rows = seq_len * @TOP_K@ picks; experts whose weights are read =
# min(num_experts, rows), the most those rows can reach (skewed routing reads fewer). Left out: the sort/scan
# that builds the dispatch.
''')
_C_FP8 = ('''# TRT-LLM fused MoE with FP8 per-tensor-scale weights and activations, softmax or sigmoid routing fused in.
# Per-expert scales scale gemm1's up and gate halves and gemm2's output; the routing weight scales either gemm1's
# output (Llama4: routing scales on the input) or the expert output, one multiply per row element either way
# (counted once, in Combine). Which rows go to which expert is data: copies (free) dispatch rows and gather
# weights and scales. Model of the data: rows = seq_len * @TOP_K@; experts read = min(num_experts, rows). The
# activation is counted as FP8 for the second GEMM (re-quantised, as the kernel does; the reference keeps it in
# float32). Left out: the sort/scan that builds the dispatch.
''')
EINSUMS = {
    "fp4": (_C_FP4.replace("@ROUTING@", "router logits routed in the kernel (top-k then softmax, or top-1 sigmoid)")
            + _E_HEAD.replace("@RANKS@", _FP4_RANKS) + _E_ROUTE + _E_FP4.replace("@IDS@", "topk_ids")),
    "fp4_routed": (_C_FP4.replace("@ROUTING@", "pre-computed routing (packed expert ids and bfloat16 weights)")
                   + _E_HEAD.replace("@RANKS@", _FP4_RANKS) + _E_UNPACK + _E_FP4.replace("@IDS@", "pick_ids")),
    "fp8": _C_FP8 + _E_HEAD.replace("@RANKS@", "") + _E_ROUTE + _E_FP8,
}


def description(v) -> str:
    from .trtllm_moe_desc import text
    return text(v)
