"""Where the results store lives: a SQLite file (the default) or a PostgreSQL server, by URL.

``$LIGHTSPEED_STORE`` (or the ``location`` given to :func:`~lightspeed.store.open_store`)
is one of

- a ``postgresql://user[:password]@host[:port]/database[?options]`` URL
  (``postgres://`` too): a server shared by a team, CI and many nodes;
- a plain file path, or a ``sqlite:////absolute/path.sqlite`` URL (SQLAlchemy's form:
  three slashes then a relative path, four for an absolute one);

and when neither is set, ``$LIGHTSPEED_HOME/results.sqlite``. A password in a
URL is never printed: :attr:`StoreLocation.display` replaces it with ``***``, in the
user part and in the query (libpq's ``password=`` and ``sslpassword=``); ``PGPASSWORD``
and ``~/.pgpass`` keep it out of the URL altogether.

>>> where = store_location("postgresql://ci:s3cret@db.example:5433/perf")
>>> (where.backend, where.display)
('postgresql', 'postgresql://ci:***@db.example:5433/perf')
>>> store_location("postgresql://ci@db.example/perf?password=s3cret&sslmode=require").display
'postgresql://ci@db.example/perf?password=***&sslmode=require'
>>> store_location("/tmp/r.sqlite").backend
'sqlite'
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from lightspeed.errors import UserInputError
from lightspeed.files import ends_in_separator, excerpt
from lightspeed.paths import lightspeed_home

STORE_ENVIRONMENT_VARIABLE: Final = "LIGHTSPEED_STORE"
STORE_FILE_NAME: Final = "results.sqlite"
POSTGRES_SCHEMES: Final = ("postgresql", "postgres")


@dataclass(frozen=True)
class StoreLocation:
    """A resolved store location.

    ``backend`` is ``sqlite`` or ``postgresql``; ``path`` the SQLite file
    (``None`` for a server); ``url`` the full PostgreSQL URL (secret: never
    print it); ``display`` what messages show (every password masked);
    ``password`` the user part's password; ``secrets`` every secret the URL
    holds (that password and the query's ``password=``/``sslpassword=`` values,
    as written and decoded).
    """

    backend: str
    display: str
    path: Path | None = None
    url: str | None = None
    password: str | None = None
    secrets: tuple[str, ...] = ()

    def __repr__(self) -> str:  # the URL may hold a password: show only the masked form
        return f"StoreLocation(backend={self.backend!r}, display={self.display!r})"

    def same_as(self, other: StoreLocation) -> bool:
        """Whether ``other`` names this store: the same file however its path is spelled
        (relative, through ``..`` or a symbolic link), else the same location.

        >>> store_location("/tmp/a/../r.sqlite").same_as(store_location("sqlite:////tmp/r.sqlite"))
        True
        """
        if self.path is None or other.path is None:
            return self.display == other.display
        try:
            return os.path.samefile(self.path, other.path)
        except OSError:  # one is missing (not yet created): compare the paths they resolve to
            return self.path.resolve() == other.path.resolve()

    def scrub(self, text: str) -> str:
        """``text`` with the URL and its passwords masked (for messages built from driver errors)."""
        if self.url:
            text = text.replace(self.url, self.display)
        secrets = {*self.secrets, *((self.password,) if self.password else ())}
        for secret in sorted(secrets, key=len, reverse=True):  # a longer secret may hold a shorter one
            text = text.replace(secret, "***")
        return text


def default_store_path() -> Path:
    """``results.sqlite`` in :func:`lightspeed.paths.lightspeed_home` (``$LIGHTSPEED_HOME``)."""
    return lightspeed_home() / STORE_FILE_NAME


def store_location(location: str | Path | None = None, *, given_as: str = "") -> StoreLocation:
    """Resolve ``location``, else ``$LIGHTSPEED_STORE`` (empty: unset), else
    :func:`default_store_path`. An empty or blank ``location``, or a blank variable, names no store
    (``Path("")`` is the current folder): a :class:`UserInputError` naming ``given_as`` (the option
    that gave it, ``--to``), else the variable.

    >>> store_location(" ", given_as="--to")
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: --to is blank; give a path or URL
    """
    if location is None:
        location = _from_environment()
        given_as = STORE_ENVIRONMENT_VARIABLE
    if location is None:
        path = default_store_path()
        return StoreLocation(backend="sqlite", display=str(path), path=path)
    if isinstance(location, Path):
        return StoreLocation(backend="sqlite", display=str(location), path=location)
    text = location.strip()
    if not text:
        what = given_as or "the results store location"
        raise UserInputError(f"{what} is {'empty' if not location else 'blank'}; give a path or URL")
    scheme, separator, rest = text.partition("://")
    names_file = rest.strip("/") if separator else text.strip("/" + os.sep)  # "/", "sqlite:///": none
    if ends_in_separator(text) and names_file and (not separator or scheme.lower() == "sqlite"):
        _refuse_folder(text, given_as)
    if not separator:
        path = Path(text).expanduser()
        return StoreLocation(backend="sqlite", display=str(path), path=path)
    if scheme.lower() == "sqlite":
        return _sqlite_url(text)
    if scheme.lower() in POSTGRES_SCHEMES:
        return _postgres_url(text)
    raise UserInputError(
        f"results store URL scheme {scheme!r} is not supported; use postgresql://user@host/database, "
        "sqlite:////absolute/results.sqlite or a file path"
    )


def _refuse_folder(text: str, given_as: str) -> None:
    """Refuse a SQLite store path that ends in a separator: it names a folder (``Path`` would drop
    the separator and read ``x.sqlite/`` as the file ``x.sqlite``).

    >>> _refuse_folder("runs/x.sqlite/", "LIGHTSPEED_STORE")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: LIGHTSPEED_STORE 'runs/x.sqlite/' ends in a separator, so it \
