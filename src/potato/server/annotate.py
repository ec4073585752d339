"""The annotator's side: log in by name, see one item at a time, label it.

``POST /api/label`` stores answers and returns the item to show: the page sends each answer as it is
picked (``"go": "stay"``), so no way of leaving an item loses it, then moves with ``GET /api/move``;
a client can also store and move in one request. The page never reloads; each save is one commit.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Mapping, Sequence

from flask import Blueprint, Flask, current_app, jsonify, redirect, render_template, request, url_for

from potato.accounts import AccountError, Accounts
from potato.assignment import items_done
from potato.config.schema import Config, DisplayField
from potato.codebook import Codebook, current_config
from potato.display.fields import field_payload, image_src, markdown, media_path, sanitise_html, span_text
from potato.card_sort import cards_of
from potato.dynamic_labels import item_labels
from potato.config._page import codebook_page
from potato.span_links import pruned
from potato.display.traces import run_tree
from potato.display.keywords import find_keywords
from potato.display.media import MediaFileError
from potato.edits import unexplained
from potato.item_answers import MISFITS, blank, on_item, passage_of, profiles_of, stored_on_item
from potato.items import Item, shown_text
from potato.study.assist import option_highlights
from potato.training.job.schemes import GRID_MAX, Scheme, SchemeType
from potato.training.job.spans import Texts
from potato.training.job.turns import BadTurns, Turn, answer_of
from potato.label_import import stored_spans
from potato.labels import Label, LabelSource, values_by_schema
from potato.server import assist
from potato.server.study import crowd
from potato.server.study import pages as study
from potato.server.codebook import codebook_payload
from potato.server.auth import clean_user_name, current_user, login_required, session_user
from potato.server.context import Project, current_project
from potato.server.media import MEDIA_URL, pdf_field_pages
from potato.server.security import (LOGINS, PASSWORD_FAILURES, client_addr, end_annotator_session,
                                    start_annotator_session, throttle, too_many)

bp = Blueprint("annotate", __name__)


# -- pure helpers -------------------------------------------------------------------------------

def check_answers(config: Config, answers: object, stored: Mapping[str, Any] | None = None,
                  partial: bool = False, texts: str | Texts = "",
                  turns: Mapping[str, Sequence[Turn]] | None = None,
                  item: Item | None = None) -> tuple[dict[str, Any], list[str], list[str]]:
    """Split a submitted ``{schema: value}`` into values to store and schemas to clear.

    Returns (store, clear, problems); problems name the schema and the valid answers. A scheme
    whose ``display_logic`` hides it for the item's answers (``stored`` ones, overridden by the
    submitted ones) was not asked: its answer is cleared and it is never required. ``partial``
    is an answer stored as it is picked: a required question may still be open (the page asks
    for it before it moves on). Spans are checked against the item's ``texts`` (by field, as
    ``Config.span_texts`` gives them) and stored by position, each with the text it covers; an empty
    list of spans is an answer (nothing to mark). A turn-level answer is checked against the item's
    ``turns`` (by field, as ``Config.item_turns`` gives them) and stored with each turn's place and text.
    An answer that names what the ``item`` holds (a failure attribution, an edit, a review of its tool
    calls or handoffs) is checked against it and stored as :func:`potato.item_answers.stored_on_item`
    says; a trajectory edit that asks for reasons needs one for each change before the item is done.
    """
    store: dict[str, Any] = {}
    clear: list[str] = []
    problems: list[str] = []
    if not isinstance(answers, dict):
        return store, clear, ["'labels' must be an object mapping schema name to answer"]
    for name, value in answers.items():
        scheme = config.scheme(str(name))
        if scheme is None:
            valid = ", ".join(s.name for s in config.annotation_schemes)
            problems.append(f"unknown schema '{name}' (valid: {valid})")
        elif scheme.turns is not None:
            if value is None or value == {}:
                clear.append(scheme.name)
                continue
            try:
                kept = scheme.stored_turns(value, (turns or {}).get(scheme.turns.source, ()))
            except BadTurns as bad:
                problems.append(f"'{scheme.name}': {bad}")
                continue
            if kept:
                store[scheme.name] = kept
            else:
                clear.append(scheme.name)
        elif on_item(scheme):
            if blank(scheme, value):
                clear.append(scheme.name)
                continue
            if not scheme.accepts(value):
                problems.append(f"{shorten(value)} is not an answer to '{scheme.name}' (valid: {scheme.valid_answers()})")
                continue
            if item is None:
                problems.append(f"'{scheme.name}' is answered on an item, which was not given to check it against")
                continue
            try:
                kept_on_item = stored_on_item(config, scheme, value, item)
            except MISFITS as bad:
                problems.append(f"'{scheme.name}': {bad}")
                continue
            if kept_on_item is None:
                clear.append(scheme.name)
                continue
            store[scheme.name] = kept_on_item
            missing = unexplained(kept_on_item) if scheme.reason_on_edit and not partial else []
            if missing:
                problems.append(f"'{scheme.name}' needs a reason for each edit ({', '.join(missing)} has none)")
        elif scheme.annotation_type is SchemeType.SPAN and value is not None:
            problem = scheme.span_problem(value, texts)
            if problem:
                problems.append(f"'{scheme.name}': {problem}")
            else:
                store[scheme.name] = stored_spans(value, texts, scheme)
        elif isinstance(value, dict) and scheme.labels and not any(value.values()):
            clear.append(scheme.name)  # every box of a several-box text scheme emptied
        elif value is None or value == "" or value == []:
            clear.append(scheme.name)
        elif isinstance(value, str) and not scheme.labels and len(value) > scheme.max_length:
            problems.append(f"the answer to '{scheme.name}' has {len(value)} characters; it takes at most "
                            f"{scheme.max_length}")
        elif not scheme.accepts(value):
            problems.append(f"{shorten(value)} is not an answer to '{scheme.name}' (valid: {scheme.valid_answers()})")
        else:
            # A text box (or a justification's part) left empty is no answer; a share or points of 0 are.
            boxes = scheme.justification or (scheme.annotation_type is SchemeType.TEXT and bool(scheme.labels))
            store[scheme.name] = {k: v for k, v in value.items() if v} if isinstance(value, dict) and boxes else value
    if problems:
        return store, clear, problems
    merged = {k: v for k, v in (stored or {}).items() if k not in clear}
    merged.update(store)
    for scheme in config.annotation_schemes:  # a link is kept only while the spans it joins are marked
        if scheme.link_spans is not None and merged.get(scheme.name):
            links: Any = pruned(merged[scheme.name], merged.get(scheme.link_spans))
            if len(links) != len(merged[scheme.name]):
                if links:
                    store[scheme.name] = merged[scheme.name] = links
                else:
                    store.pop(scheme.name, None)
                    merged.pop(scheme.name)
                    clear.append(scheme.name)
    for scheme in config.annotation_schemes:
        if not scheme.shown_for(merged):
            store.pop(scheme.name, None)
            merged.pop(scheme.name, None)  # a question that was not asked decides nothing further down
            if scheme.name in (stored or {}) and scheme.name not in clear:
                clear.append(scheme.name)
        elif store and scheme.required and scheme.name not in store and not partial:
            problems.append(f"'{scheme.name}' needs an answer: it is required")
        elif scheme.required and not partial and scheme.unfinished(store.get(scheme.name)):
            problems.append(f"'{scheme.name}' needs {scheme.unfinished(store.get(scheme.name))}: it is required")
        elif not partial and scheme.incomplete(merged.get(scheme.name)):
            problems.append(f"'{scheme.name}' needs {scheme.incomplete(merged.get(scheme.name))}")
    return store, clear, problems


def shorten(value: Any, limit: int = 60) -> str:
    """An answer quoted in an error, cut short: the error must not echo a huge body back."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# -- views --------------------------------------------------------------------------------------

