"""classify: every call gets one class, from the tool name and, for shells, the programs run."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import ValidationError

from otel_toolchain import semconv
from otel_toolchain.chain import Toolchain
from otel_toolchain.errors import ManifestError
from otel_toolchain.manifest import Manifest
from otel_toolchain.plugins import classify as classify_module
from otel_toolchain.plugins.classify import CLASSES, PRECEDENCE, Classify, ClassifyConfig, Rule, classify
from otel_toolchain.testing import FakeTurn, make_tool_call

# (harness tool, class); arguments play no part
HARNESS_TOOLS = {
    "Claude Code": {"read": "Read Glob Grep LS BashOutput TaskOutput", "write": "Edit MultiEdit Write NotebookEdit",
                    "network": "WebFetch WebSearch", "agent": "Agent Task", "exec": "KillShell",
                    "mcp": "ReadMcpResourceTool ListMcpResourcesTool", "other": "TodoWrite ExitPlanMode Skill"},
    "Codex": {"read": "view_image", "write": "apply_patch file_change", "network": "web_search",
              "mcp": "mcp_tool_call", "agent": "collab_tool_call spawn_agent send_input", "other": "update_plan"},
    "OpenCode": {"read": "read glob grep list", "write": "edit write patch", "network": "webfetch websearch",
                 "agent": "task", "other": "todowrite invalid"},
    "Pi": {"read": "read grep find ls", "write": "edit write"},
    "MCP naming": {"mcp": "mcp__github__get_issue mcp__my_server__do_it", "other": "mcp__x"},
    "unknown": {"other": "SomethingNew read_file_v2 READ"},
}
TOOLS = [
    pytest.param(tool, cls, id=f"{harness}:{tool}")
    for harness, classes in HARNESS_TOOLS.items() for cls, tools in classes.items() for tool in tools.split()
]


@pytest.mark.parametrize(("tool", "expected"), TOOLS)
def test_harness_tools(tool: str, expected: str) -> None:
    assert classify(tool, {"file_path": "x", "command": "git push"}) == expected


# (command run by a shell tool, class)
COMMANDS = [
    # sub-commands decide
    ("git push origin main", "network"),
    ("git clone https://x/y", "network"),
    ("git status", "read"),
    ("git -C repo log --oneline", "read"),
    ("git --no-pager diff", "read"),
    ("git commit -m 'msg'", "write"),
    ("git checkout -b x", "write"),
    ("git frobnicate", "exec"),
    ("cargo build --release", "build"),
    ("cargo +nightly test", "build"),
    ("cargo install ripgrep", "network"),
    ("pip install requests", "network"),
    ("pip3 uninstall -y x", "write"),
    ("pip list", "read"),
    ("python -m pip install -e .", "network"),
    ("uv pip install x", "network"),
    ("uv add httpx", "network"),
    ("python -m pytest -q", "build"),
    ("python3 -m mypy src", "build"),
    ("pytest -x", "build"),
    ("uv run pytest", "build"),
    ("npm install", "network"),
    ("npm test", "build"),
    ("npm run lint", "build"),
    ("npm --prefix web run build", "build"),
    ("npm start", "exec"),
    ("yarn", "network"),
    ("yarn test", "build"),
    ("npx tsc --noEmit", "build"),
    ("go test ./...", "build"),
    ("go mod download", "network"),
    ("go mod tidy", "network"),
    ("docker build -t x .", "build"),
    ("docker pull alpine", "network"),
    ("docker run alpine", "exec"),
    ("make", "build"),
    # flags decide
    ("sed -i 's/a/b/' f.txt", "write"),
    ("sed -i.bak 's/a/b/' f.txt", "write"),
    ("sed -n '1,20p' f.txt", "read"),
    ("perl -pi -e 's/a/b/' f", "write"),
    ("perl -ne 'print' f", "exec"),
    ("find . -name '*.pyc' -delete", "write"),
    ("find . -name '*.py'", "read"),
    ("find . -exec rm {} +", "write"),
    ("tar -tzf x.tgz", "read"),
    ("tar -xzf x.tgz", "write"),
    # programs decide
    ("cat README.md", "read"),
    ("ls -la", "read"),
    ("rm -rf build", "write"),
    ("curl -s https://x", "network"),
    ("gh pr view 1", "network"),
    ("python script.py", "exec"),
    ("./run.sh", "exec"),
    ("node index.js", "exec"),
    ("some-unknown-tool --flag", "exec"),
    # redirection into a file is a write
    ("echo hi > notes.txt", "write"),
    ("ls > /dev/null 2>&1", "read"),
    # several programs: network > write > build > exec > read
    ("cd src && make", "build"),
    ("make && git push", "network"),
    ("cat x | grep y > out", "write"),
    ("ls; python x.py", "exec"),
    ("pytest > log.txt", "write"),
    ("curl -o f https://x", "network"),
    ("rm x && pip install y", "network"),
    ("python x.py && pytest", "build"),
    ("cat a && ls b", "read"),
    ("echo $(curl -s x)", "network"),
    # wrappers are transparent
    ("sudo make install", "build"),
    ("timeout 60 npm test", "build"),
    ("env CI=1 pytest", "build"),
    ("bash -lc 'git pull'", "network"),
    ("ls | xargs rm", "write"),
    ("nohup curl x &", "network"),
    # nothing runs
    ("", "exec"),
    ("# a comment", "exec"),
    ("A=1", "exec"),
]


@pytest.mark.parametrize(("command", "expected"), COMMANDS)
def test_shell_commands(command: str, expected: str) -> None:
    assert classify("Bash", {"command": command}) == expected


# (shell tool, arguments as that harness sends them, class)
SHELL_CALLS = [
    ("Bash", {"command": "git push", "description": "push"}, "network"),
    ("bash", {"command": "git push"}, "network"),  # OpenCode, Pi
    ("shell", {"command": ["bash", "-lc", "git push"], "workdir": "/x"}, "network"),  # Codex argv
    ("shell", {"command": ["cargo", "build"]}, "build"),
    ("exec_command", {"cmd": "cargo build"}, "build"),
    ("local_shell", {"action": {"type": "exec", "command": ["ls", "-la"]}}, "read"),
    ("command_execution", {"command": "/bin/bash -lc 'cargo test'"}, "build"),
    ("Bash", "git push", "network"),  # raw text that was not JSON
    ("Bash", {}, "exec"),
    ("Bash", None, "exec"),
    ("Bash", {"command": 42}, "exec"),
    ("shell", {"command": ["ls", 1]}, "exec"),
]


@pytest.mark.parametrize(("tool", "arguments", "expected"), SHELL_CALLS)
def test_where_shell_tools_keep_the_command(tool: str, arguments: object, expected: str) -> None:
    assert classify(tool, arguments) == expected


def test_precedence_is_the_documented_one() -> None:
    assert PRECEDENCE == ("network", "write", "build", "agent", "mcp", "exec", "other", "read")
    assert " > ".join(PRECEDENCE) in (classify_module.__doc__ or "")
    assert set(PRECEDENCE) == set(CLASSES)


# -- user rules ---------------------------------------------------------------------------------
RULES = [
    ([{"tool": "Read", "class": "other"}], "Read", {}, "other"),
    ([{"tool": "github_*", "class": "mcp"}], "github_get_issue", {}, "mcp"),  # OpenCode's MCP naming
    ([{"tool": "read", "class": "exec"}], "Read", {}, "read"),  # tool patterns are case-sensitive
    ([{"tool": "Bash", "class": "exec"}], "Bash", {"command": "git push"}, "exec"),  # before the command
    ([{"tool": "mcp__memory__*", "class": "read"}], "mcp__memory__get", {}, "read"),
    ([{"program": "make", "class": "network"}], "Bash", {"command": "cd x && make deploy"}, "network"),
    ([{"program": "make deploy*", "class": "network"}], "Bash", {"command": "make deploy --prod"}, "network"),
    ([{"program": "make deploy*", "class": "network"}], "Bash", {"command": "make test"}, "build"),
    ([{"program": "terraform", "class": "build"}], "Bash", {"command": "sudo terraform plan"}, "build"),
    ([{"program": "claude", "class": "agent"}], "Bash", {"command": "cd x && claude -p hi"}, "agent"),
    ([{"program": "ls", "class": "exec"}], "Bash", {"command": "ls && git push"}, "network"),  # precedence
    ([{"program": "git", "class": "other"}], "Read", {}, "read"),  # program rules leave tools alone
    ([{"tool": "Bash", "class": "other"}, {"tool": "B*", "class": "read"}], "Bash", {}, "other"),  # 1st wins
]


@pytest.mark.parametrize(("rules", "tool", "arguments", "expected"), RULES)
def test_user_rules_come_before_the_tables(
    rules: list[dict[str, Any]], tool: str, arguments: object, expected: str
) -> None:
    assert Classify(rules).classifier.classify(tool, arguments) == expected


def test_rules_may_be_models_or_mappings_under_either_name() -> None:
    rules: list[Rule | dict[str, str]] = [
        Rule.model_validate({"tool": "A", "class": "read"}), {"tool": "B", "class_": "write"},
        {"tool": "C", "class": "agent"},
    ]
    plugin = Classify(rules)
    assert [plugin.classifier.classify(tool, {}) for tool in "ABC"] == ["read", "write", "agent"]
    assert plugin.describe() == {"rules": [{"tool": "A", "class": "read"}, {"tool": "B", "class": "write"},
                                           {"tool": "C", "class": "agent"}]}


BAD_RULES = [
    ({"tool": "x", "class": "bogus"}, "Input should be 'read', 'write', 'exec', 'build', 'network', 'mcp', "
                                      "'agent' or 'other'"),
    ({"tool": "x", "program": "y", "class": "read"}, "a rule names exactly one of `tool` or `program`"),
    ({"class": "read"}, "a rule names exactly one of `tool` or `program`"),
    ({"tool": "x"}, "Field required"),
    ({"tool": "", "class": "read"}, "at least 1 character"),
    ({"tool": "x", "class": "read", "when": "always"}, "Extra inputs are not permitted"),
]


@pytest.mark.parametrize(("rule", "message"), BAD_RULES)
def test_bad_rules_are_errors(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Classify([rule])


def test_a_wrong_class_names_every_valid_class() -> None:
    with pytest.raises(ValidationError) as caught:
        ClassifyConfig.model_validate({"rules": [{"program": "make", "class": "compile"}]})
    assert all(f"'{cls}'" in str(caught.value) for cls in CLASSES)


def test_manifest_rules_are_checked_and_applied() -> None:
    manifest = Manifest.from_text(
        '[[agent.tool_plugins]]\nplugin = "classify"\n'
        'rules = [{ tool = "github_*", class = "mcp" }, { program = "make deploy*", class = "network" }]\n'
    )
    (plugin,) = manifest.toolchain(strict=True).plugins
    assert isinstance(plugin, Classify)
    assert plugin.classifier.classify("github_get_issue", {}) == "mcp"
    assert plugin.classifier.classify("Bash", {"command": "make deploy"}) == "network"
    with pytest.raises(ManifestError, match=r"rules\.0\.class: Input should be 'read', 'write'"):
        Manifest.from_text('[[agent.tool_plugins]]\nplugin = "classify"\nrules = [{ tool = "x", class = "r" }]\n')


def test_config_fields_are_the_init_parameters() -> None:
    assert list(inspect.signature(Classify).parameters) == list(Classify.Config.model_fields)
    assert Classify().describe() == {"rules": []}


# -- the cache ----------------------------------------------------------------------------------
@pytest.fixture
def parse_count(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The commands read (by the fast path or the full lexer), in order."""
    seen: list[object] = []
    reading = classify_module.Classifier.command_class

    def counting(self: classify_module.Classifier, command: Any) -> Any:
        seen.append(command)
        return reading(self, command)

    monkeypatch.setattr(classify_module.Classifier, "command_class", counting)
    return seen


