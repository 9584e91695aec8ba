"""The options every sub-command takes (``-q``/``-v``), for the main parser and the hook's quick one.

Standard library only: both ``--help`` and ``otel-toolchain hook`` (one process per tool call) build it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["common_options", "non_negative"]


def common_options() -> argparse.ArgumentParser:
    """A parent parser with -q/-v, accepted before or after the sub-command."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("-q", "--quiet", action="store_const", const=-1, dest="verbosity", default=argparse.SUPPRESS,
                        help="only warnings and errors on stderr (no notes such as where telemetry went)")
    parent.add_argument("-v", "--verbose", action="store_const", const=1, dest="verbosity",
                        default=argparse.SUPPRESS, help="debug messages too")
    return parent


def non_negative(kind: Callable[[str], float]) -> Callable[[str], float]:
    """An argparse ``type`` reading ``kind`` and refusing a negative number or NaN (``inf`` is allowed)."""

    def parse(text: str) -> float:
        value = kind(text)
        if value < 0 or math.isnan(value):
            raise argparse.ArgumentTypeError(f"must not be negative: {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its error message
    return parse
