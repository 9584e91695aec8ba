"""``python -m otel_toolchain`` runs the command line."""

from otel_toolchain.cli import main

raise SystemExit(main())
