"""Model audit, defects 2 and 3: a model file that ``extends`` another is read as a path too, and
a variant carries its base's note and published totals only where they still describe it."""

from __future__ import annotations

from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError
from lightspeed.workload import ModelRegistry, builtin_model_files, load_model_file, load_models

SHIPPED_VARIANTS = [path for path in builtin_model_files() if "\nextends = " in path.read_text()]


def _variant(tmp_path: Path, body: str, name: str = "my-llama") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'schema_version = 1\nkind = "model"\nname = "{name}"\nextends = "llama-3-8b"\n'
        f'source = "mine"\n{body}\n[sources.mine]\ntitle = "my notes"\nurl = "https://example.com"\n'
    )
    return path


def test_the_shipped_variants_exist() -> None:
    # six, and Qwen3 4B 2507 and Kimi K2 0905 (their longer contexts)
    assert len(SHIPPED_VARIANTS) == 8


@pytest.mark.parametrize("path", SHIPPED_VARIANTS, ids=lambda path: path.stem)
def test_a_shipped_variant_file_reads_as_a_path_as_the_registry_reads_it(
    path: Path, registry: ModelRegistry
) -> None:
    entry = load_model_file(path)
    assert entry.spec == registry.get(entry.spec.name)
    assert entry.extends == registry.entry(entry.spec.name).extends


def test_a_variant_path_works_in_model_show_and_flops(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _variant(tmp_path, "[architecture]\nmax_seq_len = 32768\n")
    shown = run_cli("model", "show", "--config", str(path))
    assert shown.code == 0, shown.err
    assert "layers 32" in shown.out
    assert "context 32768" in shown.out
    counted = run_cli("flops", "--model", str(path), "--tokens", "1e12")
    assert counted.code == 0, counted.err


def test_a_variant_of_an_unknown_model_is_refused_naming_extends(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _variant(tmp_path, "").with_name("x.toml")
    path.write_text(_variant(tmp_path, "").read_text().replace('"llama-3-8b"', '"no-such-model"'))
    one_line_error(run_cli("model", "show", "--config", str(path)), "extends an unknown model", "extends")


def test_a_variant_of_a_user_model_resolves_against_the_given_registry(tmp_path: Path) -> None:
    base = _variant(tmp_path, "[architecture]\nmax_seq_len = 16384\n", name="my-base")
    child = tmp_path / "child" / "my-child.toml"
    child.parent.mkdir()
    child.write_text(
        base.read_text()
        .replace('name = "my-base"', 'name = "my-child"')
        .replace('extends = "llama-3-8b"', 'extends = "my-base"')
        .replace("16384", "20000")
    )
    with pytest.raises(DataFileError, match="extends an unknown model"):
        load_model_file(child)
    entry = load_model_file(child, load_models([base]))
    assert (entry.extends, entry.spec.max_seq_len, entry.spec.num_layers) == ("my-base", 20000, 32)


def test_a_variant_that_changes_the_shapes_drops_the_base_published_totals_and_note(
    tmp_path: Path, registry: ModelRegistry
) -> None:
    base = registry.entry("llama-3-8b")
    assert base.published is not None
    assert base.spec.note
    half = load_model_file(_variant(tmp_path, "[architecture]\nnum_layers = 16\n"))
    assert half.spec.num_layers == 16
    assert half.published is None  # a 16-layer Llama 3 8B was never published
    assert half.spec.note == ""


def test_a_longer_context_keeps_the_base_published_totals_not_its_note(
    tmp_path: Path, registry: ModelRegistry
) -> None:
    base = registry.entry("llama-3-8b")
    longer = load_model_file(_variant(tmp_path, "[architecture]\nmax_seq_len = 32768\n"))
    assert longer.published == base.published  # the same weights: Meta's 8.03B still counts them
    assert longer.spec.note == ""  # the base's note describes the 8K model


def test_a_variant_that_changes_no_shape_keeps_both_and_its_own_published_wins(tmp_path: Path) -> None:
    same = load_model_file(_variant(tmp_path, 'display_name = "Mine"\n'))
    base = load_models().entry("llama-3-8b")
    assert (same.published, same.spec.note) == (base.published, base.spec.note)
    own = load_model_file(
        _variant(
            tmp_path, '[architecture]\nnum_layers = 16\n[published]\ntotal_params = 4.54e9\nsource = "mine"\n'
        )
    )
    assert own.published is not None
    assert own.published.total_params == 4.54e9


def test_the_shipped_variants_keep_their_published_totals(registry: ModelRegistry) -> None:
    for name in ("llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b", "llama-3.1-405b"):
        entry = registry.entry(name)
        assert entry.published is not None, name
        assert entry.published == registry.entry(entry.extends).published, name


def test_a_variant_of_a_catalog_model_works_as_a_path_in_the_cli(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    """The CLI reads a variant file against the models of its --catalog, not only the shipped ones."""
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    _variant(catalog, "[architecture]\nmax_seq_len = 16384\n", name="my-base")
    child = tmp_path / "my-child.toml"
    child.write_text(
        (catalog / "my-base.toml")
        .read_text()
        .replace('name = "my-base"', 'name = "my-child"')
        .replace('extends = "llama-3-8b"', 'extends = "my-base"')
        .replace("16384", "20000")
    )
    shown = run_cli("--catalog", str(catalog), "model", "show", "--config", str(child))
    assert shown.code == 0, shown.err
    assert "context 20000" in shown.out
    counted = run_cli("--catalog", str(catalog), "flops", "--model", str(child), "--tokens", "1e12")
    assert counted.code == 0, counted.err
