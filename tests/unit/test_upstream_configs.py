"""Issue 12: configs written the way upstream Potato writes them run here, or are refused by name.

Each test builds a small config in upstream's shape (label mappings, user_config, likert scales,
sliders, page keys) and checks what an admin or an annotator would see.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from click.testing import CliRunner

from potato.cli import cli
from potato.study.conditions import OPERATORS, Condition, holds
from potato.config import load_config, validate
from potato.assignment import order_key
from potato.config.schema import Assignment
from potato.training.job.schemes import LabelOption, SchemeType
from potato.config.upstream import SCHEME_KEYS, TOP_LEVEL, unsupported_message
from potato.server import close_app, create_app
from tests.harness.upstream import FREE, PII, upstream

CONFIG = Path("/projects/reviews/config.yaml")


def report_of(raw: dict[str, Any]) -> Any:
    return validate(raw, CONFIG)


def messages(issues: list[Any]) -> list[str]:
    return [i.message for i in issues]


# --- validation ---------------------------------------------------------------------------------


def test_an_upstream_example_config_is_valid_and_keeps_its_label_mappings() -> None:
    report = report_of(upstream())
    assert report.errors == []
    scheme = report.config.annotation_schemes[0]
    assert scheme.labels == ("positive", "negative", "neutral")
    # key_value keys stay theirs; the label without one gets the first free number.
    assert scheme.options == (
        LabelOption("positive", tooltip="Says something good", key="p"),
        LabelOption("negative", tooltip="Says something bad", key="n"),
        LabelOption("neutral", tooltip="Neither", key="1"),
    )
    assert report.config.port == 9001
    # Upstream's docs call server_name the browser title's name (its code never reads it): named, not a typo.
    assert [w.path for w in report.warnings] == ["server_name"]
    assert "a display name for the browser title" in report.warnings[0].message


def test_likert_select_slider_and_number_schemes_build() -> None:
    raw = upstream(annotation_schemes=[
        {"annotation_type": "likert", "name": "agree", "description": "Agree?", "size": 5,
         "min_label": "Strongly disagree", "max_label": "Strongly agree", "sequential_key_binding": True},
        {"annotation_type": "select", "name": "topic", "description": "Topic", "labels": ["price", "quality"]},
        {"annotation_type": "slider", "name": "stars", "description": "Stars", "min_value": 0, "max_value": 10,
         "starting_value": 5},
        {"annotation_type": "number", "name": "count", "description": "How many?", "min": 0, "max": 1000, "step": 1},
    ])
    report = report_of(raw)
    assert report.errors == []
    likert, select, slider, count = report.config.annotation_schemes
    assert likert.annotation_type is SchemeType.LIKERT and likert.labels == ("1", "2", "3", "4", "5")
    assert [o.key for o in likert.options] == ["1", "2", "3", "4", "5"]
    assert likert.training_type == "radio" and select.training_type == "radio"
    assert [o.key for o in select.options] == ["", ""]  # a dropdown has no label keys
    assert slider.training_type is None and (slider.min_value, slider.max_value, slider.step) == (0, 10, 1)
    assert slider.accepts(7) and not slider.accepts(11) and not slider.accepts(2.5) and not slider.accepts(True)
    assert count.accepts(999) and not count.accepts(-1) and not count.accepts("3")
    assert count.valid_answers() == "a number from 0 to 1000 in steps of 1"


@pytest.mark.parametrize(("scheme", "message"), [
    ({"annotation_type": "likert", "name": "x", "size": 5, "min_label": "a"},
     "annotation_schemes[0].max_label: missing; a likert scheme needs size, min_label and max_label, e.g. size: 5, "
     "min_label: Disagree, max_label: Agree"),
    ({"annotation_type": "slider", "name": "x", "max_value": 10},
     "annotation_schemes[0].min_value: missing; a slider needs min_value and max_value, e.g. min_value: 0, "
     "max_value: 100"),
    ({"annotation_type": "slider", "name": "x", "min_value": 10, "max_value": 1},
     "annotation_schemes[0].max_value: must be greater than min_value (10), got 1"),
    ({"annotation_type": "radio", "name": "x", "labels": [{"name": "a", "key_value": "xy"}, "b"]},
     "annotation_schemes[0].labels[0].key_value: must be one key (a letter, digit or sign), got 'xy'"),
    ({"annotation_type": "radio", "name": "x", "labels": ["a", "b"], "size": 5},
     "annotation_schemes[0].size: applies to likert schemes only; remove it from this radio scheme"),
    ({"annotation_type": "bws", "name": "x", "labels": ["a", "b"]},
     "annotation_schemes[0].annotation_type: 'bws' is a Potato feature this server does not support: best-worst "
     "scaling; remove it or run that project on upstream Potato"),
    ({"annotation_type": "likert", "name": "x", "size": 5, "min_label": "a", "max_label": "b",
      "has_free_response": True},
     "annotation_schemes[0].has_free_response: applies to radio and multiselect schemes only; remove it from this "
     "likert scheme"),
    ({"annotation_type": "radio", "name": "x", "labels": ["a", "b"], "has_free_response": {"prompt": "Other"}},
     "annotation_schemes[0].has_free_response.prompt: unknown key for has_free_response. Valid keys: instruction"),
])
def test_scheme_problems_name_the_key_and_the_fix(scheme: dict[str, Any], message: str) -> None:
    assert messages(report_of(upstream(annotation_schemes=[scheme])).errors) == [message]


@pytest.mark.parametrize("go_to_item", [True, False])
def test_a_label_may_have_a_letter_the_page_uses_and_the_warning_says_where_its_action_went(go_to_item: bool) -> None:
    """Upstream's page does not use the letters a, g and d, so its configs may key labels with them;
    they were refused here. The label keeps its key; the warning names the action that moves to a button."""
    raw = upstream(jumping_to_id_disabled=not go_to_item, annotation_schemes=[
        {"annotation_type": "radio", "name": "stance",
         "labels": [{"name": "agree", "key_value": "A"}, {"name": "disagree", "key_binding": "d"},
                    {"name": "go on", "key_value": "g"}, "unsure"]}])
    report = report_of(raw)
    assert report.errors == []
    assert [(o.name, o.key) for o in report.config.annotation_schemes[0].options] == [
        ("agree", "a"), ("disagree", "d"), ("go on", "g"), ("unsure", "1")]
    expected = [
        "annotation_schemes[0].labels: key 'a' of label 'agree' is also the page's key to accept the model's "
        "suggestion, which annotators then do with its Accept button; on this project the key chooses the label",
        "annotation_schemes[0].labels: key 'd' of label 'disagree' is also the page's key to switch dark mode, "
        "which annotators then do with the ◐ button at the top; on this project the key chooses the label"]
    if go_to_item:
        expected.append("annotation_schemes[0].labels: key 'g' of label 'go on' is also the page's key to go to an "
                        "item, which annotators then do in its Go to item box; on this project the key chooses "
                        "the label")
    assert sorted(w.message for w in report.warnings if w.path.startswith("annotation_schemes")) == sorted(expected)


def test_two_labels_on_one_key_are_refused() -> None:
    raw = upstream(annotation_schemes=[
        {"annotation_type": "radio", "name": "a", "labels": [{"name": "x", "key_value": "q"}, "y"]},
        {"annotation_type": "radio", "name": "b", "labels": [{"name": "z", "key_binding": "q"}, "w"]},
    ])
    assert messages(report_of(raw).errors) == [
        "annotation_schemes[1].labels: key 'q' of label 'z' is also the key of annotation_schemes[0] label 'x'; "
        "give each label its own key"]


def test_text_scheme_layout_keys_and_required() -> None:
    raw = upstream(annotation_schemes=[
        {"annotation_type": "text", "name": "why", "textarea": {"on": True, "rows": 4, "cols": 50}},
        {"annotation_type": "text", "name": "short", "text_box_single_line": True, "placeholder": "one word"},
        {"annotation_type": "radio", "name": "s", "labels": ["a", "b"], "label_requirement": {"required": True},
         "horizontal": True},
    ])
    report = report_of(raw)
    assert report.errors == []
    why, short, s = report.config.annotation_schemes
    assert (why.multiline, why.rows) == (True, 4)
    assert (short.multiline, short.placeholder) == (False, "one word")
    assert s.required and s.horizontal


def test_features_this_server_lacks_are_named_errors_or_warnings() -> None:
    report = report_of(upstream(judge_alignment={"enabled": True}, base_css="x.css"))
    assert messages(report.errors) == [
        "judge_alignment: " + unsupported_message("judge_alignment", TOP_LEVEL["judge_alignment"].what),
    ]
    assert "base_css: " + unsupported_message("base_css", TOP_LEVEL["base_css"].what) in messages(report.warnings)
    assert messages(report.errors)[0].startswith(
        "judge_alignment: 'judge_alignment' is a Potato feature this server does not support: aligning an LLM judge")
    # issue 44: chat_support is served by an LLM server named as ai_support names it
    assert messages(report_of(upstream(chat_support={"enabled": True})).errors) == [
        "chat_support.endpoint_type: missing; name the LLM server: endpoint_type: ollama, vllm, openai or "
        "openai_compatible (with ai_config.base_url)"]
    chat = report_of(upstream(chat_support={"enabled": True, "endpoint_type": "ollama",
                                            "ai_config": {"model": "llama3.2", "temperature": 0.7, "max_tokens": 500},
                                            "ui": {"title": "Helper", "max_history_per_instance": 10},
                                            "system_prompt": {"template": "Help with {instance_text}"}}))
    assert chat.errors == []
    found = chat.config.chat_support
    assert (found.service.base_url, found.service.model, found.title, found.max_history, found.template) == (
        "http://localhost:11434/v1", "llama3.2", "Helper", 10, "Help with {instance_text}")
    assert messages(report_of(upstream(chat_support={"enabled": True, "endpoint_type": "openai",
                                                     "ai_config": {"model": "m", "api_key": "sk-x"}})).errors)[0] \
        .startswith("chat_support.ai_config.api_key: holds the key itself")
    # issue 44: ai_support is served (from the project's runs): what it lacks is named, with the fix
    assert messages(report_of(upstream(ai_support={"enabled": True})).errors) == [
        "ai_support.endpoint_type: missing; set endpoint_type: runs to help annotators with the project's own "
        "trained models (nothing leaves this machine), or openai_compatible with ai_config.base_url to ask an LLM "
        "server"]
    assert messages(report_of(upstream(assignment_strategy="diversity_clustering")).errors) == [
        "assignment_strategy: 'assignment_strategy: diversity_clustering' is a Potato feature this server does not "
        "support: items ordered by models, surveys or groups; remove it or run that project on upstream Potato "
        "(this server assigns: fixed_order, random, least_annotated)"]


def test_the_feature_table_says_something_for_every_key() -> None:
    for key, feature in {**TOP_LEVEL, **SCHEME_KEYS}.items():
        assert feature.what and not feature.what.endswith("."), key


@pytest.mark.parametrize(("extra", "message"), [
    ({"user_config": {"allow_all_users": False, "users": []}},
     "user_config.users: is empty while allow_all_users is false, so nobody could sign in; list the annotators' "
     "names, e.g. users: [alice, bob]"),
    ({"user_config": {"allow_all_users": False, "users": [{"username": "a", "password": "b"}]}},
     "user_config.users[0]: must be a name; this server keeps passwords itself (annotators choose one when "
     "require_password is true), so list names only, e.g. users: [alice, bob]"),
    ({"require_password": True, "login": {"type": "url_direct", "url_argument": "PROLIFIC_PID"}},
     "login.type: url_direct signs annotators in by a link, which cannot carry a password; remove "
     "require_password or use another login type"),
    ({"site_dir": "my_templates/"},
     "site_dir: 'site_dir' is a Potato feature this server does not support: pages from a custom template folder; "
     "remove it or run that project on upstream Potato (set site_dir: default)"),
    ({"annotation_codebook_url": "javascript:alert(1)"},
     "annotation_codebook_url: must be an http:// or https:// address, or a file of media_directory as /media/<file>, "
     "got 'javascript:alert(1)'"),
])
def test_access_and_page_keys_are_checked(extra: dict[str, Any], message: str) -> None:
    assert messages(report_of(upstream(**extra)).errors) == [message]


def test_access_and_page_keys_build() -> None:
    config = report_of(upstream(
        user_config={"allow_all_users": False, "users": ["alice", "bob"]}, require_password=True,
        session_lifetime_days=2, task_description="Rate reviews", annotation_instructions="Read it all.",
        annotation_codebook_url="https://example.org/codebook", hide_navbar=True, jumping_to_id_disabled=True,
        completion_code="C0DE", server={"host": "0.0.0.0", "port": 8123}, port=None,
    )).config
    assert config.access.users == ("alice", "bob") and config.access.require_password
    assert config.access.may_sign_in("alice") and not config.access.may_sign_in("mallory")
    assert config.access.session_lifetime_days == 2
    assert (config.page.task_description, config.page.instructions) == ("Rate reviews", "Read it all.")
    assert config.page.codebook_url == "https://example.org/codebook"
    assert config.page.hide_navbar and config.page.jumping_to_id_disabled and config.page.completion_code == "C0DE"
    assert (config.host, config.port) == ("0.0.0.0", 8123)


# --- the server ---------------------------------------------------------------------------------


@pytest.fixture
def make_app(make_project: Callable[..., Path]) -> Iterator[Callable[..., Any]]:
    apps: list[Any] = []

    def _make(**overrides: Any) -> Any:
        app = create_app(load_config(make_project(**overrides)), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
        apps.append(app)
        return app.test_client()

    yield _make
    for app in apps:
        close_app(app)


def test_an_allow_list_refuses_other_names(make_app: Callable[..., Any]) -> None:
    client = make_app(user_config={"allow_all_users": False, "users": ["alice"]})
    refused = client.post("/login", data={"name": "mallory"})
    assert refused.status_code == 403
    assert "&#39;mallory&#39; is not on this study&#39;s list of annotators" in refused.get_data(as_text=True)
    assert client.get("/annotate").status_code == 302  # not signed in
    assert client.post("/login", data={"name": "alice"}).status_code == 302
    assert client.get("/annotate").status_code == 200


def test_require_password_registers_then_checks_the_password(make_app: Callable[..., Any]) -> None:
    client = make_app(require_password=True)
    assert client.post("/login", json={"name": "alice"}).get_json() == {
        "error": "This study needs a password: enter your name and password."}
    assert client.post("/login", json={"name": "alice", "password": "short", "action": "register"}).status_code == 400
    assert client.post("/login", json={"name": "alice", "password": "correct horse"}).status_code == 401
    made = client.post("/login", json={"name": "alice", "password": "correct horse", "action": "register"})
    assert made.get_json() == {"user": "alice"}
    stranger = client.application.test_client()
    taken = stranger.post("/login", json={"name": "alice", "password": "battery staple", "action": "register"})
    assert taken.status_code == 400 and "is taken" in taken.get_json()["error"]
    wrong = stranger.post("/login", json={"name": "alice", "password": "battery staple"})
    assert wrong.status_code == 401 and wrong.get_json()["error"].startswith("Wrong name or password.")
    assert stranger.post("/login", json={"name": "alice", "password": "correct horse"}).status_code == 200
    row = client.application.extensions["potato"].db.conn.execute(
        "SELECT password_hash FROM users WHERE name = 'alice'").fetchone()
    assert "correct horse" not in row[0] and row[0].startswith(("scrypt:", "pbkdf2:"))


def test_wrong_passwords_are_throttled_per_address(make_app: Callable[..., Any]) -> None:
    client = make_app(require_password=True)
    client.post("/login", json={"name": "alice", "password": "correct horse", "action": "register"})
    answers = [client.post("/login", json={"name": "alice", "password": f"guess {i:04d}"}).status_code
               for i in range(21)]
    assert answers == [401] * 20 + [429]
    locked = client.post("/login", json={"name": "alice", "password": "correct horse"})
    assert locked.status_code == 429 and "Retry-After" in locked.headers


def test_url_direct_signs_in_from_the_link(make_app: Callable[..., Any]) -> None:
    client = make_app(login={"type": "url_direct", "url_argument": "PROLIFIC_PID"})
    page = client.get("/").get_data(as_text=True)
    assert "Open this study through the link you were given" in page and 'name="name"' not in page
    resp = client.get("/?PROLIFIC_PID=5f3a9c")
    assert resp.status_code == 302 and resp.headers["Location"].endswith("/annotate")
    assert "Signed in as <strong>5f3a9c</strong>" in client.get("/annotate").get_data(as_text=True)


def test_likert_and_slider_answers_are_stored_and_checked(make_app: Callable[..., Any]) -> None:
    client = make_app(annotation_schemes=[
        {"annotation_type": "likert", "name": "agree", "size": 5, "min_label": "No", "max_label": "Yes",
         "label_requirement": {"required": True}},
        {"annotation_type": "slider", "name": "stars", "min_value": 0, "max_value": 10, "starting_value": 5},
    ])
    client.post("/login", data={"name": "alice"})
    page = client.get("/annotate").get_data(as_text=True)
    assert re.search(r'value="5"\s+data-key="5"', page) and "likert-end" in page and 'type="range"' in page
    assert page.count("<fieldset") == 2 and page.count('data-key="5"') == 1  # each scheme drawn once
    missing = client.post("/api/label", json={"id": "r000", "labels": {"stars": 3}})
    assert missing.status_code == 400 and missing.get_json()["error"] == "'agree' needs an answer: it is required"
    bad = client.post("/api/label", json={"id": "r000", "labels": {"agree": "4", "stars": 3.5}})
    assert bad.get_json()["error"] == "3.5 is not an answer to 'stars' (valid: a number from 0 to 10 in steps of 1)"
    ok = client.post("/api/label", json={"id": "r000", "labels": {"agree": "4", "stars": 3}, "go": "stay"})
    assert ok.status_code == 200 and ok.get_json()["item"]["labels"] == {"agree": "4", "stars": 3}


def test_page_keys_show_on_the_annotation_page(make_app: Callable[..., Any]) -> None:
    client = make_app(task_description="Rate product reviews.", annotation_codebook_url="https://example.org/cb",
                      jumping_to_id_disabled=True, completion_code="PAID-42", hide_navbar=True,
                      alert_time_each_instance=30)
    client.post("/login", data={"name": "alice"})
    page = client.get("/annotate").get_data(as_text=True)
    assert "Rate product reviews." in page and 'href="https://example.org/cb"' in page
    assert 'id="goto"' not in page and "go to item" not in page
    assert 'class="no-navbar"' in page and 'data-alert-seconds="30"' in page
    # Issue 42: the completion code is on the done page only, once the items are labelled.
    assert "PAID-42" not in page and "Finish and get your completion code" in page
    assert client.get("/done").headers["Location"].endswith("/annotate")
    for number in range(40):
        client.post("/api/label", json={"id": f"r{number:03d}", "labels": {"sentiment": "positive"}, "go": "stay"})
    assert "PAID-42" in client.get("/done").get_data(as_text=True)


def test_the_help_line_offers_a_models_suggestion_only_where_a_model_is_trained(
        make_app: Callable[..., Any]) -> None:
    """Issue 42: "a accept the model's suggestion" was offered in studies that train no model."""
    writes_back = {"model_training": {"enabled": True, "writeback": {"schemas": ["sentiment"]}}}
    for training, offered in (({}, False), ({"model_training": {"enabled": True}}, False), (writes_back, True)):
        client = make_app(**training)
        client.post("/login", data={"name": "alice"})
        assert ("accept the model's suggestion" in client.get("/annotate").get_data(as_text=True)) is offered


def test_a_crowd_participant_is_not_shown_item_ids_unless_the_study_asks(make_app: Callable[..., Any]) -> None:
    """Issue 42: "Item 1 of 5 · id tech_2" gave the answer away in a study of topics."""
    url_direct = {"login": {"type": "url_direct", "url_argument": "PROLIFIC_PID"}}
    for keys, shown in (({}, True), (url_direct, False), ({**url_direct, "show_item_ids": True}, True),
                        ({"show_item_ids": False}, False)):
        client = make_app(**keys)
        client.get("/?PROLIFIC_PID=p1") if keys.get("login") else client.post("/login", data={"name": "alice"})
        assert ('id="item-id"' in client.get("/annotate").get_data(as_text=True)) is shown, keys


def test_start_listens_on_the_configs_port_unless_told(make_project: Callable[..., Path],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, int]] = []

    def refuse(host: str, port: int, command: Any = None) -> str:
        seen.append((host, port))
        return "stop here"

    monkeypatch.setattr("potato.server.serving.ports.port_problem", refuse)
    path = make_project(server={"host": "127.0.0.2", "port": 8123})
    CliRunner().invoke(cli, ["start", str(path)])
    CliRunner().invoke(cli, ["start", str(path), "-p", "9999"])
    assert seen == [("127.0.0.2", 8123), ("127.0.0.2", 9999)]


# --- assignment ---------------------------------------------------------------------------------


def test_assignment_keys_build_and_check() -> None:
    config = report_of(upstream(assignment_strategy="random", random_seed=1234, max_annotations_per_user=5,
                                num_annotators_per_item=3, max_annotations_per_item=-1)).config
    assert config.assignment == Assignment("random", 5, 3, 1234) and config.assignment.active
    assert not report_of(upstream()).config.assignment.active
    assert messages(report_of(upstream(max_annotations_per_item=2, num_annotators_per_item=3)).errors) == [
        "num_annotators_per_item: is 3 while max_annotations_per_item is 2; both cap the annotators of one "
        "item, so keep one of them"]
    assert messages(report_of(upstream(max_annotations_per_user="5")).errors) == [
        "max_annotations_per_user: must be a whole number of at least 1, got '5' (or -1 for no cap)"]


def test_random_order_is_each_annotators_own_and_stable() -> None:
    rank_a = order_key("random", 1234, "alice", 50)
    rank_b = order_key("random", 1234, "bob", 50)
    order_a = sorted(range(50), key=lambda p: rank_a(p, 0))
    assert order_a == sorted(range(50), key=lambda p: order_key("random", 1234, "alice", 50)(p, 0))
    assert order_a != sorted(range(50), key=lambda p: rank_b(p, 0)) and order_a != list(range(50))
    least = order_key("least_annotated", 0, "alice", 3)
    assert sorted(range(3), key=lambda p: least(p, [2, 0, 1][p])) == [1, 2, 0]


def _walk(client: Any, n: int) -> list[str]:
    """Label ``n`` items with Save & next from the first; the ids labelled, in order."""
    client.post("/login", data={"name": client.name})
    page = client.get("/annotate").get_data(as_text=True)
    found = re.search(r'"id": "(r\d+)"', page)
    if found is None:
        return []
    current, seen = found.group(1), []
    for _ in range(n):
        answer = client.post("/api/label", json={"id": current, "labels": {"sentiment": "positive"},
                                                  "go": "next_unlabelled"}).get_json()
        seen.append(current)
        if answer.get("note"):
            break
        current = answer["item"]["id"]
    return seen


def test_each_item_gets_at_most_its_annotators_and_each_annotator_their_quota(make_app: Callable[..., Any]) -> None:
    first = make_app(n_items=6, max_annotations_per_user=4, num_annotators_per_item=2)
    clients = []
    for name in ("ana", "ben", "cy", "dee", "eve"):
        client = first.application.test_client()
        client.name = name
        clients.append(client)
    got = {c.name: _walk(c, 10) for c in clients}
    assert got["ana"] == ["r000", "r001", "r002", "r003"]  # fixed order, four each
    assert got["ben"] == ["r000", "r001", "r002", "r003"]
    assert got["cy"] == ["r004", "r005"]  # r000-r003 have their two annotators
    assert first.application.extensions["potato"].queue.total("cy") == 4
    assert got["dee"] == ["r004", "r005"]
    eve = clients[4]
    assert got["eve"] == [] and "No items left for you" in eve.get("/annotate").get_data(as_text=True)
    refused = eve.post("/api/label", json={"id": "r000", "labels": {"sentiment": "positive"}})
    assert refused.status_code == 400 and "is not one of your items" in refused.get_json()["error"]
    last = clients[0].post("/api/label", json={"id": "r003", "labels": {"sentiment": "negative"}, "go": "next"})
    assert last.get_json()["note"] == "That was the last item." and last.get_json()["item"]["finished"] is True


def test_least_annotated_spreads_annotators_over_items(make_app: Callable[..., Any]) -> None:
    app = make_app(n_items=4, assignment_strategy="least_annotated", max_annotations_per_user=2).application
    for name in ("ana", "ben", "cy", "dee"):
        client = app.test_client()
        client.name = name
        _walk(client, 1)  # labels one item and is handed a second
    counts = app.extensions["potato"].db.conn.execute(
        "SELECT item_id, COUNT(*) FROM assignments GROUP BY item_id ORDER BY item_id").fetchall()
    assert [tuple(row) for row in counts] == [("r000", 2), ("r001", 2), ("r002", 2), ("r003", 2)]


# --- instance_display ---------------------------------------------------------------------------


def test_instance_display_text_fields_are_shown_and_others_refused() -> None:
    display = {"layout": {"direction": "vertical", "gap": "16px"},
               "fields": [{"key": "text", "type": "text", "label": "Review"},
                          {"key": "product", "type": "text", "label": "Product",
                           "display_options": {"collapsible": True}}]}
    page = report_of(upstream(instance_display=display)).config.page
    assert [(f.key, f.label) for f in page.display_fields] == [("text", "Review"), ("product", "Product")]
    display["fields"].append({"key": "photo", "type": "image", "label": "Photo"})  # shown since issue 36
    assert messages(report_of(upstream(instance_display=display)).errors) == []
    display["fields"].append({"key": "clip", "type": "video", "label": "Clip"})  # shown since issue 45
    assert messages(report_of(upstream(instance_display=display)).errors) == []
    display["fields"].append({"key": "depth", "type": "depth_map", "label": "Depth"})
    assert messages(report_of(upstream(instance_display=display)).errors) == [
        "instance_display.fields[4].type: 'type: depth_map' is a Potato feature this server does not support: depth_map "
        "fields in instance_display (this server shows text, image, audio, video, dialogue, code, spreadsheet, document, "
        "pdf, agent_trace, eval_trace, coding_trace, multi_agent_discussion, cot_trace); "
        "remove it or run that project on upstream Potato"]


def test_instance_display_fields_reach_the_page(make_app: Callable[..., Any]) -> None:
    client = make_app(instance_display={"fields": [{"key": "text", "type": "text", "label": "Review"},
                                                   {"key": "id", "type": "text", "label": "Ref"}]})
    client.post("/login", data={"name": "alice"})
    item = client.get("/api/item/1").get_json()["item"]
    assert item["fields"] == [{"label": "Review", "type": "text", "text": "The item 0 works perfectly."},
                              {"label": "Ref", "type": "text", "text": "r000"}]


# --- display_logic ------------------------------------------------------------------------------


@pytest.mark.parametrize(("cond", "answer", "expected"), [
    (Condition("s", "equals", ["Yes", "Maybe"]), "yes", True),
    (Condition("s", "equals", "Yes", case_sensitive=True), "yes", False),
    (Condition("s", "not_equals", "No"), None, True),
    (Condition("s", "contains", "Other"), ["Name", "Other"], True),
    (Condition("s", "contains", "spam"), "no spam here", True),
    (Condition("s", "in_range", [1, 3]), "2", True),  # a likert point is text
    (Condition("s", "in_range", [1, 3]), 4, False),
    (Condition("s", "gte", 5), 5, True),
    (Condition("s", "empty"), [], True),
    (Condition("s", "length_gt", 3), "abcd", True),
    (Condition("s", "matches", "^[A-Z]{2}\\d+$"), "ab12", True),
])
def test_conditions(cond: Condition, answer: Any, expected: bool) -> None:
    assert holds(cond, answer) is expected


def test_display_logic_is_checked() -> None:
    bad = [dict(PII[0]), {**PII[1], "display_logic": {"show_when": [
        {"schema": "contains_pi", "operator": "equal", "value": "Yes"},
        {"schema": "contains_pii", "operator": "in_range", "value": 3}]}}]
    assert messages(report_of(upstream(annotation_schemes=bad)).errors) == [
        "annotation_schemes[1].display_logic.show_when[0].schema: 'contains_pi' names no annotation scheme "
        "(did you mean 'contains_pii'?); schemes: contains_pii, pii_types",
        "annotation_schemes[1].display_logic.show_when[0].operator: 'equal' is not an operator (did you mean "
        "'equals'?); valid: " + ", ".join(OPERATORS),
        "annotation_schemes[1].display_logic.show_when[1].value: must be [low, high] for in_range, e.g. [1, 3], got 3",
    ]


def test_a_hidden_question_is_not_stored_and_not_required(make_app: Callable[..., Any]) -> None:
    client = make_app(annotation_schemes=PII)
    client.post("/login", data={"name": "alice"})
    page = client.get("/annotate").get_data(as_text=True)
    assert page.count("data-logic=") == 2
    # "No": the follow-up questions were not asked, so whatever the page sent for them is dropped.
    answer = client.post("/api/label", json={"id": "r000", "go": "stay", "labels": {
        "contains_pii": "No", "pii_types": ["SSN"], "other": "x"}}).get_json()
    assert answer["item"]["labels"] == {"contains_pii": "No"}
    # "Yes" + Other: the text box is asked, and required.
    missing = client.post("/api/label", json={"id": "r000", "labels": {"contains_pii": "Yes", "pii_types": ["Other"]}})
    assert missing.get_json()["error"] == "'other' needs an answer: it is required"
    client.post("/api/label", json={"id": "r000", "go": "stay", "labels": {
        "contains_pii": "Yes", "pii_types": ["Other"], "other": "a phone number"}})
    # Back to "No" (from an API client that sends only that answer): the stored follow-ups go.
    answer = client.post("/api/label", json={"id": "r000", "go": "stay", "labels": {"contains_pii": "No"}}).get_json()
    assert answer["item"]["labels"] == {"contains_pii": "No"}


# --- upstream's export layout -------------------------------------------------------------------

EVERY_KIND = [
    {"annotation_type": "radio", "name": "sentiment", "labels": ["positive", "negative"]},
    {"annotation_type": "multiselect", "name": "aspects", "labels": ["price", "quality"]},
    {"annotation_type": "likert", "name": "helpful", "size": 5, "min_label": "no", "max_label": "yes"},
    {"annotation_type": "text", "name": "note"},
    {"annotation_type": "slider", "name": "stars", "min_value": 0, "max_value": 10, "starting_value": 5},
    {"annotation_type": "number", "name": "count"},
    {"annotation_type": "select", "name": "topic", "labels": ["a", "b"]},
]
ANSWERS = {"sentiment": "positive", "aspects": ["price", "quality"], "helpful": "4", "note": "fine, thanks",
           "stars": 6, "count": 2.5, "topic": "b"}


def test_output_annotation_format_is_upstreams_export_format() -> None:
    assert report_of(upstream()).config.export_formats == ("jsonl",)  # json means jsonl upstream
    both = report_of(upstream(export_annotation_format=["csv", "jsonl"])).config
    assert both.export_formats == ("jsonl", "csv")
    assert messages(report_of(upstream(export_annotation_format="coco")).errors) == [
        "export_annotation_format: 'export_annotation_format: coco' is a Potato feature this server does not "
        "support: exports in formats other than jsonl, csv and tsv (CoNLL, COCO, Hugging Face...); remove it or "
        "run that project on upstream Potato"]


def test_every_kind_of_answer_in_upstreams_layout(make_app: Callable[..., Any], tmp_path: Path) -> None:
    client = make_app(annotation_schemes=EVERY_KIND, output_annotation_format="csv")
    client.post("/login", data={"name": "alice"})
    assert client.post("/api/label", json={"id": "r000", "labels": ANSWERS}).status_code == 200
    exporter = client.application.extensions["potato.autoexport"]
    assert exporter.write_if_changed() and not exporter.write_if_changed()  # nothing new the second time
    out = client.application.extensions["potato"].config.output_annotation_dir / "exports" / "csv" / "annotations.csv"
    assert out.read_text(encoding="utf-8").splitlines() == [
        "instance_id,user_id,sentiment.positive,aspects.price,aspects.quality,helpful.4,note.text_box,stars.slider,"
        "count.number,topic.select-one",
        "r000,alice,positive,price,quality,4,\"fine, thanks\",6,2.5,b",
    ]
    result = CliRunner().invoke(cli, ["export", str(client.application.extensions["potato"].config.path),
                                      "--upstream-format", "json", "-o", str(tmp_path / "x")])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "x" / "annotations.jsonl").read_text(encoding="utf-8"))
    assert record == {"instance_id": "r000", "user_id": "alice", "spans": {}, "links": {}, "labels": {
        "sentiment": {"positive": "positive"}, "aspects": {"price": "price", "quality": "quality"},
        "helpful": {"4": "4"}, "note": {"text_box": "fine, thanks"}, "stars": {"slider": "6"},
        "count": {"number": "2.5"}, "topic": {"select-one": "b"}}}


def test_has_free_response_adds_a_box_asked_with_its_scheme() -> None:
    schemes = {s.name: s for s in report_of(upstream(annotation_schemes=FREE)).config.annotation_schemes}
    assert list(schemes) == ["contains_pii", "pii_types", "pii_types:free_response", "tone", "tone:free_response"]
    box = schemes["pii_types:free_response"]
    assert (box.annotation_type, box.description, box.free_response_of) == (SchemeType.TEXT, "Something else:",
                                                                             "pii_types")
    assert box.display_logic == schemes["pii_types"].display_logic and not box.required
    assert schemes["tone:free_response"].description == "Other (please specify)"
    assert schemes["tone"].training_type == "radio" and box.training_type is None  # trainers see the labels only
    off = report_of(upstream(annotation_schemes=[dict(FREE[2], has_free_response=False)])).config
    assert [s.name for s in off.annotation_schemes] == ["tone"]
    taken = report_of(upstream(annotation_schemes=FREE + [{"annotation_type": "text", "name": "tone:free_response"}]))
    assert messages(taken.errors) == [
        "annotation_schemes[2].has_free_response: its box is stored as 'tone:free_response', which is already the "
        "name of another scheme; rename that scheme"]


def test_a_free_response_is_stored_shown_and_exported_next_to_its_labels(make_app: Callable[..., Any]) -> None:
    client = make_app(annotation_schemes=FREE, output_annotation_format="jsonl")
    client.post("/login", data={"name": "alice"})
    page = client.get("/annotate").get_data(as_text=True)
    assert page.count('class="scheme free-response"') == 2 and page.count("<fieldset") == 5
    assert re.search(r'data-schema="pii_types:free_response" data-type="text"\s+data-logic=', page)
    saved = client.post("/api/label", json={"id": "r000", "go": "stay", "labels": {
        "contains_pii": "Yes", "pii_types": ["Email"], "pii_types:free_response": "a phone number",
        "tone": "calm", "tone:free_response": ""}}).get_json()
    assert saved["item"]["labels"] == {"contains_pii": "Yes", "pii_types": ["Email"],
                                       "pii_types:free_response": "a phone number", "tone": "calm"}
    client.application.extensions["potato.autoexport"].write_if_changed()
    out = client.application.extensions["potato"].config.output_annotation_dir / "exports" / "jsonl"
    assert json.loads((out / "annotations.jsonl").read_text())["labels"] == {
        "contains_pii": {"Yes": "Yes"}, "pii_types": {"Email": "Email", "free_response": "a phone number"},
        "tone": {"calm": "calm"}}
    # "No": the types question was not asked, and neither was its box.
    hidden = client.post("/api/label", json={"id": "r000", "go": "stay", "labels": {"contains_pii": "No"}}).get_json()
    assert hidden["item"]["labels"] == {"contains_pii": "No", "tone": "calm"}


def test_a_text_scheme_with_labels_has_a_box_per_label(make_app: Callable[..., Any]) -> None:
    client = make_app(annotation_schemes=[{"annotation_type": "text", "name": "qa", "labels": ["question", "answer"],
                                           "textarea": {"on": False}}], output_annotation_format="jsonl")
    client.post("/login", data={"name": "alice"})
    page = client.get("/annotate").get_data(as_text=True)
    assert page.count('data-label="question"') == 1 and page.count('data-label="answer"') == 1
    saved = client.post("/api/label", json={"id": "r000", "go": "stay",
                                            "labels": {"qa": {"question": "Why?", "answer": ""}}}).get_json()
    assert saved["item"]["labels"] == {"qa": {"question": "Why?"}}
    bad = client.post("/api/label", json={"id": "r000", "labels": {"qa": {"reason": "x"}}})
    assert bad.status_code == 400 and "by box: question, answer" in bad.get_json()["error"]
    client.application.extensions["potato.autoexport"].write_if_changed()
    out = client.application.extensions["potato"].config.output_annotation_dir / "exports" / "jsonl"
    assert json.loads((out / "annotations.jsonl").read_text())["labels"] == {"qa": {"question": "Why?"}}
    cleared = client.post("/api/label", json={"id": "r000", "go": "stay", "labels": {"qa": {"question": ""}}})
    assert cleared.get_json()["item"]["labels"] == {}


def test_data_files_in_upstreams_dict_form() -> None:
    config = report_of(upstream(data_files=[{"path": "data/a.json"}, {"path": "data/b.csv", "encoding": "UTF-8"},
                                            "data/c.jsonl"])).config
    assert [p.name for p in config.data_files] == ["a.json", "b.csv", "c.jsonl"]
    assert messages(report_of(upstream(data_files=["data/a.json", {"path": "data/b.csv", "encoding": "latin-1"}])).errors) == [
        "data_files[1]: is read as latin-1, and this server reads items as UTF-8; convert the file (e.g. iconv -f "
        "latin-1 -t utf-8) and list its path"]


def test_item_texts_in_upstreams_other_shapes_are_shown_as_upstream_shows_them(tmp_path: Path) -> None:
    from potato.errors import DataError
    from potato.items import load_items

    data = tmp_path / "items.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in [
        {"id": "d1", "text": ["A: Hi, can I return this?", "B: Within 30 days, yes."]},  # a dialogue
        {"id": "d2", "text": {"question": "Is it safe?", "answer": "Yes"}},
        {"id": 3, "text": 42},
        {"id": "d4", "text": ["fine", ["<img src=x>"]]},
    ]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"items.jsonl:4: the text holds an HTML <img> tag"):
        load_items([data])
    data.write_text("\n".join(data.read_text().splitlines()[:3]) + "\n", encoding="utf-8")
    items = load_items([data])
    assert [i.text for i in items] == ["A. A: Hi, can I return this?\nB. B: Within 30 days, yes.",
                                       '{\n  "question": "Is it safe?",\n  "answer": "Yes"\n}', "42"]
    assert messages(report_of(upstream(list_as_text={"text_list_prefix_type": "number"})).warnings)[1:] == [
        "list_as_text: 'list_as_text' is a Potato feature this server does not support: other layouts of an item "
        "text that is a list (this server shows its entries as lines A., B., C., upstream's default); remove it or "
        "run that project on upstream Potato"]


def test_queues_survive_a_data_file_that_lost_items(make_project: Callable[..., Path]) -> None:
    path = make_project(n_items=6, max_annotations_per_user=3)
    app = create_app(load_config(path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    client = app.test_client()
    client.name = "ana"
    assert _walk(client, 2) == ["r000", "r001"]  # and r002 was handed to her next
    close_app(app)
    data = path.parent / "data" / "reviews.json"
    data.write_text(json.dumps([i for i in json.loads(data.read_text()) if i["id"] != "r001"]))
    app = create_app(load_config(path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        client = app.test_client()
        client.post("/login", data={"name": "ana"})
        assert client.get("/annotate").status_code == 200
        assert [client.get(f"/api/item/{n}").get_json()["item"]["id"] for n in (1, 2)] == ["r000", "r002"]
        stranger = app.test_client()
        stranger.post("/login", data={"name": "bo"})
        assert stranger.get("/api/move?go=next").status_code == 200  # bo gets items of his own
    finally:
        close_app(app)


def test_export_into_a_file_instead_of_a_folder_says_so(make_project: Callable[..., Path], tmp_path: Path) -> None:
    taken = tmp_path / "not-a-folder"
    taken.write_text("x")
    result = CliRunner().invoke(cli, ["export", str(make_project()), "--upstream-format", "csv", "-o", str(taken)])
    assert result.exit_code != 0 and "-o names a folder: pick one you can write to" in str(result.exception)
    assert taken.read_text() == "x"  # nothing lost


# --- where upstream accepts, this server accepts (issue 36) -------------------------------------------


def test_upstreams_own_page_is_ours_and_any_other_template_is_refused_with_the_fix() -> None:
    report = report_of(upstream(base_html_template="default", header_file="default"))
    assert report.errors == [] and not any("template" in m or "header" in m for m in messages(report.warnings))
    refused = report_of(upstream(base_html_template="templates/mine.html"))
    assert messages(refused.errors) == [
        "base_html_template: " + unsupported_message("base_html_template", TOP_LEVEL["base_html_template"].what)
        + " (set base_html_template: default for this server's own page)"]


def test_a_text_box_with_upstreams_empty_label_is_one_plain_box(make_app: Callable[..., Any]) -> None:
    comments = {"annotation_type": "text", "name": "comments", "description": "Additional comments (optional)",
                "labels": [""], "textarea": {True: True, "rows": 3, "cols": 50}}  # YAML's reading of `on: true`
    report = report_of(upstream(annotation_schemes=[upstream()["annotation_schemes"][0], comments]))
    assert report.errors == []
    box = report.config.annotation_schemes[1]
    assert (box.labels, box.multiline, box.rows) == ((), True, 3)
    client = make_app(annotation_schemes=[comments], output_annotation_format="jsonl")
    client.post("/login", data={"name": "alice"})
    page = client.get("/annotate").get_data(as_text=True)
    assert 'aria-label="Additional comments (optional)"' in page and "data-label=" not in page
    saved = client.post("/api/label", json={"id": "r000", "go": "stay", "labels": {"comments": "fine"}}).get_json()
    assert saved["item"]["labels"] == {"comments": "fine"}


def test_a_free_response_box_with_an_empty_instruction_has_no_caption_but_a_name(make_app: Callable[..., Any]) -> None:
    schemes = [{"annotation_type": "multiselect", "name": "topics", "labels": ["price", "quality"],
                "has_free_response": {"instruction": ""}}]
    config = report_of(upstream(annotation_schemes=schemes)).config
    box = config.annotation_schemes[1]
    assert (box.name, box.description, box.free_response_of) == ("topics:free_response", "", "topics")
    client = make_app(annotation_schemes=schemes, output_annotation_format="jsonl")
    client.post("/login", data={"name": "alice"})
    page = client.get("/annotate").get_data(as_text=True)
    assert '<legend class="unseen">topics: other</legend>' in page and 'aria-label="topics: other"' in page
    assert "topics:free_response</legend>" not in page
    saved = client.post("/api/label", json={"id": "r000", "go": "stay", "labels": {
        "topics": ["price"], "topics:free_response": "size"}}).get_json()
    assert saved["item"]["labels"] == {"topics": ["price"], "topics:free_response": "size"}


def test_an_upstream_feature_that_is_turned_off_is_ignored_with_a_warning() -> None:
    """Issue 36: upstream's pairwise examples carry ``surveyflow: {on: false}`` and
    ``automatic_assignment: {'on': false}``; upstream skips them, and so does this server."""
    report = report_of(upstream(surveyflow={True: False}, automatic_assignment={"on": False, "sampling_strategy": "random"},
                                ai_support={"enabled": False}))
    assert report.errors == []
    assert ("surveyflow: is turned off, so upstream Potato does not use it either (survey pages before and after the "
            "annotation); it is ignored") in messages(report.warnings)
    assert messages(report_of(upstream(automatic_assignment={"on": True})).errors)[0].startswith(
        "automatic_assignment: 'automatic_assignment' is a Potato feature this server does not support")


def test_item_kwargs_are_ignored_with_a_warning_that_says_how_to_show_a_field() -> None:
    """Issue 45 (moving projects over): upstream hands item_properties.kwargs to a custom page
    template; its default page shows none of them, and neither does this server's."""
    report = report_of(upstream(item_properties={"id_key": "id", "text_key": "text", "kwargs": ["my_kwarg"]}))
    assert report.errors == []
    assert "item_properties.kwargs: passes item fields to a custom page template, which this server does not use " \
           "(upstream's default page does not show them either): it is ignored. To show a field, list it under " \
           "instance_display.fields" in [w.message for w in report.warnings]
