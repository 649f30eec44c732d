"""Serving-benchmark datasets a published row may name instead of its lengths
(``sol/serve/data/datasets.toml``): vLLM's ShareGPT sample and its sonnet defaults.

A row that names only the dataset (``ShareGPT, request rate 4``) is read at the dataset's mean
input and output tokens, said in its assumptions; lengths the row states win.

>>> dataset = find_benchmark_dataset("Llama 3 8B on ShareGPT V3, 500 prompts")
>>> dataset.name, dataset.mean_input_tokens, dataset.mean_output_tokens
('sharegpt', 202, 179)
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from lightspeed.datafile import Fields, load_toml, parse_sources
from lightspeed.records import Record


@dataclass(frozen=True)
class BenchmarkDataset(Record):
    """One dataset: its mean request lengths in tokens, the source of both (``source``: the
    full citation) and how an assumption line names it (``cited_as``)."""

    name: str
    display_name: str
    aliases: tuple[str, ...]
    mean_input_tokens: int
    mean_output_tokens: int
    source: str
    cited_as: str

    def note(self) -> str:
        """The assumption line of a row read at this dataset's means."""
        return (
            f"{self.display_name} without lengths: its mean request, {self.mean_input_tokens} input and "
            f"{self.mean_output_tokens} output tokens ({self.cited_as}; sol/serve/data/datasets.toml)"
        )


def _data_file() -> Path:
    return Path(str(resources.files("lightspeed.sol.serve") / "data" / "datasets.toml"))


@functools.lru_cache(maxsize=2)
def load_benchmark_datasets(path: Path | str | None = None) -> dict[str, BenchmarkDataset]:
    """Every dataset of the shipped data file (or ``path``), by name."""
    file = path or _data_file()
    fields = Fields(str(file), load_toml(file))
    fields.schema_version((1,))
    sources = parse_sources(fields)
    return {
        name: BenchmarkDataset(
            name=name,
            display_name=table.string("display_name"),
            aliases=table.strings("aliases"),
            mean_input_tokens=table.integer("mean_input_tokens", minimum=1),
            mean_output_tokens=table.integer("mean_output_tokens", minimum=1),
            source=sources[table.check_source("source", sources)].citation,
            cited_as=table.string("cited_as"),
        )
        for name, table in fields.tables("datasets").items()
    }


def find_benchmark_dataset(text: str) -> BenchmarkDataset | None:
    """The dataset whose name or an alias ``text`` mentions as a word, if any."""
    lowered = text.lower()
    for dataset in load_benchmark_datasets().values():
        for alias in (dataset.name, *dataset.aliases):
            # the name as a word, a version after it too (``ShareGPT V3``, ``sharegpt_v3``)
            if re.search(rf"(?<![\w-]){re.escape(alias)}(?:[\s_-]?v\d+)?(?![\w-])", lowered):
                return dataset
    return None


__all__ = ["BenchmarkDataset", "find_benchmark_dataset", "load_benchmark_datasets"]
