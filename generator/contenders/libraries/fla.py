"""flash-linear-attention (fla-core) contenders: the gated delta rule of Qwen3-Next's linear attention.

Decode and MTP are fla's fused recurrent kernel with the gate (-exp(A_log) * softplus(a + dt_bias)), sigmoid(b) and the q/k L2
norms (eps 1e-6 inside the root) computed in the kernel, as the definitions state. The states stay
in the definitions' k-last [HV, V, K] layout (fla's `state_v_first=True`), so no state is transposed.
"""

from __future__ import annotations

import re

from .common import TRITON_GPUS, Family, sig

AUTHOR = "fla"
DEPENDENCIES = ("torch>=2.7", "triton>=3.3", "fla-core>=0.6,<0.7", "einops")

PREFILL_SOURCE = '''import torch
from fla.ops.gated_delta_rule import chunk_gated_delta_rule


def run(q, k, v, g, beta, initial_state, cu_seqlens, scale):
    # fla takes [1, total_tokens, heads, dim] for variable-length batches (views), int64 cu_seqlens
    # (a small copy inside the call) and keeps the k-last [HV, V, K] state with state_v_first=True.
    o, final_state = chunk_gated_delta_rule(
        q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), g.unsqueeze(0), beta.unsqueeze(0), scale=float(scale),
        initial_state=initial_state, output_final_state=True, state_v_first=True, cu_seqlens=cu_seqlens.long())
    return {"output": o.squeeze(0), "final_state": final_state}
'''

_RECURRENT_CALL = '''fused_recurrent_gated_delta_rule(
        {q}, {k}, {v}, g={a}, beta={b}, scale=float(scale), initial_state={state}, output_final_state=True,
        use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias,
        use_beta_sigmoid_in_kernel=True, state_v_first=True)'''

DECODE_SOURCE = '''import torch
from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule


def run(q, k, v, state_pool, state_indices, A_log, a, dt_bias, b, scale):
    # Each sequence's state gathered from its pool slot (a copy inside the call: fla reads a dense
    # [batch, HV, V, K] initial state); one token per sequence as [batch, 1, heads, dim] views.
    state = state_pool[state_indices.long()]
    o, new_state = ''' + _RECURRENT_CALL.format(q="q.unsqueeze(1)", k="k.unsqueeze(1)", v="v.unsqueeze(1)",
                                                a="a.unsqueeze(1)", b="b.unsqueeze(1)", state="state") + '''
    return {"output": o.squeeze(1), "new_state": new_state}
'''

MTP_SOURCE = '''import torch
from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule


def run(q, k, v, state_pool, state_indices, A_log, a, dt_bias, b, scale):
    # The state after every draft token is an output, and fla returns only the last one: one recurrent
    # call per token (seq_len is the few draft tokens), each starting from the previous call's state.
    state = state_pool[state_indices.long()]
    outputs, states = [], []
    for t in range(q.shape[1]):
        o, state = ''' + _RECURRENT_CALL.format(q="q[:, t:t + 1]", k="k[:, t:t + 1]", v="v[:, t:t + 1]",
                                                a="a[:, t:t + 1]", b="b[:, t:t + 1]", state="state") + '''
        outputs.append(o)
        states.append(state)
    return {"output": torch.cat(outputs, dim=1), "intermediate_states": torch.stack(states, dim=1)}
'''

_DESCRIBE = {
    "prefill": ("fla-core's chunked gated delta rule (fla.ops.gated_delta_rule.chunk_gated_delta_rule, chunk 64, "
                "variable-length through cu_seqlens, state_v_first=True so the [HV, V, K] states are read and written "
                "as the definition lays them out). Inside the timed call: views to fla's [1, T, H, D] layout and an "
                "int64 copy of cu_seqlens."),
    "decode": ("fla-core's fused recurrent gated delta rule (fused_recurrent_gated_delta_rule) with the gate "
               "-exp(A_log) * softplus(a + dt_bias), sigmoid(b) and the q/k L2 norms (eps 1e-6) in the kernel, "
               "state_v_first=True. Inside the timed call: the gather of each sequence's state from the pool "
               "(fla reads a dense initial state) and views to fla's [B, 1, H, D] layout."),
    "mtp": ("fla-core's fused recurrent gated delta rule (gate, sigmoid(b) and q/k L2 norms in the kernel, "
            "state_v_first=True), one call per draft token because every intermediate state is an output and fla "
            "returns only the last. Inside the timed call: the gather of the states from the pool, seq_len kernel "
            "launches, and the concatenation of the outputs and states."),
}

