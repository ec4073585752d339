"""The judges at work: every judge answers every judged item's questions ``k_samples`` times, in a
background thread of the server process the admin started it from, then the sample is drawn.

Nothing here is shown to annotators: the answers stay in ``judge_draws`` (the labelling is blind).
A judge's server that stops answering stops the run with the reason on the admin page; starting it
again goes on from the answers kept. A reply that names no option is kept as a failed draw: it
counts among the k and agrees with nothing, so a judge that often fails shows low confidence.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from potato.config.schema import JudgeCalibration, LlmService
from potato.items import Item
from potato.server.assist.client import ServiceProblem, complete
from potato.server.judging.store import GENERATING, Draw, JudgeStore, RunState
from potato.study.judging import draw_sample, vote
from potato.study.llm_help import NoAnswer, judge_messages, read_judge_label, shorten

if TYPE_CHECKING:
    from potato.server.context import Project

log = logging.getLogger(__name__)

THREADS = 4
"""Calls in flight at once, all judges together (a local server answers them one by one anyway)."""
FAILURES_TO_STOP = 5
"""Calls in a row that got no reply at all before the run stops and says why."""
STALE_AFTER_S = 120.0
"""Beyond the longest call's timeout, a run whose process stopped beating may be started again (a run
beats after each answer; waiting for its per-minute limit takes at most 60 s of this)."""


class AlreadyRunning(Exception):
    """Another server process is running the judges; the message says since when."""


def run_digest(jc: JudgeCalibration) -> str:
    """What the answers are kept under: the prompt, each judge's settings, k and the questions; a change
    to any of them starts afresh rather than mix answers to different questions."""
    body = json.dumps({"prompt": jc.prompt, "k": jc.k_samples, "schemas": list(jc.schemas),
                       "judges": [[j.base_url, j.model, j.temperature, j.max_tokens] for j in jc.judges]},
                      sort_keys=True)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def judged_items(project: Project, jc: JudgeCalibration) -> list[Item]:
    """The items the judges answer: the first ``max_items`` (it wins), or ``fraction`` of them, or all."""
    items = list(project.items)
    if jc.max_items is not None:
        return items[:jc.max_items]
    if jc.fraction is not None:
        return items[:max(1, math.ceil(jc.fraction * len(items)))]
    return items


def _named_for_judge(problem: str, index: int) -> str:
    """The client names the setting to fix as ai_support writes it; a judge's is in its models entry."""
    return problem.replace("ai_config.", f"judge_calibration.models[{index}].")


class _Pace:
    """At most ``per_minute`` calls to one judge in any 60 s, and ``max_calls`` in all (None: no cap)."""

    def __init__(self, per_minute: int, max_calls: int | None, made: int) -> None:
        self.per_minute, self.max_calls, self.made = per_minute, max_calls, made
        self.times: deque[float] = deque()
        self.lock = threading.Lock()

    def take(self, stopping: threading.Event) -> bool:
        """Wait for a free place; False once the cap is reached or the run stops."""
        while not stopping.is_set():
            with self.lock:
                if self.max_calls is not None and self.made >= self.max_calls:
                    return False
                now = time.monotonic()
                while self.times and self.times[0] <= now - 60.0:
                    self.times.popleft()
                if len(self.times) < self.per_minute:
                    self.times.append(now)
                    self.made += 1
                    return True
                wait = self.times[0] + 60.0 - now
            stopping.wait(min(wait, 1.0))
        return False


