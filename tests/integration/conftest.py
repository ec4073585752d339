"""Fixtures the integration suites share."""

from tests.harness.agentsetup import make_setup  # noqa: F401 - the fixture
from tests.harness.runs import make_server  # noqa: F401 - the fixture
from tests.harness.slurmcluster import cluster  # noqa: F401 - the fixture
from tests.harness.sshd import sshd  # noqa: F401 - the fixture
