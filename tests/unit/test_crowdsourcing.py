"""Issue 36 (crowdsourcing): each platform's link parameters and hand-off, as upstream names them (pure)."""

from __future__ import annotations

import pytest

from potato.study.platforms import (PREVIEW_ASSIGNMENT, Arrival, ArrivalRefused, Crowdsourcing, ExpertSettings,
                                    MicroworkersSettings, Outcome, SonaSettings, arrival,
                                    fill_url, hand_off, is_preview, mturk_submit_url, template_problem, vcode)


def test_the_microworkers_vcode_is_an_hmac_of_worker_and_campaign() -> None:
    assert vcode("s3cret", "w1", "c1", "mw-") == "mw-2e1600f3d15b"
    assert vcode("s3cret", "w1", "c1", "mw-", length=20).startswith("mw-2e1600f3d15b")
    assert vcode("s3cret", "w2", "c1", "mw-") != "mw-2e1600f3d15b"
    settings = Crowdsourcing(provider="microworkers", id_param="mw_id",
                             own=MicroworkersSettings(vcode_secret="s3cret", vcode_prefix="mw-"))
    who = arrival(settings, {"mw_id": "w1", "campaign_id": "c1", "slot_id": "s9"})
    assert (who.worker_id, who.study_id, who.session_id) == ("w1", "c1", "s9")
    shown = hand_off(settings, who)
    assert shown.code == "mw-2e1600f3d15b"
    assert shown.message == "Paste this VCODE into the Microworkers task window to submit your work."


def test_prolific_arrival_keeps_the_session_and_study_and_returns_with_the_code() -> None:
    settings = Crowdsourcing(provider="prolific", id_param="PROLIFIC_PID", code="C1ABCDEF", auto_redirect=True,
                             auto_redirect_delay_ms=3000)
    who = arrival(settings, {"PROLIFIC_PID": "60a1", "SESSION_ID": "s1", "STUDY_ID": "st1", "other": "x"})
    assert who == Arrival("60a1", "s1", "st1", {"SESSION_ID": "s1", "STUDY_ID": "st1"})
    shown = hand_off(settings, who)
    assert shown.return_url == "https://app.prolific.com/submissions/complete?cc=C1ABCDEF"
    assert shown.button == "Return to Prolific" and shown.code == "C1ABCDEF"
    assert shown.auto_redirect and shown.delay_ms == 3000


def test_a_url_direct_study_on_prolific_pid_returns_to_prolific_as_upstream_does() -> None:
    settings = Crowdsourcing(provider="url_direct", id_param="PROLIFIC_PID", code="C0DE")
    shown = hand_off(settings, arrival(settings, {"PROLIFIC_PID": "p1"}))
    assert shown.return_url == "https://app.prolific.com/submissions/complete?cc=C0DE"
    other = Crowdsourcing(provider="url_direct", id_param="worker", code="C0DE")
    plain = hand_off(other, arrival(other, {"worker": "p1"}))
    assert plain.code == "C0DE" and plain.return_url is None and plain.button is None


def test_a_missing_id_parameter_is_named_with_where_to_come_from() -> None:
    settings = Crowdsourcing(provider="connect", id_param="participantId")
    with pytest.raises(ArrivalRefused) as refused:
        arrival(settings, {"PROLIFIC_PID": "p1"})
    assert str(refused.value) == ("Missing required URL parameter: participantId. Please access this page through "
                                  "your crowdsourcing platform.")


def test_a_generic_panel_fills_its_return_link_with_encoded_values() -> None:
    settings = Crowdsourcing(provider="generic", id_param="response_id", capture_params=("batch",), code="P-1",
                             redirect_url="https://panel.example.com/complete?rid={worker_id}&code={code}&b={batch}"
                                          "&s={session_id}")
    who = arrival(settings, {"response_id": "a&admin=1", "batch": "b 1#x"})
    shown = hand_off(settings, who)
    assert shown.return_url == ("https://panel.example.com/complete?rid=a%26admin%3D1&code=P-1&b=b%201%23x&s=")
    assert shown.button == "Return to your crowdsourcing platform"
    labelled = Crowdsourcing(provider="generic", id_param="rid", code="P-1", platform_label="Example Panel",
                             redirect_url="https://panel.example.com/c?code={code}")
    assert hand_off(labelled, arrival(labelled, {"rid": "r"})).button == "Return to Example Panel"


