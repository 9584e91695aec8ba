"""The OTLP receiver's throughput (spans per second on one core) and the Claude Code hook's cost per call.

Receiver: the real agents' recorded bodies (tests/data/otlp, every scenario) are decoded and read into
the default chain by :class:`~otel_toolchain.receiver.core.Receiver` on one thread. The baseline, in the
same run, is decoding alone (``ParseFromString`` / the OTLP/JSON parse of the same bodies). Reported:
spans per second with the chain, and the ratio of decode-only time to receive time (1.0 would mean the
chain costs nothing beyond decoding). Then the same bodies go over HTTP to a running ``serve`` core
(loopback, one connection), which adds the HTTP handling and the intake queue.

Hook: ``otel-toolchain hook claude-code`` is run as Claude Code runs it, one process per event, on a
recorded ``PostToolUse`` payload: answered by the warm hook server (started by a first call, ended
after), and with ``--no-server`` (each call imports the chain). The baseline is ``python -c pass`` (the
interpreter starting) and the in-process cost of one event (state file, replay, the new call) is given
separately. Medians over rounds.
Stop latency: ``otel-toolchain run --telemetry`` over the real Vercel AI SDK agent in its wedge (fake model
on 127.0.0.1), from the 25th identical call's end (its ``ai.toolCall`` span's end time, as forwarded) to
the agent's process group being gone (polled every millisecond). Needs ``.ci/install-agents``.
Run: ``python benchmarks/bench_receiver.py [--rounds N] [--latency-runs N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "receiver"))

from recorded import Body, bodies  # noqa: E402

from otel_toolchain.hooks.claude_code import READER  # noqa: E402
from otel_toolchain.hooks.session import handle_event  # noqa: E402
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


def _hook_env(state: Path) -> dict[str, str]:
    return os.environ | {"OTEL_TOOLCHAIN_HOOK_STATE_DIR": str(state), "OTEL_TOOLCHAIN_OUTPUT_DIR": str(state / "out"),
                         "OTEL_TOOLCHAIN_HOOK_SERVER": "on"}


def _hook_process(state: Path, payload: str, *extra: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "otel_toolchain", "hook", "claude-code", *extra], input=payload, text=True,
                   env=_hook_env(state), check=True, capture_output=True)
    return time.perf_counter() - start


def _warm_server(state: Path, payload: str) -> int:
    """Start the warm hook server (the first call does) and wait until it listens; its pid."""
    _hook_process(state, payload)
    return wait_for_server(state)


def wait_for_server(state: Path) -> int:
    """The pid of the warm hook server listening in the hook state folder ``state``, once it listens."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the hook's digest of sys.path is the hook's own, not this script's
        pids = [p for p in (state / "warm").glob("*.pid") if p.with_suffix(".sock").exists()]
        if pids:
            return int(pids[0].read_text())
        time.sleep(0.05)
    raise SystemExit(f"no warm hook server came up in {state}")


def _python_start() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def _child_of(pid: int, deadline: float) -> int | None:
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return None
        if children:
            return int(children[0])
        time.sleep(0.001)
    return None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop_latency(tmp: Path) -> float | None:
    """Seconds from the 25th call's end to the agent's group gone, for one wedged run."""
    sys.path.insert(0, str(REPO / "tests" / "agents"))
    sys.path.insert(0, str(REPO / "tests" / "clis"))
    import recording  # noqa: PLC0415
    from fake_openai import fake_openai  # noqa: PLC0415

    with fake_openai("wedge") as model:
        launch = recording.vercel_launch(model, "http://unused", tmp, "wedge", stream=False)
        env = {k: v for k, v in launch.env.items() if not k.startswith("OTEL_")} | {
            "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp / "out")}
        run = subprocess.Popen([sys.executable, "-m", "otel_toolchain", "run", "--telemetry", "--", *launch.argv],
                               env=env, cwd=launch.cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        child = _child_of(run.pid, time.monotonic() + 30)
        gone = None
        while child is not None and run.poll() is None:
            if gone is None and not _group_alive(child):
                gone = time.time()
            time.sleep(0.001)
        run.wait()
    ends = sorted(int(span["endTimeUnixNano"]) for line in (tmp / "out" / "traces.jsonl").read_text().splitlines()
                  for rs in json.loads(line).get("resourceSpans", []) for ss in rs["scopeSpans"]
                  for span in ss["spans"] if span["name"] == "ai.toolCall")
    if gone is None or len(ends) < 25:
        return None
    return gone - ends[24] / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency-runs", type=int, default=3)
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
        server = _warm_server(state, json.dumps(payload | {"session_id": "warm-up"}))
        starts, warm, cold, inproc = [], [], [], []
        try:
            for n in range(args.rounds * 4):
                starts.append(_python_start())
                event = payload | {"tool_use_id": f"b{n}", "tool_response": {"stdout": str(n)}}
                warm.append(_hook_process(state, json.dumps(event | {"session_id": "warm"})))
                cold.append(_hook_process(state, json.dumps(event | {"session_id": "cold"}), "--no-server"))
                t = time.perf_counter()
                handle_event(event | {"session_id": "in-process"}, READER, manifest, state)
                inproc.append(time.perf_counter() - t)
        finally:
            os.kill(server, signal.SIGTERM)
    s, w, k, i = (statistics.median(x) for x in (starts, warm, cold, inproc))
    print("hook claude-code, per call (median):")
    print(f"  python -c pass     {s * 1000:8.1f} ms  (baseline)")
    print(f"  warm hook server   {w * 1000:8.1f} ms  (ratio {w / s:.1f}x the interpreter's start)")
    print(f"  --no-server        {k * 1000:8.1f} ms  (ratio {k / s:.1f}x the interpreter's start)")
    print(f"  in-process event   {i * 1000:8.2f} ms  (state file, replay of the turn so far, the new call)")
    _latency_report(args.latency_runs)


def _latency_report(runs: int) -> None:
    if not (REPO / "tests" / "agents" / "vercel-ai" / "node_modules").exists():
        print("stop latency: skipped (run .ci/install-agents for the Vercel agent's npm deps)")
        return
    found = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            latency = _stop_latency(Path(tmp))
        if latency is not None:
            found.append(latency)
    if found:
        print(f"stop latency, 25th call's end to the agent's group gone: median {statistics.median(found):.3f} s, "
              f"max {max(found):.3f} s over {len(found)} runs (200 ms export interval)")
    else:
        print("stop latency: no run could be measured")


if __name__ == "__main__":
    main()
