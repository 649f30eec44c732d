"""Known models: TOML data files (``kind = "model"``) and the registry that looks them up.

One file per model under ``workload/data/models``::

    schema_version = 1
    kind = "model"
    name = "llama-3-8b"
    display_name = "Llama 3 8B"
    aliases = ["llama-3.1-8b"]
    source = "hf-config"            # the [sources] entry the dims come from

    [architecture]                  # TransformerSpec fields
    num_layers = 32
    hidden_size = 4096
    ...
    norms_per_layer = 4             # optional: Gemma 2/3's four norms a layer (default 2, 1 a hybrid block)
    [attention]                     # AttentionSpec fields (qk_norm = true: a norm on each query and key head)
    [moe]                           # MoESpec fields (MoE models only)
    [mamba]                         # MambaSpec fields (hybrids with a block_pattern only)
    [gated_delta_net]               # GatedDeltaNetSpec fields (hybrids with a block_pattern only)
    [published]                     # totals the authors print, for comparison
    total_params = 8.03e9
    source = "model-card"
    [release]                       # a checkpoint not in bf16 (DeepSeek-V3: fp8)
    weights = "fp8"
    source = "weights-doc"
    [sources.hf-config]
    title = "..."
    url = "..."

Users add or replace models with their own files (``lightspeed --catalog
PATH``); the same paths may hold hardware records, which are skipped here.

The model twin of :mod:`lightspeed.catalog.registry` (the same lookup for hardware).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Final

from lightspeed.datafile import (
    Fields,
    expand_paths,
    load_toml,
    merge_tables,
    normalize_name,
)
from lightspeed.errors import DataFileError, UnknownNameError, UserInputError, closest_once
from lightspeed.paths import package_data
from lightspeed.records import JsonObject, Record
from lightspeed.workload.model_file import (
    SCHEMA_VERSION,
    ModelEntry,
    check_keys,
    parse_model,
    parse_references,
)
from lightspeed.workload.names import name_readings, reduce_name, split_active, without_formats
from lightspeed.workload.spec import TransformerSpec

MODEL_KIND: Final = "model"
UNSUPPORTED_KIND: Final = "unsupported-models"
# Records of these kinds may share --catalog paths with models; the hardware catalog reads them.
HARDWARE_KINDS: Final = frozenset({"link", "cpu", "accelerator", "system", "cluster", "system-power"})

# The tables whose values shape a model; a variant that changes one is a different model.
_SHAPE_TABLES: Final = ("architecture", "attention", "moe", "mamba", "gated_delta_net")
# Keys that change a variant's context, not its weights: the base's published totals still hold.
_CONTEXT_KEYS: Final = frozenset({"max_seq_len", "original_max_seq_len"})

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class UnsupportedModel(Record):
    """A model lightspeed knows by name but refuses to predict: part of its architecture
    (``feature``) is not modelled, for the ``reason`` given (``workload/data/unsupported_models.toml``)."""

    name: str
    display_name: str
    spellings: tuple[str, ...]
    feature: str
    reason: str
    source: str

    def refusal(self, name: str) -> str:
        """One line saying why ``name`` (which means this model) cannot be predicted."""
        return (
            f"model {name!r} is {self.display_name}, whose {self.feature} lightspeed does not model: "
            f"{self.reason} (see 'lightspeed model list' for the models it has)"
        )


class UnsupportedModelError(UserInputError):
    """A model name that means a model whose architecture lightspeed does not model."""

    def __init__(self, name: str, model: UnsupportedModel) -> None:
        self.name = name
        self.model = model
        super().__init__(model.refusal(name))


@dataclass(frozen=True)
class ModelRegistry:
    """Every known model, looked up by exact name or alias (case-insensitive); names of
    models with an architecture lightspeed does not model (``unsupported``) are refused.

    >>> registry = load_models()
    >>> registry.get("meta-llama/Llama-3.3-70B-Instruct").name
    'llama-3.3-70b'
    """

    entries: Mapping[str, ModelEntry]
    unsupported: Mapping[str, UnsupportedModel] = field(default_factory=dict)
    # each model's TOML tables with its base's merged in (what a file that ``extends`` it extends)
    tables: Mapping[str, JsonObject] = field(default_factory=dict, repr=False, compare=False)

    def names(self) -> list[str]:
        """Canonical names, sorted."""
        return sorted(self.entries)

    def _find(self, key: str) -> ModelEntry | None:
        found = self.entries.get(key)
        if found is None:
            found = next((entry for entry in self.entries.values() if key in entry.spec.aliases), None)
        if found is None:  # a model's own display name (``MPT-7B (MosaicML, released checkpoint)``)
            found = self._display_names.get(key)
        return found

    @cached_property
    def _display_names(self) -> dict[str, ModelEntry]:
        """Each model's display name, normalized -> the model (a name two models display: neither)."""
        owners: dict[str, list[ModelEntry]] = {}
        for entry in self.entries.values():
            owners.setdefault(normalize_name(entry.spec.display_name), []).append(entry)
        return {key: found[0] for key, found in owners.items() if len(found) == 1}

    @cached_property
    def _reduced(self) -> dict[tuple[str, tuple[str, ...]], set[str]]:
        """(reduced base, version tags) of every name and alias -> the models spelled so."""
        index: dict[tuple[str, tuple[str, ...]], set[str]] = {}
        for entry in self.entries.values():
            for spelling in (entry.spec.name, *entry.spec.aliases):
                reduced = reduce_name(spelling)
                index.setdefault((reduced.base, reduced.versions), set()).add(entry.spec.name)
        return index

    @cached_property
    def _without_active(self) -> dict[tuple[str, tuple[str, ...]], set[tuple[str, str | None]]]:
        """(reduced base without an MoE's active-parameter word, version tags) of every name and
        alias -> (model, the active word its spelling has or ``None``)."""
        index: dict[tuple[str, tuple[str, ...]], set[tuple[str, str | None]]] = {}
        for entry in self.entries.values():
            for spelling in (entry.spec.name, *entry.spec.aliases):
                reduced = reduce_name(spelling)
                base, active = split_active(reduced.base)
                index.setdefault((base, reduced.versions), set()).add((entry.spec.name, active))
        return index

    @cached_property
    def _unsupported_index(self) -> dict[tuple[str, tuple[str, ...]], UnsupportedModel]:
        """(reduced base, version tags) of every unsupported model's spellings -> that model."""
        index: dict[tuple[str, tuple[str, ...]], UnsupportedModel] = {}
        for model in self.unsupported.values():
            for spelling in (model.name, *model.spellings):
                reduced = reduce_name(spelling)
                index[(reduced.base, reduced.versions)] = model
        return index

    @cached_property
    def _unsupported_without_active(self) -> dict[tuple[str, tuple[str, ...]], UnsupportedModel]:
        """:attr:`_unsupported_index` with the active-parameter word taken off each base."""
        return {
            (split_active(base)[0], versions): model
            for (base, versions), model in self._unsupported_index.items()
        }

    def _read(self, name: str) -> list[str] | UnsupportedModel | None:
        """What one reading of a name means: the models it may mean, an unsupported model, or
        ``None`` (nothing). Tried in order: an exact name, alias or display name (also without
        organization or fine-tune suffix); the models a spelling of which reduces to the same; an
        unsupported model so spelled; then both again with an MoE's active-parameter word taken
        off (``Qwen3-235B`` = ``Qwen3-235B-A22B``; two different active words never meet)."""
        exact = next((hit for key in _lookup_keys(name) if (hit := self._find(key)) is not None), None)
        if exact is not None:
            return [exact.spec.name]
        reduced = reduce_name(name)
        key = (reduced.base, reduced.versions)
        if key in self._reduced:
            return self._bases_first(self._reduced[key], name)
        if key in self._unsupported_index:
            return self._unsupported_index[key]
        base, active = split_active(reduced.base)
        bare = (base, reduced.versions)
        found = {
            model
            for model, written in self._without_active.get(bare, ())
            if None in (active, written) or active == written
        }
        if found:
            return self._bases_first(found, name)
        return self._unsupported_without_active.get(bare)

    def _bases_first(self, models: set[str], name: str) -> list[str]:
        """``models`` without the variants whose base is among them: a name that does not say
        which variant (``Qwen3 235B``) means the model the variants extend, not a tie; a variant's
        own name under a format tag (``Qwen/Qwen3-235B-A22B-Instruct-2507-FP8``) means it."""
        keys = _lookup_keys(without_formats(name))
        named = {hit.spec.name for key in keys if (hit := self._find(key)) is not None} & models
        if len(named) == 1 and self.entries[min(named)].extends:
            return sorted(named)
        return sorted(model for model in models if self.entries[model].extends not in models)

    def _meaning(self, name: str) -> list[str] | UnsupportedModel | None:
        """What the first reading of ``name`` that means anything means
        (:func:`~lightspeed.workload.names.name_readings`)."""
        return next(
            (meant for reading in name_readings(name) if (meant := self._read(reading)) is not None), None
        )

    def matches(self, name: str) -> list[str]:
        """The models ``name`` may mean: one exact name, alias or display name (also without
        organization or fine-tune suffix), else every model one of whose spellings reduces to the
        same base and version tags (:func:`~lightspeed.workload.names.reduce_name`), else the same
        with an MoE's active-parameter word taken off (``Qwen3 235B``, ``DeepSeek-V3 671B-A37B``);
        sorted. A name that means none is read again as
        :func:`~lightspeed.workload.names.name_readings` says (the text before a note in
        parentheses, a bare size with the architecture its parenthesis names, the base a known
        fine-tune family is named after); a reading that means an unsupported model ends the search.

        >>> load_models().matches("meta-llama/Llama-2-70b-chat-hf")
        ['llama-2-70b']
        >>> load_models().matches("Qwen3 235B (MoE, 22B active)")
        ['qwen3-235b-a22b']
        >>> load_models().matches("Hermes-3-Llama-3.1-405B-FP8")
        ['llama-3.1-405b']
        """
        meant = self._meaning(name)
        return meant if isinstance(meant, list) else []

    def unsupported_model(self, name: str) -> UnsupportedModel | None:
        """The unsupported model ``name`` means, when it names no known model; else ``None``.

        >>> load_models().unsupported_model("nvidia/Llama-3_3-Nemotron-Super-49B-v1").name
        'llama-3.3-nemotron-super-49b'
        """
        meant = self._meaning(name)
        return meant if isinstance(meant, UnsupportedModel) else None

    def find(self, name: str) -> ModelEntry | None:
        """The entry :meth:`entry` would give, or ``None`` (no model, more than one, or a model
        lightspeed does not model: :meth:`unsupported_model` says which and why)."""
        found = self.matches(name)
        return self.entries[found[0]] if len(found) == 1 else None

    def entry(self, name: str) -> ModelEntry:
        """The entry called ``name``: its canonical name or an alias, else the same name without
        a Hugging Face organization (``meta-llama/``) or a fine-tune suffix (``-Instruct``,
        ``-chat``, ``-it``, ``-base``, ``-hf``), else the first of ``A/B`` (``DeepSeek-V3/R1``),
        else the one model whose name reduces to the same (tuning, format, date and MLPerf tags
        taken off, see :mod:`lightspeed.workload.names`). A name two models reduce to is refused
        with both named; a name of an unsupported model (:meth:`unsupported_model`) with the part
        of its architecture lightspeed does not model (:class:`UnsupportedModelError`)."""
        found = self.matches(name)
        unsupported = None if found else self.unsupported_model(name)
        if unsupported is not None:
            raise UnsupportedModelError(name, unsupported)
        if len(found) > 1:
            raise UnknownNameError(
                "model",
                name,
                found,
                hint=f"it may mean any of {', '.join(found)} once its tags are taken off; name one",
            )
        if not found:
            raise UnknownNameError("model", name, self.closest(name), hint="see 'lightspeed model list'")
        return self.entries[found[0]]

    def closest(self, name: str) -> list[str]:
        """The names and aliases closest to ``name``, best first, each model once by its best
        ranked spelling (``llama-70b`` suggests ``llama2-70b`` and not again ``llama-2-70b``, the
        same model), so that they keep their order when ranked again; every model's name when none
        is close."""
        owners = {
            spelling: entry.spec.name
            for entry in self.entries.values()
            for spelling in (entry.spec.name, *entry.spec.aliases)
        }
        return closest_once(name, owners) or list(self.entries)

    def get(self, name: str) -> TransformerSpec:
        """The architecture of the model called ``name``."""
        return self.entry(name).spec


