"""Each framework for real, under each instrumentation family, with otel_toolchain dropped in.

Every case runs ``guarded.py`` in a child process of the current interpreter (instrumentors patch
globally): the real framework and instrumentation, the tool real, the model faked (a scripted
OpenAI-compatible server on 127.0.0.1, ``fake_openai.py``; ADK: a scripted ``BaseLlm``), because
a test must not call a paid model. Wedged: 40 identical calls asked for, the same result each
time; the chain stops the turn as the 25th call's span ends and the integration ends the run
there. Healthy: 40 calls with a new result each, run to the end.

These need the framework venvs (``tests/frameworks/make_venvs.sh``; ``.ci/run-frameworks`` runs
them): a case whose framework is not importable here is skipped, saying so.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
pytestmark = [pytest.mark.integration, pytest.mark.frameworks]

MODULES = {"strands": "strands", "llamaindex": "llama_index.core", "crewai": "crewai", "agno": "agno",
           "adk": "google.adk"}
PAIRS = [("strands", "native"), ("strands", "native-latest"), ("strands", "openinference"),
         ("llamaindex", "native"), ("llamaindex", "openinference"), ("llamaindex", "traceloop"),
         ("llamaindex", "traceloop-nonstreaming"), ("llamaindex", "genai"),
         ("crewai", "native"), ("crewai", "openinference"),
         ("agno", "openinference"), ("agno", "traceloop"), ("agno", "genai"),
         ("adk", "native-content"), ("adk", "native-legacy"), ("adk", "openinference")]
SCOPES = {  # the instrumentation scope of the tool spans the chain read: the family is the one in effect
    ("strands", "native"): "strands.telemetry.tracer", ("strands", "native-latest"): "strands.telemetry.tracer",
    ("strands", "openinference"): "strands.telemetry.tracer",  # its processor rewrites Strands' own spans
    ("llamaindex", "native"): "llamaindex.opentelemetry.tracer",
    ("llamaindex", "openinference"): "openinference.instrumentation.llama_index",
    ("llamaindex", "traceloop"): "opentelemetry.instrumentation.llamaindex",
    ("llamaindex", "traceloop-nonstreaming"): "opentelemetry.instrumentation.llamaindex",
    ("llamaindex", "genai"): "opentelemetry.instrumentation.genai.llama_index",
    ("crewai", "native"): "crewai", ("crewai", "openinference"): "openinference.instrumentation.crewai",
    ("agno", "openinference"): "openinference.instrumentation.agno",
    ("agno", "traceloop"): "opentelemetry.instrumentation.agno",
    ("agno", "genai"): "opentelemetry.instrumentation.genai.agno",
    ("adk", "native-content"): "gcp.vertex.agent", ("adk", "native-legacy"): "gcp.vertex.agent",
    ("adk", "openinference"): "openinference.instrumentation.google_adk",
}
ENDED = {  # how the caller sees the end of a stopped run, through each integration
    "strands": "TurnStopped at call 25", "llamaindex": "TurnStopped at call 25", "crewai": "TurnStopped at call 25",
    "agno": "TurnStopped at call 25", "adk": "TurnStopped at call 25",
}


def importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def run(framework: str, family: str, scenario: str) -> dict[str, Any]:
    if not importable(MODULES[framework]):
        pytest.skip(f"{framework} is not installed in {sys.executable} (tests/frameworks/make_venvs.sh makes its venv)")
    done = subprocess.run([sys.executable, str(HERE / "guarded.py"), framework, family, scenario],
                          capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "PYTHONPATH": str(HERE)})
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


EARLY_WORKFLOW_END = pytest.mark.xfail(strict=True, reason=(
    "Traceloop's LlamaIndex instrumentation (0.62.4) ends FunctionAgent.workflow's span while the run goes on: "
    "a streamed model response's end event ends its holder and every ancestor (SpanHolder.process_event -> "
    "notify_parent, dispatcher_wrapper.py:95-107), the running step and the workflow span included. Each "
    "later step is a child of an ended span, so each call is a turn of its own (tool_stats [0, 1, 1, ...]) "
    "and no 25 repeats meet in one turn. The chain cannot hold a turn open past its span's end: the span is "
    "exported, the report sent, and nothing says when the run ends (the steps do not overlap). With "
    "FunctionAgent(streaming=False) the span lives to the end: the traceloop-nonstreaming row passes"))
KNOWN = {("llamaindex", "traceloop"): [EARLY_WORKFLOW_END]}
WEDGED = [pytest.param(*p, id=f"{p[0]}-{p[1]}", marks=KNOWN.get(p, [])) for p in PAIRS]


@pytest.mark.parametrize(("framework", "family"), WEDGED)
def test_wedged_run_ends_at_the_25th_call(framework: str, family: str) -> None:
    result = run(framework, family, "wedged")
    # Agno's hook runs inside the tool span: the stop is seen at the next call's hook, which refuses that
    # call before it runs; Agno still records its span (tool_stats counts the 26 spans, 25 calls ran)
    spans = 26 if framework == "agno" else 25
    assert (result["tool_calls"], result["stops"], result["stats"]) == (25, [25], [spans])
    assert result["model_requests"] == spans  # none after the stop
    assert result["outcome"] == ENDED[framework]
    assert result["classes"] == ["network"] * spans
    assert result["tool_scopes"] == [SCOPES[framework, family]]
    (turn,) = result["stopped_turns"]
    assert (turn["status"], turn["error.type"]) == ("ERROR", "tool_plugin.repeat_guard")


HEALTHY = [pytest.param(*p, id=f"{p[0]}-{p[1]}", marks=[EARLY_WORKFLOW_END] if p == ("llamaindex", "traceloop") else [])
           for p in PAIRS]


@pytest.mark.parametrize(("framework", "family"), HEALTHY)
def test_healthy_run_is_not_stopped(framework: str, family: str) -> None:
    result = run(framework, family, "healthy")
    assert (result["tool_calls"], result["stops"], result["stats"]) == (40, [], [40])
    assert result["outcome"].startswith("returned") and result["stopped_turns"] == []
    assert result["classes"] == ["network"] * 40
    assert result["tool_scopes"] == [SCOPES[framework, family]]