@pytest.mark.parametrize("template, problem", [
    ("https://panel.example.com/c?code={code}", None),
    ("https://panel.example.com/done", None),
    ("https://panel.example.com/c?a={nope}", "has the placeholder {nope}; valid: {code}, {worker_id}, {session_id}, "
                                            "{study_id}, {batch}"),
    ("https://panel.example.com/c?a={code!r}", "writes {code} with a format; write the plain {code}"),
    ("{code}", "must start with a fixed https:// address"),
    ("https://panel.example.com{code}", "must start with a fixed https:// address"),
    ("https://{batch}.example.com/c", "must start with a fixed https:// address"),
    ("javascript:alert(1)//{code}", "must start with a fixed https:// address"),
    ("http://panel.example.com/c?code={code}", "must start with a fixed https:// address"),
    ("http://127.0.0.1:8080/c?code={code}", None),  # a panel on this machine (a test) may be plain http
    ("https://panel.example.com@evil.example/c?code={code}", "must start with a fixed https:// address"),
    ("https://evil.example\\@panel.example.com/c?code={code}", "holds a backslash"),
    ("https://panel.example.com/c?code={code}&x=a b", "holds a backslash, a space"),
    ("https://panel.example.com/c?a={code", "is not a link template"),
])
def test_a_return_link_cannot_let_the_arriving_link_choose_where_it_goes(template: str, problem: str | None) -> None:
    found = template_problem(template, ("batch",))
    assert found == problem if problem is None else found is not None and found.startswith(problem)


def test_fill_url_leaves_an_absent_value_empty() -> None:
    assert fill_url("https://x.example/c?s={study_id}&c={code}", Arrival("w"), None) == "https://x.example/c?s=&c="


def test_mturk_posts_back_only_to_mturk_itself() -> None:
    settings = Crowdsourcing(provider="mturk", id_param="workerId", code="MT-1")
    who = arrival(settings, {"workerId": "W1", "assignmentId": "A1", "hitId": "H1",
                             "turkSubmitTo": "https://workersandbox.mturk.com"})
    assert (who.session_id, who.study_id) == ("A1", "H1")
    shown = hand_off(settings, who)
    assert shown.form_action == "https://workersandbox.mturk.com/mturk/externalSubmit"
    assert shown.form_fields == (("assignmentId", "A1"), ("completionCode", "MT-1"))
    assert shown.button == "Submit HIT to MTurk"
    for hostile in ("https://evil.example", "http://www.mturk.com", "https://www.mturk.com.evil.example",
                    "https://www.mturk.com:8443", "javascript:alert(1)"):
        assert mturk_submit_url(hostile) is None, hostile
        forged = hand_off(settings, arrival(settings, {"workerId": "W1", "assignmentId": "A1",
                                                       "turkSubmitTo": hostile}))
        assert forged.form_action is None and forged.code == "MT-1"  # the code is still shown to copy


def test_an_mturk_preview_starts_nothing() -> None:
    assert is_preview(Crowdsourcing(provider="mturk", id_param="workerId"), {"assignmentId": PREVIEW_ASSIGNMENT})
    assert is_preview(Crowdsourcing(provider="url_direct"), {"assignmentId": PREVIEW_ASSIGNMENT})
    assert not is_preview(Crowdsourcing(provider="prolific"), {"assignmentId": PREVIEW_ASSIGNMENT})
    assert not is_preview(Crowdsourcing(provider="mturk", id_param="workerId"), {"assignmentId": "A1"})


def test_sona_hands_off_through_its_credit_link() -> None:
    settings = Crowdsourcing(provider="sona", id_param="sona_code", own=SonaSettings("dept.sona-systems.com",
                             "123", "tok&en"))
    shown = hand_off(settings, arrival(settings, {"sona_code": "AB 12"}))
    assert shown.return_url == ("https://dept.sona-systems.com/webstudy_credit.aspx?experiment_id=123"
                                "&credit_token=tok%26en&survey_code=AB%2012")
    assert shown.code is None and shown.button == "Return to SONA"


