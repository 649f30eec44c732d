"""Which serving stack and release a published inference row ran, as its source writes it.

A server named with its release (``SGLang v0.3.0``, ``vllm==0.8.5``, ``TensorRT-LLM 0.17.0``,
NGC's ``tensorrt-llm/release:0.21.0``) dates the row and picks the serving profile standing for
that release (:func:`row_serving_stack`); a product that ships a server (NVIDIA NIM, Triton's
TensorRT-LLM container) runs what its release ships; a row naming no server takes the vendor's
default, and so does a row naming a server with no profile (LMDeploy, TGI; a name a label gives,
``framework: SuperServe 3.1``), its note saying which server it named (:func:`unprofiled_server`).
The overlap scheduler's flags (``--async-scheduling``, ``--disable-overlap-schedule``)
override the profile's default (:func:`stated_overlap`). Used by
:mod:`lightspeed.sol.validation.infer_rows`.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from lightspeed.errors import UnsupportedError, closest_names
from lightspeed.sol.core.serving_choice import serving_stack_for, unprofiled_servers
from lightspeed.sol.core.serving_packages import package_serving_stack
from lightspeed.sol.core.serving_stacks import ServingStack, load_serving_stacks
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.sol.validation.readings import RowError

_TRT_VERSION = re.compile(r"(?:release/|\bv)0\.(\d+)")
# ``generated using version 0.17``: a version said in words, read where the source names TensorRT-LLM
_TRT_VERSION_WORD = re.compile(r"\bversion\s+0\.(\d+)")
# a TensorRT-LLM row run on the PyTorch backend (``PyTorch backend``, ``--backend pytorch``), which
# 0.17-0.21 offered beside TensorRT engines: its release dates it but does not pick the engine profile
_PYTORCH_BACKEND = re.compile(r"pytorch backend|backend[\s=]+pytorch")
# a server's name with its release right after it (``SGLang v0.3.0``, ``vllm==0.8.5``,
# ``rocm/vllm:..._vllm_0.10.2_...``, ``vllm/vllm-openai:v0.8.5``, ``TensorRT-LLM 0.17.0``,
# ``trtllm==0.14.0``, ``TensorRT LLM 1.0``, NGC's ``tensorrt-llm/release:0.21.0``): the release is
# that server's, never TensorRT-LLM's unless it is TensorRT-LLM, and of the servers a row names (a
# page comparing two) the first one written with its release is the one the row ran
_NAMED_RELEASE = re.compile(
    r"(?<![a-z])(?P<server>tensorrt[-_ ]?llm|trt[-_]?llm|vllm(?:-openai)?|sglang)[\s_=:/-]*"
    r"(?:(?:version|release)[\s_=:/-]*)?v?(?P<major>\d)\.(?P<minor>\d+)"
)


# A server the source names by a label (``framework: SuperServe 3.1``, ``serving engine=foo``,
# ``inference server: bar``): the name, up to a separator or a flag, whatever it is (not a unit,
# ``Server: tokens/s``)
_LABELLED_SERVER: Final = re.compile(
    r"\b(?:(?:serving|inference)[\s_-]+)?(?:framework|server|engine)\s*[:=]\s*"
    r"(?P<name>[a-z][\w.+-]*(?![\w.+/-])(?:\s+v?\d[\w.+-]*)?)",
    re.IGNORECASE,
)
# a release after a name (``SuperServe 3.1``, ``foo v2``): not part of the name compared
_TRAILING_RELEASE: Final = re.compile(r"\s+v?\d[\w.+-]*$")


def unprofiled_server(text: str) -> str:
    """Why a server the source ``text`` names has no serving profile (``''`` where it names none):
    one lightspeed knows (``[unprofiled_servers]`` in ``sol/data/stacks.toml``), or a name a label
    gives it that no profile and no known server has, with the closest known names
    (:func:`~lightspeed.errors.closest_names`).
    ``''`` too where the text names a server with a profile (that profile is the row's).

    >>> unprofiled_server("InternLM/lmdeploy docs, LMDeploy v0.1.0a1 TurboMind")
    'the row names LMDeploy, which has no serving profile'
    >>> unprofiled_server("my bench (framework: SuperServe 3.1)").split(" (")[0]
    "the row names the server 'SuperServe 3.1', which lightspeed does not know"
    >>> unprofiled_server("a vendor blog"), unprofiled_server("server: python -m sglang.launch_server")
    ('', '')
    """
    lowered = text.lower()
    stacks = load_serving_stacks().values()
    if any(word in lowered for stack in stacks for word in stack.frameworks):
        return ""
    known = next((name for name, words in unprofiled_servers() if words.search(lowered)), None)
    if known is not None:
        return f"the row names {known}, which has no serving profile"
    labelled = _LABELLED_SERVER.search(text)
    if labelled is None:
        return ""
    name = labelled.group("name").strip(" .,")
    profiled = sorted({stack.frameworks[0] for stack in stacks if stack.frameworks})
    closest = closest_names(
        _TRAILING_RELEASE.sub("", name), [*profiled, *(server for server, _ in unprofiled_servers())]
    )
    listing = (
        f"closest: {', '.join(closest)}" if closest else f"servers with a profile: {', '.join(profiled)}"
    )
    return f"the row names the server {name!r}, which lightspeed does not know ({listing})"


# Server flags that turn the one-step-ahead scheduler on or off (vLLM's --async-scheduling and
# --no-async-scheduling, async_scheduling in its config; SGLang's --enable-overlap-schedule, opt-in
# before 0.3.6, and --disable-overlap-schedule; TensorRT-LLM's disable_overlap_scheduler)
_OVERLAP_ON: Final = re.compile(
    r"(?<![\w-])--(?:async-scheduling|enable-overlap-schedule)(?![\w-])"
    r"|\basync_scheduling\s*[=:]\s*true\b|\bdisable_overlap_scheduler\s*[=:]\s*false\b",
    re.IGNORECASE,
)
_OVERLAP_OFF: Final = re.compile(
    r"(?<![\w-])--(?:no-async-scheduling|disable-overlap-schedule)(?![\w-])"
    r"|\basync_scheduling\s*[=:]\s*false\b|\bdisable_overlap_scheduler\s*[=:]\s*true\b",
    re.IGNORECASE,
)


def stated_overlap(row: PublishedRow, serving: ServingStack) -> tuple[bool | None, str]:
    """(whether the row's server formed each iteration while the GPU ran the one before, note) as
    its flags state it (``--async-scheduling``, ``--disable-overlap-schedule``,
    ``disable_overlap_scheduler: true``), else ``(None, "")``: the profile's default. A row stating
    both is refused."""
    text = row.described()
    on, off = _OVERLAP_ON.search(text), _OVERLAP_OFF.search(text)
    if on and off:
        raise RowError(
            f"the row turns the overlap scheduler both on ({on.group(0)}) and off ({off.group(0)}); "
            "keep the flag the run used"
        )
    stated = on or off
    if stated is None:
        return None, ""
    if bool(on) == serving.overlap_scheduler:
        return None, f"{stated.group(0)}: as {serving.name} schedules by default"
    verb = "forms each iteration while the GPU runs the one before" if on else "schedules between GPU steps"
    default = "between GPU steps" if on else "ahead"
    return bool(on), f"{stated.group(0)}: the server {verb} ({serving.name} schedules {default} by default)"


class _Release(NamedTuple):
    """The first release a source writes beside a server's name: the server as the profiles'
    ``frameworks`` name it, and the release."""

    server: str | None = None
    version: tuple[int, int] | None = None


def _named_release(lowered: str) -> _Release:
    match = _NAMED_RELEASE.search(lowered)
    if match is None:
        return _Release()
    name = match.group("server")
    server = "vllm" if name.startswith("vllm") else name if name == "sglang" else "tensorrt-llm"
    return _Release(server, (int(match.group("major")), int(match.group("minor"))))


def _tensorrt_release(source: str, named: _Release, *, other_server: bool = False) -> tuple[int, int] | None:
    """The TensorRT-LLM release a source gives: beside the name; else, where no other server's
    release is written, as a branch (``release/0.5.0``), a bare ``v0.17``, or in words in a source
    naming TensorRT-LLM (``generated using version 0.17``); a bare release in a source naming
    ``other_server`` (one with no profile, ``LMDeploy v0.6``) and not TensorRT-LLM is that server's."""
    if named.server is not None:
        return named.version if named.server == "tensorrt-llm" else None
    lowered = source.lower()
    if other_server and "tensorrt" not in lowered:
        return None
    version = _TRT_VERSION.search(source)
    if version is None and "tensorrt" in lowered:
        version = _TRT_VERSION_WORD.search(lowered)
    return None if version is None else (0, int(version.group(1)))


def row_serving_stack(
    row: PublishedRow, year: int, vendor: str | None = None, year_note: str = ""
) -> tuple[ServingStack, str]:
    """The serving profile of a row on ``vendor``'s accelerators; a TensorRT-LLM version dates it
    (0.5-0.7: 2023, to 0.16: 2024) and picks the profile standing for that release where one does
    (0.5-0.6 and 0.7 differ in decode attention; 0.8-0.21 ran TensorRT engines, unless the row says
    it ran the PyTorch backend), as a vLLM version does (0.4-0.7: the V0 engine, 2024; from 0.8
    the V1 engine; from 0.14, 2026, with async scheduling) and an SGLang one (0.1-0.3: no overlap
    scheduler); a row naming a product that ships a server (NVIDIA NIM, Triton's TensorRT-LLM
    container) and no release of a server, nor a server the product does not ship, runs what the
    product's release ships
    (:func:`~lightspeed.sol.core.serving_packages.package_serving_stack`); a row naming no
    server takes the vendor's default
    (:func:`~lightspeed.sol.core.serving_stacks.default_serving_stack`). A profile chosen by ``year``
    when no version dates the row says where that year came from (``year_note``, e.g. "no year in
    the source: 2020 for Ampere")."""
    source = row.text("source")
    text = " ".join((source, row.text("metric")))
    unprofiled = unprofiled_server(text)
    named = _named_release(source.lower())
    if named.server is None:  # a package's release dates the server it ships (no other named)
        packaged = package_serving_stack(source, year)
        if packaged is not None and (vendor is None or vendor in packaged[0].vendors):
            return packaged
    release = None
    if trt := _tensorrt_release(source, named, other_server=bool(unprofiled)):
        major, minor = trt
        year = 2025 if major or minor > 16 else 2024 if minor > 7 else 2023
        release = None if major else trt
        if major:  # from 1.0 the PyTorch backend is the default, which no release range picks
            year_note = f"release {major}.{minor}, the PyTorch backend by default"
        if not major and _PYTORCH_BACKEND.search(source.lower()):
            release, year_note = None, f"release 0.{minor} on the PyTorch backend"
    elif named.server == "vllm" and named.version is not None:
        major, minor = named.version
        year = 2024 if not major and minor <= 7 else 2025 if not major and minor <= 13 else 2026
        release = None if major else named.version
        if major:
            year_note = f"release {major}.{minor}"
    elif named.server == "sglang" and named.version is not None:
        release = named.version  # 0.1-0.3: scheduling between GPU steps (sglang-2024)
    try:
        stack, note = serving_stack_for(
            text, year, release, vendor, server=named.server, unprofiled=unprofiled
        )
    except UnsupportedError as error:
        raise RowError(str(error)) from error
    dated_by_year = release is None and note.endswith(str(year))
    return stack, f"{note} ({year_note})" if dated_by_year and year_note else note
