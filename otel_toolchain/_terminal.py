"""The one escaping function for text from a stream or a file that is printed to a terminal.

Tool names, call ids, session ids, commands and file names come from the agent's output or the
disk, so they can hold terminal control sequences: an OSC window title (``ESC ] 0;…``), an
OSC-8 link, a clear screen (``ESC [ 2 J``), any CSI. :func:`terminal_safe` shows every control
character as a visible escape (``\\x1b``, ``\\x07``, ``\\u009b``), so nothing printed can act on
the terminal; lone surrogates (which no terminal encoding can carry) are escaped the same way,
so printing never raises. Bidirectional overrides (``U+202E``…) are escaped too: they reorder
what is shown. Pure function; no I/O.
"""

from __future__ import annotations

import re

__all__ = ["terminal_safe"]

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_LINES = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def terminal_safe(text: str, *, lines: bool = True) -> str:
    """``text`` with every control character shown escaped; ``lines=False`` escapes ``\\n`` too.

    Tab and (with ``lines``) newline stay as they are: the printers' own layout uses them.
    """
    return (_UNSAFE if lines else _UNSAFE_LINES).sub(_escape, text)
