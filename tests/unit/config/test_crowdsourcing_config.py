"""Issue 36 (crowdsourcing): upstream's crowdsourcing examples validate as written, and a provider
block with a key missing or wrong is named with its fix (upstream logs a line and runs on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from potato.config import validate
from potato.config.upstream import TOP_LEVEL
from tests.harness.upstream import upstream

CONFIG = Path("/projects/panel/config.yaml")


def crowd(provider: str, block: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    raw = upstream(crowdsourcing={"provider": provider, **({provider: block} if block is not None else {})}, **extra)
    return raw


def errors(raw: dict[str, Any], path: Path = CONFIG) -> list[str]:
    return [i.message for i in validate(raw, path).errors]


def warnings(raw: dict[str, Any]) -> list[str]:
    return [i.message for i in validate(raw, CONFIG).warnings]


# Upstream's examples/crowdsourcing/* as written there (HEAD f5ed5d48), less the keys every example shares.
UPSTREAM_EXAMPLES: dict[str, dict[str, Any]] = {
    "prolific-basic": {"login": {"type": "url_direct", "url_argument": "PROLIFIC_PID"}, "completion_code": "C1ABCDEF",
                       "auto_redirect_on_completion": True, "auto_redirect_delay": 5000},
    "generic-panel": {"login": {"type": "url_direct", "url_argument": "response_id"},
                      "crowdsourcing": {"provider": "generic", "generic": {
                          "platform_label": "Example Panel", "id_param": "response_id", "capture_params": ["batch"],
                          "completion": {"code": "PANEL-COMPLETE-01",
                                         "redirect_url": "https://panel.example.com/complete?rid={worker_id}&code={code}"}}}},
    "connect-example": {"login": {"type": "url_direct", "url_argument": "participantId"},
                        "crowdsourcing": {"provider": "connect", "connect": {"completion": {"code": "CONNECT-CODE-01"}}}},
    "sona-example": {"login": {"type": "url_direct", "url_argument": "sona_code"},
                     "crowdsourcing": {"provider": "sona", "sona": {"hostname": "yourdept.sona-systems.com",
                                                                     "experiment_id": 123,
                                                                     "credit_token": "replace-with-your-credit-token"}}},
    "microworkers-example": {"login": {"type": "url_direct", "url_argument": "mw_id"},
                             "crowdsourcing": {"provider": "microworkers", "microworkers": {
                                 "vcode_secret": "replace-with-a-private-secret", "vcode_prefix": "mw-",
                                 "vcode_length": 12}}},
    "expert-invites-example": {"login": {"type": "url_direct", "url_argument": "invite"},
                               "crowdsourcing": {"provider": "expert", "expert": {
                                   "invites": {"demo-token-alice": "expert-alice", "demo-token-bob": "expert-bob"},
                                   "completion": {"message": "Thank you! Your work has been recorded. You can "
                                                             "invoice per your contract."}}}},
}


@pytest.mark.parametrize("name", sorted(UPSTREAM_EXAMPLES))
def test_upstreams_crowdsourcing_examples_validate(name: str) -> None:
    report = validate(upstream(hide_navbar=True, jumping_to_id_disabled=True, assignment_strategy="random",
                               max_annotations_per_user=5, num_annotators_per_item=3, **UPSTREAM_EXAMPLES[name]),
                      CONFIG)
    assert report.errors == [] and report.config is not None
    settings = report.config.crowdsourcing
    assert settings is not None and report.config.access.url_argument == settings.id_param
    assert "crowdsourcing" not in TOP_LEVEL and "auto_redirect_on_completion" not in TOP_LEVEL


def test_the_prolific_example_keeps_its_redirect_settings() -> None:
    config = validate(upstream(**UPSTREAM_EXAMPLES["prolific-basic"]), CONFIG).config
    assert config is not None and config.crowdsourcing is not None
    c = config.crowdsourcing
    assert (c.provider, c.id_param, c.code, c.auto_redirect, c.auto_redirect_delay_ms) == (
        "url_direct", "PROLIFIC_PID", "C1ABCDEF", True, 5000)


def test_the_example_vcode_secret_is_warned_about() -> None:
    found = warnings(upstream(**UPSTREAM_EXAMPLES["microworkers-example"]))
    assert any(w.startswith("crowdsourcing.microworkers.vcode_secret: is upstream's example text") for w in found)


def test_a_study_without_a_platform_has_none() -> None:
    config = validate(upstream(), CONFIG).config
    assert config is not None and config.crowdsourcing is None


def test_an_unknown_provider_is_named_with_the_valid_ones() -> None:
    assert errors(crowd("prolifc")) == [
        "crowdsourcing.provider: 'prolifc' is not a valid crowdsourcing provider (did you mean 'prolific'?); valid "
        "choices: generic, prolific, mturk, connect, sona, microworkers, clickworker, expert"]


def test_sona_without_its_credit_keys_names_each_and_where_to_find_it() -> None:
    found = errors(crowd("sona", {"hostname": "dept.sona-systems.com"}))
    assert found == [f"crowdsourcing.sona.{key}: missing: SONA grants credit through a link that needs it; copy it "
                     "from your SONA study's information page (its completion URL holds experiment_id and "
                     "credit_token)" for key in ("experiment_id", "credit_token")]
    assert errors(crowd("sona", {"hostname": "https://dept.sona-systems.com/", "experiment_id": 1,
                                 "credit_token": "t"}))[0].startswith(
        "crowdsourcing.sona.hostname: must be your SONA site's host name alone")


def test_microworkers_needs_its_secret() -> None:
    assert errors(crowd("microworkers", {"vcode_prefix": "mw-"})) == [
        "crowdsourcing.microworkers.vcode_secret: missing: each worker's VCODE is made from this private text; set "
        "vcode_secret: <a long random text> (keep it out of shared files)"]


def test_a_bad_key_in_a_provider_block_is_named_with_the_valid_ones() -> None:
    found = errors(crowd("connect", {"completion": {"cod": "X"}}))
    assert len(found) == 1 and found[0].startswith("crowdsourcing.connect.completion.cod: unknown key")
    assert "did you mean 'code'?" in found[0]


def test_a_platform_api_key_is_refused_by_what_it_does() -> None:
    found = errors(crowd("prolific", {"token": "secret", "completion": {"code": "C1"}}))
    assert found == ["crowdsourcing.prolific.token: belongs to Prolific's API (watching submissions, screening out by "
                     "API), which this server does not support; remove it (participants still arrive and get their "
                     "completion code)"]


def test_a_return_link_with_an_unknown_placeholder_is_refused() -> None:
    found = errors(crowd("generic", {"id_param": "rid", "completion": {
        "code": "C", "redirect_url": "https://panel.example.com/c?x={batch}"}}))
    assert found == ["crowdsourcing.generic.completion.redirect_url: has the placeholder {batch}; valid: {code}, "
                     "{worker_id}, {session_id}, {study_id}"]


def test_login_and_the_provider_must_agree_on_the_id_parameter() -> None:
    found = errors(crowd("generic", {"id_param": "rid", "completion": {"code": "C"}},
                         login={"type": "url_direct", "url_argument": "PROLIFIC_PID"}))
    assert found == ["login.url_argument: is 'PROLIFIC_PID' while crowdsourcing.generic.id_param is 'rid'; both name "
                     "the link's participant parameter, so make them the same (or remove login)"]
    assert errors(crowd("prolific", {"completion": {"code": "C"}}, login={"type": "password"}))[0].startswith(
        "login.type: is 'password', but a crowdsourcing study's participants arrive by the platform's link")


def test_a_paid_platform_without_a_completion_code_is_warned_about() -> None:
    found = warnings(crowd("prolific"))
    assert any(w.startswith("crowdsourcing.prolific.completion.code: is not set, so participants finish without a "
                            "completion code and Prolific cannot tell who finished") for w in found)


def test_expert_invites_come_from_the_config_or_a_file(tmp_path: Path) -> None:
    (tmp_path / "invites.txt").write_text("# one token per line\nk3J9mQ2xLp8v\n", encoding="utf-8")
    report = validate(crowd("expert", {"invites_file": "invites.txt"}), tmp_path / "config.yaml")
    assert report.errors == [] and report.config is not None and report.config.crowdsourcing is not None
    (name,) = report.config.crowdsourcing.own.invites.values()
    assert name.startswith("expert-") and "k3J9mQ2xLp8v" not in name  # a token is never a name on every page
    missing = errors(crowd("expert", {"invites_file": "nope.yaml"}), tmp_path / "config.yaml")
    assert len(missing) == 1 and missing[0].startswith(f"crowdsourcing.expert.invites_file: cannot read "
                                                       f"{tmp_path / 'nope.yaml'}")
    short = errors(crowd("expert", {"invites": {"abc": "ana"}}))
    assert short == ["crowdsourcing.expert.invites: invite 1's token is shorter than 8 characters, too short to be "
                     "secret; give each expert at least 8 random characters"]
    assert "abc" not in short[0].split(":", 1)[1]


def test_auto_redirect_without_a_platform_is_ignored_with_a_warning() -> None:
    found = warnings(upstream(auto_redirect_on_completion=True))
    assert "auto_redirect_on_completion: applies to participants who arrive by a platform's link (login: {type: " \
           "url_direct}, or a crowdsourcing block); it is ignored" in found
    assert errors(upstream(login={"type": "url_direct"}, auto_redirect_delay=-1)) == [
        "auto_redirect_delay: must be a whole number from 0 to 600000, got -1"]