def item_payload(project: Project, user: str, position: int) -> dict[str, Any]:
    """What the page shows for one item: text, the user's answers, progress, model suggestions."""
    queue = project.queue
    item = queue.at(user, position)
    saved = project.labels.for_item(user, item.id)
    done, total = queue.labelled(user), queue.total(user)
    helped = project.helped(user)  # the control group of ai_support.assist_holdout sees no AI and no model
    suggestions = project.suggestions_for(item.id) if project.suggestions_for is not None and helped else {}
    highlights = option_highlights(project.config.ai_support, suggestions)
    asking: list[str] = []
    llm = assist.helper()
    if llm is not None and helped:  # an LLM server's answers so far; the page asks again for the rest
        highlights, asking = llm.lookup(item)
        llm.ask_ahead(user, position)
    media = request.script_root + MEDIA_URL
    return {
        "position": position,
        "number": position + 1,
        "total": total,
        "id": item.id,
        "text": item.text,
        "labels": values_by_schema(saved),
        "labelled": bool(saved),
        "done": done,
        # Every item labelled, or (items assigned) none left to assign to this annotator.
        "finished": items_done(done, total, queue.size(user), queue.can_extend(user)),
        "suggestions": _with_model_dates(project, suggestions),
        "highlights": highlights,
        "ai_pending": asking,
        "keywords": find_keywords(item.text, project.config.keywords, project.config.keyword_settings, user, item.id)
        if project.config.keywords else [],
        "fields": [shown_field(project, f, item.data.get(f.key), item.data.get("run_tree"))
                   for f in project.config.page.display_fields],
        **_with_turns(project.config, project.config.item_turns(item)),
        "edit_sources": {name: originals.shown() for name, originals in project.config.edit_sources(item).items()},
        "review_parts": {name: [_with_image(part.shown(), media) for part in parts]
                         for name, parts in project.config.review_parts(item).items()},
        "grids": {s.name: _grid(s, item, media) for s in project.config.annotation_schemes if s.grid_keys is not None},
        "cards": {s.name: cards_of(item.data.get(s.sort_cards)) for s in project.config.annotation_schemes
                  if s.sort_cards is not None},
        "dynamic_labels": {s.name: item_labels(s.labels, item.data) for s in project.config.annotation_schemes if s.dynamic},
        "profiles": {s.name: profiles_of(s, item) for s in project.config.annotation_schemes if s.profiles_per_set},
        "passages": {s.name: {"question": shown_text(item.data.get((s.qa_fields or ("", ""))[0]) or ""),
                              "passage": passage_of(s, item)}
                     for s in project.config.annotation_schemes if s.qa_fields is not None},
        "teams": {name: team.shown() for name, team in project.config.teams(item).items()},
        **({"codebook": codebook_payload(project)} if project.config.codebook_mode else {}),
    }