_TUNE_SUFFIXES: Final = ("-instruct", "-chat", "-it", "-base", "-hf", "-pt")


def _lookup_keys(name: str) -> list[str]:
    """The keys tried for ``name``, most literal first.

    >>> _lookup_keys("meta-llama/Llama-3.3-70B-Instruct")[-1]
    'llama-3.3-70b'
    """
    key = normalize_name(name)
    keys = [key]
    if "/" in key:
        head, tail = key.split("/", 1)
        keys += [tail.rsplit("/", 1)[-1], head]
    for candidate in list(keys):
        for suffix in _TUNE_SUFFIXES:
            if candidate.endswith(suffix):
                keys.append(candidate.removesuffix(suffix))
    return list(dict.fromkeys(keys))


def builtin_model_files() -> list[Path]:
    """Every model file shipped in ``lightspeed/workload/data/models`` (sorted)."""
    folder = package_data("workload", "data", "models")
    return sorted(folder.glob("*.toml"))


def load_models(extra_paths: Iterable[Path] = ()) -> ModelRegistry:
    """The shipped models plus user files (which add models or replace them by name).

    Hardware records in ``extra_paths`` are skipped (the catalog reads them).

    >>> "deepseek-v3" in load_models().names()
    True
    """
    entries: dict[str, ModelEntry] = {}
    raw: dict[str, dict[str, Any]] = {}
    # Shipped files first, whole: a shipped variant extends the shipped model even where a user
    # file replaces that model by name.
    for paths in (builtin_model_files(), expand_paths(extra_paths)):
        _add_models([(path, load_toml(path, what="model TOML file")) for path in paths], entries, raw)
    _check_unique_aliases(entries)
    return ModelRegistry(entries=entries, unsupported=unsupported_models(), tables=raw)


