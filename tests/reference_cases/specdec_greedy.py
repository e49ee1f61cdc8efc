"""The speculative sampler vLLM serves by default: greedy drafts, no draft probabilities
(greedy_draft_speculative_sampling_v<vocab>), at every vocabulary that has the probabilistic
chain_speculative_sampling_v<vocab>, rendered from the table below with its own reference, einsum cascade and
baseline (`cd tests && python -m reference_cases.specdec_greedy` rewrites them).

vLLM's SpeculativeConfig.draft_sample_method defaults to "greedy" (vllm/config/speculative.py; issue 40's audit of
vLLM 0.33.0, and the vllm-project/vllm snapshot 9ffb8cea9636 cited there, line 588): MTP and EAGLE drafters take the
argmax and pass no draft probabilities, so the rejection sampler runs with draft_probs None
(vllm/v1/sample/rejection_sampler.py, NO_DRAFT_PROBS): rejection_random_sample_kernel takes draft_prob = 1 (accept
iff p_target(draft) >= u) and sample_recovered_tokens_kernel draws the recovered token from the target row with the
draft token's probability set to 0. The probabilistic path (chain_speculative_sampling_*) is the opt-in
draft_sample_method "probabilistic".

The independent check: float64, vectorised (every test at once, the accepted prefix as a cumulative product, the
residual as the target row times (1 - one_hot(draft)), normalised, drawn by vLLM's exponential race q = exp(-g)).
Its inputs put most drafts on the target's argmax, so the rejected ones carry most of their row's mass: a kernel
that keeps the rejected draft in the residual (the probabilistic residual max(0, p_target - p_draft) with the
draft probabilities absent, read as 0) draws it back and fails, and so does one that runs the probabilistic
acceptance without draft probabilities (p_draft = 0 rejects every draft); both are planted in test_references.py.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from .common import Case, shrunk, write_files
from .specdec import peaked_rows

DATASET = Path(__file__).resolve().parents[2] / "dataset"
TEMPLATE_VOCAB = 128256
SOURCE = ("vLLM's SpeculativeConfig.draft_sample_method defaults to greedy (vllm/config/speculative.py, line 588 of "
          "the vllm-project/vllm snapshot 9ffb8cea9636; issue 40's audit of vLLM 0.33.0)")


@dataclass(frozen=True)
class Greedy:
    model: str  # "Llama-3.1-8B"
    source: str  # config the vocabulary comes from
    vocab: int
    runs: str  # who runs it, when
    tags: tuple  # model and parallelism tags (the probabilistic sibling's)

    @property
    def name(self) -> str:
        return f"greedy_draft_speculative_sampling_v{self.vocab}"

    @property
    def probabilistic(self) -> str:
        return f"chain_speculative_sampling_v{self.vocab}"


VARIANTS = [
    Greedy("Llama-3.1-8B", "meta-llama/Llama-3.1-8B config.json", 128256,
           "Llama-3.1-8B runs it once per verify step after the target model's LM head and softmax over the k + 1 "
           "rows of each request, when vLLM serves it with an EAGLE or MTP-style drafter (--speculative-config) and a "
           "non-greedy request; the dataset's llama-3.1-8b record serves without speculation.",
           ("model-alt:llama-3.1-8b", "tp:1")),
    Greedy("DeepSeek-V3", "deepseek-ai/DeepSeek-V3 config.json", 129280,
           "DeepSeek-V3 runs it once per verify step, as vLLM's DeepSeek recipe serves it with the MTP layer "
           "(--speculative-config method deepseek_mtp) and a non-greedy request; the dataset's deepseek-v3 record is "
           "SGLang without speculation (SGLang accepts with its own tree samplers).",
           ("model-alt:deepseek-v3", "tp:8")),
    Greedy("GLM-4.5", "zai-org/GLM-4.5 config.json", 151552,
           "GLM-4.5 runs it once per verify step, as vLLM's GLM-4.5 recipe serves it with the MTP layer "
           "(--speculative-config method mtp, num_speculative_tokens 1) and a non-greedy request; the dataset's "
           "glm-4.5 record is SGLang without speculation.",
           ("model-alt:glm-4.5", "tp:8")),
    Greedy("Qwen3-Next-80B-A3B", "Qwen/Qwen3-Next-80B-A3B-Instruct config.json", 151936,
           "Qwen3-Next-80B-A3B runs it once per verify step, as its model card serves it in vLLM (--speculative-config "
           "method qwen3_next_mtp, num_speculative_tokens 2) with a non-greedy request; the dataset's "
           "qwen3-next-80b-a3b record serves without speculation.",
           ("model-alt:qwen3-next-80b-a3b", "tp:4")),
]

REFERENCE = '''import torch


def run(draft_token_ids, target_probs, uniform_samples, gumbel_noise):
    batch_size, num_verify_tokens, vocab_size = target_probs.shape
    num_speculative_tokens = num_verify_tokens - 1
    device = target_probs.device
    output_token_ids = torch.full((batch_size, num_verify_tokens), -1, dtype=torch.int32, device=device)
    num_accepted = torch.zeros(batch_size, dtype=torch.int32, device=device)
    for b in range(batch_size):
        # A greedy draft is a point mass: its draft probability is 1, so draft i is accepted iff
        # p_target(draft) / 1 >= u (vLLM's test with NO_DRAFT_PROBS); the first rejection ends the walk.
        pos = num_speculative_tokens
        for i in range(num_speculative_tokens):
            token = int(draft_token_ids[b, i])
            p_draft = 1.0
            p_target = target_probs[b, i, token].to(torch.float32)
            u = uniform_samples[b, i].to(torch.float32)
            if p_draft > 0 and bool(p_target / p_draft >= u):
                output_token_ids[b, i] = token
            else:
                pos = i
                break
        num_accepted[b] = pos
        weights = target_probs[b, pos].to(torch.float32).clone()
        if pos < num_speculative_tokens:
            # Rejected at pos: the recovered token comes from the target row with the rejected draft removed
            # (max(0, p_target - one_hot(draft))).
            weights[int(draft_token_ids[b, pos])] = 0.0
        # Every draft accepted: the bonus token comes from the target's row after the last draft, as it is.
        # Gumbel-max draw: argmax_v ln(weights[v]) + g[v] picks v with probability weights[v] / sum(weights);
        # ln(0) = -inf never wins; ties go to the lowest token id.
        scores = torch.log(weights) + gumbel_noise[b].to(torch.float32)
        output_token_ids[b, pos] = torch.argmax(scores).to(torch.int32)
    return {"output_token_ids": output_token_ids, "num_accepted": num_accepted}
'''

BASELINE = '''import torch


def run(draft_token_ids, target_probs, uniform_samples, gumbel_noise):
    # Every acceptance test at once (a greedy draft's probability is 1), the accepted prefix by a cumulative
    # product, then one draw per request from the row at its stop position with the rejected draft removed.
    B, T, V = target_probs.shape
    K = T - 1
    ids = draft_token_ids.long()
    p_target = target_probs[:, :K].gather(2, ids[..., None]).squeeze(-1)  # [B, K]
    num_accepted = (p_target >= uniform_samples).int().cumprod(dim=1).sum(dim=1)  # [B]
    rows = torch.arange(B, device=target_probs.device)
    weights = target_probs[rows, num_accepted].clone()  # [B, V]
    rejected = num_accepted < K
    removed = ids[rows, num_accepted.clamp(max=K - 1)]
    weights[rows[rejected], removed[rejected]] = 0.0
    drawn = torch.argmax(torch.log(weights) + gumbel_noise, dim=-1)  # [B]
    pos = torch.arange(K + 1, device=target_probs.device)[None, :]
    out = torch.where(pos < num_accepted[:, None], torch.cat([ids, ids[:, :1]], dim=1), torch.full_like(pos, -1))
    out = torch.where(pos == num_accepted[:, None], drawn[:, None], out)
    return {"output_token_ids": out.to(torch.int32), "num_accepted": num_accepted.to(torch.int32)}
'''

EINSUM = """# Speculative sampling of a chain of greedy drafts (no draft probabilities): the acceptance test reads the
# target probability at each draft token (one element each) and its uniform number; the accepted prefix is a
# reduction over the drafts; the token drawn at the stop position (recovered or bonus) reads one target row, the
# rejected draft's id and the request's noise row once and reduces over the vocabulary (an argmax). Which row
# that is is data (the stop position): the model reads row 0, one row per request; a kernel reads no more.
# Element-wise steps count one operation per element; the argmax counts as a reduction over v.
workload:
  rank_sizes:
    B: {{ batch_size }}
    K: {{ num_speculative_tokens }}
    T: {{ num_verify_tokens }}
    V: {{ vocab_size }}
  einsums:
  - name: Accept
    tensor_accesses:
    - {name: draft_token_ids, projection: [b, k]}
    - {name: target_probs, projection: {B: b, T: k, V: "0"}}
    - {name: uniform_samples, projection: [b, k]}
    - {name: accepted, projection: [b, k], output: true}
  - name: AcceptedPrefix
    tensor_accesses:
    - {name: accepted, projection: [b, k]}
    - {name: stop, projection: [b], output: true}
  - name: WriteCount
    is_copy_operation: true
    tensor_accesses:
    - {name: stop, projection: [b]}
    - {name: num_accepted, projection: [b], output: true}
  - name: Residual
    tensor_accesses:
    - {name: stop, projection: [b]}
    - {name: draft_token_ids, projection: {B: b, K: "0"}}
    - {name: target_probs, projection: {B: b, T: "0", V: v}}
    - {name: weights, projection: [b, v], output: true}
  - name: Draw
    tensor_accesses:
    - {name: weights, projection: [b, v]}
    - {name: gumbel_noise, projection: [b, v]}
    - {name: drawn, projection: [b], output: true}
  - name: WriteIds
    is_copy_operation: true
    tensor_accesses:
    - {name: draft_token_ids, projection: [b, k]}
    - {name: accepted, projection: [b, k]}
    - {name: drawn, projection: [b]}
    - {name: output_token_ids, projection: [b, t], output: true}
  bits_per_value: {Intermediates: 32}
