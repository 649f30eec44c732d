"""The error hierarchy.

Every error a user can cause derives from :class:`LightspeedError`. The CLI
catches that base class once, prints one line to stderr and exits with code 2;
anything else is a bug and keeps its traceback.

::

    LightspeedError
     ├── UserInputError            bad argument or value
     │    ├── UnknownNameError     a device, model or system not in the catalog
     │    └── InvalidPlanError     a parallel plan or deployment that cannot exist
     │         ├── PlanDoesNotFitError  a valid plan that needs more memory than a GPU has
     │         └── PlanMismatchError    a plan of another size than asked (GPUs, replicas)
     ├── DataFileError             a malformed file: names file, field, value, fix
     │    └── TraceError           a profiler trace that cannot be read
     ├── MissingExtraError         an optional dependency is not installed
     ├── UnsupportedError          the device or machine cannot do what was asked
     └── StoreError                the results store cannot be read or written
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Final


class LightspeedError(Exception):
    """Base class of every error a user can cause or fix.

    It crosses a process boundary (a Ray task's, a process pool's) as itself, with its message
    and fields, even where its ``__init__`` takes other arguments than the message.
    """

    def __reduce__(
        self,
    ) -> tuple[Callable[..., LightspeedError], tuple[type[LightspeedError], str, dict[str, object]]]:
        return _rebuilt, (type(self), str(self), dict(self.__dict__))


def _rebuilt(kind: type[LightspeedError], message: str, state: dict[str, object]) -> LightspeedError:
    """The error ``kind`` with ``message`` and the fields ``state`` (:meth:`LightspeedError.__reduce__`)."""
    error = kind.__new__(kind)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class UserInputError(LightspeedError, ValueError):
    """An argument or value is not allowed. The message says what is allowed."""


class UnknownNameError(UserInputError):
    """A name (device, model, system, ...) is not known; lists the closest names.

    >>> str(UnknownNameError("device", "h10", ["h100-sxm", "h200-sxm"], hint="see 'lightspeed hw list'"))
    "unknown device 'h10'; closest: h100-sxm (see 'lightspeed hw list')"
    """

    def __init__(self, kind: str, name: str, known: Iterable[str], hint: str | None = None) -> None:
        self.kind = kind
        self.name = name
        known_list = sorted(set(known))
        self.closest = closest_names(name, known_list) if name.strip() else []
        listing = ", ".join(self.closest) if self.closest else _first_names(known_list)
        label = "closest" if self.closest else "known"
        message = f"unknown {kind} {_shown_name(name)}; {label}: {listing}"
        if not name.strip():  # '' or ' ': say so rather than look it up
            message = f"the {kind} name is empty; name one of: {listing}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)


_LISTED_NAMES: Final = 8
# a name longer than this is shown by its start and length (no name is; a typed value can be
# megabytes); paths stay whole in messages below 400 characters
_SHOWN_NAME_CHARS: Final = 80


def _shown_name(name: str) -> str:
    """``name`` quoted as a message shows it; a long one by its start and its length.

    >>> _shown_name("h10"), _shown_name("x" * 300)
    ("'h10'", "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' (300 characters)")
    """
    if len(name) <= _SHOWN_NAME_CHARS:
        return repr(name)
    return f"{name[: _SHOWN_NAME_CHARS // 2] + '...'!r} ({len(name):,} characters)"


def _first_names(names: list[str]) -> str:
    """The first names of a sorted list, saying how many more there are (a cut list must not read as
    the whole): ``a, b, ... (10 in all)``; ``none yet`` for an empty one.

    >>> _first_names([f"n{index}" for index in range(10)])
    'n0, n1, n2, n3, n4, n5, n6, n7, ... (10 in all)'
    """
    if not names:
        return "none yet"
    shown = ", ".join(names[:_LISTED_NAMES])
    return shown if len(names) <= _LISTED_NAMES else f"{shown}, ... ({len(names)} in all)"


class InvalidPlanError(UserInputError):
    """A parallel plan or deployment that cannot exist; says why and what would."""


class PlanDoesNotFitError(InvalidPlanError):
    """A plan that needs more memory per GPU than is usable, with the nearest plan that fits.

    ``nearest_plan`` holds the settings of the closest fitting plan (names as in
    the engine's plan records, e.g. ``{"tp": 8, "pp": 2}``), or ``None`` when no
    plan on these GPUs fits; front ends turn it into their own syntax (the CLI
    into flags).

    >>> error = PlanDoesNotFitError("needs 93 GB per GPU, 80 GB usable", nearest_plan={"tp": 8, "pp": 4},
    ...                        nearest_memory_bytes=7.0e10)
    >>> str(error)
    'needs 93 GB per GPU, 80 GB usable; a plan that fits: tp=8 pp=4'
    """

    def __init__(
        self,
        problem: str,
        *,
        nearest_plan: Mapping[str, int | float | str | bool] | None,
        nearest_memory_bytes: float | None = None,
        no_fit_hint: str = "no plan on these GPUs fits: use more GPUs or a smaller model",
    ) -> None:
        self.problem = problem
        self.nearest_plan = dict(nearest_plan) if nearest_plan is not None else None
        self.nearest_memory_bytes = nearest_memory_bytes
        self.no_fit_hint = no_fit_hint
        super().__init__(self.describe(format_setting))

    def describe(self, render: Callable[[str, int | float | str | bool], str]) -> str:
        """The message with each setting of the nearest plan written by ``render(name, value)``."""
        return _with_plan(self.problem, self.nearest_plan, "a plan that fits", self.no_fit_hint, render)


class PlanMismatchError(InvalidPlanError):
    """A plan whose size differs from the request (its GPUs or replicas), with the nearest one that matches.

    ``nearest_plan`` holds the settings to change (e.g. ``{"dp": 2}``), or ``None``
    when no such change makes the sizes agree; front ends write them in their syntax.

    >>> str(PlanMismatchError("tp x dp = 4 GPUs, not the 2 requested", nearest_plan={"dp": 2}))
    'tp x dp = 4 GPUs, not the 2 requested; the plan that matches: dp=2'
    """

    def __init__(
        self,
        problem: str,
        *,
        nearest_plan: Mapping[str, int | float | str | bool] | None,
        no_match_hint: str = "choose degrees whose product is the GPU count",
    ) -> None:
        self.problem = problem
        self.nearest_plan = dict(nearest_plan) if nearest_plan is not None else None
        self.no_match_hint = no_match_hint
        super().__init__(self.describe(format_setting))

    def describe(self, render: Callable[[str, int | float | str | bool], str]) -> str:
        """The message with each setting of the matching plan written by ``render(name, value)``."""
        return _with_plan(
            self.problem, self.nearest_plan, "the plan that matches", self.no_match_hint, render
        )


def _with_plan(
    problem: str,
    plan: Mapping[str, int | float | str | bool] | None,
    lead: str,
    hint: str,
    render: Callable[[str, int | float | str | bool], str],
) -> str:
    """``problem; lead: <settings>``, or ``problem; hint`` when there is no plan to name."""
    if plan is None:
        return f"{problem}; {hint}"
    return f"{problem}; {lead}: {' '.join(render(name, value) for name, value in plan.items())}"


def format_setting(name: str, value: int | float | str | bool) -> str:
    """``name=value``: how a library message writes one plan setting."""
    return f"{name}={value}"


class DataFileError(LightspeedError, ValueError):
    """A data file (TOML, JSON, TSV, log) is malformed.

    The message names the file, the field or line, the value and the fix.
    """

    def __init__(
        self,
        path: object,
        problem: str,
        *,
        field: str | None = None,
        value: object = None,
        fix: str | None = None,
        line: int | None = None,
    ) -> None:
        self.path = str(path)
        self.field = field
        self.line = line
        where = self.path
        if line is not None:
            where += f":{line}"
        parts = [f"{where}: {problem}"]
        if field is not None:
            parts.append(f"field {field!r}")
        if value is not None:
            parts.append(f"value {_shown(value)}")
        message = "; ".join(parts)
        if fix:
            message += f"; fix: {fix}"
        super().__init__(message)


# the most characters of a bad value a message quotes (a cell or a field can hold megabytes)
_SHOWN_CHARS = 80


def _shown(value: object) -> str:
    """``repr(value)``, or its first characters and its length when long (an integer too long for
    ``repr``, over 4,300 digits, by its size); a boolean as the data files (TOML, JSON) write it.

    >>> _shown("64"), _shown("9" * 500)[-20:], _shown(10**5000), _shown(True)
    ("'64'", '... (502 characters)', 'a whole number of about 5,000 digits', 'true')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > 4 * _SHOWN_CHARS:
        return f"a whole number of about {round(value.bit_length() * 0.30103):,} digits"
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[: _SHOWN_CHARS // 2]}... ({len(text):,} characters)"


class TraceError(DataFileError):
    """A profiler trace is truncated, invalid or lacks what an analysis needs."""


class MissingExtraError(LightspeedError, ImportError):
    """An optional dependency is missing, or installed but cannot be imported (``problem``, the
    library's first line); names the extra that provides it.

    >>> str(MissingExtraError("wandb", "wandb", "the W&B sink", problem="protobuf too old"))
    "the W&B sink needs the 'wandb' package, which is installed but cannot be imported (protobuf too old); \
reinstall it with pip install --upgrade 'lightspeed[wandb]'"
    """

    def __init__(self, module: str, extra: str, purpose: str, *, problem: str | None = None) -> None:
        if problem is None:
            message = (
                f"{purpose} needs the '{module}' package; install it with pip install 'lightspeed[{extra}]'"
            )
        else:
            message = (
                f"{purpose} needs the '{module}' package, which is installed but cannot be imported "
                f"({problem}); reinstall it with pip install --upgrade '{_extra(extra)}'"
            )
        super().__init__(message)
        self.module = module
        self.extra = extra
        self.problem = problem


def _extra(extra: str) -> str:
    return f"lightspeed[{extra}]"


class UnsupportedError(LightspeedError):
    """The device or machine cannot do what was asked (no GPU, no fp8, ...)."""


class StoreError(LightspeedError):
    """The results store cannot be opened, read or written (full disk, corrupt file)."""


def closest_names(name: str, known: Iterable[str], limit: int = 5) -> list[str]:
    """Known names closest to ``name``, best first (case-insensitive)."""
    by_lower: dict[str, str] = {}
    for item in known:
        by_lower.setdefault(item.lower(), item)
    wanted = name.lower()
    matches = difflib.get_close_matches(wanted, list(by_lower), n=limit, cutoff=0.5)
    # a name the query begins (``h10`` of ``h100-sxm``) first, shortest first: the query is its start
    starts = sorted((key for key in by_lower if wanted and key.startswith(wanted)), key=len)
    prefix_hits = [key for key in by_lower if wanted and (wanted in key or key in wanted)]
    ordered = list(dict.fromkeys([*starts[:2], *matches, *sorted(prefix_hits, key=len)]))[:limit]
    return [by_lower[key] for key in ordered]


# how many spellings are ranked before each record keeps its best (five are shown)
_RANKED_SPELLINGS: Final = 40


def closest_once(name: str, owners: Mapping[str, str]) -> list[str]:
    """The spellings (names and aliases, keys of ``owners``) closest to ``name``, best first, each
    record (``owners``' value) once by its best ranked spelling, so that they keep their order when
    ranked again (:class:`UnknownNameError` ranks what it is given); ``[]`` when none is close.

    >>> closest_once("llama-70b", {"llama2-70b": "llama-2-70b", "llama-2-70b": "llama-2-70b"})
    ['llama2-70b']
    """
    lowered = {spelling.lower(): record for spelling, record in owners.items()}
    best: dict[str, str] = {}  # record -> its best ranked spelling, in rank order
    for found in closest_names(name, list(owners), limit=_RANKED_SPELLINGS):
        best.setdefault(lowered[found.lower()], found)
    return list(best.values())


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message (a library's error can run to pages), else its type.

    >>> first_line(OSError("connection refused\\n  at socket.connect"))
    'connection refused'
    >>> first_line(TimeoutError())
    'TimeoutError'
    """
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def require_extra(module: str, extra: str, purpose: str, *, package: str | None = None) -> ModuleType:
    """``module`` imported, or :class:`MissingExtraError` naming ``extra`` (``purpose`` says what needs it).

    Finding the module is not enough: one that is installed but fails to import (a wheel built
    for another CUDA or NumPy, a missing shared library) raises anything, and is reported the same
    way, with the library's first line. ``package`` is the name pip installs (default: the module's
    top-level package).

    >>> require_extra("json", "none", "reading JSON").__name__
    'json'
    """
    label = package or module.split(".", maxsplit=1)[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is not None and (module == error.name or module.startswith(error.name + ".")):
            raise MissingExtraError(label, extra, purpose) from None
        raise MissingExtraError(label, extra, purpose, problem=first_line(error)) from None
    except Exception as error:  # a broken install raises anything: ImportError, OSError, AttributeError
        raise MissingExtraError(label, extra, purpose, problem=first_line(error)) from None
