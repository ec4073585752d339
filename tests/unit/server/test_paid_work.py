"""Issue 42: a study hands out its completion code only for finished work, and every participant's
outcome is on record.

Each test walks a participant the way the researcher's probe did (upstream's crowdsourcing configs
copied unchanged, a second browser, a stale tab) and looks at every response they could read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import yaml
from click.testing import CliRunner

from potato.cli import cli
from potato.config import validate
from tests.conftest import ADMIN_KEY
from tests.harness.studies import post, up_to_the_items

PROLIFIC_BASIC = {"login": {"type": "url_direct", "url_argument": "PROLIFIC_PID"}, "completion_code": "C1ABCDEF",
                  "crowdsourcing": None}
"""Upstream's crowdsourcing/prolific-basic, as copied: no crowdsourcing block, a top-level code."""
SURVEYS = {"order": ["prestudy", "annotation", "poststudy"],
           "prestudy": {"type": "prestudy", "file": "surveys/prestudy.json"},
           "poststudy": {"type": "poststudy", "file": "surveys/poststudy.json"}}
"""A survey before the items and one after them."""
ITEMS = ("r000", "r001")


def label_items(client: Any, seen: list[str]) -> None:
    for item in ITEMS:
        answer = client.post("/api/label", json={"id": item, "labels": {"sentiment": "positive"}, "go": "stay"})
        assert answer.status_code == 200, answer.get_json()
        seen.append(answer.get_data(as_text=True))


def checked(path: Path) -> Any:
    return validate(yaml.safe_load(path.read_text(encoding="utf-8")), path)


def label_assigned(client: Any) -> None:
    """Label every item the project assigns to this participant, one after another."""
    item = client.get("/api/move?from=0&go=stay").get_json()["item"]
    while True:
        answer = client.post("/api/label", json={"id": item["id"], "labels": {"sentiment": "positive"},
                                                 "go": "next_unlabelled"}).get_json()
        if answer["item"]["finished"]:
            return
        item = answer["item"]


def read(client: Any, path: str, seen: list[str]) -> Any:
    response = client.get(path)
    seen.append(response.get_data(as_text=True) + json.dumps(dict(response.headers)))
    return response


def test_the_code_is_in_no_response_until_the_survey_after_the_items_is_answered(study: Callable[..., Any]) -> None:
    client = study(phases=SURVEYS, training=None, **PROLIFIC_BASIC)
    seen: list[str] = []
    arrived = read(client, "/?PROLIFIC_PID=p001&STUDY_ID=s1&SESSION_ID=x1", seen)
    assert arrived.headers["Location"].endswith("/annotate")
    read(client, "/study", seen)
    post(client, "prestudy", native="Yes")
    read(client, "/annotate", seen)
    read(client, "/api/move?from=0&go=stay", seen)
    assert read(client, "/done", seen).headers["Location"].endswith("/annotate")
    label_items(client, seen)
    page = read(client, "/annotate", seen).get_data(as_text=True)
    assert "Finish and continue" in page
    assert read(client, "/done", seen).headers["Location"].endswith("/study")  # the survey is still to come
    read(client, "/study", seen)
    assert not any("C1ABCDEF" in text for text in seen)
    post(client, "poststudy", comments="ok", satisfaction="4", honest="Yes")
    done = client.get("/done").get_data(as_text=True)
    assert "C1ABCDEF" in done and 'href="https://app.prolific.com/submissions/complete?cc=C1ABCDEF"' in done


def test_an_mturk_worker_gets_the_submit_form_only_once_every_page_is_done(study: Callable[..., Any]) -> None:
    client = study(phases=SURVEYS, training=None,
                   crowdsourcing={"provider": "mturk", "mturk": {"completion": {"code": "MT-CODE-1"}}})
    seen: list[str] = []
    read(client, "/?workerId=W1&assignmentId=A1&hitId=H1&turkSubmitTo=https%3A%2F%2Fwww.mturk.com", seen)
    post(client, "prestudy", native="Yes")
    read(client, "/annotate", seen)
    label_items(client, seen)
    read(client, "/annotate", seen)
    read(client, "/done", seen)
    read(client, "/study", seen)
    assert not any("MT-CODE-1" in text or "externalSubmit" in text for text in seen)
    post(client, "poststudy", comments="ok", satisfaction="4", honest="Yes")
    done = client.get("/done").get_data(as_text=True)
    assert 'name="completionCode" value="MT-CODE-1"' in done


