"""The tables ``classify`` reads: harness tool names, shell tools, and what programs do.

Data, and the small functions that read it. Tool names come from the four harnesses' streams
(Claude Code, Codex, OpenCode, Pi). The wrapper tables say which programs run another command
(``sudo make``); ``_shell`` follows them. The program tables say what a program does to the world,
with sub-commands (``git push``) and flags (``sed -i``) where the name alone does not say:
:func:`program_class`. A program in no table counts as ``exec``; a tool in no table as ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final, Literal, NamedTuple, get_args

ToolClass = Literal["read", "write", "exec", "build", "network", "mcp", "agent", "other"]
CLASSES: Final[tuple[ToolClass, ...]] = get_args(ToolClass)


def _each(cls: ToolClass, names: str) -> dict[str, ToolClass]:
    return dict.fromkeys(names.split(), cls)


# -- harness tools -------------------------------------------------------------------------------
TOOLS: Final[Mapping[str, ToolClass]] = {
    # Claude Code (capitalised names; Task is the Agent tool before its rename)
    **_each("read", "Read Glob Grep LS NotebookRead BashOutput TaskOutput"),
    **_each("write", "Edit MultiEdit Write NotebookEdit"),
    **_each("exec", "Bash KillShell KillBash TaskStop"),
    **_each("network", "WebFetch WebSearch"),
    **_each("agent", "Agent Task"),
    **_each("mcp", "ListMcpResourcesTool ReadMcpResourceTool"),
    **_each("other", "TodoWrite TodoRead ExitPlanMode EnterPlanMode AskUserQuestion Skill SlashCommand "
                     "EnterWorktree ToolSearch"),
    # Codex: stream item types and rollout function names; collab tools spawn and steer sub-agents
    **_each("exec", "shell local_shell exec_command command_execution container.exec write_stdin"),
    **_each("write", "apply_patch file_change"),
    **_each("read", "view_image read_file list_dir grep_files"),
    **_each("network", "web_search"),
    **_each("mcp", "mcp_tool_call"),
    **_each("agent", "collab_tool_call spawn_agent send_input wait close_agent"),
    **_each("other", "update_plan todo_list"),
    # OpenCode and Pi (lower-case names; the two agree where they overlap)
    **_each("exec", "bash"),
    **_each("read", "read glob grep list ls find lsp"),
    **_each("write", "edit write patch multiedit"),
    **_each("network", "webfetch websearch codesearch"),
    **_each("agent", "task"),
    **_each("other", "todowrite todoread skill question batch invalid"),
}

SHELL_TOOLS: Final = frozenset(
    {"Bash", "shell", "local_shell", "exec_command", "command_execution", "container.exec", "bash"}
)
"""Tools whose class comes from the command they run."""

COMMAND_KEYS: Final = ("command", "cmd")
"""Where a shell tool's arguments hold the command: a string, or an argv list (Codex)."""


def is_mcp_tool(tool: str) -> bool:
    """Whether ``tool`` follows MCP naming, ``mcp__<server>__<tool>`` (server names hold no ``__``)."""
    return tool.startswith("mcp__") and tool.find("__", 5) > 5


# -- what runs programs -------------------------------------------------------------------------
ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
"""A ``NAME=value`` word (``A[1]=x``, ``A+=x`` too), which sets a variable rather than naming a program."""


class Wrapper(NamedTuple):
    """A program that runs the command in its arguments (``sudo make``, ``timeout 5 curl ...``)."""

    options: frozenset[str] = frozenset()
    """Its options that take a value as the next word."""
    positionals: int = 0
    """Words between its options and the command (``timeout``'s duration)."""
    lookups: frozenset[str] = frozenset()
    """Options with which nothing runs (``command -v git`` only looks ``git`` up)."""
    joined: bool = False
    """The command words are joined and run as a script (``eval``, ``watch``)."""
    assignments: bool = False
    """``NAME=value`` words may come before the command (``env``)."""


def _opts(names: str) -> frozenset[str]:
    return frozenset(names.split())


