"""A definition's `model:` tags and the models' calling records say the same thing.

`model:<name>` on a definition means: the calling record models/<name>.json lists it (one step of
that model calls it). A kernel the model only calls in another serving configuration than its
record describes (page size 1 instead of 16, a ragged prefill, a sampler variant) carries
`model-alt:<name>` instead, so the Models page's per-step estimate and the tags never disagree.
Both directions are checked: a definition with model tags that a record calls must name it, and a model: tag
must name a record. A model with a recipe but no calling record (its workloads exist, its step does not) is
model-alt: too.
"""

from __future__ import annotations

from typing import Iterator

from ..einsum.problems import did_you_mean
from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.diagnostics import make_pointer as ptr
from ..model.layout import CANONICAL
from .common import error


def check_model_tags(ds: Dataset) -> Iterator[Diagnostic]:
    called = {name: {k.id for k in m.kernels} for name, m in ds.models.items()}
    misnamed = {d.name for d in ds.misnamed_definitions.values()}  # the records name its file: said once there
    for d in ds.definitions.values():
        if d.name in misnamed:
            continue
        tags = list(d.data.get("tags") or ())
        for i, tag in enumerate(tags):
            if not tag.startswith("model:"):
                continue
            model = tag.split(":", 1)[1]
            if model not in called and called:  # a dataset with no calling record at all (a FlashInfer-Trace
                # folder read in place) uses model: tags as flashinfer-bench does, for the model's name only
                yield error(d, ptr("tags", i), f"tagged {tag} but the dataset has no calling record "
                            f"{CANONICAL.model_file(model)}: model:<name> means that record calls {d.name}",
                            f"add {CANONICAL.model_file(model)} (the kernels one step of {model} calls), tag it "
                            f"model-alt:{model} (a model whose record is not in the dataset, or that calls it only in "
                            f"another configuration), or fix the name{did_you_mean(model, sorted(called))}")
            elif model in called and d.name not in called[model]:
                yield error(d, ptr("tags", i), f"tagged {tag} but models/{model}.json does not call {d.name}",
                            f"add {{\"id\": \"{d.name}\", \"count\": N}} to models/{model}.json's kernels, or, "
                            f"if the model calls it only in another configuration, tag it model-alt:{model}")
    for name, m in ds.models.items():
        for i, k in enumerate(m.kernels):
            d = ds.definitions.get(k.id)
            # A definition without any model tag (an imported dataset that does not use them) is left alone.
            tagged = d is not None and any(t.startswith(("model:", "model-alt:")) for t in d.data.get("tags") or ())
            if tagged and name not in d.models:
                yield error(m, ptr("kernels", i, "id"), f"calls {k.id}, whose definition has no model:{name} tag",
                            f"add \"model:{name}\" to the tags of {d.source.path}")