def test_each_distinct_command_is_lexed_once(parse_count: list[object]) -> None:
    classifier = Classify().classifier
    for _ in range(3):
        assert classifier.classify("Bash", {"command": "git push"}) == "network"
        assert classifier.classify("shell", {"command": ["bash", "-lc", "git push"]}) == "network"
        assert classifier.classify("Read", {"file_path": "x"}) == "read"
    assert parse_count == ["git push", ("bash", "-lc", "git push")]


def test_the_cache_is_bounded(parse_count: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(classify_module, "_CACHE_LIMIT", 2)
    classifier = Classify().classifier
    for command in ("ls", "pwd", "make", "ls"):  # the third fills it: it starts over, so ls is lexed again
        classifier.classify("Bash", {"command": command})
    assert parse_count == ["ls", "pwd", "make", "ls"]


# -- as a plugin --------------------------------------------------------------------------------
def test_on_tool_tags_the_call() -> None:
    calls = [make_tool_call("Bash", {"command": "git push"}), make_tool_call("Read", {"file_path": "x"}),
             make_tool_call("Bash", "pytest -q")]
    turn = FakeTurn().run([Classify()], calls)
    assert turn.call_tags == [{"class": "network"}, {"class": "read"}, {"class": "build"}]


def test_the_class_reaches_the_exported_tool_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(Toolchain([Classify()], strict=True))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "Bash",
        "gen_ai.tool.call.arguments": json.dumps({"command": "git push"}),
    }
    with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}):
        tracer.start_span("execute_tool Bash", attributes=attributes).end()
    (tool_span,) = [span for span in exporter.get_finished_spans() if span.name == "execute_tool Bash"]
    assert dict(tool_span.attributes or {}) == {**attributes, semconv.TOOL_CLASS: "network"}
    provider.shutdown()