def test_an_expert_invite_names_the_expert_and_an_unknown_one_is_refused() -> None:
    settings = Crowdsourcing(provider="expert", id_param="invite",
                             own=ExpertSettings({"k3J9mQ2xLp8v": "med-expert-1"}))
    who = arrival(settings, {"invite": "k3J9mQ2xLp8v"})
    assert who.worker_id == "med-expert-1" and "k3J9mQ2xLp8v" not in str(who)
    with pytest.raises(ArrivalRefused, match="This invite link is not valid"):
        arrival(settings, {"invite": "forged-token"})
    shown = hand_off(settings, who)
    assert shown.code is None
    assert shown.message == "Thank you! Your work has been recorded. Payment is handled through your contract."


def test_a_failure_and_a_screen_out_get_their_own_codes() -> None:
    settings = Crowdsourcing(provider="prolific", code="OK1", failed_code="FAIL1", screened_out_code="SCR1")
    who = Arrival("p1")
    assert hand_off(settings, who, Outcome.FAILED).code == "FAIL1"
    assert hand_off(settings, who, Outcome.SCREENED_OUT).code == "SCR1"
    fallback = Crowdsourcing(provider="prolific", code="OK1", failed_code="FAIL1")
    assert hand_off(fallback, who, Outcome.SCREENED_OUT).code == "FAIL1"
    # Issue 42: a study with no code for how it ended never hands out the completion code instead.
    for outcome in (Outcome.FAILED, Outcome.SCREENED_OUT, Outcome.NO_ITEMS):
        none = hand_off(Crowdsourcing(provider="prolific", code="OK1", auto_redirect=True), who, outcome)
        assert (none.code, none.return_url, none.form_action, none.auto_redirect) == (None, None, None, False)
        assert none.message == ("There is no completion code for this outcome, so do not submit the study as "
                                "finished. Go back to Prolific and return your submission there (Stop without "
                                "completing).")
    assert hand_off(Crowdsourcing(provider="prolific", code="OK1", no_items_code="NONE1"), who,
                    Outcome.NO_ITEMS).return_url == "https://app.prolific.com/submissions/complete?cc=NONE1"


def test_what_pays_on_each_platform_is_given_only_for_finished_work() -> None:
    """Issue 42: the SONA credit link, the Microworkers VCODE and MTurk's submit form pay by themselves."""
    sona = Crowdsourcing(provider="sona", id_param="sona_code", own=SonaSettings("x.sona-systems.com",
                         "1", "t"))
    assert hand_off(sona, Arrival("s1"), Outcome.COMPLETED).return_url
    refused = hand_off(sona, Arrival("s1"), Outcome.SCREENED_OUT)
    assert refused.return_url is None and "No SONA credit is granted for it" in refused.message
    mw = Crowdsourcing(provider="microworkers", id_param="mw_id", own=MicroworkersSettings(vcode_secret="s3cret"))
    assert hand_off(mw, Arrival("w1", study_id="c1"), Outcome.COMPLETED).code
    assert hand_off(mw, Arrival("w1", study_id="c1"), Outcome.FAILED).code is None
    mturk = Crowdsourcing(provider="mturk", id_param="workerId", code="MT-1")
    worker = Arrival("W1", params={"assignmentId": "A1", "turkSubmitTo": "https://www.mturk.com"})
    assert hand_off(mturk, worker, Outcome.COMPLETED).form_action
    failed = hand_off(mturk, worker, Outcome.FAILED)
    assert failed.form_action is None and failed.message.endswith("Go back to MTurk and return the HIT there.")


def test_a_microworkers_study_bound_to_its_campaign_refuses_a_link_for_another() -> None:
    """Issue 42: the VCODE was made from the link's campaign_id, so a worker could buy another campaign's."""
    settings = Crowdsourcing(provider="microworkers", id_param="mw_id",
                             own=MicroworkersSettings(vcode_secret="s3cret", vcode_prefix="mw-", campaign_id="c1"))
    with pytest.raises(ArrivalRefused, match="another Microworkers campaign"):
        arrival(settings, {"mw_id": "w1", "campaign_id": "c2"})
    who = arrival(settings, {"mw_id": "w1"})  # a link without the campaign: the configured one counts
    assert hand_off(settings, who).code == vcode("s3cret", "w1", "c1", "mw-") == "mw-2e1600f3d15b"
