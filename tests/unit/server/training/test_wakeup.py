"""The doorbell that starts a queued run at once, across processes (R4's start latency)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from potato.server.training.wakeup import Wakeup


def test_a_ring_from_another_process_wakes_the_listener(tmp_path: Path) -> None:
    bell = Wakeup(tmp_path / "dispatcher.wake")
    bell.ring()  # nobody listens yet: nothing happens, nothing fails
    assert bell.listen()
    assert stat.S_IMODE(os.stat(bell.path).st_mode) == 0o600
    assert not bell.wait(0.01)
    code = f"from potato.server.training.wakeup import Wakeup; from pathlib import Path; Wakeup(Path({str(bell.path)!r})).ring()"
    for _ in range(3):  # several rings before the listener looks: one wake-up takes them all
        subprocess.run([sys.executable, "-c", code], check=True)
    assert bell.wait(5)
    assert not bell.wait(0.01)
    bell.close()
    bell.ring()  # the listener gone: still nothing fails


def test_a_file_in_the_bells_place_is_replaced_not_written(tmp_path: Path) -> None:
    path = tmp_path / "dispatcher.wake"
    path.write_text("not a fifo")
    Wakeup(path).ring()
    assert path.read_text() == "not a fifo"
    bell = Wakeup(path)
    assert bell.listen() and stat.S_ISFIFO(os.lstat(path).st_mode)
    bell.close()
