"""The OTLP receiver: agents' own telemetry read into calls and turns for the chain (``serve``, ``run --telemetry``)."""
