"""Workspace files of the recording scenarios (tests/clis/scenarios.py): small real projects.

Every mapping is relative path -> text. The programs are real (pytest, node's test runner, cargo,
cc through make); the projects are tiny so that each output stays short.
"""

from __future__ import annotations

STATUS_FILES = {"status.txt": "deploy: waiting for the lock held by job 17\n"}

PYTEST_FILES = {
    "test_report.py": '''\
from pathlib import Path


def render(total: int) -> str:
    return f"total: {total}\\n"


def test_report_is_written(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    report.write_text(render(3))
    assert report.read_text() == "total: 4\\n", f"unexpected report in {report}"
''',
}

NODE_FILES = {
    "package.json": '{"name": "sum", "version": "1.0.0", "private": true}\n',
    "test/sum.test.js": '''\
const test = require("node:test");
const assert = require("node:assert");

function sum(values) {
  return values.reduce((a, b) => a + b, 1);
}

test("sum adds the values", () => {
  assert.strictEqual(sum([1, 2, 3]), 6);
});
''',
}

CARGO_FILES = {
    "Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
    "src/lib.rs": '''\
pub fn add(a: i32, b: i32) -> i32 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_two_numbers() {
        assert_eq!(add(2, 2), 4);
    }
}
''',
}

# A build that fails the same way every time, printing what real builds print: a timestamp, its
# PID, a scratch directory from mktemp and how long it took. The compiler error itself is real.
BUILD_FILES = {
    "Makefile": "all:\n\t@./build.sh\n",
    "build.sh": '''\
#!/bin/sh
start=$(date +%s%N)
scratch=$(mktemp -d)
echo "[$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)] build started (pid $$, scratch $scratch)"
cc -c main.c -o "$scratch/main.o" 2>&1
status=$?
rm -rf "$scratch"
echo "[$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)] build failed after $(( ($(date +%s%N) - start) / 1000000 )) ms"
exit $(( status == 0 ? 0 : 1 ))
''',
    "main.c": '#include <stdio.h>\n\nint main(void) { printf("%s\\n", VERSION); return 0; }\n',
    "config.h.in": '#define VERSION "@VERSION@"\n',
}

FIX_NEXT = '''\
"""Fix the first test marked BUG in test_suite.py (one per run)."""
from pathlib import Path

suite = Path("test_suite.py")
lines = suite.read_text().splitlines(keepends=True)
for number, line in enumerate(lines):
    if line.rstrip().endswith("# BUG"):
        lines[number] = line.replace("+ 2  # BUG", "+ 1  # fixed")
        break
suite.write_text("".join(lines))
'''


def _fixing_suite(count: int) -> str:
    """A test module with ``count`` failing tests, each fixable by fix_next.py."""
    tests = "".join(f"\n\ndef test_case_{i}() -> None:\n    assert inc({i}) == {i} + 2  # BUG\n"
                    for i in range(1, count + 1))
    return f"def inc(value: int) -> int:\n    return value + 1\n{tests}"


FIXING_FILES = {"fix_next.py": FIX_NEXT, "test_suite.py": _fixing_suite(8)}

BUILD_LOG_DONE = "BUILD SUCCEEDED"
POLL_LOG_FILES = {
    "build.log": "[12:00:01] compiling 118/120 modules\n[12:00:02] linking target app\n"
                 "[12:00:02] running the post-link step (this takes a while)\n",
}

PACKAGES = ("pkg-a", "pkg-b", "pkg-c", "pkg-d", "pkg-e", "pkg-f")
_PACKAGE_MAKEFILE = ("check:\n\t@test -f PACKAGE || { echo 'not in a package directory'; exit 2; }\n"
                     "\t@echo '4 checks passed'\n")
PACKAGES_FILES = {
    **{f"{name}/Makefile": _PACKAGE_MAKEFILE for name in PACKAGES},
    **{f"{name}/PACKAGE": f"{name}\n" for name in PACKAGES},
}
