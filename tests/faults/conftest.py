"""Fixtures the fault suites share."""

from tests.harness.agentprotocol import claimed  # noqa: F401 - the fixture
