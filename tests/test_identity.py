"""Digests of call identities are keyed: stable under one key, unrelated under another. Argument text is
parsed exactly as json.loads parses it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_toolchain.cli import main
from otel_toolchain.identity import Digester, Identity, parse_arguments
from otel_toolchain.testing import make_tool_call

WEDGE = str(REPO / "examples" / "streams" / "claude-code-wedge.jsonl")


def test_same_key_same_digest_other_key_other_digest() -> None:
    call = {"tool": "Bash", "arguments": {"command": "ls"}, "result": "a"}
    digests = []
    for key in (b"k1", b"k1", b"k2"):
        one = make_tool_call(call["tool"], call["arguments"], result=call["result"])
        digests.append(Digester(key).of_identity(Identity().key(one)))
    assert digests[0] == digests[1] != digests[2]


def test_a_digest_is_not_the_unkeyed_hash_of_the_identity() -> None:
    """A guess of a short command, hashed without the key, does not match."""
    digest = Digester(b"secret").of_identity(Identity().key(make_tool_call("Bash", {"command": "ls"}, result="a")))
    guesses = {hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
               for text in ("ls", '{"command":"ls"}', 'Bash\x1f{"command":"ls"}\x1f\x1fa\x1f0\x1f')}
    assert digest not in guesses


def test_a_key_must_fit_blake2b() -> None:
    with pytest.raises(ValueError):
        Digester(b"")


def cycle_digests(out: Path) -> list[str]:
    for line in (out / "traces.jsonl").read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    for event in span.get("events", []):
                        if event["name"] == "otel_toolchain.turn.stop":
                            attrs = {a["key"]: a["value"] for a in event["attributes"]}
                            return [v["stringValue"] for v in
                                    attrs["otel_toolchain.stop.cycle.digests"]["arrayValue"]["values"]]
    raise AssertionError("no stop event")


def test_the_cli_digest_key_makes_digests_comparable_across_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    found = []
    for run, key in enumerate(("team-key", "team-key", None)):
        if key is None:
            monkeypatch.delenv("OTEL_TOOLCHAIN_DIGEST_KEY", raising=False)
        else:
            monkeypatch.setenv("OTEL_TOOLCHAIN_DIGEST_KEY", key)
        monkeypatch.setenv("OTEL_TOOLCHAIN_OUTPUT_DIR", str(tmp_path / str(run)))
        assert main(["replay", "--format", "json", WEDGE]) == 75  # stopped
        found.append(cycle_digests(tmp_path / str(run)))
    capsys.readouterr()
    assert found[0] == found[1] != found[2]  # without a key, each chain draws its own


def _json_or_text(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


JSON_PIECES = st.sampled_from(['{"a": 1}', "[1, 2]", '"x"', "null", "1e5", "-0", "NaN", " ", "\n", "\t", "{", "}",
                               "[", "]", ",", ":", '"', "\\", "\x01", "tru", "12", "x", '{"a": 1, "a": 2}'])


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.lists(JSON_PIECES, max_size=8).map("".join), st.text(max_size=20)))
def test_parsed_arguments_are_what_json_loads_gives_or_the_text(text: str) -> None:
    """parse_arguments calls json's scanner directly; white space around a value, extra data, a value cut
    short and text that is not JSON at all come out as json.loads has them (the text itself where it fails)."""
    expected, got = _json_or_text(text), parse_arguments(text)
    assert got == expected or (got != got and expected != expected), text  # NaN is not equal to itself
    assert type(got) is type(expected)


def test_deeply_nested_arguments_stay_text() -> None:
    text = "[" * 100_000 + "]" * 100_000
    assert parse_arguments(text) == text
