"""Scripted scenarios for recording the real CLIs: real programs in a temporary workspace.

Each :class:`Scenario` holds the model's script (a pure function of the request, see
:class:`moves.Turn`), the workspace files the commands run on, the expected verdict (``wedged`` or
``healthy``) and, for a wedge, where its loop was designed to begin. The fake model server serves
every scenario here by name (``fake-<name>``); ``tests/clis/record.py`` runs them.

A wedge repeats its cycle :data:`WEDGE_REPEATS` times and then gives up with a text answer, so a
recording ends by itself with the CLI's end-of-run line; a real wedge would go on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from moves import FinalText, Move, Script, ToolCall, Turn
from workspaces import (
    BUILD_FILES,
    BUILD_LOG_DONE,
    CARGO_FILES,
    FIXING_FILES,
    NODE_FILES,
    PACKAGES,
    PACKAGES_FILES,
    POLL_LOG_FILES,
    PYTEST_FILES,
    STATUS_FILES,
)

WEDGE_REPEATS = 40
GIVE_UP = "Giving up: the same step keeps giving the same answer."
DONE = "Done: the task is finished."
UNCHANGED_POLLS = 12  # the build log stays the same for this many polls, then the build ends
FIXABLE_TESTS = 8

_VERBS = ("Check", "Re-check", "Look at", "Read", "Inspect", "Show", "Print", "View")
_OBJECTS = ("the status file", "status", "the current status", "the deploy status", "status.txt again")


def reworded(index: int) -> str:
    """The ``index``-th rewording (0-based) of one description: 40 distinct texts, one intent."""
    return f"{_VERBS[index % len(_VERBS)]} {_OBJECTS[index % len(_OBJECTS)]} ({index + 1})"


def annotate(turn: Turn, text: str, *, codex: bool = False) -> str | None:
    """The free-text annotation of a call: none on Codex's wire unless asked for.

    Codex 0.171 refuses a call with a ``justification`` (see fake_models._responses_args), so only
    the scenario about that refusal sends one.
    """
    return text if codex or turn.wire != "responses" else None


def repeat(commands: tuple[str, ...], repeats: int, note: Callable[[int], str] | None = None,
           final: str = GIVE_UP, *, codex_note: bool = False) -> Script:
    """A script that goes round ``commands`` ``repeats`` times, then ends with ``final``."""

    def script(turn: Turn) -> Move:
        if turn.results >= repeats * len(commands):
            return FinalText(final)
        text = annotate(turn, note(turn.results), codex=codex_note) if note else None
        return ToolCall(commands[turn.results % len(commands)], text)

    return script


def fixing(turn: Turn) -> Move:
    """Fix one failing test per call and rerun the suite: the failure count goes down every call."""
    if turn.results >= FIXABLE_TESTS:
        return FinalText(DONE)
    return ToolCall("python fix_next.py && python -m pytest -q",
                    annotate(turn, "Fix the next failing test and rerun the tests"))


def poll_log(turn: Turn) -> Move:
    """Wait on a build log until the build says it is done (a long, legitimate wait)."""
    if BUILD_LOG_DONE in turn.last_result or turn.results >= 40:
        return FinalText(DONE)
    return ToolCall("sleep 1 && tail -n 3 build.log", annotate(turn, "Wait a second and show the end of the build log"))


def packages(turn: Turn) -> Move:
    """The same ``make check`` in every package, each in its own directory.

    A tool with a ``workdir`` argument gets it; Claude Code keeps its shell's working directory
    between Bash calls, so it gets a ``cd`` call before each check; any other shell gets
    ``cd DIR && make check``.
    """
    if "workdir" in turn.shell_args:
        if turn.results >= len(PACKAGES):
            return FinalText(DONE)
        return ToolCall("make check", workdir=PACKAGES[turn.results])
    if turn.wire == "anthropic":
        if turn.results >= 2 * len(PACKAGES):
            return FinalText(DONE)
        index, step = divmod(turn.results, 2)
        if step == 0:
            target = PACKAGES[index] if index == 0 else f"../{PACKAGES[index]}"
            return ToolCall(f"cd {target}", annotate(turn, f"Enter package {PACKAGES[index]}"))
        return ToolCall("make check", annotate(turn, f"Run the checks of {PACKAGES[index]}"))
    if turn.results >= len(PACKAGES):
        return FinalText(DONE)
    return ToolCall(f"cd {PACKAGES[turn.results]} && make check")


def finish_build(results: int, work: Path) -> None:
    """The build elsewhere finishes once the agent has polled the unchanged log long enough."""
    log = work / "build.log"
    if results >= UNCHANGED_POLLS and BUILD_LOG_DONE not in log.read_text():
        with log.open("a") as handle:
            handle.write(f"[12:04:40] post-link step done\n[12:04:41] {BUILD_LOG_DONE} in 280s\n")


CLIS = ("claude", "codex", "opencode", "pi")
MAKE = "make"
READ = "grep -n VERSION main.c"
CARGO_ENV = {"CARGO_HOME": "/root/.cargo", "RUSTUP_HOME": "/root/.rustup", "CARGO_TERM_COLOR": "never"}
#: Pi's stream copies each output into ~7 lines (~8 KB a call): its wedges go round fewer times.
PI_REPEATS = {1: 12, 2: 8, 3: 5}


@dataclass(frozen=True)
class Scenario:
    """One recording scenario; see the module docstring.

    ``per_cli`` replaces the script for some CLIs (shorter runs); ``sessions`` names the CLIs whose
    own session file is kept beside the stream.
    """

    name: str
    label: Literal["wedged", "healthy"]
    summary: str
    script: Script
    files: Mapping[str, str]
    clis: tuple[str, ...] = CLIS
    loop_start: int | None = None
    period: int | None = None
    executables: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    react: Callable[[int, Path], None] | None = None
    per_cli: Mapping[str, Script] = field(default_factory=dict)
    sessions: tuple[str, ...] = ()

    def script_for(self, cli: str) -> Script:
        """The script ``cli`` runs."""
        return self.per_cli.get(cli, self.script)


def wedge(name: str, summary: str, commands: tuple[str, ...], notes: tuple[str, ...],
          files: Mapping[str, str] = BUILD_FILES, *, loop_start: int = 1, executables: tuple[str, ...] = (),
          env: Mapping[str, str] | None = None, sessions: tuple[str, ...] = ()) -> Scenario:
    """A wedge going round ``commands`` (annotated by ``notes`` in turn), ``WEDGE_REPEATS`` times."""

    def note(index: int) -> str:
        return notes[index % len(notes)]

    period = len(commands)
    return Scenario(name, "wedged", summary, repeat(commands, WEDGE_REPEATS, note), files, loop_start=loop_start,
                    period=period, executables=executables, env=env or {}, sessions=sessions,
                    per_cli={"pi": repeat(commands, PI_REPEATS[period], note)})


BUILD_SCRIPT = ("build.sh",)
ALL: tuple[Scenario, ...] = (
    Scenario("status_reworded", "wedged",
             "`cat status.txt` again and again, same output; Claude Code's Bash `description` reworded every "
             "call (the other shells have no free-text field that lets the command run)",
             repeat(("cat status.txt",), WEDGE_REPEATS, reworded), STATUS_FILES, loop_start=1, period=1,
             per_cli={"pi": repeat(("cat status.txt",), PI_REPEATS[1], reworded)}),
    Scenario("justification_refused", "wedged",
             "Codex only: `cat status.txt` 40 times with a reworded `justification` and no `sandbox_permissions`; "
             "Codex refuses every call before running it and its exec stream shows none of them (the "
             "rollout does)", repeat(("cat status.txt",), WEDGE_REPEATS, reworded, codex_note=True), STATUS_FILES,
             clis=("codex",), loop_start=1, period=1, sessions=("codex",)),
    wedge("pytest_fail", "the same failing `python -m pytest -q` (real pytest; run time and tmp_path differ)",
          ("python -m pytest -q",), ("Run the tests",), PYTEST_FILES, loop_start=1, sessions=("codex", "pi")),
    wedge("node_test_fail", "the same failing `node --test` (durations differ)",
          ("node --test",), ("Run the node tests",), NODE_FILES, loop_start=1),
    # The first call compiles the crate: its output has cargo's `Compiling` line, which identity masks
    # as build progress, so the loop begins at call 1 (it was designed, and recorded, as 2).
    wedge("cargo_test_fail", "the same failing `cargo test` (a crate with no dependencies; the first call compiles)",
          ("cargo test",), ("Run the Rust tests",), CARGO_FILES, loop_start=1, env=CARGO_ENV),
    wedge("build_timestamps", "a failing `make` whose output has a timestamp, a PID, a temp dir and its duration",
          (MAKE,), ("Build the project",), executables=BUILD_SCRIPT),
    wedge("cycle2_build_read", f"`make` (fails, volatile output) then `{READ}` (same answer), round and round",
          (MAKE, READ), ("Build the project", "Find where VERSION is used"), executables=BUILD_SCRIPT),
    wedge("cycle3_build_read", f"`make`, `{READ}`, `cat config.h.in`, round and round",
          (MAKE, READ, "cat config.h.in"), ("Build the project", "Find where VERSION is used",
                                            "Show the config template"), executables=BUILD_SCRIPT),
    Scenario("pytest_fixing", "healthy",
             "`python fix_next.py && python -m pytest -q` 8 times: one test fixed per call, 7 failed ... 0 failed",
             fixing, FIXING_FILES),
    Scenario("poll_changing", "healthy", "`date +%s%N` 30 times: a poll whose output changes every call",
             repeat(("date +%s%N",), 30, lambda i: "Show the current time", DONE), {}),
    Scenario("poll_unchanged_log", "healthy",
             f"`sleep 1 && tail -n 3 build.log`: the log stays the same for {UNCHANGED_POLLS} polls, then the "
             "build ends and the agent stops (the poll-limit case)",
             poll_log, POLL_LOG_FILES, react=finish_build, sessions=("claude", "codex")),
    Scenario("cd_dirs", "healthy",
             "the same `make check` (same output) in six package directories: `workdir` argument (Codex, "
             "OpenCode), a persistent `cd` call before each (Claude Code), `cd DIR && make check` (Pi)",
             packages, PACKAGES_FILES, sessions=("claude", "codex", "pi")),
)

BY_NAME: dict[str, Scenario] = {scenario.name: scenario for scenario in ALL}
SCRIPTS: dict[str, Script] = {scenario.name: scenario.script for scenario in ALL}