names a folder, not the store's file; fix: drop the separator (runs/x.sqlite) or name a file in it ...
    """
    what = given_as or "the results store location"
    stripped = text.rstrip("/" + os.sep + (os.altsep or ""))
    raise UserInputError(
        f"{what} {excerpt(text)!r} ends in a separator, so it names a folder, not the store's file; "
        f"fix: drop the separator ({excerpt(stripped)}) or name a file in it "
        f"({excerpt(stripped)}/{STORE_FILE_NAME})"
    )


def _from_environment() -> str | None:
    """``$LIGHTSPEED_STORE``: ``None`` when unset or empty; a blank value is refused, naming it."""
    value = os.environ.get(STORE_ENVIRONMENT_VARIABLE) or None
    if value is not None and not value.strip():
        raise UserInputError(
            f"{STORE_ENVIRONMENT_VARIABLE} is blank ({value!r}); unset it or give a path or URL"
        )
    return value


def _sqlite_url(text: str) -> StoreLocation:
    """SQLAlchemy's form: ``sqlite:///relative/file`` and ``sqlite:////absolute/file``."""
    rest = text.split("://", 1)[1]
    if not rest.startswith("/") or not rest.strip("/"):
        raise UserInputError(
            f"results store URL {text!r} names no file; use sqlite:////absolute/path/results.sqlite "
            "(or a plain file path)"
        )
    path = Path(unquote(rest[1:])).expanduser()
    return StoreLocation(backend="sqlite", display=str(path), path=path)


def _postgres_url(text: str) -> StoreLocation:
    try:
        parts = urlsplit(text)
    except ValueError as error:  # e.g. "Invalid IPv6 URL" for an unclosed [
        raise UserInputError(
            f"results store URL {_masked(text)!r} is not a valid URL ({error}); "
            "use postgresql://user@host:5432/database (an IPv6 host in brackets: [::1])"
        ) from None
    try:
        host = parts.hostname
        parts.port  # noqa: B018  # raises ValueError for a port that is not a number
    except ValueError:
        raise UserInputError(
            f"results store URL {mask_password(text)!r} has an invalid port; use postgresql://user@host:5432/db"
        ) from None
    if not parts.path.strip("/") and not host:
        raise UserInputError(
            f"results store URL {mask_password(text)!r} names neither a host nor a database; "
            "use postgresql://user@host/database"
        )
    password = unquote(parts.password) if parts.password else None
    return StoreLocation(
        backend="postgresql",
        display=mask_password(text),
        url=text,
        password=password or None,
        secrets=_url_secrets(text, parts),
    )


_USER_PASSWORD: Final = re.compile(r"(://[^:/@\[\]]*:)[^@]*@")
# libpq connection parameters whose values are secrets (the others name files, hosts, modes)
SECRET_QUERY_KEYS: Final = frozenset({"password", "sslpassword"})


def _url_secrets(url: str, parts: SplitResult) -> tuple[str, ...]:
    """Every secret in the URL, as written and percent-decoded, to scrub from driver messages."""
    found = [parts.password] if parts.password else []
    query = url.partition("?")[2]
    found += [value for key, value in _query_fields(query) if _is_secret_key(key) and value]
    return tuple(sorted({form for value in found for form in (value, unquote(value)) if form}))


def _query_fields(query: str) -> list[tuple[str, str]]:
    """``key=value`` pairs of a URL query as written (not decoded)."""
    return [(field.partition("=")[0], field.partition("=")[2]) for field in query.split("&") if field]


def _is_secret_key(key: str) -> bool:
    return unquote(key).strip().lower() in SECRET_QUERY_KEYS


def _mask_query(query: str) -> str:
    """``query`` with the value of every secret parameter replaced by ``***``."""
    fields = query.split("&")
    return "&".join(
        f"{field.partition('=')[0]}=***"
        if "=" in field and _is_secret_key(field.partition("=")[0])
        else field
        for field in fields
    )


def _masked(text: str) -> str:
    """``text`` with a password masked even when it does not parse as a URL."""
    try:
        return mask_password(text)
    except ValueError:
        base, mark, query = _USER_PASSWORD.sub(r"\1***@", text).partition("?")
        return base + mark + _mask_query(query) if mark else base


def mask_password(url: str) -> str:
    """``url`` with the password of its user part and of its query replaced by ``***``.

    >>> mask_password("postgresql://me:pw@host/db")
    'postgresql://me:***@host/db'
    >>> mask_password("postgresql://me@host/db?sslmode=require&sslpassword=pw")
    'postgresql://me@host/db?sslmode=require&sslpassword=***'
    """
    base, mark, query = url.partition("?")  # all after '?' is the query: a '#' in a value hides nothing
    parts = urlsplit(base)
    if parts.password is not None:
        netloc = f"{parts.username or ''}:***@{parts.netloc.rsplit('@', 1)[1]}"
        base = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return base + mark + _mask_query(query)
