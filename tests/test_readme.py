"""Every README code block marked ``<!-- test -->`` on the line before it, run for real.

The convention: a ``bash`` block's commands are run one line at a time with ``bash -o pipefail`` from
the repository's root (comments stripped; ``pip install …`` and ``bash .ci/run`` parts of an ``&&``
chain are left out: the package is installed already, and CI is what runs this test), each expected
to exit 0 or 75 (a stopped turn, as the README's exit-code table says). A ``text`` block starting
with ``$ COMMAND`` runs COMMAND and must print exactly the rest of the block. HOME and the embedded
default's folder are a temporary directory; nothing else is faked. Blocks that read ``../shared``
are skipped (with the reason) where it is absent.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, shared_problem

_BLOCK = re.compile(r"<!-- test -->\n```(\w+)\n(.*?)```", re.S)
_LEFT_OUT = ("pip install", "bash .ci/run")


def blocks() -> list[tuple[str, str]]:
    return _BLOCK.findall((REPO / "README.md").read_text(encoding="utf-8"))


def commands(code: str) -> list[str]:
    found = []
    for raw in code.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        parts = [part.strip() for part in line.split("&&") if part.strip() and not part.strip().startswith(_LEFT_OUT)]
        if parts:
            found.append(" && ".join(parts))
    return found


def environment(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OTEL_", "COLUMNS", "FORCE_COLOR"))}
    bin_dir = str(Path(sys.executable).parent)  # where this venv's otel-toolchain script is
    env.update(HOME=str(tmp_path), OTEL_TOOLCHAIN_OUTPUT_DIR=str(tmp_path / "state"), NO_COLOR="1",
               PATH=bin_dir + os.pathsep + env.get("PATH", ""))
    return env


def test_the_readme_marks_its_runnable_blocks() -> None:
    kinds = [kind for kind, _ in blocks()]
    assert kinds.count("bash") >= 2 and "text" in kinds
    assert "otel-toolchain replay examples/streams/claude-code-wedge.jsonl" in commands(blocks()[0][1])


@pytest.mark.parametrize(("kind", "code"), blocks(), ids=lambda value: value[:40])
def test_a_marked_block_runs_as_written(tmp_path: Path, kind: str, code: str) -> None:
    if "../shared" in code and (problem := shared_problem()) is not None:
        pytest.skip(problem)
    env = environment(tmp_path)
    if kind == "bash":
        for command in commands(code):
            done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=REPO, env=env, capture_output=True,
                                  text=True, timeout=300, check=False)
            assert done.returncode in (0, 75), (command, done.stderr)
            assert "Traceback" not in done.stderr, command
        return
    first, _, expected = code.partition("\n")
    assert first.startswith("$ "), "a text block to test starts with $ COMMAND"
    done = subprocess.run(shlex.split(first[2:]), cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert (done.returncode, done.stdout) == (0, expected), done.stderr