class JudgeRunner:
    """``judge_calibration`` for one project, in one server process."""

    def __init__(self, project: Project, jc: JudgeCalibration) -> None:
        self.project, self.jc = project, jc
        self.store = JudgeStore(project.db)
        self.digest = run_digest(jc)
        self.stale_after = max(j.timeout for j in jc.judges) + STALE_AFTER_S
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def total(self) -> int:
        return len(judged_items(self.project, self.jc)) * len(self.jc.schemas) * len(self.jc.judges) * self.jc.k_samples

    def start(self) -> None:
        """Start (or go on with) the judges in this process; :class:`AlreadyRunning` if one is going."""
        owner = f"{os.getpid()}:{threading.get_ident()}:{time.time()}"
        running = self.store.start(self.digest, owner, self.stale_after)
        if running is not None:
            raise AlreadyRunning("the judges are already at work (started "
                                 f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(running.started_at))}); wait for "
                                 "them to finish")
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, args=(owner,), name="potato-judges", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()

    def _run(self, owner: str) -> None:
        try:
            problem = self._judge_all(owner)
            if problem is None:
                self.store.finish(owner, self._sample())
            else:
                self.store.stop(owner, problem)
        except Exception as exc:  # noqa: BLE001 - a thread's end is the admin's to read, never a silent death
            log.exception("the judges stopped")
            self.store.stop(owner, f"the judges stopped on an error: {exc}")

    def _judge_all(self, owner: str) -> str | None:
        """Every missing draw; the reason the run stopped, or None when all are answered."""
        done = self.store.done(self.digest)
        units = [(judge, item, schema, draw) for item in judged_items(self.project, self.jc)
                 for schema in self.jc.schemas for judge in self.jc.judges for draw in range(self.jc.k_samples)
                 if (judge.model, item.id, schema, draw) not in done]
        made = {j.model: sum(1 for key in done if key[0] == j.model) for j in self.jc.judges}
        paces = {j.model: _Pace(j.calls_per_minute, j.max_calls, made[j.model]) for j in self.jc.judges}
        problems: list[str] = []
        in_row = [0]
        lock = threading.Lock()

        def one(judge: LlmService, item: Item, schema: str, draw: int) -> None:
            if self._stopping.is_set() or not paces[judge.model].take(self._stopping):
                return
            scheme = self.project.config.scheme(schema)
            options = scheme.labels if scheme is not None else ()
            messages = judge_messages(self.jc.prompt, item.text, scheme.description if scheme else "", options)
            try:
                reply, seconds = complete(judge, messages)
            except ServiceProblem as exc:
                with lock:
                    in_row[0] += 1
                    problems.append(f"{judge.model}: {_named_for_judge(str(exc), self.jc.judges.index(judge))}")
                    if in_row[0] >= FAILURES_TO_STOP:
                        self._stopping.set()
                return
            with lock:
                in_row[0] = 0
            try:
                label, problem = read_judge_label(reply, options), None
            except NoAnswer as exc:
                label, problem = None, str(exc)
            self.store.add(self.digest, [Draw(judge.model, item.id, schema, draw, label, reply, problem, seconds)])
            if not self.store.beat(owner):
                self._stopping.set()

        with ThreadPoolExecutor(THREADS, thread_name_prefix="potato-judge") as pool:
            for unit in units:
                pool.submit(one, *unit)
        if problems and (self._stopping.is_set() or self.store.count(self.digest)[0] < self.total):
            return (f"{problems[-1]} ({len(problems)} call(s) failed); the answers so far are kept: start the "
                    "judges again to go on")
        capped = [j.model for j in self.jc.judges if j.max_calls is not None and paces[j.model].made >= j.max_calls]
        if self.store.count(self.digest)[0] < self.total:
            if capped:
                return (f"the cap on calls (max_calls) of {', '.join(capped)} is reached before every item was "
                        "judged; raise it in the config and restart the server to go on")
            return "the judges stopped before every item was judged (the server is shutting down); start them again"
        return None

    def _sample(self) -> list[str]:
        """The items the annotators' labels are compared on, stratified by ``stratify_by`` (an item field)
        or by the first judge's label on the first question."""
        items = judged_items(self.project, self.jc)
        strata: dict[str, str] = {}
        if self.jc.stratify_by:
            strata = {item.id: str(item.data.get(self.jc.stratify_by, "")) for item in items}
        else:
            draws = self.store.draws(self.digest)
            first, schema = self.jc.judges[0].model, self.jc.schemas[0]
            for item in items:
                modal, _ = vote([d.label for d in draws.get((first, item.id, schema), [])])
                strata[item.id] = modal or ""
        return draw_sample([item.id for item in items], self.jc.sample_size, self.jc.strategy, self.jc.seed, strata)

    def status(self) -> dict[str, Any]:
        """What the admin page says: the run's state, how far the judges are, the latest problem."""
        state: RunState | None = self.store.state()
        answered, failed = self.store.count(self.digest)
        current = state is not None and state.prompt == self.digest
        running = current and state is not None and state.live(time.time(), self.stale_after)
        shown = "not started"
        if current and state is not None:
            shown = state.state if state.state != GENERATING or running else "stopped"
        return {"state": shown, "answered": answered, "failed_draws": failed, "total": self.total,
                "judges": [j.model for j in self.jc.judges], "k_samples": self.jc.k_samples,
                "schemas": list(self.jc.schemas),
                "problem": shorten(state.problem, 400) if current and state is not None and state.problem else (
                    "the process running the judges stopped (a restart?); start them again to go on"
                    if shown == "stopped" and state is not None and not state.problem else None),
                "sample": state.sample if current and state is not None and state.sample else None}
