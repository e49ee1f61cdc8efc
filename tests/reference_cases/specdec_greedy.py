"""The speculative sampler vLLM serves by default: greedy drafts, no draft probabilities
(greedy_draft_speculative_sampling_v<vocab>), at every vocabulary that has the probabilistic
chain_speculative_sampling_v<vocab>, one family in dataset/families/ (greedy_draft_speculative_sampling_v128256's reference, einsum
cascade and baseline, another vocabulary per sibling).

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

from dataclasses import dataclass
from pathlib import Path

import torch

from .common import Case, shrunk
from .specdec import peaked_rows

DATASET = Path(__file__).resolve().parents[2] / "dataset"


@dataclass(frozen=True)
class Greedy:
    model: str  # "Llama-3.1-8B"
    source: str  # config the vocabulary comes from
    vocab: int

    @property
    def name(self) -> str:
        return f"greedy_draft_speculative_sampling_v{self.vocab}"

    @property
    def probabilistic(self) -> str:
        return f"chain_speculative_sampling_v{self.vocab}"


VARIANTS = [
    Greedy("Llama-3.1-8B", "meta-llama/Llama-3.1-8B config.json", 128256),
    Greedy("DeepSeek-V3", "deepseek-ai/DeepSeek-V3 config.json", 129280),
    Greedy("GLM-4.5", "zai-org/GLM-4.5 config.json", 151552),
    Greedy("Qwen3-Next-80B-A3B", "Qwen/Qwen3-Next-80B-A3B-Instruct config.json", 151936),
]


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