@cache
def unsupported_models() -> dict[str, UnsupportedModel]:
    """The models lightspeed refuses by name (``workload/data/unsupported_models.toml``).

    >>> unsupported_models()["nemotron-3-ultra"].feature
    'block pattern, widths and expert counts'
    """
    path = package_data("workload", "data", "unsupported_models.toml")
    fields = Fields(str(path), load_toml(path, what="unsupported models file"))
    fields.schema_version({SCHEMA_VERSION})
    sources = parse_references(fields)
    models: dict[str, UnsupportedModel] = {}
    for name, table in fields.tables("unsupported").items():
        check_keys(table, {"display_name", "spellings", "feature", "reason", "source"}, "unsupported")
        models[name] = UnsupportedModel(
            name=normalize_name(name),
            display_name=table.string("display_name", name),
            spellings=tuple(normalize_name(spelling) for spelling in table.strings("spellings")),
            feature=table.string("feature"),
            reason=table.string("reason"),
            source=sources[table.check_source("source", sources)].citation,
        )
    return models


def _add_models(
    files: list[tuple[Path, dict[str, Any]]], entries: dict[str, ModelEntry], raw: dict[str, dict[str, Any]]
) -> None:
    """Parse the model records of ``files`` into ``entries`` (their merged tables into ``raw``);
    a variant waits for the model it extends, wherever its file sorts."""
    pending = [(path, data) for path, data in files if _is_model(path, data)]
    while pending:
        # a variant whose base is parsed earlier in this same pass is parsed in it too, once
        waiting = []
        for path, data in pending:
            if not _base_known(data, raw):
                waiting.append((path, data))
                continue
            entry, merged = _parse_extended(path, data, raw)
            if entry.spec.name in entries:
                LOG.info("models: %s replaces model %r", path, entry.spec.name)
            entries[entry.spec.name] = entry
            raw[entry.spec.name] = merged
        if len(waiting) == len(pending):
            path, data = waiting[0]
            raise DataFileError(
                path,
                "extends an unknown model",
                field="extends",
                value=data.get("extends"),
                fix="name a model that is defined (lightspeed model list) and not a variant of this one",
            )
        pending = waiting


