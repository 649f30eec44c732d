"""Kinds of GPU events: computation, communication, memory, other.

The rules live in ``trace/data/kernel_kinds.toml`` (HTA's, so breakdowns agree
with HTA). Classification runs once per distinct name, never per event: a
trace of millions of kernels has a few thousand distinct names.

>>> classify_name("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "kernel")
'communication'
>>> classify_name("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy")
'memory'
>>> classify_name("ampere_sgemm_128x64_nn", "kernel")
'computation'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError

COMPUTATION: Final = 0
COMMUNICATION: Final = 1
MEMORY: Final = 2
OTHER: Final = 3
KIND_NAMES: Final[tuple[str, ...]] = ("computation", "communication", "memory", "other")

KINDS_FILE: Final = Path(__file__).resolve().parent / "data" / "kernel_kinds.toml"


@dataclass(frozen=True)
class _Rule:
    kind: int
    patterns: tuple[re.Pattern[str], ...]
    categories: frozenset[str]


@lru_cache(maxsize=1)
def _rules() -> tuple[_Rule, ...]:
    fields = Fields(str(KINDS_FILE), load_toml(KINDS_FILE))
    rules: list[_Rule] = []
    for entry in fields.array_of_tables("kind"):
        name = entry.string("name")
        if name not in KIND_NAMES:
            raise DataFileError(
                KINDS_FILE,
                "unknown kind",
                field="kind.name",
                value=name,
                fix="use one of " + ", ".join(KIND_NAMES),
            )
        try:
            patterns = tuple(re.compile(pattern) for pattern in entry.strings("patterns"))
        except re.error as error:
            raise DataFileError(
                KINDS_FILE, f"bad regular expression ({error})", field="kind.patterns"
            ) from None
        rules.append(_Rule(KIND_NAMES.index(name), patterns, frozenset(entry.strings("categories"))))
    return tuple(rules)


def classify_name(name: str, category: str) -> str:
    """The kind (``computation``, ``communication``, ``memory``, ``other``) of one GPU event."""
    return KIND_NAMES[_classify(name, category)]


def _classify(name: str, category: str) -> int:
    for rule in _rules():
        if category in rule.categories or any(pattern.search(name) for pattern in rule.patterns):
            return rule.kind
    return COMPUTATION


def classify_ids(
    name_ids: npt.NDArray[np.int32],
    category_ids: npt.NDArray[np.int32],
    names: Sequence[str],
    categories: Sequence[str],
) -> npt.NDArray[np.int8]:
    """Kind code of each event (see :data:`KIND_NAMES`), classifying each distinct pair once."""
    if name_ids.size == 0:
        return np.zeros(0, dtype=np.int8)
    width = max(len(categories), 1)
    pairs = name_ids.astype(np.int64)  # in place from here (fresh memory is slow to touch first)
    pairs *= width
    pairs += category_ids
    size = len(names) * width
    if size <= 4 * pairs.size + 65_536:  # a code for every possible pair, then one gather: no sort
        seen = np.zeros(size, dtype=bool)
        seen[pairs] = True
        present = np.flatnonzero(seen)
        table = np.zeros(size, dtype=np.int8)
        table[present] = _pair_codes(present, names, categories, width)
        gathered: npt.NDArray[np.int8] = table[pairs]
        return gathered
    unique, inverse = np.unique(pairs, return_inverse=True)  # far more names than events
    result: npt.NDArray[np.int8] = _pair_codes(unique, names, categories, width)[inverse.reshape(-1)]
    return result


def _pair_codes(
    pairs: npt.NDArray[np.int64], names: Sequence[str], categories: Sequence[str], width: int
) -> npt.NDArray[np.int8]:
    """Kind code of each distinct (name id * width + category id) pair."""
    return np.array(
        [_classify(names[pair // width], categories[pair % width]) for pair in pairs.tolist()], dtype=np.int8
    )
