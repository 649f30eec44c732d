"""Streaming a trace's events: decoded chunk by chunk while the file is still being read.

The ``traceEvents`` array is cut into chunks of about ``CHUNK_BYTES`` at a
``}, {`` between two events, and each chunk is read as a JSON array (by the
compiled scanner, else msgspec: :func:`~lightspeed.trace.io.kineto_columns.decode_chunk`).
A cut that falls inside an event or a string cannot decode (the chunk
would end inside an unclosed object or string), so a failed decode only means
"try the next ``}, {``": a decoded chunk is always a run of whole events.
After a few failed cuts in a row (names full of ``}, {``) each next try is
twice as far. Any other decode error is damage: it stops the read at once,
with the absolute byte offset in the (decompressed) file. Only a window of
the decompressed text is held at any time (at most ``MAX_WINDOW_BYTES``),
never the whole file, whatever it holds.

The other top-level keys (``distributedInfo``, ``deviceProperties`` ...) may
come before or after the events; both parts are decoded with the events
replaced by an empty array.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, NoReturn

import msgspec

from lightspeed.errors import TraceError
from lightspeed.files import UTF8_BOM
from lightspeed.trace.io.kineto_columns import (
    ChunkColumns,
    DecodedChunk,
    ScannedChunk,
    compiled_scanner,
    decode_chunk,
)
from lightspeed.trace.io.kineto_metadata import trace_metadata
from lightspeed.trace.io.kineto_schema import (
    DOCUMENT_DECODER,
    EVENTS_DECODER,
    TraceDocument,
    TraceTail,
    decode_events,
    decode_tail,
)
from lightspeed.trace.io.source import DEFAULT_MAX_BYTES, trace_blocks

CHUNK_BYTES: Final = 8 << 20  # about 40,000 Kineto events
MAX_FAILED_CUTS: Final = 4
# read only this far past where a cut is looked for: what is left after the cut is copied when
# the window next grows (a whole chunk ahead copied ~8 MiB per chunk, 0.2-0.4 s per 440 MB)
LOOKAHEAD_BYTES: Final = 64 << 10
MAX_WINDOW_BYTES: Final = 256 << 20  # the most text held at once: no real event comes near it
_ERROR_BYTE: Final = re.compile(r"\(byte (\d+)\)")
_BOUNDARY: Final = re.compile(rb"\}\s*,\s*\{")
_EVENTS_KEY: Final = re.compile(rb'"traceEvents"\s*:\s*\[')
_TAIL_DECODER: Final = msgspec.json.Decoder(TraceTail)
_PREFIX_DECODER: Final = msgspec.json.Decoder(TraceDocument)
_JSON_PATH_INDEX: Final = re.compile(r"\$(?:\.traceEvents)?\[(\d+)\]([^`]*)`")
_FIX_TRUNCATED: Final = (
    "export the trace again; a cut-short file usually means the profiler was killed while writing"
)


class EventStream:
    """The events of one trace file in decoded chunks; ``document`` holds the other keys after.

    Memory stays bounded whatever the file holds: at most a window of
    ``MAX_WINDOW_BYTES`` is buffered, and a byte that cannot be JSON stops the
    read at once with its absolute offset in the (decompressed) file.

    Example::

        stream = EventStream(Path("rank-0.json.gz"))
        sum(len(chunk) for chunk in stream.chunks())
        # -> 68692
    """

    def __init__(self, path: Path, *, max_bytes: float = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.document = TraceDocument()
        self._blocks = trace_blocks(path, max_bytes=max_bytes)
        self._buffer = bytearray()
        self._dropped = 0  # bytes of the file before the buffer's first byte
        self._eof = False
        self._array_format = False
        self._index = 0  # events decoded so far
        self._raw = False  # pieces(): hand chunks over undecoded

    def pieces(self) -> Iterator[ChunkColumns | bytes]:
        """Like :meth:`chunks`, but every chunk before the last comes undecoded: the bytes of a JSON
        array of events (``[{...}, ...]``) for another process to decode. A cut is not checked
        here, so such a piece may fail to decode as a truncated array (a cut inside a string);
        the last chunk (and the keys after the array) is read here as usual."""
        self._raw = True
        return self.chunks()

    def chunks(self) -> Iterator[Any]:
        """The events a chunk at a time, in file order, as columns (:class:`ChunkColumns`: read by the
        compiled scanner where it is built and handles the chunk, else decoded by msgspec)."""
        cursor = self._find_events_array()
        if cursor is None:
            return
        while True:
            cut = self._next_cut(cursor)
            if cut is None:  # no cut left: the rest is the last events and the closing keys
                yield from self._tail(cursor)
                return
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

    def _fill(self, size: int) -> bool:
        """Read until the window holds ``size`` bytes; False when the file ends first."""
        while len(self._buffer) < size:
            if not self._more():
                return False
        return True

    def _find_events_array(self) -> int | None:
        """Offset just past the ``[`` of the top-level ``traceEvents`` array (None: no such array)."""
        self._skip_byte_order_mark()
        while not self._buffer.strip() and self._more():
            pass
        first = len(self._buffer) - len(self._buffer.lstrip())
        opening = self._buffer[first : first + 1]
        if opening == b"[":  # Chrome's JSON Array Format: the file is the array
            self._array_format = True
            return first + 1
        if opening != b"{":
            self._not_json_error(first)
        searched = 0
        while True:
            for match in _EVENTS_KEY.finditer(self._buffer, max(0, searched - 64)):
                prefix = bytes(self._buffer[: match.start()]) + b'"traceEvents":[]}'
                try:
                    document = _PREFIX_DECODER.decode(prefix)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue  # the key text sits inside a string or a nested object
                except RecursionError:
                    raise self._too_deep(0) from None
                self._keep(document)
                return match.end()
            searched = len(self._buffer)
            if searched > MAX_WINDOW_BYTES or not self._more():
                self._whole_document_error()
                return None

    def _skip_byte_order_mark(self) -> None:
        """Drop a UTF-8 byte-order mark that opens the (decompressed) text, as every other reader
        does (:func:`lightspeed.files.strip_bom`); byte offsets in messages still count it."""
        self._fill(len(UTF8_BOM))
        if self._buffer.startswith(UTF8_BOM):
            del self._buffer[: len(UTF8_BOM)]
            self._dropped += len(UTF8_BOM)

    def _not_json_error(self, offset: int) -> NoReturn:
        shown = bytes(self._buffer[offset : offset + 1])
        if not shown:
            raise TraceError(
                self.path,
                "file is empty (or only whitespace)",
                fix="pass a PyTorch profiler (Kineto) JSON trace",
            )
        raise TraceError(
            self.path,
            f"not a JSON trace: byte {self._dropped + offset} is {shown!r}, not '{{' or '['",
            fix="is this a PyTorch profiler (Kineto) JSON trace? (gzip files are read as gzip)",
        )

    def _whole_document_error(self) -> None:
        """No top-level traceEvents (in the file, or in its first MAX_WINDOW_BYTES): say why."""
        try:
            document = DOCUMENT_DECODER.decode(self._buffer)
        except msgspec.ValidationError as error:  # first: a ValidationError is a DecodeError too
            raise TraceError(
                self.path, f"unexpected trace layout ({error})", fix="is this a PyTorch profiler trace?"
            ) from None
        except msgspec.DecodeError as error:
            if not self._eof and "truncated" in str(error):
                raise TraceError(
                    self.path,
                    f"no traceEvents array in the first {MAX_WINDOW_BYTES >> 20} MiB",
                    fix="is this a PyTorch profiler (Kineto) JSON trace?",
                ) from None
            raise _json_error(self.path, error, self._dropped) from None
        except RecursionError:
            raise self._too_deep(0) from None
        if isinstance(document, TraceDocument) and document.traceEvents is None:
            raise TraceError(
                self.path, "no traceEvents array", fix="is this a PyTorch profiler (Kineto) JSON trace?"
            )

    def _keep(self, document: TraceDocument) -> None:
        """Keep the keys read so far, checked at once: a wrong one is refused naming that key."""
        trace_metadata(document, self.path)
        self.document = document

    # --- cutting between events ------------------------------------------------------------------

    def _next_cut(self, cursor: int) -> tuple[ChunkColumns | bytes, int] | None:
        """The next chunk from ``cursor`` and where the one after starts; ``None`` at the tail.

        A cut that falls inside an event or a string leaves the chunk truncated (try the next
        ``}, {``; after MAX_FAILED_CUTS, try twice as far each time); any other decode error is
        real damage, reported at once with its absolute offset.
        """
        search_from = cursor + CHUNK_BYTES
        failed = 0
        while True:
            self._fill(search_from + LOOKAHEAD_BYTES)
            match = _BOUNDARY.search(self._buffer, search_from)
            if match is None:
                if len(self._buffer) - cursor > MAX_WINDOW_BYTES:
                    self._window_error(cursor)
                search_from = max(search_from, len(self._buffer) - 8)  # a boundary may span blocks
                if self._more():
                    continue  # not read far enough yet
                return None
            end = match.start() + 1
            if end - cursor > MAX_WINDOW_BYTES:
                self._window_error(cursor)
            if self._raw:
                return self._undecoded(cursor, end, match.end() - 1)
            try:
                events = self._decode(cursor, end)
            except msgspec.DecodeError as error:
                if not _is_bad_cut(error, end - cursor + 2):
                    raise _json_error(self.path, error, self._dropped + cursor - 1) from None
                failed += 1
                search_from = match.end() if failed < MAX_FAILED_CUTS else cursor + 2 * (end - cursor)
                continue
            self._index += len(events)
            next_event = match.end() - 1
            del self._buffer[:next_event]  # keep only the window ahead
            self._dropped += next_event
            return events, 0

    def _undecoded(self, start: int, end: int, next_event: int) -> tuple[bytes, int]:
        with memoryview(self._buffer) as view:
            blob = b"".join((b"[", view[start:end], b"]"))
        del self._buffer[:next_event]
        self._dropped += next_event
        return blob, 0

    def _decode(self, start: int, end: int) -> ChunkColumns:
        with memoryview(self._buffer) as view:
            blob = b"".join((b"[", view[start:end], b"]"))
        try:
            events = decode_chunk(blob)
        except msgspec.ValidationError as error:
            raise _event_error(self.path, error, self._index) from None
        except RecursionError:
            raise self._too_deep(start) from None
        return events

    def _too_deep(self, start: int) -> TraceError:
        return TraceError(
            self.path,
            f"an event after byte {self._dropped + start} nests deeper than the JSON parser allows",
            fix="this is not what a profiler writes; check the file",
        )

    def _window_error(self, cursor: int) -> NoReturn:
        """No event ends within MAX_WINDOW_BYTES: name the first damaged byte if there is one."""
        with memoryview(self._buffer) as view:
            blob = b"".join((b"[", view[cursor : cursor + MAX_WINDOW_BYTES]))
        try:
            EVENTS_DECODER.decode(blob)
        except (msgspec.ValidationError, RecursionError):  # first: a ValidationError is a DecodeError
            pass
        except msgspec.DecodeError as error:
            if "truncated" not in str(error):
                raise _json_error(self.path, error, self._dropped + cursor - 1) from None
        raise TraceError(
            self.path,
            f"no event ends within {MAX_WINDOW_BYTES >> 20} MiB after byte {self._dropped + cursor} "
            "(an unterminated string, or damaged JSON)",
            fix=_FIX_TRUNCATED,
        )

    # --- the end of the array and what follows it --------------------------------------------------

    def _tail(self, cursor: int) -> Iterator[ChunkColumns]:
        """The last events and the keys after the array (the file is read to its end)."""
        while self._more():
            if len(self._buffer) - cursor > MAX_WINDOW_BYTES:
                self._window_error(cursor)
        with memoryview(self._buffer) as view:
            scanned = self._scanned_tail(view[cursor:])
        if scanned is not None:
            self._index += len(scanned)
            yield scanned
            return
        opening = b"[" if self._array_format else b'{"traceEvents":['
        rest = memoryview(self._buffer)[cursor:]
        try:
            if self._array_format:
                events = decode_events(b"".join((opening, rest)))
            else:
                tail = decode_tail(b"".join((opening, rest)))
                events = tail.traceEvents
        except msgspec.ValidationError as error:  # first: a ValidationError is a DecodeError too
            raise _event_error(self.path, error, self._index) from None
        except msgspec.DecodeError as error:
            raise _json_error(self.path, error, self._dropped + cursor - len(opening)) from None
        except RecursionError:
            raise self._too_deep(cursor) from None
        finally:
            rest.release()
        if not self._array_format:
            self._keep(_merged(self.document, tail))
        self._index += len(events)
        yield DecodedChunk(events)

    def _scanned_tail(self, rest: memoryview) -> ScannedChunk | None:
        """The last events read by the compiled scanner and the keys after them by msgspec; None when
        either declines (the whole tail is then decoded by msgspec, for its exact answer or error)."""
        scanner = compiled_scanner()
        if scanner is None:
            return None
        blob = b"".join((b"[", rest))
        try:
            chunk = ScannedChunk(blob, scanner.scan(blob, self._array_format))
        except ValueError:
            return None
        if not self._array_format:  # the keys after the array, decoded as they would be with it
            try:
                tail = _TAIL_DECODER.decode(b"".join((b'{"traceEvents":[]', memoryview(blob)[chunk.end :])))
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                return None
            if tail.traceEvents:  # a second traceEvents key: it would win; msgspec reads that
                return None
            self._keep(_merged(self.document, tail))
        return chunk


def _is_bad_cut(error: msgspec.DecodeError, blob_bytes: int) -> bool:
    """Whether a failed decode only means the cut fell inside an event (truncated at its end)."""
    message = str(error)
    if "truncated" in message:
        return True
    match = _ERROR_BYTE.search(message)
    return match is not None and int(match.group(1)) >= blob_bytes - 1


def _merged(before: TraceDocument, after: Any) -> TraceDocument:
    """Top-level keys from before and after the events (the later value wins, as in JSON)."""
    fields = ("schemaVersion", "distributedInfo", "deviceProperties", "displayTimeUnit")
    values = {
        name: getattr(after, name) if getattr(after, name) is not None else getattr(before, name)
        for name in fields
    }
    return TraceDocument(**values, traceEvents=[])


def _json_error(path: Path, error: msgspec.DecodeError, base: int = 0) -> TraceError:
    """The decode error with its byte offset made absolute (``base``: the file offset of byte 0)."""
    message = str(error)
    if "truncated" in message:
        return TraceError(path, "JSON is truncated", fix=_FIX_TRUNCATED)
    absolute = _ERROR_BYTE.sub(lambda match: f"(byte {base + int(match.group(1))} of the file)", message)
    return TraceError(
        path, f"not valid JSON ({absolute})", fix="the file is damaged at that byte; copy or export it again"
    )


def _event_error(path: Path, error: msgspec.ValidationError, first_index: int) -> TraceError:
    message = str(error)
    match = _JSON_PATH_INDEX.search(message)
    where = f"traceEvents[{first_index + int(match.group(1))}]{match.group(2)}" if match else "traceEvents"
    problem = message.split(" - at ", maxsplit=1)[0]
    return TraceError(
        path,
        f"unexpected event ({problem})",
        field=where,
        fix="no profiler writes that type there: export the trace again, or delete or correct that "
        "field (--skip-bad-events leaves out impossible times, not events that cannot be read)",
    )