WRAPPERS: Final[Mapping[str, Wrapper]] = {
    "sudo": Wrapper(_opts("-u -g -h -p -C -D -r -t -U -T --user --group")),
    "doas": Wrapper(_opts("-u -C")),
    "env": Wrapper(_opts("-u -C -S --unset --chdir --split-string"), assignments=True),
    "timeout": Wrapper(_opts("-s -k --signal --kill-after"), positionals=1),
    "nice": Wrapper(_opts("-n --adjustment")),
    "ionice": Wrapper(_opts("-c -n -p")),
    "stdbuf": Wrapper(_opts("-i -o -e")),
    "taskset": Wrapper(positionals=1),
    "flock": Wrapper(_opts("-w -E"), positionals=1),
    "strace": Wrapper(_opts("-o -e -p -s -u")),
    "nohup": Wrapper(), "exec": Wrapper(_opts("-a")), "builtin": Wrapper(), "unbuffer": Wrapper(),
    "time": Wrapper(_opts("-f -o")),
    "command": Wrapper(lookups=_opts("-v -V")),
    "xargs": Wrapper(_opts("-I -n -L -P -d -E -s -a --arg-file --delimiter --max-args --max-procs")),
    "eval": Wrapper(joined=True),
    "watch": Wrapper(_opts("-n -d --interval"), joined=True),
    # package runners: they run a package's program, fetching it first if need be
    **dict.fromkeys(("npx", "bunx", "pnpx", "uvx"), Wrapper(_opts("-p --package --from --with"))),
}

RUNNERS: Final[Mapping[str, frozenset[str]]] = {
    **dict.fromkeys(("uv", "poetry", "pipenv", "pdm", "hatch", "rye", "conda", "mamba", "micromamba"),
                    frozenset({"run"})),
    "bundle": frozenset({"exec"}), "npm": frozenset({"exec"}), "bun": frozenset({"x"}),
    "pnpm": frozenset({"exec", "dlx"}), "yarn": frozenset({"exec", "dlx"}),
}
"""Programs whose sub-command runs the rest of the line: ``uv run pytest``, ``bundle exec rake``."""
RUNNER: Final = Wrapper(_opts("--with --python -p --directory --project --package --from -n --name --prefix "
                              "--env-file --group --extra -e"))
"""How the runners' sub-commands read their options."""

SHELLS: Final = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
PYTHONS: Final = frozenset({"python", "pypy", "py"})
"""Interpreters where ``-m module`` runs the module as the program."""
VERSIONED: Final = frozenset({"python", "pip", "pypy", "ruby", "perl", "php", "lua", "node", "gcc", "g++",
                              "clang", "clang++", "pytest"})
"""Programs also installed under versioned names (``python3.11``, ``pip3``, ``clang-17``)."""


def wrapped_command(wrapper: Wrapper, args: list[str]) -> list[str] | None:
    """The command words under a wrapper, after its options; None when it runs nothing."""
    i, positionals = 0, wrapper.positionals
    while i < len(args):
        arg = args[i]
        if arg in wrapper.lookups:
            return None
        if arg == "--":
            i += 1
            break
        if arg[:1] == "-" and len(arg) > 1:
            i += 2 if arg in wrapper.options else 1
        elif positionals or (wrapper.assignments and ASSIGNMENT.match(arg)):
            positionals -= not (wrapper.assignments and ASSIGNMENT.match(arg))
            i += 1
        else:
            break
    return args[i:] or None


def python_module(program: str, args: list[str]) -> tuple[str, list[str]]:
    """``python -m pytest -q`` runs ``pytest -q``; any other python command stays as it is."""
    i = 0
    while i < len(args) and args[i][:1] == "-" and args[i] != "-":
        if args[i] == "-m" and i + 1 < len(args):
            return args[i + 1], args[i + 2:]
        if args[i].startswith("-m") and len(args[i]) > 2:
            return args[i][2:], args[i + 1:]
        if args[i] == "-c":
            break
        i += 2 if args[i] in ("-X", "-W", "-Q") else 1
    return program, args


def program_name(word: str) -> str:
    """The name a program is known by: its base name, without a version suffix (``pip3`` is ``pip``)."""
    base = word.rsplit("/", 1)[-1] or word
    bare = base.rstrip("0123456789.-")
    return bare if bare in VERSIONED else base


