"""AI help for annotators from an LLM server (``ai_support`` with endpoint_type ollama, vllm, openai
or openai_compatible): the background :class:`~potato.server.assist.helper.Helper` and the one
route the page polls while an item's answer is on its way.

The help from the project's own runs needs none of this: the runs' probabilities are stored with
their predictions (:mod:`potato.study.assist`).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, current_app, jsonify, request

from potato.display.keywords import Keyword, KeywordSettings, find_keywords
from potato.server.assist import chat
from potato.server.assist.helper import Helper
from potato.server.auth import current_user, login_required
from potato.server.context import Project, current_project

bp = Blueprint("assist", __name__)
EXTENSION = "potato.assist"


def helper(app: Flask | None = None) -> Helper | None:
    """This app's helper; None unless an LLM server is the help's source."""
    found: Helper | None = (app or current_app).extensions.get(EXTENSION)
    return found


@bp.get("/api/ai-help/<path:item_id>")
@login_required
def ai_help(item_id: str) -> Any:
    """The item's highlights so far and the schemes still asked about, or (``?kind=hint&schema=...``)
    one button's answer; the page stops asking once nothing is pending, or after the call's timeout
    (then: "no hint"). The problem behind a missing answer is the admin's to read, not the page's."""
    found = helper()
    project = current_project()
    user = current_user()
    if found is None or item_id not in project.items or user is None \
            or project.queue.position(user, item_id) is None or not project.helped(user):
        return jsonify(error="no AI help for this item"), 404
    item = project.items.get(item_id)
    kind = request.args.get("kind")
    if kind is not None:  # a hint, keyword or rationale button
        schema = request.args.get("schema", "")
        state, value = found.help_for(item, schema, kind)
        if state == "ready" and kind == "keyword" and isinstance(value, dict):
            value = {**value, "marks": keyword_marks(item.text, schema, value.get("keywords") or [], user, item.id)}
        return jsonify(state=state, **({"answer": value} if state == "ready" else {}))
    highlights, pending = found.lookup(item)
    return jsonify(highlights=highlights, pending=pending)


def keyword_marks(text: str, schema: str, keywords: list[dict[str, Any]], user: str, item_id: str) -> list[dict[str, Any]]:
    """The LLM's keywords boxed in the item's text, found as the admin's keywords file's words are
    (whole words, any case; the first and longest of overlapping ones)."""
    words = [Keyword(word.replace("*", ""), entry["label"], schema) for entry in keywords
             for word in entry.get("words", []) if isinstance(word, str) and word.replace("*", "").strip()]
    return [{**mark, "ai": True} for mark in find_keywords(text, words, KeywordSettings(), user, item_id)]


def init_app(app: Flask, project: Project) -> None:
    assist = project.config.ai_support
    if assist.enabled and assist.service is not None and (assist.option_highlighting is not None or assist.help_kinds):
        made = Helper(project, assist)
        app.extensions[EXTENSION] = made
        if assist.service.warm_up:
            app.before_request(made.warm_up)
    app.register_blueprint(bp)
    chat.init_app(app)


def stop(app: Flask) -> None:
    found = helper(app)
    if found is not None:
        found.stop()
