"""``classify``: tags every tool call read, write, exec, build, network, mcp, agent or other.

The class goes to later plugins as the call's ``class`` tag and onto the live tool span as
``otel_toolchain.tool.class``. It stops nothing. How a call is classed, first match wins:

1. a user rule naming the tool (``tool = "<glob>"``), in manifest order;
2. MCP naming, ``mcp__<server>__<tool>``: mcp;
3. a shell tool (Claude Code ``Bash``, Codex ``shell``/``exec_command``/``command_execution``,
   OpenCode and Pi ``bash``): the programs its command runs, see below; exec when there is none;
4. the harness tool tables (Claude Code, Codex, OpenCode, Pi): ``Read`` is read, ``Edit`` write, ...;
5. other.

A shell command is lexed like a shell would (``_shell``), and each program it runs is classed by
the first user rule naming the program (``program = "<glob>"``, matched against the program name
and against ``"<name> <args…>"``, so ``"git push*"`` works), else by the program tables
(``git push`` network, ``git status`` read, ``sed -i`` write, unknown programs exec). Output
redirected to a file counts as write. When a command runs several programs, the class that comes
first in this precedence wins::

    network > write > build > agent > mcp > exec > other > read

Effects outside the machine matter most, then changes to files, then builds; ``cd x && make`` is
a build, ``make && git push`` network. agent and mcp (which only user rules give to programs) sit
above exec because a rule that names them is more specific than exec, the catch-all of programs.

Patterns are ``fnmatch`` globs and case-sensitive. Each distinct (tool, command) is read once:
results are cached in a bounded dict, so repeated calls cost one lookup. A command of the common
shape (words and control operators only, as ``cd x && grep -r y . | head -3``) whose programs run
no other program is classed from its words directly, without the full shell reader, when there are
no ``program`` rules; the result is the same (a property test holds the two paths equal).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from otel_toolchain.plugin import ToolPlugin
from otel_toolchain.plugins._shell import Invocation, parse, plain_commands
from otel_toolchain.plugins._tool_tables import (
    CLASSES,
    COMMAND_KEYS,
    SHELL_TOOLS,
    TOOLS,
    ProgramFacts,
    ToolClass,
    is_mcp_tool,
    program_class,
    program_facts,
)

if TYPE_CHECKING:
    from otel_toolchain.calls import ToolCall
    from otel_toolchain.turn import Turn

__all__ = ["CLASSES", "PRECEDENCE", "Classifier", "Classify", "ClassifyConfig", "Rule", "classify", "shell_command"]

PRECEDENCE: Final[tuple[ToolClass, ...]] = ("network", "write", "build", "agent", "mcp", "exec", "other", "read")
_RANK: Final = {cls: -index for index, cls in enumerate(PRECEDENCE)}
_CACHE_LIMIT = 4096
_UNSEEN: Final = object()
_Command: TypeAlias = "str | tuple[str, ...]"
_K = TypeVar("_K")
_V = TypeVar("_V")


class Rule(BaseModel):
    """A user rule: calls of a ``tool``, or shell commands running a ``program``, get ``class``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)

    tool: str | None = Field(default=None, min_length=1, description="Glob over tool names.")
    program: str | None = Field(default=None, min_length=1, description="Glob over programs a shell runs.")
    class_: ToolClass = Field(alias="class", description="The class the matching calls get.")

    @model_validator(mode="after")
    def _one_target(self) -> Rule:
        if (self.tool is None) == (self.program is None):
            raise ValueError("a rule names exactly one of `tool` or `program`")
        return self


