# The compiled Kineto scanner (_kineto_scan.c): one C row per event, see FIELDS.
from typing import Final

FIELDS: Final[tuple[tuple[str, str, int], ...]]
ROW_BYTES: Final[int]
TS_IS_INT: Final[int]
MAX_DEPTH: Final[int]

class Rows:
    """The rows of one scanned chunk (a read-only buffer)."""

def scan(chunk: bytes, whole: bool = True, /) -> tuple[Rows, list[str], list[str], list[str], int]: ...
