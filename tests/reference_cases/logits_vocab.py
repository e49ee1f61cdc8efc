"""Logits processing per vocabulary: the grammar bitmask's independent check, and the penalties, min-p and
bitmask kernels of every recorded model's vocabulary, siblings of the Llama-3.1-8B (vocab 128256)
templates in dataset/families/.

The templates (logits_penalties_v128256 and min_p_logits_v128256, checked in full by serving_families.py, and
apply_token_bitmask_v128256, checked here) hold the mathematics; a sibling <kernel>_v<vocab> is its template with
another vocabulary constant and the text that says whose it is: the reference, the einsum cascade (written over
{{ vocab_size }}) and the baseline are the template's, byte for byte. tests/definitions/test_logits_vocab.py
proves nothing else differs; each sibling also gets the template's independent check at tiny
batches of its real vocabulary.

The grammar bitmask is xgrammar's apply_token_bitmask_inplace as vLLM and SGLang call it: bit j % 32 of word j // 32
of a row (least significant first) allows token j; rows in indices only. The independent formulation unpacks the
words another way: the int32 words as little-endian bytes, numpy's unpackbits(bitorder="little"), in float64.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .common import Case, shrunk
from .serving_families import min_p_expected, min_p_inputs, penalties_expected, penalties_inputs

DATASET = Path(__file__).resolve().parents[2] / "dataset"
# kernel -> (definition type, template name)
KERNELS = {"logits_penalties": ("elementwise", "logits_penalties_v128256"),
           "min_p_logits": ("reduction", "min_p_logits_v128256"),
           "apply_token_bitmask": ("elementwise", "apply_token_bitmask_v128256")}


@dataclass(frozen=True)
class Vocab:
    """One vocabulary of the recorded models and the config its size is read from."""

    size: int
    source: str  # the config the constant is read from


VOCABS = [
    Vocab(129280, "deepseek-ai/DeepSeek-V3 config.json"),
    Vocab(131072, "nvidia/NVIDIA-Nemotron-Nano-9B-v2 config.json"),
    Vocab(151552, "zai-org/GLM-4.5 config.json"),
    Vocab(151936, "Qwen/Qwen3-30B-A3B config.json, the same in the other Qwen3 configs"),
    Vocab(152064, "Qwen/Qwen2.5-7B config.json"),
    Vocab(163840, "moonshotai/Kimi-K2-Instruct config.json"),
    Vocab(200064, "MiniMaxAI/MiniMax-M2 config.json"),
    Vocab(201088, "openai/gpt-oss-120b config.json, the same in gpt-oss-20b's"),
    Vocab(202048, "meta-llama/Llama-4-Scout-17B-16E-Instruct config.json (text_config)"),
    Vocab(262208, "google/gemma-3-27b-it config.json (text_config; the transformers Gemma3TextConfig "
          "default the config leaves in place)"),
    Vocab(32768, "mistralai/Mistral-7B-Instruct-v0.3 config.json"),
]


def words(vocab: int) -> int:
    return -(-vocab // 32)


# --------------------------------------------------------------------------------------------------
# The grammar bitmask: numpy's little-endian unpackbits of the words' bytes, float64.
# --------------------------------------------------------------------------------------------------

def bitmask_inputs(ax, g, i):
    B, V, W, S = ax["batch_size"], ax["vocab_size"], ax["bitmask_size"], ax["num_structured"]
    logits = torch.randn(B, V, generator=g) * 4.0
    # Every bit pattern of an int32 word, the sign bit included; row 0 all allowed (-1) and, with more rows, the last
    # row nothing allowed but token 0.
    bitmask = torch.randint(-2**31, 2**31, (B, W), generator=g).to(torch.int32)
    bitmask[0] = -1
    if B > 1:
        bitmask[-1] = 0
        bitmask[-1, 0] = 1
    # The rows with a grammar, in no particular order; rows outside them keep patterns that would mask (never read).
    indices = torch.randperm(B, generator=g)[:S].to(torch.int32)
    return {"logits": logits, "bitmask": bitmask, "indices": indices}


def bitmask_expected(ax, x):
    assert sys.byteorder == "little"  # the words' bytes in memory order are their bytes from least significant
    V = ax["vocab_size"]
    words_ = np.ascontiguousarray(x["bitmask"].numpy())
    allowed = np.unpackbits(words_.view(np.uint8), axis=-1, bitorder="little")[:, :V].astype(bool)
    out = x["logits"].double().numpy().copy()
    for b in x["indices"].tolist():
        out[b] = np.where(allowed[b], out[b], -np.inf)
    return {"logits_out": torch.from_numpy(out)}


# Set 0 at the real vocabulary (one row, its mask all allowed: the row 0 rule); sets 1 and 2 shrink the vocabulary to
# end inside a word (1000 = 31 * 32 + 8, 77 = 2 * 32 + 13), and leave rows without a grammar.
BITMASK_SETS = [{"batch_size": 2, "num_structured": 2},
                shrunk({"batch_size": 5, "num_structured": 3}, vocab_size=1000, bitmask_size=32),
                shrunk({"batch_size": 7, "num_structured": 4}, vocab_size=77, bitmask_size=3)]

# The siblings' sets: the template's check at two small vocabularies (the reference reads the size from the tensors;
# 100 ends inside a bitmask word) and one row at the sibling's real vocabulary (set 2: the byte-for-byte test proves
# the rest is the template's).
def _tiny(kernel: str, v: Vocab) -> list:
    small = {"logits_penalties": {"max_prompt_len": 4, "max_output_len": 3}, "min_p_logits": {},
             "apply_token_bitmask": {"num_structured": 1}}[kernel]
    vocab = (lambda n: {"vocab_size": n, "bitmask_size": words(n)}) if kernel == "apply_token_bitmask" else \
        (lambda n: {"vocab_size": n})
    return [shrunk({"batch_size": 2, **small}, **vocab(64)), shrunk({"batch_size": 3, **small}, **vocab(100)),
            {"batch_size": 1, **small}]


MAKERS = {"logits_penalties": (penalties_inputs, penalties_expected), "min_p_logits": (min_p_inputs, min_p_expected),
          "apply_token_bitmask": (bitmask_inputs, bitmask_expected)}

CASES = {"apply_token_bitmask_v128256": Case(BITMASK_SETS, bitmask_inputs, bitmask_expected)}
CASES.update({f"{k}_v{v.size}": Case(_tiny(k, v), *MAKERS[k]) for k in KERNELS for v in VOCABS})


