"""Opening the files a command reads: never created, never special, always bounded.

Every reader of a user's file goes through this module (``tests/fuzz`` runs
each command against the special files below), so that whatever path a user
passes, the answer is the file's content or one clear line:

- a missing path is refused naming it (and, where the caller knows, how to
  create it); a reader never creates what it reads;
- a folder, a FIFO (named pipe), a device (``/dev/zero``) or a socket is
  refused before it is opened for reading (opening a FIFO would wait for a
  writer; reading ``/dev/zero`` would never end), naming what was expected and
  what was found;
- an empty file is refused where emptiness cannot be an answer;
- sizes are bounded before and while reading (a file that grows is still
  bounded), lines are bounded in length (:func:`bounded_lines`);
- a UTF-8 byte-order mark (Excel, Notepad) is accepted and dropped.

Memory stays within the caller's ``max_bytes`` plus a chunk, whatever the input.

>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "table.tsv"
>>> _ = path.write_bytes(b"\\xef\\xbb\\xbfid\\tkind\\n")
>>> read_text(path, what="published-results table")
'id\\tkind\\n'
>>> try:
...     read_bounded(Path("/dev/zero"), what="published-results table")
... except DataFileError as error:
...     print(error)
/dev/zero: found a character device where a published-results table was expected; fix: pass a regular file
"""

from __future__ import annotations

import errno
import math
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final

from lightspeed.errors import DataFileError, UserInputError

DEFAULT_MAX_BYTES: Final = 16 * 2**20
MAX_LINE_BYTES: Final = 1 << 20
CHUNK_BYTES: Final = 1 << 20
UTF8_BOM: Final = b"\xef\xbb\xbf"

_SPECIAL_KINDS: Final = (
    (stat.S_ISDIR, "a folder", "pass a file inside it, not the folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)", "save what the pipe carries to a file and pass that file"),
    (stat.S_ISCHR, "a character device", "pass a regular file"),
    (stat.S_ISBLK, "a block device", "pass a regular file"),
    (stat.S_ISSOCK, "a socket", "pass a regular file"),
)


# errno values of a path the system refuses by its name alone, whatever is (or is not) there
_NAME_PROBLEMS: Final = {
    errno.ENAMETOOLONG: "name too long: a path component is at most 255 bytes (the whole path 4,096)",
    errno.ELOOP: "too many levels of symbolic links (a link that points back at itself?)",
}


def name_problem(error: OSError) -> str | None:
    """What is wrong with a path's name when the system refused it by its name alone (too long,
    a loop of links); ``None`` for any other error (missing, no permission).

    >>> name_problem(OSError(errno.ENAMETOOLONG, "File name too long"))
    'name too long: a path component is at most 255 bytes (the whole path 4,096)'
    """
    return _NAME_PROBLEMS.get(error.errno) if error.errno is not None else None


def unusable_path(path: object, error: OSError, *, fix: str = "shorten it") -> UserInputError | None:
    """The one-line error for ``path`` when the system refused its name (:func:`name_problem`),
    the path cut short; ``None`` for any other error."""
    problem = name_problem(error)
    if problem is None:
        return None
    return UserInputError(f"{excerpt(str(path))}: {problem}; fix: {fix}")


def exists(path: Path) -> bool:
    """Whether something (even a broken link) is at ``path``: an error naming the path, not a
    traceback, when the system refuses the name itself (:func:`name_problem`).

    >>> exists(Path("/")), exists(Path("/no/such/thing"))
    (True, False)
    """
    try:
        os.lstat(path)
    except OSError as error:
        refusal = unusable_path(path, error)
        if refusal is not None:
            raise refusal from None
        return False
    return True


def with_article(what: str) -> str:
    """``an expert-load file``, ``a sample file``: a noun phrase with its indefinite article.

    >>> with_article("expert-load file"), with_article("sample file")
    ('an expert-load file', 'a sample file')
    """
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def kind_of(mode: int) -> tuple[str, str] | None:
    """What a ``st_mode`` is when it is not a regular file (a folder, a FIFO, a device, a socket),
    with how to fix it; ``None`` for a regular file."""
    for test, kind, fix in _SPECIAL_KINDS:
        if test(mode):
            return kind, fix
    return None


def check_input(
    path: Path,
    *,
    what: str = "file",
    fix: str = "",
    folder_ok: bool = False,
    error: type[DataFileError] = DataFileError,
) -> os.stat_result:
    """The ``stat`` of an input that exists and is a regular file (or a folder, with ``folder_ok``).

    Raises :class:`DataFileError` naming the path, what was expected and what
    was found; ``fix`` says how to create a missing one (default: check the path).
    ``error`` is the class raised (a reader's own subclass, such as ``TraceError``).
    Nothing is opened or created.
    """
    expected = with_article(what)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise error(path, f"no such file (expected {expected})", fix=fix or "check the path") from None
    except NotADirectoryError:
        raise error(
            path, f"a part of this path is not a folder (expected {expected})", fix="check the path"
        ) from None
    except OSError as problem:
        if name_problem(problem) is not None:
            raise error(path, f"{name_problem(problem)} (expected {expected})", fix="shorten it") from None
        raise error(
            path,
            f"cannot read {expected} here ({problem.strerror or problem})",
            fix="check the path and permissions",
        ) from None
    special = kind_of(info.st_mode)
    if special is not None and not (folder_ok and stat.S_ISDIR(info.st_mode)):
        kind, special_fix = special
        raise error(path, f"found {kind} where {expected} was expected", fix=special_fix)
    return info


