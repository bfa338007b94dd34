"""End-to-end tests with real agent clients (a package, so that its conftest does not shadow tests/conftest.py)."""
