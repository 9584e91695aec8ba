"""Plugin discovery: the ``otel_toolchain.plugins`` entry-point group, built-ins included.

The built-in plugins are registered in the package's own metadata exactly as a third-party
distribution registers its plugins, so there is one way in for both. The installed distributions
are scanned once per process (a scan reads every distribution's metadata: ~30 ms with a few
hundred installed, and a manifest of three plugins asked six times): a plugin installed after the
first lookup is found by the next process.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points
from typing import Final

from otel_toolchain.errors import PluginLoadError
from otel_toolchain.plugin import ToolPlugin

__all__ = ["ENTRY_POINT_GROUP", "available_plugins", "entry_point_of", "load_plugin_class"]

ENTRY_POINT_GROUP: Final = "otel_toolchain.plugins"


def available_plugins() -> dict[str, EntryPoint]:
    """Every installed plugin, by name (the entry point's name), sorted by name (a new dict each call)."""
    return dict(_installed())


@functools.cache
def _installed() -> tuple[tuple[str, EntryPoint], ...]:
    found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return tuple(sorted(found.items()))


def entry_point_of(name: str) -> str:
    """The ``module:attribute`` the plugin ``name`` is registered as ("?" if it is not installed)."""
    entry = available_plugins().get(name)
    return entry.value if entry is not None else "?"


def load_plugin_class(name: str) -> type[ToolPlugin]:
    """Import the plugin ``name``.

    Raises:
        PluginLoadError: no such plugin (the message lists the ones that exist), it failed to
            import (whatever it raised, SystemExit and KeyboardInterrupt included: third-party
            import code must not end the command silently), or it is not a ToolPlugin subclass.
    """
    plugins = available_plugins()
    entry = plugins.get(name)
    if entry is None:
        valid = ", ".join(plugins) or "none installed"
        raise PluginLoadError(f"unknown plugin {name!r}; the plugins that exist are: {valid}")
    try:
        loaded = entry.load()
    except BaseException as exc:  # noqa: BLE001 (any import-time failure of third-party code is a load error)
        raise PluginLoadError(f"plugin {name!r} ({entry.value}) failed to import: {exc!r}") from None
    if not (isinstance(loaded, type) and issubclass(loaded, ToolPlugin)):
        raise PluginLoadError(f"plugin {name!r} ({entry.value}) is not a ToolPlugin subclass")
    return loaded