def _parse_extended(
    path: Path, data: dict[str, Any], known: Mapping[str, Mapping[str, Any]]
) -> tuple[ModelEntry, dict[str, Any]]:
    """The entry of the file ``data`` (a variant laid over the model it ``extends``, which
    ``known`` holds) and its merged tables."""
    base = normalize_name(str(data.get("extends", "")))
    merged = _extended(data, known)
    return replace(parse_model(path, merged), extends=base), merged


def _base_known(data: Mapping[str, Any], known: Mapping[str, Any]) -> bool:
    base_name = data.get("extends")
    return base_name is None or normalize_name(str(base_name)) in known


def _extended(data: dict[str, Any], known: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``data`` laid over the model it ``extends`` (a variant: Llama 3.1 8B is Llama 3 8B's
    weights with a 128K context). The variant names itself; the base's aliases stay the base's.
    The base's ``note`` describes the base: a variant that changes any shape or context value keeps
    it only by writing its own. The base's ``[published]`` totals count the base's weights: a
    variant that changes any value beside its context (``max_seq_len``, ``original_max_seq_len``)
    has them only by writing its own (a 16-layer Llama 3 8B was never published)."""
    base_name = data.get("extends")
    if base_name is None:
        return data
    base = dict(known[normalize_name(str(base_name))])
    changed = _changed_shape_keys(data, base)
    if changed:
        base.pop("note", None)
    if changed - _CONTEXT_KEYS:
        base.pop("published", None)
    merged = merge_tables(base, {key: value for key, value in data.items() if key != "extends"})
    merged["aliases"] = list(data.get("aliases", []))
    merged["display_name"] = data.get("display_name", data.get("name", ""))
    return merged


def _changed_shape_keys(data: Mapping[str, Any], base: Mapping[str, Any]) -> set[str]:
    """The keys of ``data``'s shape tables (:data:`_SHAPE_TABLES`) whose values differ from
    ``base``'s (a table the base lacks changes every key it has)."""
    changed: set[str] = set()
    for table in _SHAPE_TABLES:
        given, before = data.get(table), base.get(table)
        if not isinstance(given, Mapping):
            continue
        before = before if isinstance(before, Mapping) else {}
        changed |= {key for key, value in given.items() if key not in before or before[key] != value}
    return changed


def _is_model(path: Path, data: Mapping[str, Any]) -> bool:
    kind = Fields(str(path), data).string("kind")
    if kind == MODEL_KIND:
        return True
    if kind in HARDWARE_KINDS:
        return False
    raise DataFileError(
        path,
        "unknown kind",
        field="kind",
        value=kind,
        fix=f'write kind = "model" for a model (hardware: {", ".join(sorted(HARDWARE_KINDS))})',
    )


def load_model_file(path: Path, known: ModelRegistry | None = None) -> ModelEntry:
    """One model TOML file (``kind = "model"``) read on its own; a variant (``extends = NAME``) is
    laid over the model ``known`` (default: the shipped models) has by that name or alias."""
    data = load_toml(path, what="model TOML file")
    kind = Fields(str(path), data).string("kind")
    if kind != MODEL_KIND:
        raise DataFileError(path, "not a model file", field="kind", value=kind, fix='write kind = "model"')
    if "extends" not in data:
        return parse_model(path, data)
    registry = known if known is not None else load_models()
    base = registry.find(str(data["extends"])) if isinstance(data["extends"], str) else None
    if base is None or base.spec.name not in registry.tables:
        raise DataFileError(
            path,
            "extends an unknown model",
            field="extends",
            value=data["extends"],
            fix="name a model that is defined (lightspeed model list), or pass the base's file too "
            "with --catalog",
        )
    return _parse_extended(path, {**data, "extends": base.spec.name}, registry.tables)[0]


def _check_unique_aliases(entries: Mapping[str, ModelEntry]) -> None:
    owner: dict[str, str] = {}
    for entry in entries.values():
        for alias in (entry.spec.name, *entry.spec.aliases):
            previous = owner.setdefault(alias, entry.spec.name)
            if previous != entry.spec.name:
                raise DataFileError(
                    entry.path,
                    f"alias {alias!r} is already used by model {previous}",
                    field="aliases",
                    value=alias,
                    fix="remove the alias from one of the two files",
                )
