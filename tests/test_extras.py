"""Extras that add up: 'all' is every optional feature, './dev test' installs every extra, every
extra the docs name exists and a test exercises it, and a broken or missing extra is one error
naming it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from lightspeed.errors import MissingExtraError
from lightspeed.extras import EXTRAS, extra_of, import_extra, installed_extras

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
OPTIONAL = PYPROJECT["project"]["optional-dependencies"]
FEATURES = sorted(set(OPTIONAL) - {"all", "dev"})  # 'dev' holds the test tools, 'all' the union
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")


def _name(requirement: str) -> tuple[str, tuple[str, ...]]:
    """(normalized distribution name, its [extras]) of a requirement string."""
    match = _NAME.match(requirement)
    assert match is not None, requirement
    extras = tuple(part.strip() for part in (match.group(2) or "").split(",") if part.strip())
    return re.sub(r"[-_.]+", "-", match.group(1)).lower(), extras


def _distributions(extras: list[str]) -> set[str]:
    """Every distribution the extras install, the project's own extras expanded."""
    found: set[str] = set()
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in OPTIONAL[extra]:
            name, inner = _name(requirement)
            if name == "lightspeed":
                pending.extend(inner)
            else:
                found.add(name)
    return found


def test_the_extras_table_is_pyproject() -> None:
    assert sorted(EXTRAS) == FEATURES
    for extra in FEATURES:
        assert {dist for dist, _ in EXTRAS[extra]} == _distributions([extra]), extra


def test_all_installs_every_optional_feature() -> None:
    wanted = _distributions(FEATURES)
    assert _distributions(["all"]) == wanted
    assert wanted - _distributions(["bench", "monitor"])  # 'all' once left postgres, mlflow, ... out


def test_dev_test_installs_every_extra() -> None:
    """'./dev test' (CI) installs every extra, so each one's tests run there instead of skipping."""
    script = (REPO / "dev").read_text(encoding="utf-8")
    test_branch = script.split("    test)", 1)[1].split(";;", 1)[0]
    (installed,) = re.findall(r'setup "([^"]+)"', test_branch)
    assert _distributions(installed.split(",")) >= _distributions([*FEATURES, "dev"])


def test_every_extra_the_docs_name_exists() -> None:
    named: dict[str, str] = {}
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for match in re.finditer(r"lightspeed\[([a-z0-9_,-]+)\]", path.read_text(encoding="utf-8")):
            for extra in match.group(1).split(","):
                named.setdefault(extra, path.name)
    unknown = {extra: where for extra, where in named.items() if extra not in OPTIONAL}
    assert not unknown, f"docs name extras that do not exist: {unknown}"
    assert set(FEATURES) <= set(named), f"extras no doc names: {set(FEATURES) - set(named)}"


def test_every_extra_is_exercised_by_a_test() -> None:
    """A test imports a module of each extra (CI installs them all, so none of these skip)."""
    sources = "\n".join(path.read_text(encoding="utf-8") for path in sorted((REPO / "tests").rglob("*.py")))
    for extra, packages in EXTRAS.items():
        modules = [module for _, module in packages]
        pattern = (
            rf"(?:^\s*(?:import|from)\s+(?:{'|'.join(modules)})\b|importorskip\(\"(?:{'|'.join(modules)})\")"
        )
        assert re.search(pattern, sources, flags=re.MULTILINE), f"no test imports the {extra} extra"


def test_installed_extras_reads_versions_without_importing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # an import would fail; metadata does not import
    by_name = {extra.name: extra for extra in installed_extras()}
    assert set(by_name) == set(EXTRAS)
    assert all(isinstance(version, str) for version in by_name["bench"].versions.values())  # CI has torch


def test_a_missing_dependency_of_an_extra_is_not_called_the_extra_itself(tmp_path: Path) -> None:
    """The extra's package is installed but one of its own dependencies is not: say so (reinstall)."""
    (tmp_path / "fake_extra_module.py").write_text("import surely_missing_dependency_xyz\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(MissingExtraError, match=r"installed but cannot be imported.*surely_missing"):
            import_extra("fake_extra_module", extra="bench", purpose="a test")
        with pytest.raises(MissingExtraError, match=r"needs the 'absent_xyz' package; install it"):
            import_extra("absent_xyz.sub", extra="bench", purpose="a test")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fake_extra_module", None)


def test_extra_of_names_the_distribution() -> None:
    assert extra_of("prometheus_client.core") == ("monitor", "prometheus-client")
    assert extra_of("numpy") is None


def _break(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, package: str) -> None:
    """``package`` installed but failing to import, as a library built against another protobuf does
    (the real one, already imported by other tests, is put back afterwards)."""
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text("raise TypeError('Descriptors cannot be created directly')\n")
    for name in [name for name in sys.modules if name == package or name.startswith(f"{package}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_broken_ray_names_the_ray_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from lightspeed.trace.ray_engine import import_ray

    _break(monkeypatch, tmp_path, "ray")
    with pytest.raises(MissingExtraError, match=r"Descriptors cannot.*'lightspeed\[ray\]'"):
        import_ray()


def test_a_broken_pyarrow_turns_the_trace_cache_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cache is optional: a pyarrow that cannot be imported turns it off with a note naming the
    extra, as a missing one does, instead of failing the first trace write."""
    from lightspeed.trace import cache as cache_module

    _break(monkeypatch, tmp_path, "pyarrow")
    cache_module.pyarrow_available.cache_clear()
    try:
        assert cache_module.TraceCache.default() is None
    finally:
        cache_module.pyarrow_available.cache_clear()


def test_a_broken_inflater_is_passed_over_or_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """python-isal installed but broken: the automatic choice takes the next inflater; asking for it
    by name is one error naming the extra."""
    from lightspeed.errors import UserInputError
    from lightspeed.trace.io.source import inflater

    _break(monkeypatch, tmp_path, "isal")
    inflater.cache_clear()
    try:
        assert inflater().name in ("zlib-ng", "zlib")
        with pytest.raises(UserInputError, match=r"Descriptors cannot.*'lightspeed\[trace\]'"):
            inflater("isal")
    finally:
        inflater.cache_clear()
