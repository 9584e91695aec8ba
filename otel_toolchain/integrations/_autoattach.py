"""Zero-code attach: the chain joins the tracer provider that ``opentelemetry-instrument`` sets up.

``opentelemetry-instrument`` (opentelemetry-instrumentation) configures the SDK through the
installed distro and configurator, runs every ``opentelemetry_instrumentor``, then calls every
``opentelemetry_post_instrument`` entry point with no arguments. otel_toolchain registers
:func:`attach` there, so installing it is enough::

    OTEL_TOOLCHAIN_MANIFEST=pack.toml opentelemetry-instrument python agent.py

Settings (environment):

- ``OTEL_TOOLCHAIN_MANIFEST``: the manifest whose chain to attach; unset, the default chain.
- ``OTEL_TOOLCHAIN_DISABLED=true``: attach nothing.

The chain's metrics and events go to the global meter and logger providers the distro set up.
Nothing here raises: a manifest that does not load, or a global tracer provider that is not the
SDK's (no distro installed), is logged as an error and nothing is attached.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Final

from opentelemetry import _logs, metrics, trace
from opentelemetry.sdk.trace import TracerProvider

from otel_toolchain.chain import Toolchain
from otel_toolchain.errors import ToolchainError

__all__ = ["DISABLED_ENV", "MANIFEST_ENV", "attach", "attached"]

MANIFEST_ENV: Final = "OTEL_TOOLCHAIN_MANIFEST"
DISABLED_ENV: Final = "OTEL_TOOLCHAIN_DISABLED"

_log = logging.getLogger("otel_toolchain")
_lock = threading.Lock()
_attached: Toolchain | None = None


def attached() -> Toolchain | None:
    """The chain :func:`attach` put on the global tracer provider, if it did."""
    return _attached


def attach() -> Toolchain | None:
    """Attach the manifest's chain to the global SDK tracer provider, once; returns it.

    Called by ``opentelemetry-instrument`` after it configured the SDK (main thread, at start-up);
    may also be called by hand after setting a global ``TracerProvider``. Never raises.
    """
    global _attached  # noqa: PLW0603 (one chain per process, like the provider it joins)
    with _lock:
        if _attached is not None:
            return _attached
        if os.environ.get(DISABLED_ENV, "").strip().lower() in ("1", "true", "yes"):
            return None
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            _log.error("otel_toolchain: the global tracer provider is %s, not the SDK's; nothing attached "
                       "(install opentelemetry-distro, or call attach() after setting an SDK TracerProvider)",
                       type(provider).__name__)
            return None
        try:
            chain = _load_chain()
        except ToolchainError as exc:
            _log.error("otel_toolchain: nothing attached: %s", exc)
            return None
        _attached = chain.install(provider, metrics.get_meter_provider(), _logs.get_logger_provider())
        _log.info("otel_toolchain: attached %s to the global tracer provider",
                  ", ".join(p.name for p in chain.plugins) or "an empty chain")
        return _attached


def _load_chain() -> Toolchain:
    from otel_toolchain.manifest import Manifest  # noqa: PLC0415 (manifest pulls in plugin discovery)

    path = os.environ.get(MANIFEST_ENV, "").strip()
    manifest = Manifest.load(path) if path else Manifest.default()
    return manifest.toolchain()


def _reset_for_tests() -> None:
    """Forget the attached chain (tests only; the chain stays on its provider)."""
    global _attached  # noqa: PLW0603
    with _lock:
        _attached = None
