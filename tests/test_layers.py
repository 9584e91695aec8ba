"""The packages show the layers: what each part of ``otel_toolchain`` may import, read from the source.

Only imports that run count (``if TYPE_CHECKING:`` blocks are skipped); function-local imports count
like module-level ones, since they run too. The rules are the README's architecture section:
the core imports no integration, harness, plugin, exporter or CLI; the CLI is imported by nobody.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "otel_toolchain"

CORE = {"calls", "identity", "errors", "semconv", "signals", "turn", "outcome", "plugin", "_telemetry",
        "chain", "registry", "recorder", "testing", "_recognise", "_terminal", "_input"}
# What each part may import beyond the core (every part may import the core, except where listed).
ALLOWED = {
    "core": set(),
    "__init__": {"manifest"},  # the public surface names Manifest
    "export": set(),
    "plugins": set(),
    "manifest": {"export"},
    "harnesses": set(),
    "integrations": {"manifest"},
    "analyze": {"export", "harnesses", "plugins", "manifest"},
    "receiver": {"export", "harnesses"},
    "hooks": {"manifest"},
    "cli": {"__init__", "analyze", "export", "harnesses", "hooks", "integrations", "manifest", "plugins", "receiver"},
    "__main__": {"cli"},
}
# Parts that may not even import the core, beyond these modules.
NARROW = {"export": {"errors", "semconv", "_input"}}


def part_of(module: str) -> str:
    """The part a dotted module (``otel_toolchain.x.y``) belongs to: ``core`` or a package name."""
    first = module.split(".")[1] if "." in module else "__init__"
    return "core" if first in CORE else first


def runtime_imports(path: Path) -> Iterator[str]:
    """The ``otel_toolchain`` modules a file imports outside ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
               and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
               for node in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = ([node.module] if node.module != "otel_toolchain"
                     else [_from_package(alias.name) for alias in node.names])
            yield from (name for name in names if name.startswith("otel_toolchain"))
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("otel_toolchain"))


def _from_package(name: str) -> str:
    """``from otel_toolchain import name``: the submodule, or the package's own surface."""
    is_module = (PACKAGE / f"{name}.py").exists() or (PACKAGE / name / "__init__.py").exists()
    return f"otel_toolchain.{name}" if is_module else "otel_toolchain"


def source_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    return ".".join(("otel_toolchain", *path.relative_to(PACKAGE).with_suffix("").parts))


@pytest.mark.parametrize("path", source_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_module_imports_only_what_its_layer_allows(path: Path) -> None:
    here = part_of(module_name(path))
    allowed = ALLOWED[here] | {here} | ({"core"} if here not in NARROW else set())
    wrong = []
    for imported in runtime_imports(path):
        there = part_of(imported)
        first = imported.split(".")[1] if "." in imported else "__init__"
        if here in NARROW and there == "core" and first in NARROW[here]:
            continue
        if there not in allowed:
            wrong.append(imported)
    assert wrong == [], f"{module_name(path)} ({here}) may not import {wrong}"


def test_the_rules_see_every_part() -> None:
    parts = {part_of(module_name(path)) for path in source_files()}
    assert parts == set(ALLOWED), "a new package needs its row in ALLOWED (and in the README)"


def test_the_reader_sees_imports_and_skips_type_checking(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from typing import TYPE_CHECKING\nimport otel_toolchain.cli\n"
                      "from otel_toolchain import semconv\n"
                      "if TYPE_CHECKING:\n    from otel_toolchain.harnesses import x\n"
                      "def f():\n    from otel_toolchain.analyze import y\n")
    assert list(runtime_imports(sample)) == ["otel_toolchain.cli", "otel_toolchain.semconv", "otel_toolchain.analyze"]