class ProgramFacts(NamedTuple):
    """What a command's first word says before its arguments are read (see :func:`program_facts`)."""

    program: str
    """Its name (:func:`program_name`)."""
    fixed: ToolClass | None
    """Its class whatever its arguments, or None where they decide it (flags, sub-commands)."""
    wraps: bool
    """It may run another program that the shell reader must follow (a wrapper such as ``sudo``, a
    shell, an interpreter's ``-m``, ``find -exec``); a runner does so only after a sub-command in
    ``runs_after``."""
    runs_after: frozenset[str] = frozenset()
    """A runner's sub-commands that run the rest of the line (``uv run``, ``npm exec``)."""


def program_facts(word: str) -> ProgramFacts:
    """The facts of a command whose first word is ``word``: a pure function, cached by its callers.

    Every program that neither wraps nor runs the rest of its line is classed by its name and
    arguments alone (:func:`program_class`).
    """
    program = program_name(word)
    if program in WRAPPERS or program in SHELLS or program in PYTHONS or program == "find":
        return ProgramFacts(program, None, True)
    if program in FLAGS or program in SUBCOMMANDS or program in RUNNERS:
        return ProgramFacts(program, None, False, RUNNERS.get(program, frozenset()))
    return ProgramFacts(program, PROGRAMS.get(program, "exec"), False)


def shell_script(args: list[str]) -> str | None:
    """The script of ``sh -c 'script'`` (options may come first, ``-c`` in a cluster like ``-lc``)."""
    has_c, i = False, 0
    while i < len(args) and args[i][:1] in ("-", "+") and args[i] not in ("-", "--"):
        arg, short = args[i], args[i][:2] != "--"
        has_c = has_c or (short and arg[0] == "-" and "c" in arg)
        i += 2 if arg in ("--rcfile", "--init-file") or (short and arg[-1] in "oO") else 1  # -o pipefail
    return args[i] if has_c and i < len(args) else None


# -- what programs do ---------------------------------------------------------------------------
PROGRAMS: Final[Mapping[str, ToolClass]] = {
    **_each("read", "cat bat less more head tail ls tree fd grep egrep fgrep rg ag ack wc stat file du df "
                    "pwd echo printf which whereis type diff cmp comm sort uniq cut tr awk gawk jq yq sed nl "
                    "od xxd hexdump strings basename dirname realpath readlink date whoami id uname env "
                    "printenv ps pgrep top free uptime hostname lsof column cd pushd popd export set unset "
                    "alias history read true false test [ [[ : sleep exit return shift wait jobs md5sum sha1sum "
                    "sha256sum shasum cksum base64 tac rev paste join seq nproc man find xargs time command"),
    **_each("write", "rm rmdir mv cp mkdir touch tee ln chmod chown chgrp truncate dd install patch unzip "
                     "tar gzip gunzip bzip2 xz zip 7z shred mktemp split rsync venv"),
    **_each("network", "curl wget ssh scp sftp ftp nc netcat telnet ping dig nslookup host gh aws gcloud az "
                       "kubectl helm terraform vercel netlify flyctl heroku http https apt apt-get brew yum "
                       "dnf apk pacman gem pipx http.server"),
    **_each("build", "make gmake cmake ninja meson bazel bazelisk gradle gradlew mvn ant sbt cargo go tsc "
                     "esbuild vite webpack rollup jest vitest mocha playwright eslint prettier biome pytest "
                     "py.test unittest tox nox mypy pyright ruff black isort flake8 pylint coverage "
                     "pre-commit gcc g++ cc c++ clang clang++ rustc rustfmt javac swiftc xcodebuild zig "
                     "ctest shellcheck golangci-lint build compileall yarn pnpm configure"),
}

_GIT: Final = {
    **_each("read", "status log diff show blame branch ls-files ls-tree rev-parse describe shortlog grep "
                    "reflog cat-file config remote tag help version"),
    **_each("write", "add commit checkout switch restore reset rm mv merge rebase cherry-pick revert stash "
                     "apply am init clean worktree"),
    **_each("network", "push pull fetch clone ls-remote submodule"),
}
_PIP: Final = {**_each("network", "install download wheel"), **_each("write", "uninstall"),
               **_each("read", "list show freeze check help")}

