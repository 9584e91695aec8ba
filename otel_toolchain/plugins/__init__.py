"""The built-in plugins. They are registered under the ``otel_toolchain.plugins`` entry points like any other."""
