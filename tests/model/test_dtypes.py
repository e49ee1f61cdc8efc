"""model/dtypes.py is the one owner of dtype facts: its table follows the schema's dtype enum, and every foreign
spelling the importers accept (formats/common.py's DTYPE_SPELLINGS is the same object) names a canonical dtype and
agrees with the table's torch and FlashInfer-Trace names."""

from __future__ import annotations

import torch

from generator.formats.common import DTYPE_SPELLINGS
from generator.model.dtypes import DTYPE, OTHER_SPELLINGS, DType
from generator.model.schemas import DTYPES


def spelling_problems(table: dict[str, DType], spellings: dict, enum: list[str]) -> list[str]:
    problems = []
    if list(table) != list(enum):
        problems.append(f"table {list(table)} is not the schema's enum {list(enum)}")
    for spelled, (canonical, _loss) in spellings.items():
        if spelled in enum:
            problems.append(f"{spelled} is canonical, not another spelling")
        if canonical not in enum:
            problems.append(f"{spelled} -> {canonical}, which the schema does not have")
    for d in table.values():
        for foreign in sorted({d.torch, d.flashinfer} - {None}):
            if foreign != d.name and spellings.get(foreign, (None,))[0] != d.name:
                problems.append(f"{foreign} (a name of {d.name}) does not read as {d.name}")
    return problems


def test_the_spellings_and_the_table_agree_with_the_schema():
    assert DTYPE_SPELLINGS is OTHER_SPELLINGS
    assert spelling_problems(dict(DTYPE), dict(OTHER_SPELLINGS), DTYPES) == []
    for d in DTYPE.values():  # the torch names are torch's
        assert d.torch is None or isinstance(getattr(torch, d.torch), torch.dtype), d


def test_a_spelling_out_of_step_fails():
    wrong = {**OTHER_SPELLINGS, "float8_e4m3fn": ("float8_e5m2", None)}  # the torch name read as the other fp8
    assert spelling_problems(dict(DTYPE), wrong, DTYPES) == ["float8_e4m3fn (a name of float8_e4m3) does not read "
                                                              "as float8_e4m3"]
    assert spelling_problems(dict(DTYPE), {**OTHER_SPELLINGS, "fp6": ("float6_e3m2", None)}, DTYPES) \
        == ["fp6 -> float6_e3m2, which the schema does not have"]
    assert spelling_problems(dict(DTYPE), dict(OTHER_SPELLINGS), [*DTYPES, "float6_e3m2"])  # a schema dtype, no row