def _with_image(shown: dict[str, Any], media_url: str) -> dict[str, Any]:
    """A part of an item as the page draws it, its image where the page loads it from (or why not)."""
    if shown.get("image"):
        src, problem = image_src(shown["image"], media_url)
        shown = {**shown, "image": src, "caption": shown["caption"] if src else f"image not shown: {problem}"}
    return shown


def _grid(scheme: Scheme, item: Any, media_url: str) -> dict[str, Any]:
    """A table grid's table: its image (or why it is not shown) and the size to start from."""
    image, rows, cols = scheme.grid_keys or ("image", "rows", "cols")
    src, problem = image_src(item.data.get(image), media_url)

    def size(value: Any, default: int) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= GRID_MAX else default

    return {"image": src, "problem": problem, "rows": size(item.data.get(rows), scheme.grid_size[0]),
            "cols": size(item.data.get(cols), scheme.grid_size[1])}


def _with_turns(config: Config, turns: Mapping[str, Sequence[Turn]]) -> dict[str, Any]:
    return {"turn_slots": turn_slots(config, turns), "step_choices": step_choices(config, turns)}


def step_choices(config: Config, turns: Mapping[str, Sequence[Turn]]) -> dict[str, Any]:
    """What a question naming one of the item's steps (a failure attribution) offers on it: the
    agents, and each step by its place, with a line naming it as upstream's page does (pure)."""
    out: dict[str, Any] = {}
    for scheme in config.annotation_schemes:
        if scheme.names_step is not None:
            steps = turns.get(scheme.names_step.source, ())
            out[scheme.name] = {
                "agents": scheme.step_agents(steps),
                "steps": [{"index": t.index, "caption": shorten_text(f"{t.index + 1}. " + (f"[{t.speaker}] " if t.speaker else "")
                                                                     + t.text)} for t in steps]}
    return out