SUBCOMMANDS: Final[Mapping[str, Mapping[str, ToolClass]]] = {
    "git": _GIT,
    "pip": _PIP,
    "cargo": {**_each("network", "install publish fetch update add search login"),
              **_each("read", "tree metadata version")},
    "go": {**_each("network", "get install"), "mod download": "network", "mod tidy": "network",
           **_each("read", "env version list doc")},
    "npm": {**_each("network", "install i ci add update up publish view info outdated audit search"),
            **_each("build", "test t run run-script"), **_each("exec", "start"),
            **_each("write", "uninstall remove rm init"), **_each("read", "ls list config root prefix help")},
    "yarn": {"": "network", **_each("network", "install add upgrade up remove")},
    "pnpm": {**_each("network", "install i add update up remove")},
    "bun": {**_each("network", "install i add update remove"), **_each("build", "test build run")},
    "uv": {**_each("network", "add sync lock remove"), **{f"pip {sub}": cls for sub, cls in _PIP.items()},
           **_each("build", "build"), **_each("write", "venv init")},
    "poetry": {**_each("network", "install add update lock remove"), **_each("build", "build check"),
               **_each("read", "show env version")},
    "docker": {**_each("network", "pull push login search"), **_each("build", "build buildx"),
               **_each("read", "ps images logs inspect version info")},
    "deno": {**_each("build", "test check lint fmt compile bench"), **_each("network", "install cache add")},
    "dotnet": {**_each("build", "build test publish pack"), **_each("network", "restore add")},
    "conda": {**_each("network", "install create update remove"), **_each("read", "list info")},
    "playwright": {**_each("network", "install")},
}

OPTIONS_WITH_VALUE: Final[Mapping[str, frozenset[str]]] = {
    "git": _opts("-C -c --git-dir --work-tree --namespace"),
    "npm": _opts("--prefix -w --workspace"), "go": _opts("-C"), "uv": _opts("--directory --project"),
    "docker": _opts("-H --context -c --config"), "cargo": _opts("--manifest-path"),
}
"""A program's options that take a value and may come before its sub-command."""

FLAGS: Final[Mapping[str, tuple[tuple[str, ToolClass], ...]]] = {
    "sed": (("-i", "write"), ("--in-place", "write")),
    "perl": (("-i", "write"),),
    "find": (("-delete", "write"), ("-fprint", "write"), ("-fls", "write")),
    "sort": (("-o", "write"),),
    "unzip": (("-l", "read"),),
    "tar": (("-t", "read"), ("--list", "read")),
}
"""Flags that change what a program does: ``sed -i`` edits files, ``tar -t`` only lists."""


def program_class(program: str, args: Sequence[str]) -> ToolClass:
    """The class of one program run with ``args``: flags first, then sub-commands, then the program."""
    for flag, cls in FLAGS.get(program, ()):
        if any(_has_flag(arg, flag) for arg in args):
            return cls
    table = SUBCOMMANDS.get(program)
    if table is not None:
        words = _subcommand(args, OPTIONS_WITH_VALUE.get(program, frozenset()))
        keys = (" ".join(words), words[0]) if len(words) == 2 else (words[0] if words else "",)
        for key in keys:
            found = table.get(key)
            if found is not None:
                return found
    return PROGRAMS.get(program, "exec")


def _has_flag(arg: str, flag: str) -> bool:
    if len(flag) == 2 and arg[:1] == "-" and arg[1:2] != "-":  # a short flag, maybe in a cluster (-ni)
        letters = arg[1:]
        end = next((i for i, c in enumerate(letters) if not c.isalpha()), len(letters))
        return flag[1] in letters[:end]
    return arg == flag or arg.startswith(flag + "=")


def _subcommand(args: Sequence[str], valued: frozenset[str]) -> list[str]:
    """Up to two leading words that are not options (nor an option's value): ``go mod download``."""
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg[:1] in ("-", "+"):  # `+nightly` selects a cargo toolchain
            skip = arg in valued
        else:
            words.append(arg)
            if len(words) == 2:
                break
    return words
