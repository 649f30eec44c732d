"""The option types of values given as text, beside :mod:`lightspeed.cli.options`' numbers: a
path a command writes (:class:`OutputPath`) or reads (:class:`InputFile`), and a name
(:class:`NonEmptyText`). Each refuses an empty or blank value naming its option
(:func:`flag_of`), and says a folder, FIFO or device found where a file belongs in the words every
reader and writer uses (:mod:`lightspeed.files`).
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

import click

from lightspeed.errors import DataFileError, UserInputError
from lightspeed.files import check_input, check_output, ends_in_separator


def flag_of(param: click.Parameter | None) -> str:
    """The option as messages name it, its long form (``--plot``); ``the option`` without one."""
    if param is None or not param.opts:
        return "the option"
    return max(param.opts, key=len)


class OutputPath(click.Path):
    """A file or folder a command writes (``--plot``, ``--out``, ``--save-config``), as a
    :class:`~pathlib.Path`: an empty or blank value is refused, naming the option, since
    ``Path("")`` is the current folder (default-named files would land there) and ``Path(" ")``
    a file named by a space. A value that ends in a separator (``out/``) names a folder, though
    ``Path`` drops the separator: refused for a single file (``dir_okay=False``), and for a
    folder-or-file (``--plot``) unless that folder exists; an option that names a folder the
    command makes (``file_okay=False``, or an ``example`` ending in a separator: ``tensorboard/``)
    takes it. A single file (``dir_okay=False``) is checked as :func:`lightspeed.files.check_output`
    checks it (``what``: what is written), before the command runs: a folder, a FIFO or a device
    there is one line, and so is a folder that does not exist when the writer makes none
    (``new_folder_ok=False``). The other checks are :class:`click.Path`'s (``file_okay``, ...).

    >>> OutputPath().convert("ttft.png", None, None)
    PosixPath('ttft.png')
    """

    def __init__(
        self, *, example: str = "plot.png", what: str = "output", new_folder_ok: bool = True, **checks: Any
    ) -> None:
        super().__init__(path_type=pathlib.Path, **checks)
        self.example = example  # what the refusal suggests
        self.what = what
        self.new_folder_ok = new_folder_ok  # False: the writer makes no folder, so it must exist
        # a folder the command writes into, and makes (monitor --out, goodput --tensorboard tb/)
        self.names_folder = not self.file_okay or ends_in_separator(example)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            flag = flag_of(param)
            what = "an empty value" if not value else f"a blank value ({value!r})"
            self.fail(f"{what} names nothing to write; give a path, e.g. {flag} {self.example}", param, ctx)
        if isinstance(value, str) and ends_in_separator(value) and not self.names_folder:
            self._check_folder_named(value, param, ctx)
        if self.dir_okay or not isinstance(value, str | pathlib.PurePath):
            return super().convert(value, param, ctx)
        try:
            check_output(
                pathlib.Path(value), what=self.what, example=self.example, new_folder_ok=self.new_folder_ok
            )
        except UserInputError as error:
            self.fail(str(error), param, ctx)
        return super().convert(value, param, ctx)

    def _check_folder_named(
        self, value: str, param: click.Parameter | None, ctx: click.Context | None
    ) -> None:
        """``value`` ends in a separator: it names a folder, which a single file cannot be and a
        folder-or-file option takes only when it exists (none is created)."""
        name = pathlib.PurePath(self.example).name
        if not self.dir_okay:
            self.fail(
                f"{value!r} ends in a separator, so it names a folder, not a file to write the "
                f"{self.what} to; name a file, e.g. {value}{name}",
                param,
                ctx,
            )
        if not pathlib.Path(value).is_dir():
            self.fail(
                f"{value!r} ends in a separator, so it names a folder, and there is no folder "
                f"{value.rstrip('/' + os.sep)}; create it first, or name a file (without the "
                "trailing separator)",
                param,
                ctx,
            )


class InputFile(click.Path):
    """A file a command reads (``--trace``, ``--config``), as a :class:`~pathlib.Path`: an empty or
    blank value is refused, naming the option, and a folder, FIFO or device found there is said the
    way every reader says it (:func:`lightspeed.files.check_input`: *"found a folder where a request
    trace was expected; fix: pass a file inside it"*), not in click's words. A missing file is left
    to the reader, which knows how to make one.

    >>> InputFile(what="request trace").convert("trace.csv", None, None)
    PosixPath('trace.csv')
    """

    def __init__(self, *, what: str = "file", example: str = "", **checks: Any) -> None:
        super().__init__(path_type=pathlib.Path, dir_okay=False, **checks)
        self.what = what
        self.example = example

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            shown = "an empty value" if not value else f"a blank value ({value!r})"
            example = f", e.g. {flag_of(param)} {self.example}" if self.example else ""
            self.fail(f"{shown} names no {self.what}; give a path{example}", param, ctx)
        if isinstance(value, str | pathlib.PurePath) and os.path.exists(value):
            try:
                check_input(pathlib.Path(value), what=self.what)
            except DataFileError as error:
                self.fail(str(error), param, ctx)
        return super().convert(value, param, ctx)


class NonEmptyText(click.ParamType[str]):
    """A name given to an option (a system, a model, a precision): an empty or blank value is
    refused, naming the option, rather than read as if the option were left out.

    >>> NonEmptyText().convert("dgx-h100", None, None)
    'dgx-h100'
    """

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value)
        if not text.strip():
            flag = flag_of(param)
            what = "an empty value" if not text else f"a blank value ({text!r})"
            self.fail(f"{what} names nothing; give a value or leave {flag} out", param, ctx)
        return text


__all__ = ["InputFile", "NonEmptyText", "OutputPath", "flag_of"]
