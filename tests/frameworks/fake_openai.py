"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1, for running real agent frameworks offline.

The script is stateless, read from each request: the model asks for the tool ``get_weather``
(``{"city": "Paris"}``) until the conversation holds ``calls`` tool results, then answers
``done``. So every framework, however it keeps its history or retries, sees the same run: ``calls``
tool calls, one per model turn, with call ids ``call_1`` … ``call_<calls>``, then a final answer.

Both forms of ``POST /v1/chat/completions`` (and ``/chat/completions``) are served: a JSON body,
or Server-Sent Events when the request says ``"stream": true`` (a usage chunk follows when
``stream_options.include_usage`` is set). ``GET /v1/models`` lists the one model. Requests are kept
(``server.requests``) so a test can say what the framework sent.

Usage::

    with FakeOpenAI(calls=40) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-fake")

The server listens on 127.0.0.1 only, on a free port, in a daemon thread; leaving the ``with``
block (or :meth:`close`) stops it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

TOOL = "get_weather"
ARGUMENTS = {"city": "Paris"}
FINAL = "done"
MODEL = "gpt-4o-mini"


def tool_results_in(messages: list[dict[str, Any]]) -> int:
    """How many tool results the conversation holds (``role: tool`` messages)."""
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool")


@dataclass
class Script:
    """What the model says next: a tool call while fewer than ``calls`` results came back, then FINAL."""

    calls: int
    tool: str = TOOL
    arguments: dict[str, Any] = field(default_factory=lambda: dict(ARGUMENTS))

    def reply(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The assistant message for a request whose history is ``messages``."""
        done = tool_results_in(messages)
        if done >= self.calls:
            return {"role": "assistant", "content": FINAL}
        call = {"id": f"call_{done + 1}", "type": "function",
                "function": {"name": self.tool, "arguments": json.dumps(self.arguments)}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def completion(message: dict[str, Any], model: str, n: int) -> dict[str, Any]:
    """A whole ``chat.completion`` body carrying ``message``."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": _usage()}


def chunks(message: dict[str, Any], model: str, n: int, *, usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` bodies that stream ``message``: role, content or tool call, finish."""
    base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    out = [chunk({"role": "assistant", "content": ""})]
    calls = message.get("tool_calls") or []
    for i, call in enumerate(calls):
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]}))
    if message.get("content"):
        out.append(chunk({"content": message["content"]}))
    out.append(chunk({}, "tool_calls" if calls else "stop"))
    if usage:
        out.append({**base, "choices": [], "usage": _usage()})
    return out


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the frameworks' runs are what the captures are about

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "fake"}]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        with self.server.lock:
            self.server.requests.append(request)
            n = len(self.server.requests)
        message = self.server.script.reply(request.get("messages") or [])
        model = str(request.get("model") or MODEL)
        if not request.get("stream"):
            self._send_json(200, completion(message, model, n))
            return
        usage = bool((request.get("stream_options") or {}).get("include_usage"))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for body in chunks(message, model, n, usage=usage):
            self.wfile.write(f"data: {json.dumps(body)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()


class FakeOpenAI:
    """The scripted server, started on construction; a context manager that stops it."""

    def __init__(self, calls: int, *, tool: str = TOOL, arguments: dict[str, Any] | None = None) -> None:
        self._server = _Server(Script(calls, tool, dict(arguments or ARGUMENTS)))
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI client's ``base_url`` (with ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every chat-completion request body received, oldest first."""
        with self._server.lock:
            return list(self._server.requests)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
