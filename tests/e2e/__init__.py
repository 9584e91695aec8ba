"""End-to-end tests with real back-ends (a package, so that its conftest and helpers do not shadow
those of tests/)."""
