"""Streaming a trace's events: decoded chunk by chunk while the file is still being read.

The ``traceEvents`` array is cut into chunks of about ``CHUNK_BYTES`` at a
``}, {`` between two events, and each chunk is decoded by msgspec as a JSON
array. A cut that falls inside an event or a string cannot decode (the chunk
would end inside an unclosed object or string), so a failed decode only means
"try the next ``}, {``": a decoded chunk is always a run of whole events.
After a few failed cuts in a row (names full of ``}, {``) the rest of the
file is read and split exactly by msgspec instead. Only a window of the
decompressed text is held at any time, never the whole file.

The other top-level keys (``distributedInfo``, ``deviceProperties`` ...) may
come before or after the events; both parts are decoded with the events
replaced by an empty array.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgspec

from lightspeed.errors import TraceError
from lightspeed.trace.io.kineto_schema import (
    DOCUMENT_DECODER,
    EVENTS_DECODER,
    Event,
    TraceDocument,
    TraceTail,
)
from lightspeed.trace.io.source import DEFAULT_MAX_BYTES, trace_blocks

CHUNK_BYTES: Final = 8 << 20  # about 40,000 Kineto events
MAX_FAILED_CUTS: Final = 4
_BOUNDARY: Final = re.compile(rb"\}\s*,\s*\{")
_EVENTS_KEY: Final = re.compile(rb'"traceEvents"\s*:\s*\[')
_TAIL_DECODER: Final = msgspec.json.Decoder(TraceTail)
_RAW_TAIL_DECODER: Final = msgspec.json.Decoder(TraceDocument)
_RAW_LIST_DECODER: Final = msgspec.json.Decoder(list[msgspec.Raw])
_PREFIX_DECODER: Final = msgspec.json.Decoder(TraceDocument)
RAW_CHUNK_EVENTS: Final = 65536
_JSON_PATH_INDEX: Final = re.compile(r"\$(?:\.traceEvents)?\[(\d+)\]([^`]*)`")
_FIX_TRUNCATED: Final = (
    "export the trace again; a cut-short file usually means the profiler was killed while writing"
)


class _Stop(enum.Enum):
    """Why no chunk was cut: the tail is left, or cuts kept falling inside events."""

    TAIL = "tail"
    GIVE_UP = "give up"


class EventStream:
    """The events of one trace file in decoded chunks; ``document`` holds the other keys after.

    >>> stream = EventStream(Path("rank-0.json.gz"))  # doctest: +SKIP
    >>> sum(len(chunk) for chunk in stream.chunks())  # doctest: +SKIP
    68692
    """

    def __init__(self, path: Path, *, max_bytes: float = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.document = TraceDocument()
        self._blocks = trace_blocks(path, max_bytes=max_bytes)
        self._buffer = bytearray()
        self._eof = False
        self._array_format = False
        self._index = 0  # events decoded so far

    def chunks(self) -> Iterator[list[Event]]:
        """Decoded events, a chunk at a time, in file order."""
        cursor = self._find_events_array()
        if cursor is None:
            return
        while True:
            cut = self._next_cut(cursor)
            if cut is _Stop.TAIL:  # no cut left: the rest is the last events and the closing keys
                yield from self._tail(cursor)
                return
            if cut is _Stop.GIVE_UP:
                yield from self._exact_rest(cursor)
                return
            assert not isinstance(cut, _Stop)
            events, cursor = cut
            yield events

    # --- reading ---------------------------------------------------------------------------------

    def _more(self) -> bool:
        """Append the next block to the window; False at the end of the file."""
        if self._eof:
            return False
        block = next(self._blocks, None)
        if block is None:
            self._eof = True
            return False
        self._buffer += block
        return True

    def _find_events_array(self) -> int | None:
        """Offset just past the ``[`` of the top-level ``traceEvents`` array (None: no such array)."""
        while not self._buffer.strip() and self._more():
            pass
        first = len(self._buffer) - len(self._buffer.lstrip())
        if self._buffer[first : first + 1] == b"[":  # Chrome's JSON Array Format: the file is the array
            self._array_format = True
            return first + 1
        searched = 0
        while True:
            for match in _EVENTS_KEY.finditer(self._buffer, max(0, searched - 64)):
                prefix = bytes(self._buffer[: match.start()]) + b'"traceEvents":[]}'
                try:
                    self.document = _PREFIX_DECODER.decode(prefix)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue  # the key text sits inside a string or a nested object
                return match.end()
            searched = len(self._buffer)
            if not self._more():
                self._whole_document_error()
                return None

    def _whole_document_error(self) -> None:
        """No top-level traceEvents: say whether the file is even JSON."""
        try:
            document = DOCUMENT_DECODER.decode(self._buffer)
        except msgspec.DecodeError as error:
            raise _json_error(self.path, error) from None
        except msgspec.ValidationError as error:
            raise TraceError(
                self.path, f"unexpected trace layout ({error})", fix="is this a PyTorch profiler trace?"
            ) from None
        if isinstance(document, TraceDocument) and document.traceEvents is None:
            raise TraceError(
                self.path, "no traceEvents array", fix="is this a PyTorch profiler (Kineto) JSON trace?"
            )

    # --- cutting between events ------------------------------------------------------------------

    def _next_cut(self, cursor: int) -> tuple[list[Event], int] | _Stop:
        """The next chunk from ``cursor`` and where the one after starts.

        ``_Stop.TAIL`` when no cut is left (the rest is the tail of the file),
        ``_Stop.GIVE_UP`` after MAX_FAILED_CUTS cuts that fell inside events.
        """
        while len(self._buffer) - cursor < 2 * CHUNK_BYTES and self._more():
            pass
        search_from = cursor + CHUNK_BYTES
        for _ in range(MAX_FAILED_CUTS):
            match = _BOUNDARY.search(self._buffer, search_from)
            if match is None:
                return _Stop.TAIL
            try:
                events = self._decode(cursor, match.start() + 1)
            except msgspec.DecodeError:  # the cut fell inside an event or a string
                search_from = match.end()
                continue
            self._index += len(events)
            next_event = match.end() - 1
            del self._buffer[:next_event]  # keep only the window ahead
            return events, 0
        return _Stop.GIVE_UP

    def _decode(self, start: int, end: int) -> list[Event]:
        with memoryview(self._buffer) as view:
            blob = b"".join((b"[", view[start:end], b"]"))
        try:
            events: list[Event] = EVENTS_DECODER.decode(blob)
        except msgspec.ValidationError as error:
            raise _event_error(self.path, error, self._index) from None
        return events

    # --- the end of the array and what follows it --------------------------------------------------

    def _tail(self, cursor: int) -> Iterator[list[Event]]:
        """The last events and the keys after the array (the file is read to its end)."""
        while self._more():
            pass
        rest = memoryview(self._buffer)[cursor:]
        try:
            if self._array_format:
                events: list[Event] = EVENTS_DECODER.decode(b"".join((b"[", rest)))
            else:
                tail = _TAIL_DECODER.decode(b"".join((b'{"traceEvents":[', rest)))
                events = tail.traceEvents
                self.document = _merged(self.document, tail)
        except msgspec.DecodeError as error:
            raise _json_error(self.path, error) from None
        except msgspec.ValidationError as error:
            raise _event_error(self.path, error, self._index) from None
        finally:
            rest.release()
        self._index += len(events)
        yield events

    def _exact_rest(self, cursor: int) -> Iterator[list[Event]]:
        """Too many failed cuts: read the rest and let msgspec split it into raw event views."""
        while self._more():
            pass
        opening = b"[" if self._array_format else b'{"traceEvents":['
        data = bytearray(opening) + self._buffer[cursor:]
        self._buffer = bytearray()
        decoder = _RAW_LIST_DECODER if self._array_format else _RAW_TAIL_DECODER
        try:
            decoded = decoder.decode(data)
        except msgspec.DecodeError as error:
            raise _json_error(self.path, error) from None
        if isinstance(decoded, TraceDocument):
            self.document = _merged(self.document, decoded)
            views = decoded.traceEvents or []
        else:
            views = decoded
        for start in range(0, len(views), RAW_CHUNK_EVENTS):
            joined = b"".join((b"[", b",".join(views[start : start + RAW_CHUNK_EVENTS]), b"]"))
            try:
                events: list[Event] = EVENTS_DECODER.decode(joined)
            except msgspec.ValidationError as error:
                raise _event_error(self.path, error, self._index) from None
            self._index += len(events)
            yield events


def _merged(before: TraceDocument, after: Any) -> TraceDocument:
    """Top-level keys from before and after the events (the later value wins, as in JSON)."""
    fields = ("schemaVersion", "distributedInfo", "deviceProperties", "displayTimeUnit")
    values = {
        name: getattr(after, name) if getattr(after, name) is not None else getattr(before, name)
        for name in fields
    }
    return TraceDocument(**values, traceEvents=[])


def _json_error(path: Path, error: msgspec.DecodeError) -> TraceError:
    problem = "JSON is truncated" if "truncated" in str(error) else f"not valid JSON ({error})"
    return TraceError(path, problem, fix=_FIX_TRUNCATED)


def _event_error(path: Path, error: msgspec.ValidationError, first_index: int) -> TraceError:
    message = str(error)
    match = _JSON_PATH_INDEX.search(message)
    where = f"traceEvents[{first_index + int(match.group(1))}]{match.group(2)}" if match else "traceEvents"
    problem = message.split(" - at ", maxsplit=1)[0]
    return TraceError(path, f"unexpected event ({problem})", field=where)
