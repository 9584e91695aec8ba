"""Every code block of the README is checked: each carries a mark saying how, and a block without one fails.

The marks, on the line before the block (``tests/test_readme.py`` runs the plain ``<!-- test -->``):

- ``<!-- test output: COMMAND -->`` / ``<!-- test stderr: COMMAND -->``: the block is part of what
  COMMAND prints on standard output / standard error (run from the repository's root at 80 columns).
  Whitespace runs count as one space, ``…`` stands for any text, and trace ids and call digests
  (which change from run to run) are masked on both sides.
- ``<!-- test stderr exit=N -->``: a block ``$ COMMAND`` + lines: COMMAND exits N and prints exactly
  those lines on standard error.
- ``<!-- test manifest -->``: the TOML loads as a manifest (strictly) and its chain builds.
- ``<!-- test python -->``: the Python runs, in a folder whose ``pack.toml`` is the README's manifest,
  with ``tracer_provider``, ``meter_provider`` and ``logger_provider`` bound to real SDK providers (for
  the fragments that take them as given); a ``print(…)  # → TEXT`` line must print TEXT.
- ``<!-- test arguments -->``: every ``otel-toolchain`` command line parses with the real parser;
  ``pip install`` extras exist in pyproject.toml; ``bash FILE`` files exist; ``pytest -m`` markers are
  registered; ``OTEL_TOOLCHAIN_*`` variables set on a line are ones the package reads. (The CLIs and
  ``opentelemetry-instrument`` they name are run by their own tests.)
- ``<!-- illustration -->``: a drawing, not code; only the one architecture diagram.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from test_readme import environment

from otel_toolchain.cli.app import build_parser
from otel_toolchain.manifest import Manifest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_FENCE = re.compile(r"(?:<!--\s*(.*?)\s*-->\n)?```(\w*)\n(.*?)```", re.S)
_MASKS = ((re.compile(r"\btrace [0-9a-f]{8}\b"), "trace <trace>"), (re.compile(r"#[0-9a-f]{8}\b"), "#<digest>"))
_PRELUDE = """\
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
tracer_provider, meter_provider, logger_provider = TracerProvider(), MeterProvider(), LoggerProvider()
"""


def _blocks() -> list[tuple[int, str, str, str]]:
    """(line, mark, language, code) of every fenced block in the README."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [(text[:m.start()].count("\n") + 1, m.group(1) or "", m.group(2), m.group(3)) for m in _FENCE.finditer(text)]


def _kind(mark: str) -> str:
    """A mark's kind: ``test stderr`` of ``test stderr: COMMAND`` and of ``test stderr exit=2``."""
    return mark.partition(":")[0].partition(" exit=")[0]


def _marked(prefix: str) -> list[tuple[int, str, str, str]]:
    return [block for block in _blocks() if _kind(block[1]) == prefix]


def _id(block: object) -> str:
    return f"README.md:{block[0]}" if isinstance(block, tuple) else str(block)


def _normal(text: str) -> str:
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


def _contains(output: str, block: str) -> bool:
    parts = [re.escape(part.strip()) for part in _normal(block).split("…")]
    return re.search(r".*?".join(parts), _normal(output), re.S) is not None


