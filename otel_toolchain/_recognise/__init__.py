"""Reading spans recorded by other instrumentations: which are tool calls and turns, and what they say.

The chain's span-processor path goes through here; calls handed in directly (the recorder, the
harness adapters, the OTLP receiver) never do.
"""