class ClassifyConfig(BaseModel):
    """Settings of ``classify`` as the manifest gives them (strictly typed)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    rules: list[Rule] = Field(default_factory=list, description="User rules; they take priority over the tables.")


class Classifier:
    """Classes tool calls; safe to share between threads (a lost cache entry is only recomputed)."""

    __slots__ = ("_commands", "_program_rules", "_programs", "_texts", "_tool_rules", "_tools")

    def __init__(self, rules: Sequence[Rule] = ()) -> None:
        self._tool_rules = tuple((_glob(r.tool), r.class_) for r in rules if r.tool is not None)
        self._program_rules = tuple((_glob(r.program), r.class_) for r in rules if r.program is not None)
        self._tools: dict[str, ToolClass | None] = {}  # None: a shell tool, classed by its command
        self._commands: dict[tuple[str, _Command], ToolClass] = {}
        self._texts: dict[tuple[str, str], ToolClass] = {}
        self._programs: dict[str, ProgramFacts] = {}  # by a command's first word, for the fast path

    def classify(self, tool: str, arguments: object) -> ToolClass:
        """The class of a call of ``tool`` with ``arguments`` (parsed JSON, or raw text)."""
        try:
            fixed = self._tools[tool]
        except KeyError:
            fixed = _remember(self._tools, tool, self._tool_class(tool))
        if fixed is not None:
            return fixed
        return self._shell_class(tool, arguments)

    def classify_call(self, call: ToolCall) -> ToolClass:
        """The class of ``call``; a shell call's JSON text is parsed only the first time it is seen."""
        tool = call[0]
        fixed = self._tools.get(tool, _UNSEEN)
        if fixed is _UNSEEN:
            fixed = _remember(self._tools, tool, self._tool_class(tool))
        if fixed is not None:
            return fixed  # type: ignore[return-value]
        arguments = call[1]
        if isinstance(arguments, str):  # cached by the text itself: agents repeat their commands verbatim
            found = self._texts.get((tool, arguments))
            if found is not None:
                return found
            return _remember(self._texts, (tool, arguments), self._shell_class(tool, call.parsed_arguments))
        return self._shell_class(tool, arguments)

    def _shell_class(self, tool: str, arguments: object) -> ToolClass:
        command = shell_command(arguments)
        if command is None:
            return "exec"
        key = (tool, command)
        found = self._commands.get(key)
        return found if found is not None else _remember(self._commands, key, self.command_class(command))

    def command_class(self, command: _Command) -> ToolClass:
        """The class of a shell command: its programs' classes, decided by ``PRECEDENCE``."""
        if isinstance(command, str) and not self._program_rules:
            fast = self._plain_class(command)
            if fast is not None:
                return fast
        return self._read_class(command)

    def _read_class(self, command: _Command) -> ToolClass:
        """The class of any shell command, from the full reading of what it runs."""
        script = parse(command)
        classes = {self._program_class(invocation) for invocation in script.invocations}
        if script.writes:
            classes.add("write")
        return max(classes, key=_RANK.__getitem__) if classes else "exec"

    def _plain_class(self, command: str) -> ToolClass | None:
        """The class of a command of the common shape, without building its Script (a new command
        costs a fraction of the full reading); None where the full reading is needed. Same result
        as the full path (tests/plugins/test_classify.py holds them equal on generated commands)."""
        commands = plain_commands(command)
        if commands is None:
            return None
        best: ToolClass | None = None
        for words in commands:
            facts = self._programs.get(words[0])
            if facts is None:
                facts = _remember(self._programs, words[0], program_facts(words[0]))
            cls = facts.fixed
            if cls is None:
                if facts.wraps or (len(words) > 1 and words[1] in facts.runs_after):
                    return None
                cls = program_class(facts.program, words[1:])
            if best is None or _RANK[cls] > _RANK[best]:
                best = cls
        return best or "exec"

    def _tool_class(self, tool: str) -> ToolClass | None:
        for matches, cls in self._tool_rules:
            if matches(tool):
                return cls
        if is_mcp_tool(tool):
            return "mcp"
        return None if tool in SHELL_TOOLS else TOOLS.get(tool, "other")

    def _program_class(self, invocation: Invocation) -> ToolClass:
        program, args = invocation.program, invocation.args
        line = " ".join((program, *args)) if self._program_rules and args else program
        for matches, cls in self._program_rules:
            if matches(program) or matches(line):
                return cls
        return program_class(program, args)


def shell_command(arguments: object) -> _Command | None:
    """The command in a shell tool's arguments: ``command`` or ``cmd``, a string or an argv list."""
    if isinstance(arguments, str):
        return arguments
    if type(arguments) is not dict and not isinstance(arguments, Mapping):  # dict first: an ABC check costs more
        return None
    for key in COMMAND_KEYS:
        value = arguments.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(word, str) for word in value):
            return tuple(value)
    action = arguments.get("action")  # Codex local_shell: {"action": {"command": [...]}}
    return shell_command(action) if isinstance(action, Mapping) else None


def _glob(pattern: str) -> Callable[[str], object]:
    return re.compile(fnmatch.translate(pattern)).match  # not fnmatch(): that folds case on Windows


def _remember(cache: dict[_K, _V], key: _K, value: _V) -> _V:
    if len(cache) >= _CACHE_LIMIT:  # clearing beats LRU bookkeeping on every call; agents repeat themselves
        cache.clear()
    cache[key] = value
    return value


_DEFAULT: Final = Classifier()


def classify(tool: str, arguments: object) -> ToolClass:
    """The class of a call of ``tool`` with ``arguments``, by the built-in tables alone."""
    return _DEFAULT.classify(tool, arguments)


class Classify(ToolPlugin):
    """Tags each call with its class; see the module docstring for how it is decided."""

    name: ClassVar[str] = "classify"
    Config: ClassVar[type[BaseModel]] = ClassifyConfig

    def __init__(self, rules: Sequence[Rule | Mapping[str, Any]] = ()) -> None:
        self.rules: tuple[Rule, ...] = tuple(ClassifyConfig.model_validate({"rules": list(rules)}).rules)
        self.classifier = Classifier(self.rules)

    def describe(self) -> dict[str, Any]:
        return {"rules": [rule.model_dump(by_alias=True, exclude_none=True) for rule in self.rules]}

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        turn.tags["class"] = self.classifier.classify_call(call)