_PREFILL_SIG = sig("q:total_tokens,num_qk_heads,head_k_dim:bfloat16 k:total_tokens,num_qk_heads,head_k_dim:bfloat16 "
                   "v:total_tokens,num_v_heads,head_v_dim:bfloat16 g:total_tokens,num_v_heads:float32 "
                   "beta:total_tokens,num_v_heads:float32 "
                   "initial_state:num_seqs,num_v_heads,head_v_dim,head_k_dim:float32 "
                   "cu_seqlens:len_cu_seqlens:int32 scale::float32",
                   "output:total_tokens,num_v_heads,head_v_dim:bfloat16 "
                   "final_state:num_seqs,num_v_heads,head_v_dim,head_k_dim:float32")
_GATES = ("state_pool:num_slots,num_v_heads,head_v_dim,head_k_dim:float32 state_indices:batch_size:int32 "
          "A_log:num_v_heads:float32 a:{t}num_v_heads:bfloat16 dt_bias:num_v_heads:bfloat16 "
          "b:{t}num_v_heads:bfloat16 scale::float32")
_DECODE_SIG = sig("q:batch_size,num_qk_heads,head_k_dim:bfloat16 k:batch_size,num_qk_heads,head_k_dim:bfloat16 "
                  "v:batch_size,num_v_heads,head_v_dim:bfloat16 " + _GATES.format(t="batch_size,"),
                  "output:batch_size,num_v_heads,head_v_dim:bfloat16 "
                  "new_state:batch_size,num_v_heads,head_v_dim,head_k_dim:float32")
_MTP_SIG = sig("q:batch_size,seq_len,num_qk_heads,head_k_dim:bfloat16 k:batch_size,seq_len,num_qk_heads,head_k_dim:bfloat16 "
               "v:batch_size,seq_len,num_v_heads,head_v_dim:bfloat16 " + _GATES.format(t="batch_size,seq_len,"),
               "output:batch_size,seq_len,num_v_heads,head_v_dim:bfloat16 "
               "intermediate_states:batch_size,seq_len,num_v_heads,head_v_dim,head_k_dim:float32")


def _family(kind, signature, source):
    return Family(name=f"gdn_{kind}", author=AUTHOR, pattern=re.compile(rf"^gdn_{kind}_qk\d+_v\d+_d\d+$"),
                  signatures=(signature,), render=lambda d: (source, _DESCRIBE[kind]), language="triton",
                  target_hardware=TRITON_GPUS, dependencies=DEPENDENCIES, suffix="fla")


FAMILIES = (
    _family("decode", _DECODE_SIG, DECODE_SOURCE),
    _family("mtp", _MTP_SIG, MTP_SOURCE),
)

REJECTED = {
    "gdn_prefill_*": "fla's chunked kernel keeps the WY terms and the per-chunk states in the inputs' dtype "
                     "(bfloat16; TF32 dots when given float32), so final_state is off the float32 definition by "
                     "~1e-3 relative (measured under the interpreter: max abs err 1.2e-3 at scale 0.59), 100x its "
                     "float32 tolerance; the source below (PREFILL_SOURCE) is kept for when a definition states "
                     "that precision",
    "gdn_post_conv_prep / gdn_qkvzba_split / gdn_state_gather / gdn_state_scatter": "layout and copy kernels around "
        "the recurrence; fla has no call that is exactly one of them",
    "mamba_* (selective state update, SSD chunk scan)": "fla-core has no Mamba-2 kernel with these layouts",
}
