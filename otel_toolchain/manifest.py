"""The manifest: a pack's TOML file that declares its plugin chain, in order.

::

    [[agent.tool_plugins]]
    plugin = "repeat_guard"
    limit  = 25

    [[agent.tool_plugins]]
    plugin = "classify"

An optional ``[export]`` table sets where telemetry goes (see
:class:`~otel_toolchain.export.ExportSettings`). Leaving ``tool_plugins`` out runs exactly the
default chain (repeat_guard with limit 25, classify,
tool_stats); ``tool_plugins = []`` runs no plugins. Everything is checked at load time: an
unknown plugin, an unknown or mistyped parameter, a limit below 1 raise :class:`ManifestError`
naming the file, the entry and (for a name) the plugins that exist.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from otel_toolchain.chain import Toolchain
from otel_toolchain.errors import ManifestError, PluginLoadError
from otel_toolchain.export.settings import ExportSettings
from otel_toolchain.plugin import ToolPlugin
from otel_toolchain.registry import entry_point_of, load_plugin_class

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["DEFAULT_CHAIN", "AgentSettings", "Manifest", "PluginSpec"]

DEFAULT_CHAIN: Final[tuple[dict[str, Any], ...]] = (
    {"plugin": "repeat_guard", "limit": 25},
    {"plugin": "classify"},
    {"plugin": "tool_stats"},
)


# Strict everywhere: TOML has real booleans, integers and strings, so ``limit = true`` or
# ``capture_content = "yes"`` is a mistake to report, not a value to coerce.
class _Entry(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, strict=True)
    plugin: str


class AgentSettings(BaseModel):
    """The ``[agent]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    tool_plugins: list[_Entry] | None = None
    capture_content: bool | None = Field(
        default=None, description="Record tool arguments and results on spans (overrides the environment)."
    )
    max_open_turns: int = Field(default=4096, ge=1, le=10_000_000)


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    agent: AgentSettings = AgentSettings()
    export: ExportSettings = ExportSettings()


@dataclass(frozen=True)
class PluginSpec:
    """One checked entry of the chain: the plugin class and its validated settings."""

    name: str
    plugin_class: type[ToolPlugin]
    settings: dict[str, Any]
    entry_point: str = "?"
    """Where the plugin comes from (``module:attribute``), for messages."""

    def build(self) -> ToolPlugin:
        """A new plugin with these settings.

        Raises:
            PluginLoadError: its ``__init__`` raised anything at all (named with the entry point).
        """
        return _contained(self, "failed to start", lambda: self.plugin_class(**self.settings))

    def describe(self, plugin: ToolPlugin) -> dict[str, Any]:
        """``plugin.describe()``, its failures a PluginLoadError naming the plugin and the entry point."""
        return _contained(self, "failed to describe itself", plugin.describe)


@dataclass(frozen=True)
class Manifest:
    """A checked manifest. Build the chain with :meth:`toolchain`."""

    source: str
    agent: AgentSettings
    plugins: tuple[PluginSpec, ...] = field(default=())
    export: ExportSettings = field(default_factory=ExportSettings)

    @classmethod
    def default(cls) -> Manifest:
        """The manifest of a pack that declares nothing: the default chain."""
        return cls.from_dict({}, source="<default>")

    @classmethod
    def load(cls, path: str | Path) -> Manifest:
        """Read and check the manifest at ``path``."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ManifestError(f"{path}: cannot read the manifest: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise ManifestError(f"{path}: not valid UTF-8 (byte {exc.start}); TOML must be UTF-8") from None
        return cls.from_text(text, source=str(path))

    @classmethod
    def from_text(cls, text: str, *, source: str = "<string>") -> Manifest:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ManifestError(f"{source}: not valid TOML: {exc}") from exc
        except RecursionError:  # tomllib recurses once per nesting level
            raise ManifestError(f"{source}: nested too deeply to read") from None
        return cls.from_dict(data, source=source)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "<dict>") -> Manifest:
        try:
            document = _Document.model_validate(data)
        except ValidationError as exc:
            raise ManifestError(f"{source}: {_describe(exc)}") from None
        except RecursionError:
            raise ManifestError(f"{source}: nested too deeply to read") from None
        entries = document.agent.tool_plugins
        raw = [e.model_dump() for e in entries] if entries is not None else [dict(e) for e in DEFAULT_CHAIN]
        specs = tuple(_check_entry(source, index, entry) for index, entry in enumerate(raw))
        return cls(source=source, agent=document.agent, plugins=specs, export=document.export)

    def toolchain(self, *, strict: bool = False, digest_key: bytes | None = None) -> Toolchain:
        """A new Toolchain running this manifest's plugins in order."""
        return Toolchain(
            [spec.build() for spec in self.plugins], strict=strict,
            max_open_turns=self.agent.max_open_turns, digest_key=digest_key,
        )


def _check_entry(source: str, index: int, entry: dict[str, Any]) -> PluginSpec:
    where = f"{source}: agent.tool_plugins[{index}]"
    name = entry.pop("plugin")
    try:
        plugin_class = load_plugin_class(name)
    except PluginLoadError as exc:
        raise ManifestError(f"{where}: {exc}") from None
    try:
        settings = plugin_class.Config.model_validate(entry)
    except ValidationError as exc:
        raise ManifestError(f"{where} ({name}): {_describe(exc)}") from None
    except BaseException as exc:  # noqa: BLE001 (a third-party Config's validator may raise anything)
        raise ManifestError(f"{where} ({name}, {entry_point_of(name)}): checking its settings raised "
                            f"{exc!r}") from None
    return PluginSpec(name, plugin_class, settings.model_dump(exclude_unset=True, by_alias=False),
                      entry_point_of(name))


_T = TypeVar("_T")


def _contained(spec: PluginSpec, what: str, step: Callable[[], _T]) -> _T:
    # Load time, unlike span time, has no one to keep running for: whatever third-party code
    # raises here (SystemExit and KeyboardInterrupt included) is a load error the user can read.
    try:
        return step()
    except BaseException as exc:  # noqa: BLE001
        raise PluginLoadError(f"plugin {spec.name!r} ({spec.entry_point}) {what}: {exc!r}") from None


def _describe(exc: ValidationError) -> str:
    """One line per problem: the dotted location and pydantic's message."""
    problems = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = "unknown parameter" if error["type"] == "extra_forbidden" else error["msg"]
        problems.append(f"{location}: {message}")
    return "; ".join(problems)
