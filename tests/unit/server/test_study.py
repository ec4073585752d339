"""Issue 36 (phases): a study's pages around the items, as upstream's ``phases`` configure them.

A participant gives consent, reads the instructions, passes the training items (with feedback),
answers the pre-study survey, labels, answers the post-study survey and is handed back; a consent
declined ends the study with the platform's screen-out code; every answer is stored and exported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from click.testing import CliRunner

from potato.cli import cli
from potato.config import load_config, validate
from potato.server import close_app, create_app
from tests.harness.studies import page, post, up_to_the_items


def test_a_participant_goes_through_every_page_in_order(study: Callable[..., Any]) -> None:
    client = study()
    client.get("/?PROLIFIC_PID=p1&STUDY_ID=st&SESSION_ID=se")
    assert client.get("/annotate").headers["Location"].endswith("/study")  # consent first
    assert client.post("/api/label", json={"id": "r000", "labels": {"sentiment": "positive"}}).status_code == 409
    assert "I certify that I am at least 18 years of age." in page(client)
    assert post(client, "consent").status_code == 400  # the consent is required
    assert post(client, "consent", age_consent="I agree").status_code == 302
    assert "<h2>How to label</h2>" in page(client)  # the instructions file, as the admin wrote it
    post(client, "instructions")

    html = page(client)
    assert "Training item 1 of 2" in html and "I loved it." in html
    post(client, "training", sentiment="negative")
    html = page(client)
    assert "Not quite: try this one again. Loving something is positive." in html and "I loved it." in html
    post(client, "training", sentiment="positive")
    html = page(client)
    assert "Correct!" in html and "It broke at once." in html
    post(client, "training", sentiment="negative")

    assert "Is English your native language?" in page(client)
    answered = post(client, "prestudy", native="No")  # years is asked now, and required
    assert answered.status_code == 400
    assert "Answer \u201cHow many years have you spoken English?\u201d: it is required." in answered.get_data(as_text=True)
    assert 'value="No" checked' in answered.get_data(as_text=True)  # what was sent is shown again
    post(client, "prestudy", native="No", years="12")

    assert client.get("/study").headers["Location"].endswith("/annotate")
    annotate = client.get("/annotate").get_data(as_text=True)
    assert "Finish and continue" in annotate
    for item in ("r000", "r001"):
        assert client.post("/api/label", json={"id": item, "labels": {"sentiment": "positive"}}).status_code == 200
    assert client.get("/done").headers["Location"].endswith("/study")  # the post-study survey is still to come
    shown = page(client)
    assert "How satisfied are you?" in shown
    assert ('<div class="note" data-note="debrief"><p>Thank you. <strong>The study was about how people read '
            'reviews.</strong></p></div>') in shown
    assert shown.index('data-note="debrief"') < shown.index('data-schema="comments"')
    asked = post(client, "poststudy", comments="Nice", satisfaction="4")
    assert asked.status_code == 400 and "Answer \u201cI answered honestly.\u201d: it is required." in asked.get_data(
        as_text=True)
    assert post(client, "poststudy", comments="Nice", satisfaction="4", honest="Yes").status_code == 400  # accent
    post(client, "poststudy", comments="Nice", satisfaction="4", honest="Yes", accent="No")
    assert client.get("/study").headers["Location"].endswith("/done")
    done = client.get("/done").get_data(as_text=True)
    assert "C1ABCDEF" in done and "Return to Prolific" in done


def test_a_consent_declined_ends_the_study_with_the_screen_out_code(study: Callable[..., Any]) -> None:
    client = study()
    client.get("/?PROLIFIC_PID=p2")
    assert post(client, "consent", age_consent="I disagree").headers["Location"].endswith("/done")
    done = client.get("/done").get_data(as_text=True)
    assert "The study ends here, as your answers say it is not for you." in done and "C1SCREEN" in done
    assert "C1ABCDEF" not in done
    assert client.get("/annotate").headers["Location"].endswith("/study")  # no way round it
    assert client.post("/api/label", json={"id": "r000", "labels": {"sentiment": "positive"}}).status_code == 409


def test_a_participant_who_declines_holds_no_item(study: Callable[..., Any]) -> None:
    client = study(assignment_strategy="random", max_annotations_per_item=1)
    client.get("/?PROLIFIC_PID=p7")
    client.get("/annotate")  # sent on to the consent
    post(client, "consent", age_consent="I disagree")
    client.get("/done")
    from potato.db import Database

    db = Database(load_config(client.config_path).database_path)
    try:
        assert db.conn.execute("SELECT COUNT(*) FROM assignments WHERE user = 'p7'").fetchone()[0] == 0
    finally:
        db.close()


def test_failing_the_training_ends_the_study_with_the_failure_code(study: Callable[..., Any]) -> None:
    client = study(training={"enabled": True, "passing_criteria": {"max_mistakes": 2}})  # out at the 2nd
    client.get("/?PROLIFIC_PID=p3")
    post(client, "consent", age_consent="I agree")
    post(client, "instructions")
    post(client, "training", sentiment="negative")
    assert post(client, "training", sentiment="negative").headers["Location"].endswith("/done")
    done = client.get("/done").get_data(as_text=True)
    assert "the training questions were not passed" in done and "C1FAILED" in done


def test_repeat_training_starts_the_items_again(study: Callable[..., Any]) -> None:
    client = study(training={"enabled": True, "failure_action": "repeat_training",
                             "passing_criteria": {"max_mistakes": 1}})
    client.get("/?PROLIFIC_PID=p4")
    post(client, "consent", age_consent="I agree")
    post(client, "instructions")
    post(client, "training", sentiment="positive")
    post(client, "training", sentiment="positive")  # wrong on t2: over the limit, so again from t1
    html = page(client)
    assert "Training item 1 of 2" in html and "I loved it." in html


def test_progress_and_answers_survive_a_restart(study: Callable[..., Any], make_project: Callable[..., Path]) -> None:
    client = study()
    client.get("/?PROLIFIC_PID=p5&SESSION_ID=se5")
    post(client, "consent", age_consent="I agree")
    post(client, "instructions")
    app = create_app(load_config(client.config_path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        again = app.test_client()
        again.get("/?PROLIFIC_PID=p5")
        assert "Training item 1 of 2" in page(again)  # the next page, not the consent again
    finally:
        close_app(app)


def test_every_pages_answers_are_exported(study: Callable[..., Any]) -> None:
    client = study()
    up_to_the_items(client, "p6", native="Yes", years="3")  # years was not asked: not stored
    out = CliRunner().invoke(cli, ["export", str(client.config_path), "--phases"])
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["user"], r["phase"], r["schema"], r["label"]) for r in rows] == [
        ("p6", "consent", "age_consent", "I agree"), ("p6", "prestudy", "native", "Yes")]
    folder = client.config_path.parent / "up"
    done = CliRunner().invoke(cli, ["export", str(client.config_path), "--upstream-format", "csv", "-o", str(folder)])
    assert done.exit_code == 0, done.output
    lines = (folder / "phase_responses.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "user_id,phase,schema,label_name,value"
    assert "p6,consent,age_consent,I agree,I agree" in lines and "p6,prestudy,native,Yes,Yes" in lines


def test_a_missing_or_broken_phase_file_is_named_with_the_fix(tmp_path: Path) -> None:
    from tests.harness.upstream import upstream

    raw = upstream(phases={"order": ["consent", "annotation"], "consent": {"type": "consent",
                                                                            "file": "surveys/consent.json"}})
    found = [e.message for e in validate(raw, tmp_path / "config.yaml").errors]
    assert len(found) == 1 and found[0].startswith(
        f"phases.consent.file: cannot read {tmp_path / 'surveys' / 'consent.json'}")
    (tmp_path / "surveys").mkdir()
    (tmp_path / "surveys" / "consent.json").write_text("[{\"name\": ", encoding="utf-8")
    found = [e.message for e in validate(raw, tmp_path / "config.yaml").errors]
    assert len(found) == 1 and found[0].startswith("phases.consent.file: consent.json is not JSON")
    (tmp_path / "surveys" / "consent.json").write_text(json.dumps([{"name": "ok", "annotation_type": "radio",
                                                                    "labels": ["Yes", "No"], "label_requirement": {
                                                                        "required_label": ["Yes please"]}}]))
    found = [e.message for e in validate(raw, tmp_path / "config.yaml").errors]
    assert found == ["surveys/consent.json[0].label_requirement: names 'Yes please', which is not one of the labels "
                     "(Yes, No)"]
    (tmp_path / "surveys" / "consent.json").write_text(json.dumps([{"name": "where", "annotation_type": "span",
                                                                    "labels": ["x"]}]))
    assert [e.message for e in validate(raw, tmp_path / "config.yaml").errors] == [
        "phases.consent.file: surveys/consent.json asks 'where' as a span question; a study page has no item text to "
        "mark, so ask it as a radio, multiselect, text, number, likert or select question"]
    # Text between the questions is no question: each entry is named by its place in the file.
    (tmp_path / "surveys" / "consent.json").write_text(json.dumps([
        {"name": "terms", "annotation_type": "pure_display"},
        {"name": "intro", "annotation_type": "pure_display", "description": "Hi",
         "display_logic": {"show_when": [{"schema": "x", "operator": "equals", "value": "y"}]}},
        {"name": "agree", "annotation_type": "radio", "labels": ["I agree"], "label_requirement": {
            "required_label": ["Yes"]}}]))
    assert [e.message for e in validate(raw, tmp_path / "config.yaml").errors] == [
        'surveys/consent.json[0].description: missing; a pure_display entry shows its description, e.g. "description": '
        '"<p>You may stop at any time.</p>"',
        "surveys/consent.json[1].display_logic: a pure_display entry is always shown on its page; remove "
        "display_logic, or put the text in a question's description"]
    (tmp_path / "surveys" / "consent.json").write_text(json.dumps([
        {"name": "terms", "annotation_type": "pure_display", "description": "Terms"},
        {"name": "agree", "annotation_type": "radio", "labels": ["I agree"], "label_requirement": {
            "required_label": ["Yes"]}}]))
    assert [e.message for e in validate(raw, tmp_path / "config.yaml").errors] == [
        "surveys/consent.json[1].label_requirement: names 'Yes', which is not one of the labels (I agree)"]
    no_items = upstream(phases={"order": ["consent"], "consent": {"type": "consent", "file": "surveys/consent.json"}})
    assert [e.message for e in validate(no_items, tmp_path / "config.yaml").errors] == [
        "phases.order: has no annotation phase, so the items would never be shown; add annotation where the items "
        "come, e.g. [consent, annotation, poststudy]"]
    instrument = upstream(phases={"order": ["prestudy", "annotation"], "prestudy": {"type": "prestudy",
                                                                                    "instrument": "tipi"}})
    assert [e.message for e in validate(instrument, tmp_path / "config.yaml").errors] == [
        "phases.prestudy.instrument: 'tipi': upstream's built-in survey instruments are not shipped here; put the "
        "instrument's questions in a file of your project and name it with file: (e.g. file: surveys/tipi.json)"]


def test_a_question_hangs_on_an_earlier_pages_answer(study: Callable[..., Any]) -> None:
    """The post-study question on accent is asked only of those who said on the pre-study page that
    English is not their native language: the page carries that answer for its script, and the server
    neither requires nor stores the question for the others."""
    client = study()
    up_to_the_items(client, "p9", native="Yes")
    for item in ("r000", "r001"):
        assert client.post("/api/label", json={"id": item, "labels": {"sentiment": "positive"}}).status_code == 200
    shown = page(client)
    assert """data-earlier='{"age_consent": "I agree", "native": "Yes"}'""" in shown
    done = post(client, "poststudy", comments="", satisfaction="3", honest="Yes", accent="No")
    assert done.status_code == 302
    out = CliRunner().invoke(cli, ["export", str(client.config_path), "--phases"])
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.output.splitlines()]
    assert {r["schema"] for r in rows if r["user"] == "p9" and r["phase"] == "poststudy"} == {"satisfaction", "honest"}
