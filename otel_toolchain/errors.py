"""The one error hierarchy of otel_toolchain.

::

    ToolchainError
    ├── ManifestError       a manifest that does not validate (names the file and the entry)
    ├── PluginLoadError     a plugin that cannot be found, imported or configured
    ├── StreamError         a bad line in a recorded or live event stream (strict mode only)
    ├── CannotRun           ``otel-toolchain run`` could not start the command
    ├── LabelError          an ``analyze --labels`` file that cannot be read, or a bad row
    ├── MissingExtra        an input needs an optional dependency that is not installed (names the extra)
    ├── TurnStopped         raised into an agent whose turn a plugin stopped; carries the StopSignal
    └── BadRequest          an OTLP request the receiver cannot read (carries the HTTP status to answer)

Nothing here is raised at span time unless a :class:`~otel_toolchain.Toolchain` runs ``strict``.
Invalid arguments to constructors and functions raise ``ValueError`` as usual in Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from otel_toolchain.signals import StopSignal

__all__ = [
    "BadRequest", "CannotRun", "LabelError", "ManifestError", "MissingExtra", "PluginLoadError", "StreamError",
    "ToolchainError", "TurnStopped",
]


class ToolchainError(Exception):
    """Base class of every error otel_toolchain raises on purpose."""


class ManifestError(ToolchainError):
    """A manifest failed its check. The message names the file, the entry and what was expected."""


class PluginLoadError(ToolchainError):
    """A plugin could not be found, imported or configured. The message lists the plugins that exist."""


class StreamError(ToolchainError):
    """A line of an event stream could not be read (raised only when reading strictly)."""

    def __init__(self, message: str, *, source: str = "-", line_no: int = 0) -> None:
        super().__init__(f"{source}:{line_no}: {message}" if line_no else f"{source}: {message}")
        self.source = source
        self.line_no = line_no


class CannotRun(ToolchainError):
    """The wrapped command could not be started (not found, not executable)."""


class LabelError(ToolchainError):
    """A labels file that cannot be read, or a row that is not ``run,label``."""


class MissingExtra(ToolchainError):
    """An optional dependency the input needs is not installed; the message names the extra."""


class TurnStopped(ToolchainError):
    """The turn was stopped by a plugin; ``signal`` says which, why and on which calls."""

    def __init__(self, signal: StopSignal) -> None:
        super().__init__(f"{signal.plugin}: {signal.reason}")
        self.signal = signal


class BadRequest(ToolchainError):
    """An OTLP request the receiver cannot read: bad encoding, bad body, too large. Names what and why."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status
