"""The chain as a coding agent's hook: Claude Code's ``PostToolUse`` command (``otel-toolchain hook claude-code``)."""
