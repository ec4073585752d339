"""Whether this server process has been asked to stop.

A long poll (``jobs/next``) holds a thread for up to 25 s; on SIGTERM gunicorn waits for its threads
before the process ends, so a ``systemctl restart`` with idle agents connected took the whole
graceful timeout (bench/mixed_load.py found it). The worker sets :data:`requested` when told to stop,
and waiting long polls answer at once: the agents ask again, of the next server.
"""

from __future__ import annotations

import threading

requested = threading.Event()
"""Set by the gunicorn worker's SIGTERM (or SIGINT) handler; never cleared in that process."""
