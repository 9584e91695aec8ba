"""When two tool calls are the same call: the one place that decides, and the digest that stands for it.

Two calls are the same when all of these match (``Identity.key``):

=================  ==========================================================================
tool               the tool name, exactly
arguments          the parsed arguments (key order does not matter), less the annotation-only
                   fields of :data:`IGNORED_ARGS` (free text the model writes about the call,
                   such as Claude Code's Bash ``description``) and those a manifest adds
working directory  where the harness says it
result             exactly, for a call that succeeded; for a failed call, with volatile tokens
                   masked (:func:`mask_volatile`: times, durations, dates, PIDs, thread ids,
                   addresses, temporary names, random ids) and its lines in any order
                   (:func:`sort_lines`), so the same failure reworded by the clock or
                   interleaved differently is still the same failure, while "3 failed" then
                   "2 failed" is progress
failure            whether the call failed
=================  ==========================================================================

A call rebuilt from a lone result (tool ``unknown``, no arguments) is never the same as another
one: there is nothing to compare. Successful results are not masked: a poll whose output changes
(``date +%s%N``, a pod's age) is progress.

The digest (:class:`Digester`) is keyed (BLAKE2b in keyed mode, a MAC) so a short command cannot be
recovered from it by hashing guesses; it is computed from the normalised identity, only when a stop
or a nudge needs one. Everything here is pure and thread-safe (caches may lose an entry, never
give a wrong one); nothing blocks or raises on odd input.
"""

from __future__ import annotations

import hashlib
import json
import json.decoder
import json.scanner
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from otel_toolchain.calls import ToolCall

UNKNOWN_TOOL: Final = "unknown"
"""The tool name of a call rebuilt from a lone result, whose start was never seen."""

__all__ = [
    "IGNORED_ARGS", "LINE_ORDER", "MASK_KINDS", "Digester", "Identity", "IdentityKey", "canonical_json",
    "mask_volatile", "masked_kinds", "parse_arguments", "same", "sort_lines",
]

_CACHE_LIMIT: Final = 4096
_SEPARATOR: Final = b"\x1f"
_ENCODE: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode

IdentityKey = tuple[Any, ...]
"""What :meth:`Identity.key` returns: compare keys with ``==`` (they may hold dicts, so no hashing)."""

IGNORED_ARGS: Final[Mapping[str, frozenset[str]]] = {
    # Claude Code: free text the model writes to describe the call, shown to the user only.
    "Bash": frozenset({"description"}),
    "Task": frozenset({"description"}),
    "Agent": frozenset({"description"}),
    "ScheduleWakeup": frozenset({"reason"}),
    "Workflow": frozenset({"description", "title"}),  # both "Ignored", its schema says
    # OpenCode: the same field on its shell and sub-agent tools.
    "bash": frozenset({"description"}),
    "task": frozenset({"description"}),
    # Codex: the reason given when asking for escalated permissions.
    "shell": frozenset({"justification"}),
    "exec_command": frozenset({"justification"}),
    "command_execution": frozenset({"justification"}),
}
"""Per tool, the argument fields that annotate a call without changing what it does."""


def canonical_json(value: Any) -> str:
    """``value`` as JSON with sorted keys and no insignificant white space (non-ASCII kept)."""
    return _ENCODE(value)


_parsed: dict[str, Any] = {}
_UNPARSED: Final = object()
# The C scanner json.loads ends in, called directly: for a short text its Python layers (decode,
# raw_decode, two white-space matches) cost as much as the scan.
_scan: Final = json.scanner.make_scanner(json.decoder.JSONDecoder())  # type: ignore[arg-type]  # typeshed types the class as its own argument


def _loads(text: str) -> Any:
    """``json.loads(text)``, or ``text`` itself when it is not JSON. Never raises."""
    try:
        value, end = _scan(text, 0)
    except StopIteration:  # no value starts at 0: white space first, or not JSON
        pass
    except (ValueError, RecursionError):  # json.loads would fail on the same value
        return text
    else:
        if end == len(text):
            return value
    try:  # the exact rules where the text is more than one bare value: white space around it, extra data
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def parse_arguments(text: str | None) -> Any:
    """Arguments recorded as text, parsed: JSON as a value, anything else as the text itself.

    Cached by text (agents repeat themselves); parsed values are shared between calls: read-only.
    """
    if text is None:
        return None
    value: Any = _parsed.get(text, _UNPARSED)  # not [text] and KeyError: raising costs more than a new text's scan
    if value is not _UNPARSED:
        return value
    value = _loads(text)
    if len(_parsed) >= _CACHE_LIMIT:
        _parsed.clear()
    _parsed[text] = value
    return value