def _run(argv: list[str], tmp_path: Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = environment(tmp_path) | {"COLUMNS": "80"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_every_block_is_marked_and_the_marks_are_known() -> None:
    known = {"test", "test output", "test stderr", "test manifest", "test python", "test arguments", "illustration"}
    marks = {_id(block): _kind(block[1]) for block in _blocks()}
    assert {where: mark for where, mark in marks.items() if mark not in known} == {}
    assert list(marks.values()).count("illustration") == 1


@pytest.mark.parametrize("block", [b for b in _blocks() if b[1].startswith(("test output:", "test stderr:"))],
                         ids=_id)
def test_a_shown_output_is_what_the_command_prints(block: tuple[int, str, str, str], tmp_path: Path) -> None:
    _line, mark, _language, code = block
    stream, _, command = mark.partition(":")
    done = _run(shlex.split(command.strip()), tmp_path)
    printed = done.stdout if stream == "test output" else done.stderr
    assert done.returncode in (0, 75), done.stderr
    assert _contains(printed, code), printed


@pytest.mark.parametrize("block", [b for b in _marked("test stderr") if ":" not in b[1]], ids=_id)
def test_a_shown_error_is_exactly_what_the_command_says(block: tuple[int, str, str, str], tmp_path: Path) -> None:
    _line, mark, _language, code = block
    code_wanted = int(mark.split("exit=")[1]) if "exit=" in mark else 0
    first, _, expected = code.partition("\n")
    assert first.startswith("$ ")
    done = _run(shlex.split(first[2:]), tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (code_wanted, "", expected)


@pytest.mark.parametrize("block", _marked("test manifest"), ids=_id)
def test_a_manifest_loads_and_its_chain_builds(block: tuple[int, str, str, str]) -> None:
    manifest = Manifest.from_text(block[3])
    chain = manifest.toolchain(strict=True)
    assert [spec.name for spec in manifest.plugins] == [type(p).name for p in chain.plugins]
    assert manifest.plugins, "an example manifest with no plugin shows nothing"


def _readme_manifest() -> str:
    (block,) = _marked("test manifest")
    return block[3]


@pytest.mark.parametrize("block", _marked("test python"), ids=_id)
def test_a_python_example_runs(block: tuple[int, str, str, str], tmp_path: Path) -> None:
    (tmp_path / "pack.toml").write_text(_readme_manifest())
    script = tmp_path / "example.py"
    script.write_text(_PRELUDE + block[3])
    done = _run([sys.executable, str(script)], tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Invalid type" not in done.stderr, done.stderr
    promised = [line.split("# → ", 1)[1].strip() for line in block[3].splitlines() if "# → " in line]
    printed = [line.strip() for line in done.stdout.splitlines()]
    assert [line for line in promised if line not in printed] == [], done.stdout


def _pyproject() -> dict[str, object]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _check_command(words: list[str]) -> str | None:
    """Why the command line ``words`` would not work as written, or None."""
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        name = words.pop(0).split("=", 1)[0]
        if name.startswith("OTEL_TOOLCHAIN_") and not _read_by_the_package(name):
            return f"{name} is read nowhere in otel_toolchain/"
    if not words:
        return None
    if words[0] == "otel-toolchain":
        try:
            build_parser().parse_args(words[1:])
        except SystemExit:
            return "the parser refuses it"
    elif words[:2] == ["pip", "install"]:
        extras = _pyproject()["project"]["optional-dependencies"]  # type: ignore[index]
        for spec in (w for w in words[2:] if w.startswith(".[")):
            unknown = set(spec[2:-1].split(",")) - set(extras)  # type: ignore[arg-type]
            if unknown:
                return f"no such extra: {sorted(unknown)}"
    elif words[0] == "bash" and not (REPO / words[1]).is_file():
        return f"no such file: {words[1]}"
    elif words[:3] == ["python", "-m", "pytest"] and "-m" in words[3:]:
        registered = {m.split(":")[0] for m in _pyproject()["tool"]["pytest"]["ini_options"]["markers"]}  # type: ignore[index]
        used = set(re.findall(r"[a-z_]+", words[words.index("-m", 3) + 1])) - {"not", "and", "or"}
        if used - registered:
            return f"unregistered markers: {sorted(used - registered)}"
    return None


def _read_by_the_package(name: str) -> bool:
    return any(name in path.read_text() for path in (REPO / "otel_toolchain").rglob("*.py"))


@pytest.mark.parametrize("block", _marked("test arguments"), ids=_id)
def test_every_command_line_of_a_block_is_accepted(block: tuple[int, str, str, str]) -> None:
    problems = {}
    for raw in block[3].splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).split("|")[0].strip()
        for command in filter(None, (part.strip() for part in line.split("&&"))):
            problem = _check_command(shlex.split(command))
            if problem is not None:
                problems[command] = problem
    assert problems == {}


def test_the_checks_can_fail() -> None:
    """The checkers themselves: a wrong flag, extra, file, marker or variable is caught; a wrong output too."""
    assert _check_command(["otel-toolchain", "replay", "--no-such-flag", "x"]) == "the parser refuses it"
    assert _check_command(["pip", "install", "-e", ".[test,nope]"]) == "no such extra: ['nope']"
    assert _check_command(["bash", ".ci/no-such-script"]) == "no such file: .ci/no-such-script"
    assert _check_command(["python", "-m", "pytest", "-m", "not slowish"]) == "unregistered markers: ['slowish']"
    assert _check_command(["OTEL_TOOLCHAIN_NO_SUCH=1", "python", "x.py"]) == (
        "OTEL_TOOLCHAIN_NO_SUCH is read nowhere in otel_toolchain/")
    assert _check_command(["OTEL_TOOLCHAIN_MANIFEST=p.toml", "otel-toolchain", "check", "p.toml"]) is None
    assert _contains("a  b\nc trace 0123abcd d", "a b … trace ffffffff d")
    assert not _contains("30 calls, 0 failed", "31 calls, … failed")