def turn_slots(config: Config, turns: Mapping[str, Sequence[Turn]]) -> dict[str, Any]:
    """Where each turn-level question is asked on an item: its field (its key, and its place among the
    fields the page draws; -1 for none) and the turns (their id, place and a line saying which turn it
    is, for a page that cannot put the question beside it; a listed step's whole text, up to a
    length a page can hold) (pure)."""
    out: dict[str, Any] = {}
    keys = [f.key for f in config.page.display_fields]
    for scheme in config.annotation_schemes:
        if scheme.turns is not None:
            binding = scheme.turns
            listed = binding.placement == "list"
            out[scheme.name] = {
                "field": binding.field, "at": keys.index(binding.field) if binding.field in keys else -1,
                "turns": [{"id": t.id, "index": t.index, "caption": _caption(t, listed)}
                          for t in binding.bound(turns.get(binding.source, ()))]}
    return out


def _caption(turn: Turn, listed: bool) -> str:
    """What the page shows of a turn beside its question: a listed step's whole text (it is read
    there), else a line naming the turn."""
    if listed:
        return clip(turn.text, STEP_TEXT_LIMIT)
    return shorten_text(f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text)


STEP_TEXT_LIMIT = 4000
"""Characters of a step's text the page lists under a process reward's question (the trace field,
when the page has one, shows it whole)."""


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def shorten_text(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def shown_field(project: Project, field: DisplayField, value: Any, runs: Any = None) -> dict[str, Any]:
    """One field of an item as the page draws it (``potato.display.fields``); a PDF with its page count;
    an agent trace with the item's tree of sub-agent runs (``runs``), unless ``show_run_tree`` is false."""
    out = field_payload(field.type, field.label or field.key, value, field.options, request.script_root + MEDIA_URL)
    if out["type"] == "agent_trace" and runs and field.options.get("show_run_tree", True) is not False:
        out["run_tree"] = run_tree(runs, out["steps"])
    if field.span_target:
        # The name a span on this field gives ("" for the item's own text) and the text it marks.
        out["span_target"] = True
        out["span_field"] = project.config.span_name(field)
        out["text"] = span_text(field.type, value, field.options)
    path = media_path(value)
    if out["type"] == "pdf" and path:
        try:
            out["pages"] = pdf_field_pages(project, path)
        except MediaFileError as exc:  # a link, not a PDF, missing: said in words, never framed (issue 42)
            return {"label": out["label"], "type": "text", "text": f"[pdf not shown: {exc.brief}]"}
    return out


def with_trained_at(suggestions: Mapping[str, dict[str, Any]], finished: Mapping[str, float]) -> dict[str, Any]:
    """Each suggestion with ``trained_at``, when the run that made it finished (pure): the page names
    a suggestion by its model's date and confidence, never by the run's id (kept for ``accepted``)."""
    return {schema: {**s, "trained_at": finished.get(s.get("run_id", ""))} for schema, s in suggestions.items()}


def _with_model_dates(project: Project, suggestions: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    ids = sorted({str(s.get("run_id")) for s in suggestions.values()})
    if not ids:
        return dict(suggestions)
    rows = project.db.conn.execute(
        f"SELECT id, finished_at FROM runs WHERE id IN ({', '.join('?' * len(ids))})", ids).fetchall()
    return with_trained_at(suggestions, {row[0]: row[1] for row in rows if row[1] is not None})


def _start_position(project: Project, user: str) -> int:
    """Where a returning annotator resumes: their next unlabelled item (after a crash too), or an
    earlier one they left with a required question open; a new annotator of a project that assigns
    items gets their first one here."""
    queue = project.queue
    if queue.size(user) == 0:
        queue.extend(user)
    pos = queue.next_unlabelled(user, 0)
    if pos is None and queue.extend(user):
        pos = queue.size(user) - 1
    left_open = _first_left_open(project, user)
    if left_open is not None and (pos is None or left_open < pos):
        return left_open
    return 0 if pos is None else pos


def _shown_position(project: Project, user: str, item_id: str | None) -> int | None:
    """The position of the item the page showed before a reload (the page keeps its id in the
    address, ``?item=``), so a reload stays on it, a skipped item too; None when the id is not one
    of this annotator's items (then the page starts where a sign-in does)."""
    if not item_id or item_id not in project.items:
        return None
    return project.queue.position(user, item_id)


def _first_left_open(project: Project, user: str) -> int | None:
    """The first of the annotator's items whose stored answers leave a required question open.

    The page stores each answer as it is picked, so an item left (a reload, Sign out) before its
    required question was answered counts as labelled: the annotator is brought back to it.
    """
    required = [s for s in project.config.annotation_schemes if s.required]
    if not required:
        return None
    answered: dict[str, dict[str, Any]] = {}
    for label in project.labels.iter_labels(user=user):
        answered.setdefault(label.item_id, {})[label.schema] = label.value
    positions = [project.queue.position(user, item_id) for item_id, values in answered.items()
                 if any(s.name not in values and s.shown_for(values) for s in required)]
    return min((p for p in positions if p is not None), default=None)


def _login_page(error: str | None = None, status: int = 200, name: str = "") -> Any:
    config = current_project().config
    return render_template("login.html", title=config.annotation_task_name, error=error, access=config.access,
                           page=config.page, name=name), status


@bp.get("/")
def index() -> Any:
    # Crowdsourcing platforms send people to the study with their id in the link (url_direct).
    arrived = crowd.arrive(current_project(), lambda name: _sign_in(name, password=None, register=False),
                           lambda error, status: _login_page(error, status))
    if arrived is not None:
        return arrived
    if current_user():
        return redirect(url_for("annotate.annotate"))
    return _login_page()


@bp.post("/login")
def login() -> Any:
    crowd_study = current_project().config.crowdsourcing
    if crowd_study is not None:
        # The platform's link (or an expert's invite) is the way in: a name typed here would sign in
        # as any participant, read their answers and take their code.
        return _refuse(crowd_study.platform.by_name.format(platform=crowd_study.label), 403)
    payload = request.get_json(silent=True)
    payload = payload if isinstance(payload, dict) else {}
    raw = request.form.get("name") or payload.get("name")
    password = request.form.get("password") if "password" in request.form else payload.get("password")
    register = (request.form.get("action") or payload.get("action")) == "register"
    return _sign_in(raw, password if isinstance(password, str) else None, register)


def _sign_in(raw: object, password: str | None, register: bool) -> Any:
    """Every way in (the form, JSON, a url_direct link) passes the same checks: the throttle per
    address, a usable name, the project's list of annotators and, if it has them, passwords."""
    project = current_project()
    access = project.config.access
    guard, addr = throttle(current_app), client_addr()
    name = clean_user_name(raw) if isinstance(raw, str) else None
    # One step each: the count and the record are one transaction, so parallel sign-ins cannot
    # all see the last free place (a locked-out address gets 429 whatever it sends).
    signing_in = guard.take(LOGINS, addr, counts=lambda: name is not None)
    if signing_in.wait is not None:
        return too_many(signing_in.wait, "sign-ins")
    if name is None:
        return _refuse("Enter a name of 1 to 64 printable characters.", 400)
    if not access.may_sign_in(name):
        return _refuse(f"{name!r} is not on this study's list of annotators. Check the spelling, or ask the "
                       "study's admin to add you.", 403, name)
    if access.require_password:
        if password is None:
            return _refuse("This study needs a password: enter your name and password.", 400, name)
        wait = guard.wait(PASSWORD_FAILURES, addr)
        if wait is not None:
            return too_many(wait, "wrong passwords")
        accounts = Accounts(project.db)
        try:
            name = (accounts.register if register else accounts.check)(name, password)
        except AccountError as refused:
            # Hashing takes too long to do inside the transaction: a wrong password takes its place
            # after the check, and the 21st in a burst gets 429, like those after it.
            failed = None if register else guard.take(PASSWORD_FAILURES, addr)
            if failed is not None and failed.wait is not None:
                return too_many(failed.wait, "wrong passwords")
            return _refuse(str(refused), 400 if register else 401, name)
        if not access.may_sign_in(name):  # the account's own spelling of the name
            return _refuse(f"{name!r} is not on this study's list of annotators. Ask the study's admin to add "
                           "you.", 403, name)
    start_annotator_session(current_app, name)
    project.labels.touch_user(name)
    if request.is_json:
        return jsonify(user=name)
    return redirect(url_for("annotate.annotate"))


def _refuse(error: str, status: int, name: str = "") -> Any:
    if request.is_json:
        return jsonify(error=error), status
    return _login_page(error, status, name)


@bp.post("/logout")
def logout() -> Any:
    end_annotator_session(current_app)
    return redirect(url_for("annotate.index"))


@bp.get("/annotate")
@login_required
def annotate() -> Any:
    project = current_project()
    user = session_user()
    if study.before_items(project, user):
        return redirect(url_for("study.show"))  # a consent, the instructions, the training come first
    shown = _shown_position(project, user, request.args.get("item"))
    start = _start_position(project, user) if shown is None else shown
    if project.queue.size(user) == 0:
        return render_template("no_items.html", title=project.config.annotation_task_name, user=user,
                               page=project.config.page, crowd=project.config.crowdsourcing,
                               pages_after=project.config.phases is not None)
    first = item_payload(project, user, start)
    helped = project.helped(user)
    return render_template(
        "annotate.html",
        title=project.config.annotation_task_name,
        user=user,
        schemes=current_config(project.config, project.db).annotation_schemes,
        page=project.config.page,
        crowd=project.config.crowdsourcing,
        pages_after=project.config.phases is not None,
        codebook_mode=project.config.codebook_mode,
        # A label's key wins over the page's letter of the same name (upstream configs may use a, g, d).
        label_keys={o.key for s in project.config.annotation_schemes for o in s.options if o.key},
        # A study that trains no model has no suggestion to accept; its control group is shown none.
        suggests=project.suggestions_for is not None and helped,
        highlighting=project.config.ai_support.option_highlighting if project.config.ai_support.enabled and helped
        else None,
        ai_asks=project.config.ai_support.service if assist.helper() is not None and helped else None,
        ai_help=project.config.ai_support,
        chat=project.config.chat_support if helped else None,
        first=first,
        arranged=lambda scheme, entries: arranged(scheme, entries, user),
        display_blocks=display_blocks,
        codebook_page=codebook_page,
        link_types=lambda scheme: [kind._asdict() for kind in scheme.link_types],
    )


def display_blocks(scheme: Scheme) -> list[Any]:
    """A display-only block's text as the elements the page draws (a document field's, pure)."""
    text = scheme.display_text or ""
    return sanitise_html(text) if scheme.display_html else markdown(text)


def arranged(scheme: Scheme, entries: Sequence[Any], user: str) -> list[Any]:
    """A scheme's labels (a multirate's rows) in the order ``user`` sees them: as the config lists them,
    or, with ``option_randomization``, in an order of the annotator's own, the same on every item and
    every visit (seeded by the annotator and the scheme), as upstream's page shuffles them (pure)."""
    if not scheme.shuffled or (scheme.annotation_type is SchemeType.MULTIRATE and entries is scheme.options):
        return list(entries)
    order = list(entries)
    random.Random(f"{user}\x1f{scheme.name}").shuffle(order)
    return order


MOVES = ("next", "prev", "stay", "next_unlabelled", "prev_unlabelled")
LAST_ITEM = "That was the last item."
ALL_LABELLED = "Every item is labelled."


def target_position(go: str, current: int, total: int, unlabelled: Callable[[int, bool], int | None]) -> tuple[int, str | None]:
    """(position to show, note) for a move from ``current`` (pure but for ``unlabelled``, the
    query for the next unlabelled position from a start, forwards or backwards, wrapping)."""
    if go == "next":
        if current == total - 1:
            return current, LAST_ITEM
        return current + 1, None
    if go == "prev":
        return max(current - 1, 0), None
    if go == "stay":
        return current, None
    if go in ("next_unlabelled", "prev_unlabelled"):
        backwards = go == "prev_unlabelled"
        pos = unlabelled((current + (-1 if backwards else 1)) % total, backwards)
        return (current, ALL_LABELLED) if pos is None else (pos, None)
    if go.startswith("item:"):  # "Go to item" by its number, as the page shows it (1-based)
        number = go[len("item:"):]
        if number.isdigit() and 1 <= int(number) <= total:
            return int(number) - 1, None
        return current, f"There is no item {number}; items are numbered 1 to {total}."
    return current, f"unknown move '{go}' (valid: {', '.join(MOVES)}, item:N)"


def _move(project: Project, user: str, current: int, go: str) -> tuple[int, str | None]:
    """A move within the annotator's queue; past its end, a project that assigns items hands them
    their next one (if any is left for them)."""
    queue = project.queue
    size = queue.size(user)
    target, note = target_position(go, current, size, lambda start, back: queue.next_unlabelled(user, start, back))
    if note in (LAST_ITEM, ALL_LABELLED) and queue.extend(user):
        return size, None
    return target, note


@bp.get("/api/item/<int:number>")
@login_required
def get_item(number: int) -> Any:
    """Item by its 1-based number, as the page's "go to item" box counts."""
    project = current_project()
    user = session_user()
    size = project.queue.size(user)
    if not 1 <= number <= size:
        return jsonify(error=f"No item {number}: items are numbered 1 to {size}."), 404
    return jsonify(item=item_payload(project, user, number - 1))


@bp.get("/api/move")
@login_required
def move() -> Any:
    project = current_project()
    user = session_user()
    try:
        current = int(request.args.get("from", "0"))
    except ValueError:
        return jsonify(error="'from' must be an item position."), 400
    if project.queue.size(user) == 0:
        _start_position(project, user)  # an API client's first request: its first item is assigned here
    size = project.queue.size(user)
    if size == 0:
        return jsonify(error="No items left for you: every item has all the annotators it needs."), 409
    current = max(0, min(current, size - 1))
    target, note = _move(project, user, current, request.args.get("go", "next"))
    return jsonify(item=item_payload(project, user, target), note=note)


def provenance(value: Any, submitted: object, shown: Mapping[str, Any] | None, claimed: object,
               spans: bool, turns: bool = False) -> tuple[Any, dict[str, Any]]:
    """(the value to store, its source and run) for one scheme's answer (pure).

    The page says which run's suggestion the annotator accepted; the server believes it only when
    that run's suggestion shown on this item is what was submitted (for spans: span by span; for a
    question on each step, step by step: every step's answer the model's, none left out), so
    provenance cannot be forged and an edited suggestion counts as the annotator's own answer.
    """
    if spans:
        value, whole = span_sources(value, submitted, shown, claimed)
    else:
        given = {turn: answer_of(entry) for turn, entry in value.items()} if turns and isinstance(value, dict) else value
        whole = bool(shown and isinstance(claimed, str) and shown["run_id"] == claimed and shown["label"] == given)
    if whole:
        return value, {"source": LabelSource.SUGGESTION, "run_id": claimed}
    return value, {"source": LabelSource.HUMAN, "run_id": None}


def span_sources(spans: list[dict[str, Any]], submitted: object, shown: Mapping[str, Any] | None,
                 claimed: object) -> tuple[list[dict[str, Any]], bool]:
    """Which stored spans came from the model's suggestion (pure): a span keeps the run id the page
    sent with it only when that run's suggestion shown on this item has the same span. The answer
    is the suggestion's as a whole (True) when every span came from it and none of it was left out."""
    if not shown or not isinstance(claimed, str) or shown.get("run_id") != claimed:
        return spans, False
    def key(s: Mapping[str, Any]) -> tuple[Any, ...]:
        return s.get("field") or "", s.get("start"), s.get("end"), s.get("label")

    offered = {key(s) for s in shown.get("label") or []}
    sent = {key(s) for s in submitted if isinstance(s, dict)
            and s.get("run_id") == claimed} if isinstance(submitted, list) else set()
    out = [{**s, "run_id": claimed} if key(s) in offered & sent else s for s in spans]
    return out, len(out) == len(offered) and all("run_id" in s for s in out)


@bp.post("/api/label")
@login_required
def label() -> Any:
    """Store one item's answers, then answer with the item to show next.

    The 200 is sent only after the commit is on disk (``synchronous=FULL``). The page stores each
    answer as it is picked (``"partial": true, "go": "stay"``), so leaving an item any way keeps it.
    """
    project = current_project()
    user = session_user()
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return jsonify(error='Send a JSON object: {"id": ..., "labels": {schema: answer}, "go": ...}.'), 400
    item_id = body.get("id")
    if not isinstance(item_id, str) or item_id not in project.items:
        return jsonify(error=f"Unknown item id {item_id!r}."), 400
    position = project.queue.position(user, item_id)
    if position is None:
        return jsonify(error=f"Item {item_id!r} is not one of your items; this project gives each annotator "
                             "their own."), 400
    stored = values_by_schema(project.labels.for_item(user, item_id))
    partial = body.get("partial") is True
    config = current_config(project.config, project.db)  # with the codes annotators added
    item = project.items.get(item_id)
    store, clear, problems = check_answers(config, body.get("labels"), stored, partial=partial,
                                           texts=config.span_texts(item), turns=config.item_turns(item), item=item)
    if problems:
        return jsonify(error="; ".join(problems)), 400
    accepted = body.get("accepted")
    claims: Mapping[str, Any] = accepted if isinstance(accepted, dict) else {}
    shown = project.suggestions_for(item_id) if claims and project.suggestions_for is not None \
        and project.helped(user) else {}  # the control group was shown none to accept
    rows = []
    revision = Codebook(project.db).revision() if project.config.codebook_mode else None
    for schema, value in store.items():
        scheme = project.config.scheme(schema)
        value, source = provenance(value, body["labels"].get(schema, value), shown.get(schema), claims.get(schema),
                                   spans=scheme is not None and scheme.annotation_type is SchemeType.SPAN,
                                   turns=scheme is not None and scheme.turns is not None)
        rows.append(Label(user=user, item_id=item_id, schema=schema, value=value, codebook_revision=revision,
                          **source))
    project.save_labels(rows, delete=[(user, item_id, schema) for schema in clear])
    target, note = _move(project, user, position, str(body.get("go", "next_unlabelled")))
    return jsonify(saved=True, item=item_payload(project, user, target), note=note)


ANNOTATOR_BODY_MAX = 1024 * 1024
"""An annotator's request is a name or one item's answers: a megabyte is far more than either."""


@bp.before_request
def _small_bodies() -> None:
    request.max_content_length = ANNOTATOR_BODY_MAX  # larger: 413, before the body is read


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
