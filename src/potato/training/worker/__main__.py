"""``python -m potato.training.worker``: the worker that trains on one job (see :mod:`.program`)."""

import sys

from potato.training.worker.program import main

sys.exit(main())
