"""The chat panel beside the item (``chat_support``): the annotator asks, the LLM server answers
with the item before it, and each turn is kept per annotator and item (``chat_messages``).

Unlike the help, a chat waits for its answer: the annotator asked and watches the panel (the page
goes on meanwhile). Its calls count against the same per-minute limit and cap as the help's.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from flask import Blueprint, Flask, jsonify, request

from potato.config.schema import ChatSupport
from potato.server.assist.answers import Answers, Claim
from potato.server.assist.client import ServiceProblem, complete
from potato.server.auth import current_user, login_required
from potato.server.context import current_project
from potato.study.chat import chat_messages, system_prompt

log = logging.getLogger(__name__)
bp = Blueprint("chat", __name__)
MESSAGE_MAX = 4000
"""Characters of one question (a question about an item, not a document)."""


def _chat() -> ChatSupport | None:
    project = current_project()
    return project.config.chat_support


def _history(user: str, item_id: str, limit: int) -> list[dict[str, Any]]:
    rows = current_project().db.conn.execute(
        "SELECT role, content, at, seconds FROM chat_messages WHERE user = ? AND item_id = ? ORDER BY id DESC LIMIT ?",
        (user, item_id, limit)).fetchall()
    return [{"role": r["role"], "content": r["content"], "timestamp": r["at"],
             **({"response_time_ms": round(r["seconds"] * 1000)} if r["seconds"] is not None else {})}
            for r in reversed(rows)]


def _usable(user: str | None, item_id: object) -> str | None:
    """Why the request is refused, or None: a chat about one of the annotator's own items."""
    project = current_project()
    if _chat() is None or user is None or not project.helped(user):
        return "the chat is off"
    if not isinstance(item_id, str) or item_id not in project.items or project.queue.position(user, item_id) is None:
        return "name one of your items as instance_id"
    return None


@bp.get("/api/chat/config")
@login_required
def config() -> Any:
    chat = _chat()
    user = current_user()
    if chat is None or user is None or not current_project().helped(user):
        return jsonify(enabled=False)
    return jsonify(enabled=True, title=chat.title, placeholder=chat.placeholder, sidebar_width=chat.sidebar_width,
                   max_history_per_instance=chat.max_history)


@bp.get("/api/chat/history")
@login_required
def history() -> Any:
    user, item_id = current_user(), request.args.get("instance_id")
    problem = _usable(user, item_id)
    chat = _chat()
    if problem or chat is None or user is None or item_id is None:
        return jsonify(error=problem), 404 if problem == "the chat is off" else 400
    return jsonify(messages=_history(user, item_id, chat.max_history), instance_id=item_id)


@bp.post("/api/chat/send")
@login_required
def send() -> Any:
    body = request.get_json(silent=True)
    body = body if isinstance(body, dict) else {}
    user, item_id, message = current_user(), body.get("instance_id"), body.get("message")
    problem = _usable(user, item_id)
    chat = _chat()
    if problem or chat is None or user is None or not isinstance(item_id, str):
        return jsonify(error=problem), 404 if problem == "the chat is off" else 400
    if not isinstance(message, str) or not message.strip():
        return jsonify(error="write a question first"), 400
    if len(message) > MESSAGE_MAX:
        return jsonify(error=f"the question has {len(message)} characters; ask in at most {MESSAGE_MAX}"), 400
    project = current_project()
    item = project.items.get(item_id)
    labels = ", ".join(o for s in project.config.annotation_schemes for o in s.labels)
    system = system_prompt(chat.template, {
        "task_name": project.config.annotation_task_name, "task_description": project.config.page.task_description
        or "", "annotation_labels": labels, "instance_text": item.text, "instance_id": item.id})
    earlier = [(m["role"], m["content"]) for m in _history(user, item_id, chat.max_history)]
    answers = Answers(project.db)
    claim, call = answers.take_call(chat.service.calls_per_minute, chat.service.max_calls)
    if claim is not Claim.ASK or call is None:
        why = "the study's limit of AI calls is reached" if claim is Claim.CAPPED else \
            "the AI is busy: ask again in a minute"
        return jsonify(error=why), 429
    try:
        reply, seconds = complete(chat.service, chat_messages(system, earlier, message.strip()))
    except ServiceProblem as exc:
        answers.end_call(call, 0.0, str(exc))
        log.warning("chat about item %s: %s", item_id, exc)
        return jsonify(error="No answer from the AI just now; the study's admin can see why."), 502
    answers.end_call(call, seconds, None)
    now = time.time()
    with project.db.transaction() as tx:
        tx.execute("INSERT INTO chat_messages (user, item_id, role, content, at) VALUES (?, ?, 'user', ?, ?)",
                   (user, item_id, message.strip(), now))
        tx.execute("INSERT INTO chat_messages (user, item_id, role, content, at, seconds) "
                   "VALUES (?, ?, 'assistant', ?, ?, ?)", (user, item_id, reply, now, seconds))
    return jsonify(content=reply, response_time_ms=round(seconds * 1000))


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