def open_input(
    path: Path, *, what: str = "file", fix: str = "", error: type[DataFileError] = DataFileError
) -> BinaryIO:
    """``path`` opened for reading in binary, after :func:`check_input`.

    The file is opened without blocking and checked again through its handle,
    so that a FIFO put in its place after the check is refused, not waited on.
    """
    check_input(path, what=what, fix=fix, error=error)
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    )
    try:
        descriptor = os.open(path, flags)
    except OSError as problem:
        raise error(
            path,
            f"cannot open {with_article(what)} ({problem.strerror or problem})",
            fix="check the path and permissions",
        ) from None
    special = kind_of(os.fstat(descriptor).st_mode)
    if special is not None:
        os.close(descriptor)
        raise error(path, f"found {special[0]} where {with_article(what)} was expected", fix=special[1])
    if hasattr(os, "set_blocking"):
        os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb")


def read_bounded(
    path: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    what: str = "data file",
    fix: str = "",
    error: type[DataFileError] = DataFileError,
) -> bytes:
    """The bytes of ``path`` (a regular file), refusing one over ``max_bytes`` before and while reading.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "x.json"
    >>> _ = path.write_text("[1]")
    >>> read_bounded(path)
    b'[1]'
    """
    handle = open_input(path, what=what, fix=fix, error=error)
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise _too_big(path, max_bytes, what, size, error)
        chunks: list[bytes] = []
        total = 0
        try:
            while total <= max_bytes:  # a file that grew since fstat() is still bounded
                chunk = handle.read(min(CHUNK_BYTES, max_bytes + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        except OSError as problem:
            raise error(
                path,
                f"cannot read {with_article(what)} ({problem.strerror or problem})",
                fix="check the path",
            ) from None
    if total > max_bytes:
        raise _too_big(path, max_bytes, what, None, error)
    return b"".join(chunks)


def _too_big(
    path: Path, max_bytes: int, what: str, size: int | None, error: type[DataFileError]
) -> DataFileError:
    found = f"file is {size:,} bytes" if size is not None else "file grows"
    return error(
        path,
        f"{found}, above the {max_bytes:,}-byte limit for {with_article(what)}",
        fix="check that this is the right file (docs/limits.md lists every input limit)",
    )


def strip_bom(data: bytes) -> bytes:
    """``data`` without a leading UTF-8 byte-order mark."""
    return data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data


def read_text(
    path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, what: str = "data file", fix: str = ""
) -> str:
    """The UTF-8 text of ``path`` (bounded as :func:`read_bounded`; a byte-order mark dropped)."""
    data = strip_bom(read_bounded(path, max_bytes=max_bytes, what=what, fix=fix))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        # the line up to the bad byte is UTF-8 (the first error), so its characters can be counted
        start = data.rfind(b"\n", 0, error.start) + 1
        column = len(data[start : error.start].decode("utf-8")) + 1
        raise DataFileError(
            path,
            f"not UTF-8 text at column {column} (byte 0x{data[error.start]:02x})",
            line=line,
            fix=f"save the {what} as UTF-8",
        ) from None


def bounded_lines(
    handle: BinaryIO,
    path: str | Path,
    max_line_bytes: int = MAX_LINE_BYTES,
    *,
    error: type[DataFileError] = DataFileError,
) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of every line; a line over ``max_line_bytes`` is a :class:`DataFileError`.

    >>> import io
    >>> list(bounded_lines(io.BytesIO(b"a\\nb"), "x"))
    [(1, b'a\\n'), (2, b'b')]
    """
    number = 0
    while True:
        line = handle.readline(max_line_bytes + 1)
        if not line:
            return
        number += 1
        if number == 1:
            line = strip_bom(line)
        if len(line) > max_line_bytes:
            raise error(
                path,
                f"line longer than {max_line_bytes:,} bytes",
                line=number,
                fix="check that this is the right file (docs/limits.md lists every input limit)",
            )
        yield number, line


MAX_SHOWN_CHARS: Final = 40  # of a bad value in a message: a 5,000-digit number never fills a terminal


def excerpt(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """``value`` as a message shows it: whole when short, else its first ``limit`` characters and
    its length (inputs are untrusted: a cell or an option can hold megabytes).

    >>> excerpt("64"), excerpt("9" * 5000, limit=8)
    ('64', '99999999... (5,000 characters)')
    """
    if isinstance(value, int) and value.bit_length() > 4 * limit:  # str() refuses over 4,300 digits
        digits = int(value.bit_length() * math.log10(2))
        return f"{'-' if value < 0 else ''}a whole number of about {digits:,} digits"
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def looks_like_path(text: str) -> bool:
    """Whether ``text`` (a file, folder or store run id) is meant as a path: it holds a folder
    separator or a suffix, or something (even a FIFO) exists at it.

    >>> looks_like_path("runs/a.json"), looks_like_path("3f2a9c"), looks_like_path("run:latest")
    (True, False, False)
    """
    if text.startswith("run:"):
        return False
    return "/" in text or os.sep in text or bool(Path(text).suffix) or os.path.lexists(text)


def check_output(path: Path, *, what: str, example: str = "", new_folder_ok: bool = True) -> None:
    """Refuse to write ``what`` over a folder, a FIFO or a device (a writer that replaces the file
    atomically would replace the folder entry or the device node; opening a FIFO would wait for a
    reader); a missing file is fine, and so is a missing folder for it unless ``new_folder_ok`` is
    false (a writer that creates none: a user's output path).

    >>> check_output(Path("/tmp"), what="expert load", example="load.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: /tmp is a folder, not a file to write the expert load to; ...
    """
    try:
        info = path.stat()
    except OSError as error:
        refusal = unusable_path(path, error, fix=f"choose a shorter path to write the {what} to")
        if refusal is not None:
            raise refusal from None
        if not new_folder_ok:
            _check_output_folder(path, what)
        return  # absent (or unreachable: the write itself says why)
    special = kind_of(info.st_mode)
    if special is not None:
        hint = (
            f"; name a file, e.g. {path / example}"
            if example and stat.S_ISDIR(info.st_mode)
            else "; name a file"
        )
        raise _not_a_file(path, special[0], what, hint)


def ends_in_separator(text: str) -> bool:
    """Whether the path ``text`` ends in a folder separator (``out/``): it names a folder, though
    :class:`~pathlib.Path` drops the separator (``Path("out/")`` is ``out``).

    >>> ends_in_separator("runs/"), ends_in_separator("runs/plan.toml"), ends_in_separator("/")
    (True, False, True)
    """
    return text.endswith(tuple(sep for sep in (os.sep, os.altsep, "/") if sep))


def _check_output_folder(path: Path, what: str) -> None:
    """Refuse a new output ``path`` whose folder does not exist or is not a folder (nothing is
    created for it); a folder that cannot be reached is left to the write, which says why."""
    folder = path.parent
    try:
        info = folder.stat()
    except FileNotFoundError:
        raise UserInputError(
            f"cannot write the {what} to {path}: no folder {folder}; create it first or name another path"
        ) from None
    except NotADirectoryError:
        info = None
    except OSError:
        return
    if info is None or not stat.S_ISDIR(info.st_mode):
        raise UserInputError(
            f"cannot write the {what} to {path}: {folder} is not a folder; name a path in a folder"
        )


_WRITE_FLAGS: Final = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_TRUNC
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)


def write_output_text(path: Path, text: str, *, what: str, example: str = "") -> None:
    """Write ``text`` (UTF-8) to the file ``path`` a user named for ``what``, after
    :func:`check_output` (its folder must exist: none is created). The file is opened without
    blocking and checked again through its handle, so that a FIFO put in its place after the check
    is refused, never waited on.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "plan.toml"
    >>> write_output_text(target, "x = 1\\n", what="plan file")
    >>> target.read_text()
    'x = 1\\n'
    """
    check_output(path, what=what, example=example, new_folder_ok=False)
    try:
        descriptor = os.open(path, _WRITE_FLAGS, 0o666)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO with no reader, made after the check
            raise _not_a_file(path, "a FIFO (named pipe)", what) from None
        raise write_failed(path, what, error) from None
    special = kind_of(os.fstat(descriptor).st_mode)
    if special is not None:
        os.close(descriptor)
        raise _not_a_file(path, special[0], what)
    if hasattr(os, "set_blocking"):
        os.set_blocking(descriptor, True)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(text.encode("utf-8"))
    except OSError as error:
        raise write_failed(path, what, error) from None


def _not_a_file(path: Path, kind: str, what: str, hint: str = "; name a file") -> UserInputError:
    return UserInputError(f"{path} is {kind}, not a file to write the {what} to{hint}")


def cannot_create_in(folder: Path) -> str | None:
    """Why nothing can be created in ``folder`` (None: a file can), found by a real write that
    leaves nothing behind: an unnamed temporary file (Linux's ``O_TMPFILE``; elsewhere one removed
    at once). ``os.access`` is not enough: it says yes to root under ``/proc``.

    >>> cannot_create_in(Path("/proc")) is not None, cannot_create_in(Path(tempfile.gettempdir()))
    (True, None)
    """
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        return error.strerror or str(error)
    return None


def write_failed(path: Path, what: str, error: OSError) -> UserInputError:
    """The one-line error for an output that cannot be written (no permission, a full disk, /proc)."""
    return UserInputError(
        f"cannot write the {what} to {path} ({error.strerror or error}); choose another path"
    )
