"""``python -m potato.training.agent``: the agent a training host runs (see :mod:`.program`)."""

import sys

from potato.training.agent.program import main

sys.exit(main())
