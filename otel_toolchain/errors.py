"""The one error hierarchy of otel_toolchain.

::

    ToolchainError
    ├── ManifestError       a manifest that does not validate (names the file and the entry)
    ├── PluginLoadError     a plugin that cannot be found, imported or configured
    ├── StreamError         a bad line in a recorded or live event stream (strict mode only)
    └── TurnStopped         raised into an agent whose turn a plugin stopped; carries the StopSignal

Nothing here is raised at span time unless a :class:`~otel_toolchain.Toolchain` runs ``strict``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from otel_toolchain.signals import StopSignal

__all__ = ["ManifestError", "PluginLoadError", "StreamError", "ToolchainError", "TurnStopped"]


class ToolchainError(Exception):
    """Base class of every error otel_toolchain raises on purpose."""


class ManifestError(ToolchainError):
    """A manifest failed its check. The message names the file, the entry and what was expected."""


class PluginLoadError(ToolchainError):
    """A plugin could not be found, imported or configured. The message lists the plugins that exist."""


class StreamError(ToolchainError):
    """A line of an event stream could not be read (raised only when reading strictly)."""

    def __init__(self, message: str, *, source: str = "-", line_no: int = 0) -> None:
        super().__init__(f"{source}:{line_no}: {message}")
        self.source = source
        self.line_no = line_no


class TurnStopped(ToolchainError):
    """The turn was stopped by a plugin; ``signal`` says which, why and on which calls."""

    def __init__(self, signal: StopSignal) -> None:
        super().__init__(f"{signal.plugin}: {signal.reason}")
        self.signal = signal
