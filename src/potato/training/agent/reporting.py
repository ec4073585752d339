"""How the agent talks about a run: plain lines for whoever watches (:class:`Console`) and the
worker's events sent to the server at a steady cadence (:class:`Reporter`).

Remote-safe: standard library only, Python 3.8.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any, Callable, Dict, List, Optional

from potato.training.agent.protocol import (
    Client,
    Forbidden,
    ProtocolError,
    RunEnded,
    SeqGap,
    TokenRejected,
    Unreachable,
    backoff_delay,
)
from potato.training.job.results import Reason
from potato.training.launch.supervise import StopRequest

GIVE_UP_S = 300.0
"""Seconds without reaching the server after which a running job is stopped."""
HEARTBEAT_S = 2.0
"""A running job reports at least this often, events or not: it is also how a cancel arrives."""
FLUSH_S = 0.25
"""Events wait at most this long to be sent together."""
MAX_BATCH = 500
"""Events per report; a backlog after an outage goes in several reports."""
REPORT_RETRY_CAP_S = 15.0
"""The longest pause between two tries of a report while the server cannot be reached (backoff with
jitter up to this): an agent that retries reaches a restarted server within it."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def unicode_text(value: Any) -> Any:
    """``value`` with every lone surrogate replaced by U+FFFD. A file name that is not UTF-8 reaches
    Python as surrogates (surrogateescape); the server refuses text that is not Unicode, so a worker
    logging one would have every report refused."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {unicode_text(k): unicode_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unicode_text(v) for v in value]
    return value


class Console:
    """Plain lines for whoever watches the agent, also kept to send to the server (``agent.log``)."""

    def __init__(self, out: Any = None, clock: Callable[[], float] = time.time) -> None:
        self.out: Any = out or sys.stdout
        self.clock = clock
        self.pending: List[str] = []
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self._bar = False

    def say(self, text: str) -> None:
        stamp = time.strftime("%H:%M:%S", time.localtime(self.clock()))
        line = f"{stamp} {text}"
        self.pending.append(line)
        del self.pending[:-1000]
        self._write(("\n" if self._bar else "") + line + "\n")
        self._bar = False

    def _write(self, text: str) -> None:
        """Write to stdout unless it is gone (the ssh session that carried it ended): the agent must
        go on to stop its worker and report, and the lines still reach the server."""
        if self.out is None:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except (OSError, ValueError):
            self.out = None

    def progress(self, label: str, done: int, total: int) -> None:
        """A progress bar when stdout is a terminal; nothing in a log file."""
        if not self.tty or total <= 0:
            return
        width = 30
        filled = int(width * done / total)
        self._write(f"\r  {label} [{'#' * filled}{'.' * (width - filled)}] "
                    f"{done / 1e6:.1f} of {total / 1e6:.1f} MB" + ("\n" if done >= total else ""))
        self._bar = done < total

    def take(self) -> List[str]:
        lines, self.pending = self.pending, []
        return lines

    def give_back(self, lines: List[str]) -> None:
        self.pending[:0] = lines


class Reporter:
    """The Supervisor's ``report``: sends the worker's events (and the agent's own lines) to the
    server at a steady cadence and turns the replies into stop requests.

    Numbered events (``seq``) make a resend after a lost reply harmless: the server skips what it
    already has, so a server restart mid-run loses and doubles nothing.
    """

    def __init__(self, client: Client, run_id: str, console: Console, give_up_after_s: float = GIVE_UP_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.run_id = run_id
        self.console = console
        self.give_up_after_s = give_up_after_s
        self.clock = clock
        self.seq = 0
        self.pending: List[Dict[str, Any]] = []
        self.last_post = float("-inf")
        self.last_contact = clock()
        self.next_try = 0.0
        self.failures = 0
        self.stop: Optional[StopRequest] = None
        """What the server (or the agent's operator) asked for; stays set once set."""
        self.ended = False
        """The server no longer takes reports for this run (it ended there)."""

    def add(self, event: Dict[str, Any]) -> None:
        """One of the agent's own events (a step, a log line); stamped like the worker's, so the run's
        events say when each happened on the training machine."""
        event.setdefault("t", self.clock())
        self.pending.append(event)

    def request_stop(self, request: StopRequest) -> None:
        if self.stop is None:
            self.stop = request

    def __call__(self, events: List[Dict[str, Any]]) -> Optional[StopRequest]:
        self.pending.extend(events)
        now = self.clock()
        due = now - self.last_post >= (FLUSH_S if self.pending else HEARTBEAT_S)
        if due and now >= self.next_try and not self.ended:
            self.flush_once()
        if self.stop is None and now - self.last_contact > self.give_up_after_s:
            self.stop = StopRequest(
                Reason.AGENT_LOST,
                f"The agent could not reach the server for {self.give_up_after_s:g} s and stopped the run itself; "
                "start the run again once the server is reachable.")
            self.console.say(self.stop.message)
        return self.stop

    def flush_once(self) -> bool:
        """One report; True when the server took it (or will never take one again)."""
        now = self.clock()
        self.last_post = now
        batch = self.pending[:MAX_BATCH]
        lines = self.console.take()
        try:
            reply = self.client.events(self.run_id, self.seq, unicode_text(batch), unicode_text(lines))
        except Unreachable as exc:
            self.console.give_back(lines)
            if self.failures == 0:
                self.console.say(f"cannot reach the server ({exc}); the worker goes on, retrying")
            self.next_try = now + backoff_delay(self.failures, base=1.0, cap=REPORT_RETRY_CAP_S)
            self.failures += 1
            return False
        except (RunEnded, Forbidden, TokenRejected) as exc:
            self.ended = True
            self.request_stop(StopRequest(Reason.CANCELLED, f"The server no longer takes this run: {exc}"))
            self.console.say(f"the server no longer takes reports for run {self.run_id}: {exc}")
            return True
        except ProtocolError as exc:
            if isinstance(exc, SeqGap) and exc.expected_seq < self.seq:
                self.renumber(exc.expected_seq, lines)
                return False
            # A report the server refuses as malformed would be refused again: drop it, say so. The
            # server recorded none of it, so the next report takes the same numbers.
            self.console.say(f"the server refused a report ({exc.status}: {exc}); dropping {len(batch)} events")
            if self.failures:
                self.console.say("reached the server again")
            self.failures = 0
            self.last_contact = self.clock()
            del self.pending[:len(batch)]
            return True
        if self.failures:
            self.console.say("reached the server again")
        self.failures = 0
        self.last_contact = self.clock()
        self.seq += len(batch)
        del self.pending[:len(batch)]
        if reply.get("cancel"):
            try:
                reason = Reason(reply.get("reason") or "cancelled")
            except ValueError:
                reason = Reason.CANCELLED
            message = str(reply.get("message") or "Cancelled by an admin.")
            if self.stop is None:
                self.console.say(f"the server asks to stop run {self.run_id}: {message}")
            self.request_stop(StopRequest(reason, message))
        return True

    def renumber(self, count: int, lines: List[str]) -> None:
        """The server answered ``seq_gap``: it has ``count`` events, fewer than it acknowledged to this
        agent (its database restored from a backup, another server behind the address). This agent
        sends a batch only after the last was taken, so the missing events are gone from here too:
        keep the batch whole, number it from the server's count and send it again at once."""
        self.console.give_back(lines)
        self.console.say(f"the server has {count} of the {self.seq} events it acknowledged for run {self.run_id}; "
                         f"events {count} to {self.seq - 1} are lost there, the next ones go on from {count}")
        self.seq = count
        self.last_contact = self.clock()
        self.last_post = float("-inf")  # again at the next call, not after a flush interval

    def drain(self, sleep: Callable[[float], None] = time.sleep) -> bool:
        """Send everything still pending, retrying until the give-up time; True when all went."""
        while (self.pending or self.console.pending) and not self.ended:
            if self.clock() - self.last_contact > self.give_up_after_s:
                return False
            wait = self.next_try - self.clock()
            if wait > 0:
                sleep(min(wait, 1.0))
                continue
            self.flush_once()
        return not self.pending