# -- the fast path for the common shape ---------------------------------------------------------
_WORDS = ["cd", "/w1", "grep", "-r", "x", ".", "make", "t1", "git", "status", "push", "-C", "sub", "sed", "-i",
          "-ni", "python3", "-m", "pytest", "sudo", "bash", "-c", "-lc", "env", "A=1", "if", "then", "fi", "for",
          "do", "done", "case", "esac", "in", "find", "-exec", "-delete", "uv", "run", "sync", "npm", "install",
          "test", "ls", "/usr/bin/python3.11", "pip3", "tar", "-t", "xargs", "rm", "curl", "!", "{", "}",
          "time", "nohup", "cargo", "build", "docker", "ps", "function", "f", "-", "--", "x=y"]
_GLUE = ["&&", "||", "|", ";", "&", ";;", "|&", " ", " ", " ", "\t", "\r"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_WORDS), st.sampled_from(_GLUE)), min_size=1, max_size=14))
def test_the_fast_path_classes_every_command_as_the_full_reading_does(parts: list[str]) -> None:
    command = " ".join(parts)
    classifier = classify_module.Classifier()
    fast = classifier._plain_class(command)
    if fast is not None:
        assert fast == classifier._read_class(command), command


@pytest.mark.parametrize(("command", "expected"), [
    ("cd /w1 && grep -r n5 . | head -5 && make t5", "build"),
    ("git status; git push", "network"),
    ("ls -la", "read"),
    ("sed -i s/a/b/ f", "write"),
])
def test_the_common_shapes_take_the_fast_path(command: str, expected: str) -> None:
    assert classify_module.Classifier()._plain_class(command) == expected


@pytest.mark.parametrize("command", ["sudo make", "bash -lc 'make'", "python -m pytest", "uv run pytest",
                                     "find . -exec rm {} ;", "if make; then ls; fi", "A=1 make", "make > out",
                                     "echo $(date)", "ls # a comment"])
def test_what_runs_another_program_or_is_shell_grammar_takes_the_full_reading(command: str) -> None:
    assert classify_module.Classifier()._plain_class(command) is None
