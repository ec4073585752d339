"""Asking the LLM server about items in the background, so that no annotator waits on it.

The page gets what is already answered with the item, and asks again for the rest
(``GET /api/ai-help/<item>``) while this process's small pool of threads makes the calls; each page
also sends the annotator's next items ahead (``ahead``). A server that is slow, down or over its
limits leaves those items without a hint and a line on the admin page, never an error page.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from potato.config.schema import AiSupport, LlmService, OptionHighlighting
from potato.items import Item
from potato.server.assist.answers import AnswerKey, Answers, Claim
from potato.server.assist.client import ServiceProblem, complete
from potato.study.llm_help import NoAnswer, help_messages, option_messages, prompt_digest, read_help, read_options

if TYPE_CHECKING:
    from potato.server.context import Project

log = logging.getLogger(__name__)

THREADS = 2
"""Calls one server process makes at a time; the per-minute limit bounds them all together."""


class Question:
    """One question about one item as the server is asked it: ``kind`` is ``highlight`` (which
    options fit) or one of :data:`potato.study.llm_help.HELP_KINDS`."""

    def __init__(self, key: AnswerKey, kind: str, messages: list[dict[str, str]], options: tuple[str, ...],
                 top_k: int, text: str) -> None:
        self.key, self.kind, self.messages, self.options, self.top_k, self.text = (
            key, kind, messages, options, top_k, text)

    def read(self, reply: str) -> Any:
        if self.kind == HIGHLIGHT:
            return read_options(reply, self.options, self.top_k)
        return read_help(self.kind, reply, self.options, self.text)


HIGHLIGHT = "highlight"


class Helper:
    """The LLM server's help for one project, in one server process: option highlights, and the
    hints, keywords and rationales ``ai_config.include`` asks for."""

    def __init__(self, project: Project, assist: AiSupport) -> None:
        assert assist.service is not None
        self.project = project
        self.service: LlmService = assist.service
        self.highlighting: OptionHighlighting | None = assist.option_highlighting
        self.help_kinds = assist.help_kinds
        self.help_schemas = assist.help_schemas
        self.answers = Answers(project.db)
        self._lock = threading.Lock()
        self._asking: set[AnswerKey] = set()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid: int | None = None
        self._warmed = False

    def _question(self, item: Item, schema: str, kind: str) -> Question | None:
        scheme = self.project.config.scheme(schema)
        if scheme is None or not scheme.labels:
            return None
        top_k = self.highlighting.top_k if self.highlighting is not None else 1
        if kind == HIGHLIGHT:
            messages = option_messages(item.text, scheme.description, scheme.labels, top_k)
        else:
            messages = help_messages(kind, item.text, scheme.description, scheme.labels)
        digest = prompt_digest(self.service.model, messages, self.service.temperature, self.service.max_tokens)
        return Question(AnswerKey(item.id, schema, self.service.model, digest), kind, messages, scheme.labels, top_k,
                        item.text)

    def questions(self, item: Item, helps: bool = False) -> list[Question]:
        """The item's highlight questions (and, with ``helps``, its hint, keyword and rationale ones)."""
        asked = [(name, HIGHLIGHT) for name in (self.highlighting.schemas if self.highlighting else ())]
        if helps:
            asked += [(name, kind) for name in self.help_schemas for kind in self.help_kinds]
        found = (self._question(item, schema, kind) for schema, kind in asked)
        return [q for q in found if q is not None]

    def help_for(self, item: Item, schema: str, kind: str) -> tuple[str, Any]:
        """One button's answer: ("ready", answer), ("pending", None) while it is asked, or ("none",
        problem) when there is none for now."""
        question = self._question(item, schema, kind) if schema in self.help_schemas and kind in self.help_kinds \
            else None
        if question is None:
            return "none", "no such help for this question"
        answer = self.answers.get([question.key]).get(question.key)
        if answer is not None and answer.state == "ready":
            return "ready", answer.value
        if answer is not None and answer.settled(time.time(), self.service.timeout):
            return ("pending", None) if answer.state == "pending" else ("none", answer.problem)
        if self.answers.capped(self.service.max_calls):
            return "none", "the cap on calls is reached"
        self._submit(question)
        return "pending", None

    def lookup(self, item: Item) -> tuple[dict[str, list[str]], list[str]]:
        """The highlights answered so far, and the schemes still being asked about (asked now, in the
        background, where nobody is); a scheme in neither gets no hint for now."""
        questions = self.questions(item)
        found = self.answers.get(q.key for q in questions)
        capped = self.answers.capped(self.service.max_calls)
        now = time.time()
        highlights: dict[str, list[str]] = {}
        pending: list[str] = []
        for question in questions:
            answer = found.get(question.key)
            if answer is not None and answer.state == "ready" and answer.value:
                highlights[question.key.schema] = list(answer.value)[:question.top_k]
            elif answer is not None and answer.state == "pending" and answer.settled(now, self.service.timeout):
                pending.append(question.key.schema)  # another process is asking
            elif not capped and (answer is None or not answer.settled(now, self.service.timeout)):
                pending.append(question.key.schema)
                self._submit(question)
        return highlights, pending

    def answered(self, item: Item) -> dict[str, list[str]]:
        """The highlights kept for the item, asking nothing (the control group comparison)."""
        questions = self.questions(item)
        found = self.answers.get(q.key for q in questions)
        out: dict[str, list[str]] = {}
        for question in questions:
            answer = found.get(question.key)
            if answer is not None and answer.state == "ready" and answer.value:
                out[question.key.schema] = list(answer.value)[:question.top_k]
        return out

    def ask_ahead(self, user: str, position: int) -> None:
        """Ask which options fit the annotator's next items, so their highlights are there when the
        annotator is. Hints, keywords and rationales are asked when their button is clicked: asked
        ahead for every item, they would queue before the highlight an annotator is waiting for."""
        queue = self.project.queue
        for step in range(1, self.service.ahead + 1):
            try:
                item = queue.at(user, position + step)
            except IndexError:
                break
            self._ask_unsettled(self.questions(item))

    def warm_up(self) -> None:
        """The first ``warm_up`` items, once per process (claims keep processes from asking twice)."""
        with self._lock:
            if self._warmed:
                return
            self._warmed = True
        for item in list(self.project.items)[:self.service.warm_up]:
            self._ask_unsettled(self.questions(item, helps=True))

    def _ask_unsettled(self, questions: list[Question]) -> None:
        """Submit the questions nobody answered or is asking: one read, no write, for those that are."""
        found = self.answers.get(q.key for q in questions)
        now = time.time()
        unsettled = [q for q in questions if q.key not in found or not found[q.key].settled(now, self.service.timeout)]
        if unsettled and not self.answers.capped(self.service.max_calls):
            for question in unsettled:
                self._submit(question)

    def _submit(self, question: Question) -> None:
        with self._lock:
            if question.key in self._asking:
                return
            if self._pool is None or self._pool_pid != os.getpid():  # a pool never crosses a fork
                self._pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="potato-ai-help")
                self._pool_pid = os.getpid()
            self._asking.add(question.key)
            pool = self._pool
        try:
            pool.submit(self._ask, question)
        except RuntimeError:  # shut down: the server is stopping
            with self._lock:
                self._asking.discard(question.key)

    def _ask(self, question: Question) -> None:
        try:
            service = self.service
            claim, call = self.answers.claim(question.key, service.calls_per_minute, service.max_calls, service.timeout)
            if claim is not Claim.ASK or call is None:
                return
            value: Any = None
            problem: str | None = None
            seconds = 0.0
            try:
                reply, seconds = complete(service, question.messages)
                value = question.read(reply)
            except (ServiceProblem, NoAnswer) as exc:
                problem = str(exc)
                log.warning("AI help (%s) for item %s, %s: %s", question.kind, question.key.item_id,
                            question.key.schema, problem)
            self.answers.finish(question.key, call, seconds, value, problem)
        except Exception:  # noqa: BLE001 - a background thread: say it, never take the page down
            log.exception("AI help for item %s, %s failed", question.key.item_id, question.key.schema)
        finally:
            with self._lock:
                self._asking.discard(question.key)

    def status(self) -> dict[str, object]:
        out = self.answers.status(self.service.model)
        out.update(kind=self.service.kind, base_url=self.service.base_url, model=self.service.model,
                   calls_per_minute=self.service.calls_per_minute, max_calls=self.service.max_calls,
                   capped=self.service.max_calls is not None and int(out["calls"]) >= self.service.max_calls)
        return out

    def stop(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None and self._pool_pid == os.getpid():
            pool.shutdown(wait=False, cancel_futures=True)