"""


def description(v: Greedy) -> str:
    return (
        f"Speculative decoding's rejection sampling with greedy drafts (the verify step's token acceptance as vLLM "
        f"serves it by default) for {v.model} (vocab_size = {v.vocab}, {v.source}). {SOURCE}: MTP and EAGLE drafters "
        f"take the argmax and pass no draft probabilities, so vLLM's rejection sampler (vllm/v1/sample/"
        f"rejection_sampler.py, rejection_random_sample_kernel and sample_recovered_tokens_kernel with "
        f"NO_DRAFT_PROBS) treats each draft as a point mass: a draft probability of 1 in the acceptance test, and "
        f"the recovered token drawn from the target distribution with the draft token removed. The probabilistic "
        f"path, draft_sample_method probabilistic, is the opt-in {v.probabilistic}. The layout is that definition's "
        f"(num_speculative_tokens drafts per request, target_probs with one more row for the bonus token, output ids "
        f"padded with -1 after the first rejection), its random numbers given as inputs (uniform_samples, one row of "
        f"Gumbel noise per request) so that the kernel is deterministic and its outputs are compared exactly. For "
        f"each request b, with k = num_speculative_tokens:\n\n"
        f"    for i in 0 .. k-1 (stop at the first rejection):\n"
        f"        t = draft_token_ids[b, i];  p_t = target_probs[b, i, t]\n"
        f"        accept iff p_t >= uniform_samples[b, i]        (vLLM's p_t / p_draft >= u with p_draft = 1)\n"
        f"        accepted: output_token_ids[b, i] = t\n"
        f"    num_accepted[b] = a = the accepted drafts before the first rejection (k when none is rejected)\n"
        f"    w = target_probs[b, a] with w[draft_token_ids[b, a]] = 0   if a < k   (the recovered token)\n"
        f"        target_probs[b, k]                                     if a == k  (the bonus token)\n"
        f"    output_token_ids[b, a] = argmax_v (ln w[v] + gumbel_noise[b, v])   (ties: the lowest id)\n"
        f"    output_token_ids[b, a+1 ..] = -1\n\n"
        f"The draw is vLLM's exponential race (argmax_v w[v] / q[v], q = Exponential(1), one row per request) in its "
        f"Gumbel-max form, q = exp(-gumbel_noise), as in {v.probabilistic}; the bonus token, which vLLM samples in "
        f"its main sampler, comes from target_probs[b, k] with the same row, the same distribution.\n\n"
        f"Inputs as the bench draws them: target rows are peaked next-token distributions (power_law_probs) and "
        f"draft_token_ids uniform token ids, so most drafts are rejected at once (served greedy drafts are often the "
        f"target's argmax and accepted more often, which moves how often the bonus row is read, not the work per "
        f"request).\n\n"
        f"Numerics: float32 (the acceptance a float32 comparison; the scores in float32). A kernel may compute the "
        f"scores as ln w + g or as w / exp(-g) (vLLM's form): the two pick the same token unless two scores lie "
        f"within float32 rounding of each other, which continuous noise makes rare. {v.runs}")


def render(v: Greedy) -> dict:
    prob = json.loads((DATASET / "definitions" / "misc" / f"{v.probabilistic}.json").read_text(encoding="utf-8"))
    inputs = {k: copy.deepcopy(s) for k, s in prob["inputs"].items() if k != "draft_probs"}
    inputs["target_probs"]["description"] = ("The target model's distribution at each draft position and after the "
                                             "last draft (the bonus row), rows sum to 1.")
    return {
        "name": v.name, "description": description(v), "type": "misc",
        "tags": ["stage:decode", *v.tags, "speculative:verify", "draft_sample:greedy", "status:draft"],
        "axes": copy.deepcopy(prob["axes"]), "constraints": list(prob["constraints"]),
        "inputs": inputs, "outputs": copy.deepcopy(prob["outputs"]), "reference": REFERENCE}


def baseline(v: Greedy) -> dict:
    return {"name": f"{v.name}_torch", "definition": v.name, "author": "baseline",
            "description": "Every acceptance test at once, the accepted prefix by a cumulative product, one Gumbel-max "
                           "draw per request from the row at its stop position with the rejected draft removed; "
                           "float32.",
            "spec": {"language": "python", "target_hardware": ["cpu", "H100_SXM"], "entry_point": "main.py::run",
                     "destination_passing_style": False, "dependencies": ["torch"]},
            "sources": [{"path": "main.py", "content": BASELINE}]}


def _json(d: dict) -> str:
    return json.dumps(d, indent=2, ensure_ascii=False) + "\n"


def files() -> dict:
    """Every file the greedy samplers consist of: dataset-relative path -> text."""
    out = {}
    for v in VARIANTS:
        out[f"definitions/misc/{v.name}.json"] = _json(render(v))
        out[f"einsums/misc/{v.name}.yaml"] = EINSUM
        out[f"solutions/baseline/misc/{v.name}/{v.name}_torch.json"] = _json(baseline(v))
    return out


# --------------------------------------------------------------------------------------------------
# The check (the vocabulary shrunk: the mathematics is the same at any size, as the probabilistic sets do).
# --------------------------------------------------------------------------------------------------

SETS = [shrunk({"batch_size": 5, "num_speculative_tokens": 3, "num_verify_tokens": 4}, vocab_size=64),
        shrunk({"batch_size": 7, "num_speculative_tokens": 4, "num_verify_tokens": 5}, vocab_size=257),
        shrunk({"batch_size": 8, "num_speculative_tokens": 2, "num_verify_tokens": 3}, vocab_size=100)]


def greedy_inputs(ax, g, i):
    B, K, V = ax["batch_size"], ax["num_speculative_tokens"], ax["vocab_size"]
    target = peaked_rows(g, B * (K + 1), V).reshape(B, K + 1, V)
    # Greedy drafts: mostly the target's own argmax at that position (a draft that agrees with the target),
    # else a token drawn from the target row.
    top = target[:, :K].argmax(dim=-1)
    other = torch.multinomial(target[:, :K].reshape(B * K, V), 1, generator=g).reshape(B, K)
    ids = torch.where(torch.rand(B, K, generator=g) < 0.7, top, other)
    u = torch.rand(B, K, generator=g, dtype=torch.float64)
    # Request 0: its first draft, the argmax with mass 0.99, rejected (u above it): the recovered token must
    # not be that draft. Request 1: its first draft's probability exactly u (accepted: >=). The last request
    # accepts every draft (u = 0): the bonus row is read.
    t0 = int(ids[0, 0])
    target[0, 0] *= 0.01 / (1.0 - target[0, 0, t0]).clamp(min=1e-12)
    target[0, 0, t0] = 0.99
    u[0, 0] = 0.995
    t1 = int(ids[1, 0])
    target = target.float()
    u = u.float()
    u[1, 0] = target[1, 0, t1]
    u[-1] = 0.0
    gumbel = -torch.log(-torch.log(torch.rand(B, V, generator=g, dtype=torch.float64).clamp(1e-20, 1 - 1e-12)))
    return {"draft_token_ids": ids.to(torch.int32), "target_probs": target, "uniform_samples": u,
            "gumbel_noise": gumbel.float()}


def greedy_expected(ax, x):
    B, K = ax["batch_size"], ax["num_speculative_tokens"]
    ids = x["draft_token_ids"].long()
    t = x["target_probs"].double()
    p_t = t[:, :K].gather(2, ids[..., None])[..., 0]
    a = torch.cumprod((x["uniform_samples"].double() <= p_t).long(), dim=1).sum(dim=1)
    out = torch.full((B, K + 1), -1, dtype=torch.int64)
    q = torch.exp(-x["gumbel_noise"].double())  # vLLM's exponential noise row
    for b in range(B):
        n = int(a[b])
        out[b, :n] = ids[b, :n]
        keep = torch.ones_like(t[b, n])
        if n < K:
            keep[ids[b, n]] = 0.0  # the point-mass draft's residual: the target without the rejected token
        w = t[b, n] * keep
        out[b, n] = torch.argmax((w / w.sum()) / q[b])
    return {"output_token_ids": out, "num_accepted": a}


CASES = {v.name: Case(SETS, greedy_inputs, greedy_expected) for v in VARIANTS}


if __name__ == "__main__":
    for p in write_files(files(), DATASET):
        print(f"wrote {p.relative_to(DATASET.parent)}")
