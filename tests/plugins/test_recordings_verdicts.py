"""Every recording of tests/data/recordings, replayed as ``otel-toolchain replay --format json`` does, meets
its expected verdict in verdicts.toml.

Nothing is faked: the files are real runs of the four CLIs (see tests/data/recordings/README.md),
replayed through the real command (``main(["replay", ...])``: manifest, readers, writer, chain and the
embedded OTLP-file export into a temporary folder), once per chain for all files. The expected
numbers come from count_verdicts.py, an oracle that does not import otel_toolchain.

Chains: ``default`` (the seed's, limit 25), ``early`` (``limits = {1 = 4, 2 = 3, 3 = 3}``,
``poll_limit = 25``), both with the shipped identity (a failure's lines in any order:
verdicts' ``unordered_*``), and ``early_ordered`` (``unordered_failures = false``: the plain
``early_*`` verdicts). Per recording: calls, stop call, loop start and period under each chain; no stop
(not even a shadow one) on a healthy run; a wedge stopped by the early chain no later than the fastest
stopping peer. The exceptions are named in verdicts.toml (``blind_spot``).

A Codex stream is replayed with its rollout in a ``CODEX_HOME``, as ``run`` and ``replay`` find it on
the machine that ran Codex (``read_with_rollout``: the stream alone names no folder); replayed
without it, it meets the ``without_rollout_*`` verdicts.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otel_toolchain.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA = Path(__file__).resolve().parents[1] / "data" / "recordings"
VERDICTS: dict[str, dict[str, Any]] = tomllib.loads((DATA / "verdicts.toml").read_text())

_GUARD = '[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 25\n'
_EARLY = _GUARD + "limits = { 1 = 4, 2 = 3, 3 = 3 }\npoll_limit = 25\n"
_REST = '[[agent.tool_plugins]]\nplugin = "classify"\n\n[[agent.tool_plugins]]\nplugin = "tool_stats"\n'
CHAINS: dict[str, tuple[str | None, str]] = {
    # name: (manifest, or None for the embedded default; the verdicts' field prefix)
    "default": (None, "unordered_default_"),
    "early": (_EARLY + "\n" + _REST, "unordered_early_"),
    "early_ordered": (_EARLY + "unordered_failures = false\n\n" + _REST, "early_"),
}
SESSION_FIELDS = {"default": "session_unordered_default_stop", "early": "session_unordered_early_stop",
                  "early_ordered": "session_early_stop"}

"""Scenarios where the early chain may stop after the fastest peer, by at most (loop start - 1) calls."""


def _replay_all(manifest: str | None, files: list[Path], out: Path) -> dict[str, dict[str, Any]]:
    """``otel-toolchain replay --format json FILES`` with ``manifest``: each turn's JSON object by source."""
    argv = ["replay", "--format", "json"]
    if manifest is not None:
        path = out / "manifest.toml"
        path.write_text(manifest)
        argv += ["--manifest", str(path)]
    printed, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
        code = main(argv + [str(f) for f in files])
    turns: dict[str, dict[str, Any]] = {}
    for line in printed.getvalue().splitlines():
        turn = json.loads(line)
        assert turn["source"] not in turns, f"{turn['source']}: more than one turn"
        turns[turn["source"]] = turn
    stopped = any(turn["stopped"] for turn in turns.values())
    assert code == (75 if stopped else 0), errors.getvalue()  # replay exits 75 when it stopped a turn
    return turns


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory,
             codex_home_with_rollouts: Path) -> Iterator[dict[str, dict[str, dict[str, Any]]]]:
    """Per chain, the turns of every recording and session file, by file name relative to DATA."""
    files = sorted({DATA / v["file"] for v in VERDICTS.values()} | {DATA / v["session"] for v in VERDICTS.values()
                                                                   if "session" in v})
    found: dict[str, dict[str, dict[str, Any]]] = {}
    with pytest.MonkeyPatch.context() as patch:
        for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TOOLCHAIN_DIGEST_KEY"):
            patch.delenv(var, raising=False)
        patch.setenv("CODEX_HOME", str(codex_home_with_rollouts))
        for name, (manifest, _) in CHAINS.items():
            out = tmp_path_factory.mktemp(name)
            patch.setenv("OTEL_TOOLCHAIN_OUTPUT_DIR", str(out))
            turns = _replay_all(manifest, files, out)
            found[name] = {str(Path(source).relative_to(DATA)): turn for source, turn in turns.items()}
    yield found


def _stop(turn: dict[str, Any] | None) -> dict[str, Any] | None:
    """The turn's stop, enforced or shadow (a healthy run must have neither)."""
    if turn is None:
        return None
    stop: dict[str, Any] | None = turn["stopped"] or turn["shadow_stopped"]
    return stop


def _figures(turn: dict[str, Any] | None) -> dict[str, int]:
    stop = _stop(turn)
    return {"calls": turn["calls"] if turn else 0, "stop": stop["at_call"] if stop else 0,
            "loop_start": stop["loop_start"] if stop else 0, "period": stop["period"] if stop else 0}