_MONTH: Final = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DAY: Final = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_VOLATILE: Final = tuple((re.compile(pattern), token, kind) for pattern, token, kind in (
    # Codex's native tool output frames every result with these lines; the token count is the size of
    # the output, which changes with its volatile tokens (the output itself is compared below).
    (r"(?m)^(Chunk ID|Wall time|Process exited after|Original token count)\b[^\n]*", r"\1: <volatile>",
     "codex frame"),
    # Cargo says what it had to (re)build or fetch before the run; the same failing `cargo test`
    # prints them the first time only. Its exact shapes, so that no other program's line matches;
    # no token: such a line is dropped whole (see _mask). Anchored: a search tries line starts only.
    (r"(?m)^ *(?:(?:Compiling|Checking|Fresh|Documenting|Downloaded|Adding|Locking) [\w.-]+ v\d+\.\d+\.\d+[^\n]*"
     r"|Downloaded \d+ crates? \([^\n]*|Locking \d+ packages?[^\n]*|Updating [^\n]* index"
     r"|Blocking waiting for file lock[^\n]*)", None, "build progress"),
    (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<uuid>", "uuid"),
    (r"\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?", "<time>", "time"),
    (rf"(?:{_DAY},? +)?{_MONTH} +\d{{1,2}},? +\d{{1,2}}:\d{{2}}:\d{{2}}(?: +[A-Z]{{2,5}})?(?: +\d{{4}})?", "<time>",
     "time"),
    (rf"\b\d{{1,2}} {_MONTH} \d{{4}}(?: \d{{1,2}}:\d{{2}}(?::\d{{2}})?)?", "<time>", "time"),
    (r"\b\d{4}-\d{2}-\d{2}\b|\b\d{4}/\d{2}/\d{2}\b", "<date>", "date"),
    (r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "<time>", "time"),
    (r"\b1[5-9]\d{8}(?:\d{3}){0,3}\b", "<epoch>", "epoch"),
    (r"\b0x[0-9a-fA-F]{6,}\b", "<addr>", "address"),
    (r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{16,}\b", "<hex>", "hex id"),
    (r"(?:/private)?/(?:tmp|var/folders|var/tmp)/[^\s'\":,)\]]+", "<tmp>", "temp path"),
    (r"\btmp[._]?[A-Za-z0-9_]{6,}\b", "<tmp>", "temp path"),
    (r"(?i)\b(pid|process|thread)([ =:#]+)\d+", r"\1\2<pid>", "pid"),
    # Rust >= 1.89 panics name the OS thread: "thread 'tests::adds' (1048) panicked at ...".
    (r"(thread '[^'\n]*') \(\d+\)", r"\1 (<tid>)", "thread id"),
    (r"\b\d+(?:\.\d+)?(?: ?)(?:ns|µs|us|ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hrs?|hours?)\b", "<dur>",
     "duration"),
    (r"(?i)\b(duration(?:_ms)?|elapsed|took|time)([ =:]+)\d+(?:\.\d+)?", r"\1\2<dur>", "duration"),
))
MASK_KINDS: Final = tuple(dict.fromkeys(kind for _, _, kind in _VOLATILE))
"""The kinds of volatile token :func:`mask_volatile` masks, in the order it masks them."""
LINE_ORDER: Final = "line order"
"""The mask kind of a failed result whose lines were compared in any order."""

_masked: dict[str, str] = {}
_sorted: dict[str, str] = {}


def mask_volatile(text: str) -> str:
    """``text`` with its volatile tokens replaced by placeholders such as ``<time>`` and ``<pid>``.

    Idempotent (placeholders match nothing), never merges texts whose other characters differ,
    and leaves counts alone. Cached per text: only failed results are masked, and failures repeat.
    """
    try:
        return _masked[text]
    except KeyError:
        pass
    masked = text
    for pattern, token, _ in _VOLATILE:
        masked = _mask(pattern, token, masked)
    if len(_masked) >= _CACHE_LIMIT:
        _masked.clear()
    _masked[text] = masked
    return masked


def masked_kinds(text: str) -> tuple[str, ...]:
    """The kinds of volatile token (:data:`MASK_KINDS`) :func:`mask_volatile` finds in ``text``.

    Not cached: for stop evidence, not for the hot path.
    """
    found: list[str] = []
    for pattern, token, kind in _VOLATILE:
        masked = _mask(pattern, token, text)
        if masked != text and kind not in found:
            found.append(kind)
        text = masked
    return tuple(found)


def _mask(pattern: re.Pattern[str], token: str | None, text: str) -> str:
    """``text`` with ``pattern`` replaced by ``token``, or with the lines it matches whole dropped (no token)."""
    if token is not None:
        return pattern.sub(token, text)
    if pattern.search(text) is None:
        return text
    return "\n".join(line for line in text.split("\n") if pattern.fullmatch(line) is None)


def sort_lines(text: str) -> str:
    """``text``'s lines in sorted order: the same lines whatever order two streams interleaved them in.

    A program whose stdout and stderr share a pipe (cargo test, make -j) prints the same lines in
    another order from run to run. Cached per text, like :func:`mask_volatile`.
    """
    try:
        return _sorted[text]
    except KeyError:
        pass
    result = "\n".join(sorted(text.splitlines()))
    if len(_sorted) >= _CACHE_LIMIT:
        _sorted.clear()
    _sorted[text] = result
    return result


class _Unique:
    """Stands in a rebuilt call's identity: equal to nothing but itself."""

    __slots__ = ()


class Identity:
    """Normalises calls for comparison; one per chain or per ``repeat_guard`` (its ``ignore_args``).

    ``ignore_args`` adds annotation fields per tool to :data:`IGNORED_ARGS`; ``mask_failures=False``
    leaves the volatile tokens of failed results alone; ``unordered_failures=False`` compares their
    lines in order (by default a failure's lines are compared in any order: see :func:`sort_lines`).
    """

    __slots__ = ("_quoted", "ignored", "mask_failures", "unordered_failures")

    def __init__(self, ignore_args: Mapping[str, frozenset[str] | set[str] | list[str]] | None = None, *,
                 mask_failures: bool = True, unordered_failures: bool = True) -> None:
        ignored = {tool: frozenset(fields) for tool, fields in IGNORED_ARGS.items()}
        for tool, fields in (ignore_args or {}).items():
            ignored[tool] = ignored.get(tool, frozenset()) | frozenset(fields)
        self.ignored: Mapping[str, frozenset[str]] = ignored
        self._quoted = {tool: tuple(f'"{field}"' for field in fields) for tool, fields in ignored.items()}
        self.mask_failures = mask_failures
        self.unordered_failures = unordered_failures

    def key(self, call: ToolCall) -> IdentityKey:
        """What makes ``call`` the same as another: keys that are :func:`same` make calls that are.

        Arguments stay text where the source gave text and no ignored field can be in it (raw text
        first: agents repeat the same text; :func:`same` parses only when two texts differ).
        """
        tool, arguments = call[0], call[1]
        if arguments is None and tool == UNKNOWN_TOOL:  # rebuilt from a lone result: nothing to compare
            return (_Unique(),)
        fields = self.ignored.get(tool)
        if fields is not None and self._may_hold(arguments, tool):
            arguments = call.parsed_arguments
            if isinstance(arguments, dict) and not fields.isdisjoint(arguments):
                arguments = {k: v for k, v in arguments.items() if k not in fields}
        result = call[2]
        if call[3] and result:
            if self.mask_failures:
                result = mask_volatile(result)
            if self.unordered_failures:
                result = sort_lines(result)
        return (tool, arguments, call[6] or "", result or "", call[3])

    def _may_hold(self, arguments: Any, tool: str) -> bool:
        if not isinstance(arguments, str):
            return True
        for quoted in self._quoted[tool]:  # noqa: SIM110 (a scan before any parse; any() costs a generator)
            if quoted in arguments:
                return True
        return False

    def normalised(self, call: ToolCall) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the argument fields left out of ``call``'s identity, the kinds of its result's masks).

        The kinds are those of :data:`MASK_KINDS` found in a failed result, and :data:`LINE_ORDER`
        when its lines were not in sorted order; nothing for a successful result.
        """
        fields = self.ignored.get(call.tool)
        arguments = call.parsed_arguments
        dropped = tuple(sorted(fields.intersection(arguments))) if fields and isinstance(arguments, dict) else ()
        result = call.result
        if not (call.failed and result):
            return dropped, ()
        kinds = masked_kinds(result) if self.mask_failures else ()
        if self.unordered_failures:
            shown = mask_volatile(result) if self.mask_failures else result
            if sort_lines(shown) != shown:
                kinds = (*kinds, LINE_ORDER)
        return dropped, kinds


def same(a: IdentityKey, b: IdentityKey) -> bool:
    """Whether two identity keys stand for the same call (arguments that differ as text are compared parsed)."""
    if a == b:
        return True
    if len(a) != 5 or len(b) != 5 or a[3] != b[3] or a[0] != b[0] or a[4] != b[4] or a[2] != b[2]:
        return False  # results first: they tell most calls apart
    x, y = a[1], b[1]
    if not (isinstance(x, str) or isinstance(y, str)):
        return False
    return bool((parse_arguments(x) if isinstance(x, str) else x) == (parse_arguments(y) if isinstance(y, str) else y))


class Digester:
    """Keyed 128-bit digests of call identities."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else os.urandom(32)
        if not 1 <= len(self._key) <= 64:
            raise ValueError("a digest key holds 1 to 64 bytes")

    def digest(self, *parts: str) -> str:
        """Hex digest of ``parts``, which are joined unambiguously."""
        hasher = hashlib.blake2b(key=self._key, digest_size=16)
        for part in parts:
            hasher.update(part.encode("utf-8", "surrogatepass"))
            hasher.update(_SEPARATOR)
        return hasher.hexdigest()

    def of_identity(self, key: IdentityKey) -> str:
        """The digest of an identity key (as :meth:`Identity.key` makes it)."""
        if len(key) != 5:  # a rebuilt call: there is nothing to digest but its uniqueness
            return self.digest("<rebuilt>", str(id(key[0])))
        tool, arguments, cwd, result, failed = key
        value = parse_arguments(arguments) if isinstance(arguments, str) else arguments
        return self.digest(tool, value if isinstance(value, str) else canonical_json(value), cwd, result,
                           "1" if failed else "0")
