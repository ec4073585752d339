"""Issue 36 (crowdsourcing): a participant arrives by the platform's link, their ids are stored and
exported with their labels, and the done page hands them back with their code."""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from potato.cli import cli
from tests.conftest import ADMIN_KEY

PROLIFIC = {"crowdsourcing": {"provider": "prolific", "prolific": {"completion": {"code": "C1ABCDEF"}}},
            "auto_redirect_on_completion": True, "auto_redirect_delay": 2000}


@pytest.fixture
def study(make_client: Callable[..., Any]) -> Callable[..., Any]:
    return make_client


def label_all(client: Any) -> None:
    for item in ("r000", "r001"):
        answer = client.post("/api/label", json={"id": item, "labels": {"sentiment": "positive"}, "go": "stay"})
        assert answer.status_code == 200, answer.get_json()


def test_a_prolific_participant_arrives_labels_and_is_handed_back(study: Callable[..., Any]) -> None:
    client = study(**PROLIFIC)
    arrived = client.get("/?PROLIFIC_PID=60a1b2&STUDY_ID=st1&SESSION_ID=se1")
    assert arrived.status_code == 302 and arrived.headers["Location"].endswith("/annotate")
    assert client.get("/done").headers["Location"].endswith("/annotate")  # no code before the work is done
    page = client.get("/annotate").get_data(as_text=True)
    assert "Finish and return to Prolific" in page
    label_all(client)
    done = client.get("/done")
    html = done.get_data(as_text=True)
    assert done.status_code == 200
    assert "Thank You!" in html and "You have completed the annotation task and your responses are saved." in html
    assert 'id="completion-code"' in html and "C1ABCDEF" in html
    assert 'href="https://app.prolific.com/submissions/complete?cc=C1ABCDEF"' in html and "Return to Prolific" in html
    assert 'data-delay-ms="2000"' in html
    assert "<script>" not in html  # the copy button and the redirect are /static/done.js (the CSP allows no other)


def test_the_participants_ids_are_exported_with_their_labels(study: Callable[..., Any]) -> None:
    client = study(**PROLIFIC, export_annotation_format=["csv"])
    client.get("/?PROLIFIC_PID=60a1b2&STUDY_ID=st1&SESSION_ID=se1")
    label_all(client)
    client.get("/done")
    client.post("/logout")
    # Labels from outside the platform (imported by the admin) have no participant record.
    walk_in = client.config_path.parent / "walk-in.jsonl"
    walk_in.write_text('{"id": "r000", "schema": "sentiment", "label": "negative"}\n', encoding="utf-8")
    imported = CliRunner().invoke(cli, ["import-labels", str(client.config_path), str(walk_in), "--user", "walk-in"])
    assert imported.exit_code == 0, imported.output
    lines = [json.loads(line) for line in client.get("/admin/api/export", headers={"X-API-Key": ADMIN_KEY})
             .get_data(as_text=True).splitlines()]
    mine = [line for line in lines if line["user"] == "60a1b2"]
    assert len(mine) == 2
    who = mine[0]["participant"]
    assert (who["platform"], who["id"], who["session_id"], who["study_id"], who["outcome"]) == (
        "prolific", "60a1b2", "se1", "st1", "completed")
    assert all("participant" not in line for line in lines if line["user"] == "walk-in")
    out = CliRunner().invoke(cli, ["export", str(client.config_path)])
    assert out.exit_code == 0, out.output
    exported = [json.loads(line) for line in out.stdout.splitlines()]
    assert [line["participant"]["session_id"] for line in exported if line["user"] == "60a1b2"] == ["se1", "se1"]
    folder = client.config_path.parent / "up"
    done = CliRunner().invoke(cli, ["export", str(client.config_path), "--upstream-format", "csv", "-o", str(folder)])
    assert done.exit_code == 0, done.output
    header, *rows = (folder / "annotations.csv").read_text(encoding="utf-8").splitlines()
    assert header.startswith("instance_id,user_id,participant.platform,participant.id,participant.session_id,"
                             "participant.study_id,sentiment.")
    assert "r000,60a1b2,prolific,60a1b2,se1,st1,positive," in rows and "r000,walk-in,,,,,,negative" in rows
    # The file reads back: the ids are not taken for a scheme named "participant".
    back = CliRunner().invoke(cli, ["import-labels", str(client.config_path), str(folder / "annotations.csv"),
                                    "--user", "copy"])
    assert back.exit_code == 0, back.output


def test_a_link_without_the_id_parameter_says_where_to_come_from(study: Callable[..., Any]) -> None:
    client = study(**PROLIFIC)
    refused = client.get("/?STUDY_ID=st1")
    assert refused.status_code == 400
    assert ("Missing required URL parameter: PROLIFIC_PID. Please access this page through your crowdsourcing "
            "platform.") in refused.get_data(as_text=True)
    assert client.get("/annotate").status_code == 302  # nobody was signed in