def test_declining_or_failing_without_a_code_of_its_own_gets_no_code(study: Callable[..., Any]) -> None:
    only_a_code = {"crowdsourcing": {"provider": "prolific", "prolific": {"completion": {"code": "C1ABCDEF"}}},
                   "auto_redirect_on_completion": True}
    declined = study(**only_a_code)
    declined.get("/?PROLIFIC_PID=p1")
    post(declined, "consent", age_consent="I disagree")
    failed = study(**only_a_code)
    failed.get("/?PROLIFIC_PID=p2")
    post(failed, "consent", age_consent="I agree")
    post(failed, "instructions")
    for _ in range(3):
        post(failed, "training", sentiment="negative")  # out at the third mistake
    for client, ended in ((declined, "as your answers say it is not for you"),
                          (failed, "the training questions were not passed")):
        done = client.get("/done")
        html = done.get_data(as_text=True)
        assert done.status_code == 200 and ended in html
        assert "C1ABCDEF" not in html and "cc=" not in html and 'id="auto-redirect"' not in html
        assert "paste it in your crowdsourcing platform" not in html
        assert ("There is no completion code for this outcome, so do not submit the study as finished. Go back to "
                "Prolific and return your submission there (Stop without completing).") in html


def test_validate_warns_about_a_study_that_can_end_early_with_no_code_for_it(
        study: Callable[..., Any]) -> None:
    client = study(crowdsourcing={"provider": "prolific", "prolific": {"completion": {"code": "C1ABCDEF"}}})
    warnings = [w.message for w in checked(client.config_path).warnings]
    assert any(w.startswith("crowdsourcing.prolific.completion: names no screened_out_code") for w in warnings)
    assert any(w.startswith("crowdsourcing.prolific.completion: names no failed_code") for w in warnings)
    paid = study()  # STUDY names both
    assert not any("names no" in w.message for w in checked(paid.config_path).warnings)


def test_arriving_after_the_items_are_used_up_is_its_own_outcome(study: Callable[..., Any]) -> None:
    limits = {"phases": None, "training": None, "assignment_strategy": "fixed_order", "max_annotations_per_item": 1}
    for completion, code in (({"code": "C1ABCDEF"}, None), ({"code": "C1ABCDEF", "no_items_code": "C1NOWORK"},
                                                           "C1NOWORK")):
        first = study(crowdsourcing={"provider": "prolific", "prolific": {"completion": completion}}, **limits)
        first.get("/?PROLIFIC_PID=early")
        label_assigned(first)
        late = first.application.test_client()
        late.get("/?PROLIFIC_PID=late")
        assert "No items left for you" in late.get("/annotate").get_data(as_text=True)
        html = late.get("/done").get_data(as_text=True)
        assert "C1ABCDEF" not in html
        assert "There is no work left for you: every item already has all the annotators it needs." in html
        assert (code in html) if code else "no completion code for this outcome" in html
        progress = first.get("/admin/api/progress", headers={"X-API-Key": ADMIN_KEY}).get_json()
        assert {row["user"]: row["outcome"] for row in progress["annotators"]} == {"early": "completed",
                                                                                   "late": "no_items"}


def test_a_link_or_an_invite_is_the_only_way_into_a_crowd_study(study: Callable[..., Any]) -> None:
    expert = study(phases=None, training=None, crowdsourcing={"provider": "expert", "expert": {
        "invites": {"k3J9mQ2xLp8v": "expert-alice"}}})
    expert.get("/?invite=k3J9mQ2xLp8v")
    label_items(expert, [])
    expert.post("/logout")
    for sent in ({"data": {"name": "expert-alice"}}, {"json": {"name": "expert-alice"}},
                 {"data": {"name": "made-up"}}):
        refused = expert.post("/login", **sent)
        assert refused.status_code == 403
        assert "This study signs you in by your personal invite link, not by name." in refused.get_data(as_text=True)
        assert expert.get("/annotate").status_code == 302 and expert.get("/done").status_code == 302
        assert expert.get("/api/item/1").status_code == 401
    prolific = study(phases=None, training=None, **PROLIFIC_BASIC)
    refused = prolific.post("/login", json={"name": "p001"})
    assert refused.status_code == 403 and refused.get_json()["error"] == (
        "This study signs you in by the link from your crowdsourcing platform, not by name. Open the study from your "
        "crowdsourcing platform again.")


