#!/usr/bin/env bash
# Runs the project's own suite (not the integration tests) on one OpenTelemetry release, in a new venv
# (the venv path given is deleted and made again).
#   tests/frameworks/otel_floor.sh 1.39 [venv] [pytest args]   (1.N: newest 1.N.x; 1.N.M: that release)
# The package is installed with --no-deps so its own OTel pins are overridden; every other test
# dependency is installed as the test extra names it. The contrib packages (semantic conventions,
# the Prometheus exporter) follow the SDK: 1.N goes with 0.(N+21)b*.
set -euo pipefail
minor=${1:?usage: otel_floor.sh 1.N [venv]}
venv=${2:-/work/venvs/fw-otel}
repo=$(cd "$(dirname "$0")/../.." && pwd)
n=${minor#1.}; n=${n%%.*}  # 1.42 or 1.42.0 -> 42
contrib="0.$((n + 21))b0"
rm -rf "$venv" && python3 -m venv "$venv"  # fresh: no package of another release left behind
"$venv/bin/pip" install -q --no-deps -e "$repo"
"$venv/bin/pip" install -q "pydantic>=2.6" "pytest>=8" "hypothesis>=6.100" "mypy>=1.10" "ruff>=0.5" types-protobuf \
  pyyaml hatchling "grafana-foundation-sdk==1769699379!11.6.0" matplotlib zstandard "rich>=13" \
  "opentelemetry-api==$minor.*" "opentelemetry-sdk==$minor.*" "opentelemetry-exporter-otlp==$minor.*" \
  "opentelemetry-exporter-prometheus>=$contrib,<0.$((n + 22))b0"
"$venv/bin/pip" list 2>/dev/null | grep -E '^opentelemetry-(api|sdk|exporter-otlp|semantic-conventions|exporter-prometheus) '
cd "$repo"
"$venv/bin/python" -m pytest -m "not integration" -q -p no:cacheprovider "${@:3}"
