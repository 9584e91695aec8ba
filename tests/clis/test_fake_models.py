"""The scripted fake model server of tests/clis/fake_models.py, spoken to over HTTP with urllib."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from fake_models import (
    CYCLE_COMMANDS,
    FINAL_TEXT,
    FinalText,
    ToolCall,
    count_tool_results,
    fake_model_server,
    next_move,
    scenario_for_model,
)

BASH = {"type": "function", "function": {"name": "bash", "parameters": {"properties": {"command": {}}}}}


def post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    """POST JSON, return status and raw body (HTTP errors included)."""
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def sse_data(raw: bytes) -> list[Any]:
    """The decoded ``data:`` payloads of an SSE body (``[DONE]`` kept as a string)."""
    out: list[Any] = []
    for line in raw.decode().splitlines():
        if line.startswith("data: "):
            payload = line[len("data: ") :]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def test_scripts() -> None:
    """Moves per scenario: endless ones never finish, healthy finishes after N calls."""
    assert next_move("wedge", 50, 3) == next_move("wedge", 0, 3)
    assert [next_move("cycle2", i, 3) for i in range(3)] == [ToolCall(c) for c in (*CYCLE_COMMANDS, CYCLE_COMMANDS[0])]
    assert next_move("healthy", 2, 3) != FinalText(FINAL_TEXT) and next_move("healthy", 3, 3) == FinalText(FINAL_TEXT)
    assert scenario_for_model("fake/fake-cycle2", "wedge") == "cycle2"
    assert scenario_for_model("claude-opus", "failing") == "failing"
    with pytest.raises(ValueError):
        next_move("nope", 0, 1)


def test_tool_results_are_counted_per_wire() -> None:
    """Each wire format's conversation is counted the way the fake decides its move."""
    anthropic = {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]}
    responses = {"input": [{"type": "function_call"}, {"type": "function_call_output"}]}
    chat = {"messages": [{"role": "user"}, {"role": "tool"}, {"role": "tool"}]}
    assert [count_tool_results("anthropic", anthropic), count_tool_results("responses", responses),
            count_tool_results("chat", chat)] == [1, 1, 2]


def test_chat_completions_tool_call_then_text() -> None:
    """Chat completions: a bash tool call in fragments, ``[DONE]``; the model name picks the scenario."""
    with fake_model_server("wedge", delay=0.0, healthy_calls=1) as server:
        status, raw = post(f"{server.base_url}/v1/chat/completions",
                           {"model": "fake-healthy", "stream": True, "tools": [BASH], "messages": []})
        chunks = sse_data(raw)
        args = "".join(c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                       for c in chunks[1:3])
        assert status == 200 and chunks[-1] == "[DONE]" and json.loads(args) == {"command": "date +%s%N"}
        assert chunks[3]["choices"][0]["finish_reason"] == "tool_calls"
        done = {"model": "fake-healthy", "stream": True, "tools": [BASH], "messages": [{"role": "tool"}]}
        assert FINAL_TEXT in post(f"{server.base_url}/v1/chat/completions", done)[1].decode()
        assert [r.answer for r in server.snapshot()] == ["tool", "text"]


def test_anthropic_retry_side_and_count_tokens() -> None:
    """Anthropic: one 529 in ``retry``, then a Bash tool_use; side requests and count_tokens answered."""
    bash = {"name": "Bash", "input_schema": {}}
    with fake_model_server("retry", delay=0.0) as server:
        url = f"{server.base_url}/v1/messages?beta=true"
        body = {"model": "m", "stream": True, "tools": [bash], "messages": []}
        assert post(url, body)[0] == 529
        status, raw = post(url, body)
        events = sse_data(raw)
        assert status == 200 and events[0]["type"] == "message_start"
        assert events[1]["content_block"]["type"] == "tool_use" and events[4]["delta"]["stop_reason"] == "tool_use"
        side = json.loads(post(url, {"model": "m", "messages": []})[1])
        assert side["content"][0]["type"] == "text"
        tokens = json.loads(post(f"{server.base_url}/v1/messages/count_tokens", {"messages": []})[1])
        assert tokens == {"input_tokens": 42}


def test_responses_function_call() -> None:
    """Responses: ``exec_command`` function call with a ``cmd`` argument, then ``response.completed``."""
    tool = {"type": "function", "name": "exec_command"}
    with fake_model_server("cycle2", delay=0.0) as server:
        body = {"model": "gpt-5.5", "stream": True, "tools": [tool],
                "input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]}
        events = sse_data(post(f"{server.base_url}/v1/responses", body)[1])
        assert [e["type"] for e in events] == ["response.created", "response.output_item.added",
                                               "response.output_item.done", "response.completed"]
        assert json.loads(events[2]["item"]["arguments"]) == {"cmd": CYCLE_COMMANDS[1]}
