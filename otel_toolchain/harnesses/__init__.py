"""The coding-agent CLIs: their streams and session stores as neutral events, and those events as turns.

::

    streams/   live and recorded JSON event streams (claude -p, codex exec --json, opencode run, pi --mode json)
    stores/    the session files each CLI keeps on disk
    detect     which harness, stream or store, from a file's first lines
    opener     one way to open a recorded run: detect, open, read
    writer     events -> turns and calls handed to the chain, each turn ending as a TurnOutcome
    live       a live CLI in its own process group, stopped when a plugin says so
"""
