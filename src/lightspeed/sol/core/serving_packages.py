"""Servers shipped inside another product (``[serving_package.*]`` in ``sol/data/stacks.toml``).

A published row may name the product instead of the server it ships: NVIDIA's NIM benchmarking
pages give a NIM release (``Version: 1.8.0``, ``nvcr.io/nim/meta/llama-3.1-8b-instruct:1.8.0``),
never the TensorRT-LLM release or backend inside it. A package maps its releases to the serving
profile they ship, and a row dated before its release notes say otherwise (``undated_until``) to
the profile of that era.

>>> stack, note = package_serving_stack("NVIDIA NIM 1.8.0 benchmarking guide", 2025)
>>> stack.name, note
('trtllm-2024', 'serving stack trtllm-2024: the row names NVIDIA NIM for LLMs 1.8, which ships it')
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError
from lightspeed.records import Record
from lightspeed.sol.core.serving_stacks import Release, ServingStack, load_serving_stacks, release_range
from lightspeed.sol.core.sharding import stacks_file

# words that may stand between a package's name and its release: ``NIM 1.8.0``, ``NIM for LLMs
# 1.3``, ``NIM LLM container v1.8``, ``NIM release 2.0.1``
_BETWEEN: Final = r"(?:\s+(?:for|llms?|containers?|microservices?|release|version))*"
# what stands between a name and its release: nothing, a colon (an image tag), a parenthesis
_BEFORE_RELEASE: Final = r"\s*[:(]?\s*v?(\d+)\.(\d+)"
# a release a source labels as such, in a row that names the package and no server of its own
_LABELLED: Final = re.compile(r"\b(?:version|release)\s*:?\s*v?(\d+)\.(\d+)")


@dataclass(frozen=True)
class ServingPackage(Record):
    """A product that ships a server: the words that name it, its container images' prefix and its
    documentation's (a path whose next part is the release it documents), the
    profile each range of its releases ships, and the profile of a row without a release dated
    up to ``undated_until``."""

    name: str
    display_name: str
    names: tuple[str, ...]
    image: str
    docs: str
    releases: tuple[tuple[Release, Release, str], ...]
    undated_until: int
    undated_profile: str
    source: str

    def named_in(self, lowered: str) -> bool:
        """Whether a lower-case text names the package (a word of ``names``, an image, or a page of
        its documentation)."""
        prefixes = [prefix for prefix in (self.image, self.docs) if prefix]
        return any(prefix in lowered for prefix in prefixes) or any(
            re.search(rf"(?<![\w/.-]){re.escape(word)}(?![\w-])", lowered) for word in self.names
        )

    def release_in(self, lowered: str) -> Release | None:
        """The package's release a lower-case text gives: a documentation page's release
        (``docs.nvidia.com/nim/large-language-models/1.8.0/``), an image tag (``nvcr.io/nim/...:1.8.0``),
        the name followed by its release (``nim 1.8.0``, ``nim (v1.8.0)``, ``nim-llm:1.8.0``), else a
        labelled one (``version: 1.8.0``)."""
        patterns = [rf"(?<![\w/.-]){re.escape(word)}{_BETWEEN}{_BEFORE_RELEASE}" for word in self.names]
        if self.image:
            patterns.insert(0, rf"{re.escape(self.image)}[\w./-]*:v?(\d+)\.(\d+)")
        if self.docs:  # the documentation of one release: ``.../large-language-models/1.8.0/``
            patterns.insert(0, rf"{re.escape(self.docs)}v?(\d+)\.(\d+)")
        for pattern in (*patterns, _LABELLED.pattern):
            match = re.search(pattern, lowered)
            if match:
                return int(match.group(1)), int(match.group(2))
        return None

    def release_text(self, release: Release) -> str:
        """A release as the package writes it (``1.8``, ``24.05``: calendar releases zero-padded)."""
        major, minor = release
        return f"{major}.{minor:02d}" if major >= 20 else f"{major}.{minor}"

    def profile_for(self, release: Release | None, year: int) -> str | None:
        """The serving profile the package's ``release`` ships (``None``: none listed), or for a
        row without one, the profile of its era when ``year`` is not after ``undated_until``."""
        if release is None:
            return self.undated_profile if year <= self.undated_until else None
        return next((profile for first, last, profile in self.releases if first <= release <= last), None)


def _releases(table: Fields, profiles: frozenset[str]) -> tuple[tuple[Release, Release, str], ...]:
    """``releases = [["1.0", "1.14", "trtllm-2024"], ...]``: first and last release, the profile."""
    entries = table.data.get("releases", [])
    field = f"{table.prefix}releases"
    result = []
    for entry in entries if isinstance(entries, list) else [entries]:
        if not (isinstance(entry, list) and len(entry) == 3 and all(isinstance(item, str) for item in entry)):
            expected = 'expected ["first major.minor", "last major.minor", "profile"]'
            raise DataFileError(table.path, expected, field=field, value=entry)
        first, last = release_range(entry[:2], table.path, field)
        if entry[2] not in profiles:
            raise DataFileError(
                table.path, "a release range must lead to a serving profile", field=field, value=entry
            )
        result.append((first, last, entry[2]))
    return tuple(result)


_KEYS: Final = frozenset(
    {"display_name", "names", "image", "docs", "releases", "undated_until", "undated_profile", "source"}
)


def _parse(name: str, table: Fields, profiles: frozenset[str]) -> ServingPackage:
    unknown = table.unknown_keys(set(_KEYS))
    if unknown:
        raise DataFileError(
            table.path,
            "unknown field",
            field=f"{table.prefix}{unknown[0]}",
            fix=f"use one of: {', '.join(sorted(_KEYS))}",
        )
    undated = table.name("undated_profile")
    if undated not in profiles:
        raise DataFileError(
            table.path, "names no serving profile", field=f"{table.prefix}undated_profile", value=undated
        )
    return ServingPackage(
        name=name,
        display_name=table.string("display_name"),
        names=tuple(word.lower() for word in table.strings("names")),
        image=table.string("image", "").lower(),
        docs=table.string("docs", "").lower(),
        releases=_releases(table, profiles),
        undated_until=table.integer("undated_until", minimum=1990),
        undated_profile=undated,
        source=table.string("source"),
    )


@functools.lru_cache(maxsize=4)
def load_serving_packages(path: Path | None = None) -> tuple[ServingPackage, ...]:
    """Every ``[serving_package.*]`` of the stacks file."""
    file = path or stacks_file()
    profiles = frozenset(load_serving_stacks(file))
    fields = Fields(str(file), load_toml(file))
    return tuple(_parse(name, table, profiles) for name, table in fields.tables("serving_package").items())


def _names_another_server(lowered: str, stack: ServingStack, stacks: Iterable[ServingStack]) -> bool:
    """Whether a lower-case text names a server other than ``stack``'s."""
    return any(
        word in lowered for other in stacks for word in other.frameworks if word not in stack.frameworks
    )


def package_serving_stack(text: str, year: int) -> tuple[ServingStack, str] | None:
    """(profile, why) of a row whose ``text`` names a package that ships a server (see the module
    docs), or ``None`` when it names none, one whose release (or year) no range lists, or a server
    that release does not ship (the row's own server then decides)."""
    lowered = text.lower()
    for package in load_serving_packages():
        if not package.named_in(lowered):
            continue
        release = package.release_in(lowered)
        profile = package.profile_for(release, year)
        if profile is None:
            continue
        stacks = load_serving_stacks()
        stack = stacks[profile]
        if _names_another_server(lowered, stack, stacks.values()):
            continue  # the row names a server this release does not ship (NIM's vLLM profiles)
        if release is None:
            why = f"no release of it given, {year} (up to {package.undated_until} it shipped this)"
            return stack, f"serving stack {profile}: the row names {package.display_name}, {why}"
        named = f"{package.display_name} {package.release_text(release)}"
        return stack, f"serving stack {profile}: the row names {named}, which ships it"
    return None


__all__ = ["ServingPackage", "load_serving_packages", "package_serving_stack"]