def test_an_expert_invite_signs_in_under_the_experts_name_and_a_forged_one_is_refused(
        study: Callable[..., Any]) -> None:
    client = study(crowdsourcing={"provider": "expert", "expert": {"invites": {"k3J9mQ2xLp8v": "med-expert-1"}}})
    forged = client.get("/?invite=forged-token-1")
    assert forged.status_code == 403 and "This invite link is not valid." in forged.get_data(as_text=True)
    assert client.get("/?invite=k3J9mQ2xLp8v").status_code == 302
    assert "med-expert-1" in client.get("/annotate").get_data(as_text=True)
    label_all(client)
    html = client.get("/done").get_data(as_text=True)
    assert "Payment is handled through your contract." in html and 'id="completion-code"' not in html
    db = (client.config_path.parent / "annotation_output").glob("*.db*")
    assert not any(b"k3J9mQ2xLp8v" in path.read_bytes() for path in db)  # the token is a credential, kept nowhere


def test_microworkers_shows_each_worker_their_vcode(study: Callable[..., Any]) -> None:
    client = study(crowdsourcing={"provider": "microworkers", "microworkers": {"vcode_secret": "s3cret",
                                                                               "vcode_prefix": "mw-"}})
    client.get("/?mw_id=w1&campaign_id=c1&slot_id=s1")
    label_all(client)
    html = client.get("/done").get_data(as_text=True)
    assert "mw-2e1600f3d15b" in html and "Paste this VCODE into the Microworkers task window" in html


def test_mturk_previews_then_posts_back_to_mturk_from_its_frame(study: Callable[..., Any]) -> None:
    client = study(crowdsourcing={"provider": "mturk", "mturk": {"completion": {"code": "MT-1"}}})
    preview = client.get("/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1")
    assert preview.status_code == 200 and "Accept the HIT to start" in preview.get_data(as_text=True)
    assert client.get("/annotate").status_code == 302  # a preview signs nobody in
    policy = preview.headers["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://www.mturk.com https://workersandbox.mturk.com" in policy
    assert "X-Frame-Options" not in preview.headers
    client.get("/?workerId=W1&assignmentId=A1&hitId=H1&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com")
    label_all(client)
    done = client.get("/done")
    html = done.get_data(as_text=True)
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in html
    assert 'name="assignmentId" value="A1"' in html and 'name="completionCode" value="MT-1"' in html
    assert "form-action 'self' https://www.mturk.com https://workersandbox.mturk.com" in \
        done.headers["Content-Security-Policy"]


def test_a_framed_studys_cookie_crosses_sites_only_over_https(study: Callable[..., Any]) -> None:
    client = study(crowdsourcing={"provider": "mturk", "mturk": {"completion": {"code": "MT-1"}}})
    secure = client.get("/?workerId=W1&assignmentId=A1", base_url="https://study.example")
    cookie = secure.headers["Set-Cookie"]
    assert "SameSite=None" in cookie and "Secure" in cookie and "Partitioned" in cookie
    plain = study(**PROLIFIC).get("/?PROLIFIC_PID=p1")
    assert "SameSite=Lax" in plain.headers["Set-Cookie"]
    assert plain.headers["X-Frame-Options"] == "SAMEORIGIN"
    assert "frame-ancestors 'self';" in plain.headers["Content-Security-Policy"] or \
        plain.headers["Content-Security-Policy"].endswith("frame-ancestors 'self'")


def test_a_generic_panel_return_link_carries_the_captured_parameters(study: Callable[..., Any]) -> None:
    client = study(crowdsourcing={"provider": "generic", "generic": {
        "id_param": "response_id", "capture_params": ["batch"], "platform_label": "Example Panel",
        "completion": {"code": "PANEL-1", "redirect_url": "https://panel.example.com/c?rid={worker_id}&b={batch}"
                                                          "&code={code}"}}})
    client.get("/?response_id=r-9&batch=b%261")
    label_all(client)
    html = client.get("/done").get_data(as_text=True)
    assert 'href="https://panel.example.com/c?rid=r-9&amp;b=b%261&amp;code=PANEL-1"' in html
    assert "Return to Example Panel" in html


def test_a_returning_participant_keeps_their_first_arrival(study: Callable[..., Any]) -> None:
    client = study(**PROLIFIC)
    client.get("/?PROLIFIC_PID=p1&SESSION_ID=se1&STUDY_ID=st1")
    client.get("/?PROLIFIC_PID=p1")  # the same link without its ids, e.g. typed again
    assert client.get("/").headers["Location"].endswith("/annotate")  # signed in: no missing-parameter page
    label_all(client)
    lines = client.get("/admin/api/export", headers={"X-API-Key": ADMIN_KEY}).get_data(as_text=True).splitlines()
    who = json.loads(lines[0])["participant"]
    assert (who["session_id"], who["study_id"]) == ("se1", "st1")
