"""Upstream Potato's keys for who may sign in, what the page shows and where the server listens.

They decide who gets in and what annotators read, so each is honoured or refused: never
"unknown key, ignored" (which is how ``require_password: true`` once left a server open to
any name).
"""

from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import urlsplit

from potato import defaults
from potato.config._checks import (
    Check,
    Findings,
    Invalid,
    anything,
    boolean,
    check_keys,
    choice,
    integer,
    mapping,
    show,
    subset,
    text,
)
from potato.config.schema import EXPORT_FORMATS, Access, Assignment, DisplayField, Page, export_format
from potato.config.upstream import unsupported_message
from potato.display.fields import field_types, option_verdict, span_field_types

KEYS = (
    "user_config", "require_password", "login", "session_lifetime_days",
    "task_description", "annotation_task_description", "annotation_instructions", "annotation_codebook_url",
    "hide_navbar", "jumping_to_id_disabled", "alert_time_each_instance", "completion_code", "show_item_ids",
    "port", "host", "server", "site_dir", "random_seed", "output_annotation_format",
    "assignment_strategy", "max_annotations_per_user", "max_annotations_per_item", "num_annotators_per_item",
    "instance_display", "export_annotation_format", "auto_export_interval", "media_directory",
    "codebook_mode", "codebook_max_codes", "codebook_max_codes_per_annotator",
)
"""Top-level keys read here."""

USER_NAME_MAX = 64


MEDIA_PREFIX = "/media/"
CODEBOOK_PAGES = (".html", ".htm", ".md", ".markdown")
"""A codebook under media_directory that this server shows as a page of its own (``/codebook``), read
into harmless elements as a document field is; another file there (a PDF) is linked as it is."""


def codebook_page(url: str | None) -> str | None:
    """The media file a codebook address names when this server shows it as a page, else None (pure)."""
    if not url or not url.startswith(MEDIA_PREFIX) or not url.lower().endswith(CODEBOOK_PAGES):
        return None
    return url[len(MEDIA_PREFIX):]


def _url(value: object) -> str | None:
    url: str = text(allow_empty=True)(value)
    if not url.strip():
        return None  # upstream's examples write "" for no codebook
    if url.startswith(MEDIA_PREFIX):  # a file of media_directory, as upstream's examples name it: checked with it
        return url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Invalid(f"must be an http:// or https:// address, or a file of media_directory as /media/<file>, got "
                      f"{show(url)}")
    return url


