"""Issue 24 (push to the Hugging Face Hub) in a real browser at a phone's width: the run's panel offers
the push with the repository name filled in, shows its progress and then the repository's link; a run
whose model stayed on the training machine shows why instead of the form. The server reads its token
from ``model_training.hub.token_file`` and talks to a stand-in Hub on loopback (``HF_ENDPOINT``)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Callable, Iterator, Tuple

import pytest
import requests

from tests.harness import agents
from tests.conftest import ADMIN_KEY
from tests.harness.pages import open_page
from tests.harness.hubpush import agent_run_with_model_left_on_host
from tests.harness.hubstandin import USER, HubStandIn
from tests.harness.runs import label_all, start, wait
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HEADERS = {"X-API-Key": ADMIN_KEY}


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[Tuple[ServerProcess, HubStandIn, str, str, str]]:
    """(server, stand-in Hub, token, a pushable run, a run whose model stayed on lab-pc)."""
    token = "hf_" + secrets.token_urlsafe(24)
    config_path = make_project(model_training={"enabled": True, "backends": {"lab": {"type": "agent"}},
                                               "hub": {"token_file": "hf_token"}})
    token_file = config_path.parent / "hf_token"
    token_file.write_text(token + "\n", encoding="utf-8")
    token_file.chmod(0o600)
    backend_token = agents.register(config_path, "lab")[1]
    with HubStandIn(token) as hub:
        srv = ServerProcess(config_path, env={"HF_ENDPOINT": hub.url, "HF_HOME": str(config_path.parent / "hf")})
        srv.start()
        try:
            label_all(srv, 30)
            run = wait(srv, start(srv, trainer="sklearn-text-classification", schemas=["sentiment"],
                                  backend="local")["id"], {"succeeded", "failed", "cancelled"})
            assert run["state"] == "succeeded", (run["reason"], run["message"], run.get("log_tail"))
            stayed = agent_run_with_model_left_on_host(srv.url, backend_token)
            yield srv, hub, token, run["id"], stayed
        finally:
            srv.stop()


def fits(page: Any, width: int) -> None:
    """Nothing sticks out sideways (each element that does is named)."""
    wide = page.evaluate(f"""() => Array.from(document.querySelectorAll('body *'))
        .filter(el => el.getBoundingClientRect().right > {width} && el.getClientRects().length
                      && !el.closest('.table-scroll'))
        .map(el => el.tagName + '#' + el.id + '.' + el.className + ' ' + Math.round(el.getBoundingClientRect().right))""")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width, wide


def test_pushing_from_the_page_at_390_px(server: Tuple[ServerProcess, HubStandIn, str, str, str], page: Any,
                                         tmp_path: Path) -> None:
    srv, hub, token, run_id, stayed = server
    page.set_viewport_size({"width": 390, "height": 844})
    # The configured token file missing: the button is off and says so (a push could only fail).
    token_file = srv.config_path.parent / "hf_token"
    token_file.rename(token_file.with_suffix(".away"))
    try:
        open_page(page, f"{srv.url}/admin/training/#run={run_id}")
        page.wait_for_selector("#push-form:not([hidden])")
        assert page.is_disabled("#push-start")
        assert page.inner_text("#push-token").startswith(f"The token file {token_file} "
                                                         "(model_training.hub.token_file) cannot be read")
    finally:
        token_file.with_suffix(".away").rename(token_file)
    open_page(page, f"{srv.url}/admin/training/#run={run_id}")  # written back: it counts at once
    page.wait_for_selector("#push-form:not([hidden])")
    page.wait_for_selector("#push-start:not([disabled])")
    assert page.input_value("#push-repo") == "review-sentiment-sklearn-text-classification"
    where = page.inner_text("#run-backend")  # from the run's record of its model files (issue 35)
    assert where.startswith("local · model files: 2 files, ") and where.endswith(" MB on this server"), where
    assert page.is_checked("#push-private")
    assert page.input_value("#push-message") == f"Upload the sklearn-text-classification model of Potato run {run_id}"
    assert "model_training.hub.token_file" in page.inner_text("#push-token")
    assert token not in page.content()
    fits(page, 390)
    box = page.eval_on_selector("#push-start", "el => el.getBoundingClientRect().right")
    assert box <= 390
    page.screenshot(path=str(tmp_path / "push-form-390.png"), full_page=True)

    page.fill("#push-repo", "sentiment-from-page")
    page.fill("#push-message", "Pushed from the training page")
    hub.commit_delay_s = 1.5  # long enough to see the push under way
    page.click("#push-start")
    page.wait_for_selector("#push-status:has-text('Pushing')")
    assert page.is_disabled("#push-start")
    page.wait_for_selector("#push-done:not([hidden])", timeout=60_000)
    link = page.locator("#push-link")
    assert link.get_attribute("href") == f"{hub.url}/{USER}/sentiment-from-page"
    assert link.inner_text() == f"{USER}/sentiment-from-page"
    assert page.inner_text("#push-error") == ""
    assert not page.is_disabled("#push-start")
    fits(page, 390)
    page.screenshot(path=str(tmp_path / "push-done-390.png"), full_page=True)
    page.locator("#push").screenshot(path=str(tmp_path / "push-section-done-390.png"))
    commit = hub.repos[f"{USER}/sentiment-from-page"].commits[0]
    assert commit.summary == "Pushed from the training page"
    assert {"model.pkl", "labels.json", "README.md"} == set(commit.files)
    assert token not in page.content()

    # A run whose model stayed on the agent's machine: the reason, no form.
    open_page(page, f"{srv.url}/admin/training/#run={stayed}")
    page.wait_for_selector("#push-blocked:not([hidden])")
    assert page.is_hidden("#push-form")
    reason = page.inner_text("#push-blocked")
    assert reason.startswith("The model stayed on lab-pc at /home/me/.cache/potato-training/jobs/")
    where = page.inner_text("#run-backend")
    assert f"model files: on lab-pc at /home/me/.cache/potato-training/jobs/{stayed}/artifacts (agent)" in where, where
    fits(page, 390)
    page.screenshot(path=str(tmp_path / "push-blocked-390.png"), full_page=True)
    page.locator("#push").screenshot(path=str(tmp_path / "push-section-blocked-390.png"))


def test_without_a_token_the_push_button_is_off_with_the_reason_beside_it(
        make_project: Callable[..., Path], page: Any, tmp_path: Path) -> None:
    """Issue 33 item 12: with no token set up the panel offered an enabled button (the push could only
    fail), and its words ("then restart the server") contradicted training.md ("read when a push starts").
    Now the button is off, the reason beside it says what to do, and it agrees with the server's refusal:
    setting up a token takes a restart; a token written to a known token file does not."""
    srv = ServerProcess(make_project(model_training={"enabled": True}), env={"HF_TOKEN": ""}).start()
    try:
        label_all(srv, 30)
        run = wait(srv, start(srv, trainer="sklearn-text-classification", schemas=["sentiment"],
                              backend="local")["id"], {"succeeded", "failed", "cancelled"})
        assert run["state"] == "succeeded", (run["reason"], run["message"], run.get("log_tail"))
        page.set_viewport_size({"width": 390, "height": 844})
        open_page(page, f"{srv.url}/admin/training/#run={run['id']}")
        page.wait_for_selector("#push-form:not([hidden])")
        assert page.is_disabled("#push-start")
        reason = page.inner_text("#push-token")
        assert page.is_visible("#push-token") and reason.startswith("No Hugging Face token is set up")
        assert "model_training.hub.token_file and restart the server" in reason
        assert "HF_TOKEN in the server's environment and restart it" in reason
        assert page.get_attribute("#push-start", "aria-describedby") == "push-token"
        fits(page, 390)
        page.locator("#push").screenshot(path=str(tmp_path / "push-no-token-390.png"))
        refused = requests.post(f"{srv.url}/admin/training/api/runs/{run['id']}/push", headers=HEADERS, json={})
        assert refused.status_code == 409 and "then restart the server" in refused.json()["error"]
    finally:
        srv.stop()