def _expected(verdict: dict[str, Any], prefix: str) -> dict[str, int]:
    stop = verdict[f"{prefix}stop"]
    period = verdict["early_period"] if prefix == "early_" else (verdict["most_repeated_period"] if stop else 0)
    return {"calls": verdict["calls"], "stop": stop, "loop_start": verdict[f"{prefix}loop_start"], "period": period}


@pytest.mark.parametrize("key", sorted(VERDICTS))
def test_recording_meets_its_verdict(key: str, replayed: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Calls, stop call, loop start and period of each chain are verdicts.toml's, for the stream file."""
    verdict = VERDICTS[key]
    got = {name: _figures(replayed[name].get(verdict["file"])) for name in CHAINS}
    want = {name: _expected(verdict, prefix) for name, (_, prefix) in CHAINS.items()}
    assert got == want, f"{key} ({verdict['verdict']}, {verdict['calls']} calls): replayed {got}, expected {want}"


@pytest.mark.parametrize("key", sorted(k for k, v in VERDICTS.items() if "session" in v))
def test_session_file_meets_its_verdict(key: str, replayed: dict[str, dict[str, dict[str, Any]]]) -> None:
    """The CLI's own session file (Claude Code transcript, Codex rollout, Pi session) gives the session_* verdicts."""
    verdict = VERDICTS[key]
    got = {name: _figures(replayed[name].get(verdict["session"])) for name in CHAINS}
    got_stops = {name: (figures["calls"], figures["stop"]) for name, figures in got.items()}
    want = {name: (verdict["session_calls"], verdict[field]) for name, field in SESSION_FIELDS.items()}
    assert got_stops == want, f"{verdict['session']}: replayed (calls, stop) {got_stops}, expected {want}"


@pytest.mark.parametrize("key", sorted(k for k, v in VERDICTS.items() if v["verdict"] == "healthy"))
def test_no_healthy_run_is_stopped(key: str, replayed: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A healthy run gets no stop and no shadow stop from any chain, unless verdicts.toml names a blind spot."""
    verdict = VERDICTS[key]
    stops = {name: _stop(replayed[name][verdict["file"]]) for name in CHAINS}
    stopped = {name: stop["at_call"] for name, stop in stops.items() if stop is not None}
    if "blind_spot" in verdict:
        assert stopped, f"{key}: documented blind spot ({verdict['blind_spot']}) but nothing stopped: update the docs"
        return
    assert stopped == {}, f"{key} is healthy but was stopped: {stopped}"


@pytest.mark.parametrize("key", sorted(k for k, v in VERDICTS.items() if v["verdict"] == "wedged"))
def test_wedge_stopped_no_later_than_the_fastest_peer(key: str, replayed: dict[str, dict[str, dict[str, Any]]]) -> None:
    """The early chain stops every wedge it can see, enforced, by the fastest stopping peer's call."""
    verdict = VERDICTS[key]
    turn = replayed["early"].get(verdict["file"])
    if "blind_spot" in verdict:
        assert _stop(turn) is None, f"{key}: documented blind spot ({verdict['blind_spot']}), yet stopped"
        return
    assert turn is not None and turn["stopped"] is not None, f"{key}: wedged, not stopped by the early chain"
    stop = turn["stopped"]
    assert stop["loop_start"] == verdict["designed_loop_start"], f"{key}: loop start {stop['loop_start']}"
    peer, peer_call = verdict["fastest_peer"], verdict["fastest_peer_call"]
    if not peer:
        return  # no stopping peer catches this wedge (the cycles of 2 and 3 calls)
    assert stop["at_call"] <= peer_call, f"{key}: early chain stopped at call {stop['at_call']}, {peer} at {peer_call}"


WITHOUT_ROLLOUT = sorted(k for k, v in VERDICTS.items() if v.get("read_with_rollout"))


def test_a_codex_stream_without_its_rollout_meets_its_stream_alone_verdicts(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """No rollout on this machine: the stream alone (cd_dirs, six folders, reads as one command repeated)."""
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TOOLCHAIN_DIGEST_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex-here"))
    got = {}
    for name in ("default", "early"):
        out = tmp_path / name
        out.mkdir()
        monkeypatch.setenv("OTEL_TOOLCHAIN_OUTPUT_DIR", str(out))
        turns = _replay_all(CHAINS[name][0], [DATA / VERDICTS[key]["file"] for key in WITHOUT_ROLLOUT], out)
        got[name] = {key: _figures(turns.get(str(DATA / VERDICTS[key]["file"])))["stop"] for key in WITHOUT_ROLLOUT}
    want = {"default": {key: VERDICTS[key]["without_rollout_default_stop"] for key in WITHOUT_ROLLOUT},
            "early": {key: VERDICTS[key]["without_rollout_unordered_early_stop"] for key in WITHOUT_ROLLOUT}}
    assert got == want
    assert want["early"]["codex/cd_dirs"] == 4  # the healthy run the rollout saves from a stop
