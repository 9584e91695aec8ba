"""The OTLP receiver's throughput (spans per second on one core) and the Claude Code hook's cost per call.

Receiver: the real agents' recorded bodies (tests/data/otlp, every scenario) are decoded and read into
the default chain by :class:`~otel_toolchain.receiver.core.Receiver` on one thread. The baseline, in the
same run, is decoding alone (``ParseFromString`` / the OTLP/JSON parse of the same bodies). Reported:
spans per second with the chain, and the ratio of decode-only time to receive time (1.0 would mean the
chain costs nothing beyond decoding). Then the same bodies go over HTTP to a running ``serve`` core
(loopback, one connection), which adds the HTTP handling and the intake queue.

Hook: ``otel-toolchain hook claude-code`` is run as Claude Code runs it, one process per event, on a
recorded ``PostToolUse`` payload. The baseline is ``python -c pass`` (the interpreter starting) and the
in-process cost of one event (state file, replay, the new call) is given separately. Medians over rounds.
Run: ``python benchmarks/bench_receiver.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "receiver"))

from recorded import Body, bodies  # noqa: E402

from otel_toolchain.hooks.claude_code import handle_event  # noqa: E402
from otel_toolchain.manifest import Manifest  # noqa: E402
from otel_toolchain.receiver.core import Receiver  # noqa: E402
from otel_toolchain.receiver.decode import decode_body  # noqa: E402

SCENARIOS = sorted(p.parent.relative_to(REPO / "tests" / "data" / "otlp").as_posix()
                   for p in (REPO / "tests" / "data" / "otlp").glob("*/*/requests.jsonl"))
HOOK_PAYLOAD = REPO / "tests" / "data" / "hooks" / "claude-code" / "PostToolUse.healthy.json"


def _spans(corpus: list[list[Body]]) -> int:
    total = 0
    for run in corpus:
        for body in run:
            if body.signal == "traces":
                message = decode_body(body.signal, body.data, body.content_type, body.content_encoding)
                total += sum(len(ss.spans) for rs in message.resource_spans for ss in rs.scope_spans)
    return total


def _decode_only(corpus: list[list[Body]]) -> float:
    start = time.perf_counter()
    for run in corpus:
        for body in run:
            decode_body(body.signal, body.data, body.content_type, body.content_encoding)
    return time.perf_counter() - start


def _receive(corpus: list[list[Body]]) -> float:
    start = time.perf_counter()
    for run in corpus:
        receiver = Receiver(Manifest.default().toolchain())
        for body in run:
            receiver.ingest(body.signal, decode_body(body.signal, body.data, body.content_type, body.content_encoding))
        receiver.close()
    return time.perf_counter() - start


def _over_http(corpus: list[list[Body]]) -> float:
    import http.client  # noqa: PLC0415

    from otel_toolchain.receiver.http_server import OtlpHttpServer  # noqa: PLC0415
    from otel_toolchain.receiver.intake import Intake  # noqa: PLC0415

    intake = Intake(Receiver(Manifest.default().toolchain()), None, max_queue=4096)
    server = OtlpHttpServer(intake, "127.0.0.1", 0)
    host, port = server.address
    conn = http.client.HTTPConnection(host, port, timeout=30)
    start = time.perf_counter()
    for run in corpus:
        for body in run:
            conn.request("POST", f"/v1/{body.signal}", body.data, {"Content-Type": body.content_type,
                                                                    **({"Content-Encoding": body.content_encoding}
                                                                       if body.content_encoding else {})})
            conn.getresponse().read()
    intake.wait_idle()
    elapsed = time.perf_counter() - start
    conn.close()
    server.close()
    intake.stop()
    return elapsed


def _hook_process(state: Path, payload: str) -> float:
    env = os.environ | {"OTEL_TOOLCHAIN_HOOK_STATE_DIR": str(state), "OTEL_TOOLCHAIN_OUTPUT_DIR": str(state / "out")}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "otel_toolchain", "hook", "claude-code"], input=payload, text=True,
                   env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def _python_start() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    corpus = [list(bodies(s)) for s in SCENARIOS]
    spans = _spans(corpus)
    decode, receive, http_s = [], [], []
    for _ in range(args.rounds):
        decode.append(_decode_only(corpus))
        receive.append(_receive(corpus))
        http_s.append(_over_http(corpus))
    d, r, h = (statistics.median(x) for x in (decode, receive, http_s))
    print(f"receiver: {spans} spans in {len(SCENARIOS)} recorded runs")
    print(f"  decode only        {spans / d:10.0f} spans/s")
    print(f"  decode + chain     {spans / r:10.0f} spans/s   (ratio decode/receive {d / r:.2f})")
    print(f"  over HTTP + chain  {spans / h:10.0f} spans/s   (ratio decode/http {d / h:.2f})")

    payload = json.loads(HOOK_PAYLOAD.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        manifest = Manifest.default()
        starts, hooks, inproc = [], [], []
        for n in range(args.rounds * 4):
            starts.append(_python_start())
            event = payload | {"tool_use_id": f"b{n}", "tool_response": {"stdout": str(n)}}
            hooks.append(_hook_process(state, json.dumps(event)))
            t = time.perf_counter()
            handle_event(event | {"session_id": "in-process"}, manifest, state)
            inproc.append(time.perf_counter() - t)
    s, k, i = (statistics.median(x) for x in (starts, hooks, inproc))
    print("hook claude-code, per call (median):")
    print(f"  python -c pass     {s * 1000:8.1f} ms  (baseline)")
    print(f"  hook process       {k * 1000:8.1f} ms  (ratio {k / s:.1f}x the interpreter's start)")
    print(f"  in-process event   {i * 1000:8.2f} ms  (state file, replay of the turn so far, the new call)")


if __name__ == "__main__":
    main()
