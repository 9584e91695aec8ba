#!/usr/bin/env bash
# Makes the two venvs the captures and seams run in (no system site packages), from the pins beside this file:
#   tests/frameworks/make_venvs.sh [dir]    (default /work/venvs: dir/fw-main and dir/fw-adk)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-/work/venvs}
for pair in "fw-main:requirements-frameworks.txt" "fw-adk:requirements-adk.txt"; do
  venv="$dir/${pair%%:*}"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q -U pip
  "$venv/bin/pip" install -q -r "$here/${pair#*:}"
done