def test_a_second_arrival_with_a_workers_id_never_rewrites_their_payment_ids(study: Callable[..., Any]) -> None:
    victim = study(phases=None, training=None, crowdsourcing={"provider": "mturk", "mturk": {"completion": {
        "code": "MT-1"}}})
    victim.get("/?workerId=WVICTIM1&assignmentId=AVICTIM&hitId=H1&turkSubmitTo=https%3A%2F%2Fwww.mturk.com")
    label_items(victim, [])
    other = victim.application.test_client()
    other.get("/?workerId=WVICTIM1&assignmentId=AOTHER&hitId=H1&turkSubmitTo=https%3A%2F%2Fwww.mturk.com")
    html = other.get("/done").get_data(as_text=True)
    assert 'name="assignmentId" value="AVICTIM"' in html and "AOTHER" not in html
    victim.get("/?workerId=WVICTIM1")  # the same link typed again without its ids: not another claim
    lines = [json.loads(line) for line in victim.get("/admin/api/export", headers={"X-API-Key": ADMIN_KEY})
             .get_data(as_text=True).splitlines()]
    who = lines[0]["participant"]
    assert who["params"]["assignmentId"] == "AVICTIM"
    assert [a["params"]["assignmentId"] for a in who["later_arrivals"]] == ["AOTHER"]
    page = victim.get("/admin/", headers={"X-API-Key": ADMIN_KEY}).get_data(as_text=True)
    assert "arrived again with other ids" in page


def test_an_answer_from_a_stale_training_tab_is_refused_and_counts_nothing(study: Callable[..., Any]) -> None:
    client = study()
    client.get("/?PROLIFIC_PID=p5")
    post(client, "consent", age_consent="I agree")
    post(client, "instructions")
    post(client, "training", item="t1", sentiment="positive")  # tab 1 answers t1; tab 2 still shows t1
    stale = post(client, "training", item="t1", sentiment="positive")  # tab 2's answer: wrong for t2
    assert stale.status_code == 409
    html = stale.get_data(as_text=True)
    assert "That answer was for a training item that is no longer the current one" in html
    assert "It broke at once." in html  # the current item, shown again
    assert "Every wrong answer counts, a retry too. The study ends at wrong answer 3 in all (so far: 0)." in html
    assert post(client, "training", sentiment="positive").status_code == 302  # a real mistake is counted
    assert "(so far: 1)" in client.get("/study").get_data(as_text=True)


def test_every_participant_is_exported_with_how_their_session_ended(study: Callable[..., Any]) -> None:
    client = study()
    app = client.application
    done = app.test_client()
    up_to_the_items(done, "p-done", native="Yes")
    label_items(done, [])
    post(done, "poststudy", comments="ok", satisfaction="4", honest="Yes")
    done.get("/done")
    declined = app.test_client()
    declined.get("/?PROLIFIC_PID=p-declined&SESSION_ID=se9")
    post(declined, "consent", age_consent="I disagree")
    failed = app.test_client()
    failed.get("/?PROLIFIC_PID=p-failed")
    post(failed, "consent", age_consent="I agree")
    post(failed, "instructions")
    for _ in range(3):
        post(failed, "training", sentiment="negative")
    app.test_client().get("/?PROLIFIC_PID=p-started")
    out = CliRunner().invoke(cli, ["export", str(client.config_path), "--participants"])
    assert out.exit_code == 0, out.output
    rows = {row["user"]: row for row in map(json.loads, out.stdout.splitlines())}
    assert {user: row["outcome"] for user, row in rows.items()} == {
        "p-done": "completed", "p-declined": "screened_out", "p-failed": "failed", "p-started": "in_progress"}
    assert rows["p-declined"]["participant"]["session_id"] == "se9"
    assert [s["phase"] for s in rows["p-done"]["steps"]] == ["consent", "instructions", "training", "prestudy",
                                                             "poststudy"]
    assert rows["p-done"]["labelled"] == 2 and rows["p-done"]["finished_at"] is not None
    assert [(t["item"], t["correct"]) for t in rows["p-failed"]["training"]] == [("t1", False)] * 3
    assert rows["p-declined"]["steps"] == [{"phase": "consent", "state": "screened_out",
                                            "at": rows["p-declined"]["steps"][0]["at"]}]
    page = client.get("/admin/", headers={"X-API-Key": ADMIN_KEY}).get_data(as_text=True)
    assert 'data-outcome="screened_out">screened out' in page and 'data-outcome="failed">failed the training' in page


def test_the_done_page_of_a_session_without_an_arrival_record_is_no_error(study: Callable[..., Any]) -> None:
    """Issue 42: an expert study's /done for a session signed in by name (before the link became the
    only way in, say from before an upgrade) was a 500: the name was read as an invite token."""
    from potato.study.platforms import Outcome
    from potato.server.context import current_project
    from potato.server.study.crowd import hand_off_for

    client = study(phases=None, training=None, crowdsourcing={"provider": "expert", "expert": {
        "invites": {"k3J9mQ2xLp8v": "expert-alice"}}})
    with client.application.app_context():
        shown = hand_off_for(current_project(), "expert-bob", Outcome.COMPLETED)
    assert shown.code is None and "Payment is handled through your contract." in shown.message