def check_public_url(value: object) -> str:
    """The address agents and annotators reach this server under (a proxy's, a DNS name)."""
    url: str = text()(value)
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
    except ValueError:
        raise Invalid(f"has a bad port: {show(url)}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Invalid(f"must be an http:// or https:// address such as https://annotate.example.org, got {show(url)}")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise Invalid(f"must be a plain address, without credentials, query or fragment, got {show(url)}")
    return url.rstrip("/")


def _user_name(value: object) -> str:
    if isinstance(value, dict):
        raise Invalid("must be a name; this server keeps passwords itself (annotators choose one when "
                      "require_password is true), so list names only, e.g. users: [alice, bob]")
    name: str = text(numbers=True)(value)
    clean = " ".join(name.split())
    if len(clean) > USER_NAME_MAX or not clean.isprintable():
        raise Invalid(f"must be a name of 1 to {USER_NAME_MAX} printable characters, got {show(name)}")
    return clean


def _users(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise Invalid(f"must be a list of names, e.g. users: [alice, bob], got {show(value)}")
    names, problems = [], []
    for i, item in enumerate(value):
        try:
            names.append(_user_name(item))
        except Invalid as bad:
            problems.append((f"[{i}]", bad.problems[0][1]))
    if problems:
        raise Invalid(problems=problems)
    return tuple(names)


_USER_CONFIG: Mapping[str, Check] = {"allow_all_users": boolean, "users": _users}
_LOGIN: Mapping[str, Check] = {"type": choice(("url_direct", "password", "open", "standard"), "login type"),
                               "url_argument": text()}
_SERVER: Mapping[str, Check] = {"host": text(), "port": integer(1, 65535), "debug": boolean,
                                "public_url": check_public_url}

TABLE: Mapping[str, Check] = {
    "require_password": boolean,
    "session_lifetime_days": integer(1, 3650),
    "task_description": text(allow_empty=True),
    "annotation_task_description": text(allow_empty=True),
    "annotation_instructions": text(allow_empty=True),
    "annotation_codebook_url": _url,
    "hide_navbar": boolean,
    "jumping_to_id_disabled": boolean,
    "show_item_ids": boolean,
    "alert_time_each_instance": integer(0),  # upstream's 0: no alert
    "completion_code": text(numbers=True),
    "port": integer(1, 65535),
    "host": text(),
    "random_seed": integer(),
    "output_annotation_format": choice(("json", "jsonl", "csv", "tsv"), "output_annotation_format"),
    "export_annotation_format": anything,
    "auto_export_interval": integer(1, 86400),
    "assignment_strategy": anything,
    "max_annotations_per_user": anything,
    "max_annotations_per_item": anything,
    "num_annotators_per_item": anything,
    "codebook_max_codes": integer(1),
    "codebook_max_codes_per_annotator": integer(1),
}

STRATEGIES = ("fixed_order", "random", "least_annotated")
"""Upstream's assignment strategies honoured here; its others order items by models or surveys."""


def _cap(value: object) -> int | None:
    """A per-user or per-item cap; upstream writes -1 (or 0) for "no cap"."""
    if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
        return None
    return integer(1)(value)


def _assignment(values: dict[str, Any], findings: Findings, active_learning: object = None) -> Assignment | None:
    strategy = values.get("assignment_strategy", "fixed_order")
    if strategy == "active_learning":  # upstream's switch for the order its active_learning section makes
        if isinstance(active_learning, dict) and active_learning.get("enabled") is True:
            strategy = "fixed_order"  # before the first run and after the ordered items: file order
        else:
            findings.error("assignment_strategy", "active_learning orders items by a model's uncertainty, and "
                                                  "the active_learning section is missing or off; add "
                                                  "active_learning: {enabled: true}, or pick another strategy")
            return None
    if strategy not in STRATEGIES:
        if isinstance(strategy, str) and strategy.strip():
            findings.error("assignment_strategy", unsupported_message(
                f"assignment_strategy: {strategy}", "items ordered by models, surveys or groups") +
                f" (this server assigns: {', '.join(STRATEGIES)})")
        else:
            findings.error("assignment_strategy", f"must be one of {', '.join(STRATEGIES)}, got {show(strategy)}")
        return None
    caps: dict[str, int | None] = {}
    for key in ("max_annotations_per_user", "max_annotations_per_item", "num_annotators_per_item"):
        try:
            caps[key] = _cap(values[key]) if key in values else None
        except Invalid as bad:
            findings.error(key, bad.problems[0][1] + " (or -1 for no cap)")
            return None
    per_item, annotators = caps["max_annotations_per_item"], caps["num_annotators_per_item"]
    if per_item is not None and annotators is not None and per_item != annotators:
        findings.error("num_annotators_per_item", f"is {annotators} while max_annotations_per_item is {per_item}; "
                                                  "both cap the annotators of one item, so keep one of them")
        return None
    return Assignment(strategy=strategy, max_annotations_per_user=caps["max_annotations_per_user"],
                      max_annotations_per_item=per_item if per_item is not None else annotators,
                      random_seed=values.get("random_seed") or 0)


def check(raw: Mapping[Any, object], findings: Findings) -> dict[str, Any] | None:
    """The values for :class:`Config` (``access``, ``page``, ``host``, ``port``, ``public_url``, ``assignment``,
    ``export_formats``, ``auto_export_interval``, the codebook's limits), or None when any of these keys is wrong."""
    simple = subset(raw, lambda k: k in TABLE)
    values, problems = check_keys(simple, TABLE, "the config")
    findings.errors_at("", problems)
    ok = not problems
    users = raw.get("user_config")
    if isinstance(users, dict) and "allow_anonymous" in users:  # in upstream's demos, read by nothing there
        findings.warn("user_config.allow_anonymous", "upstream Potato does not read this key either, so it is "
                                                     "ignored; allow_all_users: true lets anyone sign in by name")
        raw = {**raw, "user_config": subset(users, lambda k: k != "allow_anonymous")}
    user_config = _section(raw, "user_config", _USER_CONFIG, "{allow_all_users: false, users: [alice, bob]}", findings)
    login = _section(raw, "login", _LOGIN, "{type: url_direct, url_argument: PROLIFIC_PID}", findings)
    server = _section(raw, "server", _SERVER, "{host: 0.0.0.0, port: 8000}", findings)
    ok = ok and None not in (user_config, login, server)
    ok = _site_dir(raw.get("site_dir"), findings) and ok
    assignment = _assignment(values, findings, raw.get("active_learning"))
    display = _instance_display(raw.get("instance_display"), findings)
    if not ok or user_config is None or login is None or server is None or assignment is None or display is None:
        return None
    url_argument = None
    if login.get("type") == "url_direct":
        url_argument = login.get("url_argument", "PROLIFIC_PID")
    elif "url_argument" in login:
        findings.warn("login.url_argument", "applies to login type url_direct only; it is ignored")
    allow_all = user_config.get("allow_all_users", True)
    users = user_config.get("users", ())
    if not allow_all and not users:
        findings.error("user_config.users", "is empty while allow_all_users is false, so nobody could sign in; "
                                            "list the annotators' names, e.g. users: [alice, bob]")
        return None
    if allow_all and users:
        findings.warn("user_config.users", "is ignored while allow_all_users is true (anyone may sign in); set "
                                           "allow_all_users: false to let only these names in")
    require_password = values.get("require_password", False) or login.get("type") == "password"
    if require_password and url_argument:
        findings.error("login.type", "url_direct signs annotators in by a link, which cannot carry a password; "
                                     "remove require_password or use another login type")
        return None
    if "debug" in server:
        findings.warn("server.debug", "is ignored; set debug: true at the top level for this server's debug mode")
    formats = _export_formats(values, findings)
    if formats is None:
        return None
    return {
        "access": Access(allow_all_users=allow_all, users=users if not allow_all else (),
                         require_password=require_password, url_argument=url_argument,
                         session_lifetime_days=values.get("session_lifetime_days", defaults.SESSION_LIFETIME_DAYS)),
        "page": Page(
            task_description=values.get("task_description") or values.get("annotation_task_description", ""),
            instructions=values.get("annotation_instructions", ""),
            codebook_url=values.get("annotation_codebook_url"),
            hide_navbar=values.get("hide_navbar", False),
            jumping_to_id_disabled=values.get("jumping_to_id_disabled", False),
            show_item_ids=values.get("show_item_ids"),
            alert_time_each_instance=values.get("alert_time_each_instance"),
            completion_code=values.get("completion_code"),
            display_fields=display[0],
            display_horizontal=display[1],
        ),
        "host": values.get("host", server.get("host")),
        "port": values.get("port", server.get("port")),
        "public_url": server.get("public_url"),
        "assignment": assignment,
        "export_formats": formats,
        "auto_export_interval": values.get("auto_export_interval", defaults.AUTO_EXPORT_INTERVAL_S),
        "codebook_max_codes": values.get("codebook_max_codes", defaults.CODEBOOK_MAX_CODES),
        "codebook_max_codes_per_annotator": values.get("codebook_max_codes_per_annotator",
                                                       defaults.CODEBOOK_MAX_CODES_PER_ANNOTATOR),
    }


def _section(raw: Mapping[Any, object], key: str, table: Mapping[str, Check], example: str,
             findings: Findings) -> dict[str, Any] | None:
    value = raw.get(key)
    if value is None:
        return {}
    try:
        values, problems = check_keys(mapping(value, example), table, key)
    except Invalid as bad:
        findings.errors_at(key, bad.problems)
        return None
    findings.errors_at(key, problems)
    return None if problems else values


_FIELD_KEYS: Mapping[str, Check] = {"key": text(numbers=True), "type": text(), "label": text(allow_empty=True),
                                    "display_options": anything, "span_target": boolean}
_DISPLAY_KEYS: Mapping[str, Check] = {"fields": anything, "layout": anything, "resizable": boolean}


def _instance_display(value: object, findings: Findings) -> tuple[tuple[DisplayField, ...], bool] | None:
    """The fields shown for each item, each under its label (``potato.display.fields``'s types), and whether
    side by side; a type this server does not draw (video, galleries, traces...) is refused by name,
    and every display option is drawn or named (:func:`_options_named`)."""
    if value is None:
        return (), False
    try:
        values, problems = check_keys(mapping(value, "{fields: [{key: text, type: text, label: Review}]}"),
                                      _DISPLAY_KEYS, "instance_display")
    except Invalid as bad:
        findings.errors_at("instance_display", bad.problems)
        return None
    findings.errors_at("instance_display", problems)
    if values.get("resizable"):
        findings.warn("instance_display.resizable", "lets annotators resize upstream's field panes; this server's "
                                                    "fields fit the page by themselves, so it is ignored")
    raw_fields = values.get("fields")
    if not isinstance(raw_fields, list) or not raw_fields:
        findings.error("instance_display.fields", "must be a list of fields such as [{key: text, type: text, "
                                                  f"label: Review}}], got {show(raw_fields)}")
        return None
    fields: list[DisplayField] = []
    for i, raw in enumerate(raw_fields):
        at = f"instance_display.fields[{i}]"
        try:
            field_values, field_problems = check_keys(mapping(raw, "{key: text, type: text}"), _FIELD_KEYS, "a field")
        except Invalid as bad:
            findings.errors_at(at, bad.problems)
            continue
        findings.errors_at(at, field_problems)
        kind = field_values.get("type", "text")
        options = field_values.get("display_options") or {}
        if "key" not in field_values:
            findings.error(f"{at}.key", "missing; name the item's key to show, e.g. key: text")
        elif kind not in field_types():
            findings.error(f"{at}.type", unsupported_message(f"type: {kind}", f"{kind} fields in instance_display "
                                                             f"(this server shows {', '.join(field_types())})"))
        elif field_values.get("span_target") and kind not in span_field_types():
            markable = span_field_types()
            findings.error(f"{at}.span_target", f"spans mark text; a {kind} field cannot be their target (mark a "
                                                f"{', '.join(markable[:-1])} or {markable[-1]} field instead)")
        elif not isinstance(options, dict):
            findings.error(f"{at}.display_options", f"must be a mapping such as {{max_width: 600}}, got {show(options)}")
        elif not _options_named(kind, options, f"{at}.display_options", findings):
            continue
        elif not field_problems:
            fields.append(DisplayField(field_values["key"], field_values.get("label", ""),
                                       field_values.get("span_target", False), kind, dict(options)))
    layout = values.get("layout") or {}
    horizontal = isinstance(layout, dict) and layout.get("direction") == "horizontal"
    for key in (layout if isinstance(layout, dict) else {}):
        if key != "direction":  # upstream's gap: the page spaces fields its own way
            findings.warn(f"instance_display.layout.{key}", "changes only how the fields are spaced, and this server "
                                                            "lays them out its own way: it is ignored (direction is "
                                                            "honoured)")
    if problems or len(fields) != len(raw_fields):
        return None
    return tuple(fields), horizontal


def _options_named(kind: str, options: Mapping[str, Any], at: str, findings: Findings) -> bool:
    """Every display option is drawn, or named: a look-only one this server ignores is a warning, one
    that turns on a feature it lacks (annotation modes, per-turn ratings, links) an error, since the
    study would not be what its config says. False where one is refused."""
    ok = True
    for name, value in options.items():
        verdict, detail = option_verdict(kind, str(name))
        if verdict == "use":
            note = getattr(options, "note_read", None)  # read when the field is drawn (potato.config.unread)
            if note is not None:
                note(name)
        elif verdict == "refuse" and value not in (None, False, [], {}):
            findings.error(f"{at}.{name}", unsupported_message(str(name), detail))
            ok = False
        elif verdict == "looks":
            findings.warn(f"{at}.{name}", f"changes only how a {kind} field looks, and this server draws it its own "
                                          "way: it is ignored")
        elif verdict == "unknown":
            findings.warn(f"{at}.{name}", f"is not a display option of {kind} fields (upstream's are: {detail}); it "
                                          "is ignored")
    return ok


def _export_formats(values: dict[str, Any], findings: Findings) -> tuple[str, ...] | None:
    """Upstream reads ``output_annotation_format`` as its export format (``json`` is ``jsonl``), and
    ``export_annotation_format`` as one format or a list; this server writes jsonl, csv and tsv."""
    wanted: list[str] = []
    if values.get("output_annotation_format"):
        wanted.append(export_format(values["output_annotation_format"]))
    raw = values.get("export_annotation_format")
    for i, name in enumerate(raw if isinstance(raw, list) else [] if raw is None else [raw]):
        at = "export_annotation_format" + (f"[{i}]" if isinstance(raw, list) else "")
        if not isinstance(name, str) or export_format(name) not in EXPORT_FORMATS:
            if isinstance(name, str) and name.strip():
                findings.error(at, unsupported_message(f"export_annotation_format: {name}", "exports in formats "
                               "other than jsonl, csv and tsv (CoNLL, COCO, Hugging Face...)"))
            else:
                findings.error(at, f"must be one of {', '.join(EXPORT_FORMATS)}, got {show(name)}")
            return None
        wanted.append(export_format(name))
    return tuple(dict.fromkeys(wanted))


def _site_dir(value: object, findings: Findings) -> bool:
    """``default`` (or upstream's own template folder) means the built-in pages, which this server has."""
    if value is None or (isinstance(value, str) and value.strip().rstrip("/") in ("default", "potato/templates")):
        return True
    findings.error("site_dir", unsupported_message("site_dir", "pages from a custom template folder") +
                   " (set site_dir: default)")
    return False
