"""Issue 43 (item 2): a new crowdsourcing platform is one module and its settings, as a backend is.
This test is that module: it registers a toy platform from here alone; a config names it and its
own keys are checked; a participant arrives by its link, labels, and gets its own hand-off on the
done page, and the export records where they came from, as on a built-in platform."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Optional

import pytest
from click.testing import CliRunner

from potato.cli import cli
from potato.config import load_report
from potato.config._checks import text
from potato.config.study import crowdsourcing as config_side
from potato.config.study.crowdsourcing import PlatformKind, register_platform
from potato.study import platforms
from potato.study.platforms import Arrival, ArrivalRefused, Crowdsourcing, HandOff, Outcome, Platform


@dataclass(frozen=True)
class BoardSettings:
    """The toy board's own key: the salt its receipts are made with."""

    salt: str


class Board(Platform):
    """A toy job board: its participants arrive as ``?board_id=...&shift=...``, only on the day shift,
    and are handed a receipt made from their id instead of the study's code."""

    name, label, id_param, session_param = "toyboard", "Toy Board", "board_id", "shift"
    returning = "Go back to the Toy Board and drop the job there."
    expects_code = True

    def check_link(self, settings: Crowdsourcing, params: Mapping[str, str]) -> None:
        if params.get("shift") != "day":
            raise ArrivalRefused("The Toy Board's jobs run on the day shift only.")

    def own_hand_off(self, settings: Crowdsourcing, who: Arrival, outcome: Outcome,
                     code: Optional[str]) -> Optional[HandOff]:
        if outcome is not Outcome.COMPLETED:
            return None
        receipt = hashlib.sha256(f"{settings.own.salt}:{who.worker_id}".encode()).hexdigest()[:10]
        return HandOff(code=f"TB-{receipt}", message="Paste the receipt into the Toy Board.", label=settings.label)


def board_settings(values: Mapping[str, Any], base: Any, at: str, findings: Any) -> BoardSettings | None:
    if not values.get("salt"):
        findings.error(f"{at}.salt", "missing: the receipts are made with it; set salt: <a private text>")
        return None
    return BoardSettings(values["salt"])


@pytest.fixture
def board() -> Iterator[None]:
    register_platform(Board(), PlatformKind("toyboard", {"salt": text()}, board_settings))
    yield
    platforms.PLATFORMS.pop("toyboard")
    config_side.PLATFORM_KINDS.pop("toyboard")


BOARD = {"crowdsourcing": {"provider": "toyboard", "toyboard": {"salt": "pepper", "completion": {"code": "C1"}}}}


def test_a_config_names_the_toy_platform_and_its_keys_are_checked(board: None, make_project: Callable[..., Any]) -> None:
    report = load_report(make_project(**BOARD))
    assert report.errors == [] and report.config is not None and report.config.crowdsourcing is not None
    assert report.config.crowdsourcing.own == BoardSettings("pepper")
    bad = load_report(make_project(crowdsourcing={"provider": "toyboard", "toyboard": {"sugar": "x"}}))
    messages = [issue.message for issue in bad.errors]
    assert any(m.startswith("crowdsourcing.toyboard.sugar: unknown key") for m in messages), messages
    assert any(m.startswith("crowdsourcing.toyboard.salt: missing") for m in
               [issue.message for issue in load_report(make_project(crowdsourcing={"provider": "toyboard"})).errors])


def test_a_participant_goes_through_the_toy_platform(board: None, make_client: Callable[..., Any]) -> None:
    client = make_client(**BOARD)
    refused = client.get("/?board_id=w1&shift=night")
    assert refused.status_code == 400 and "day shift only" in refused.get_data(as_text=True)
    assert client.post("/login", data={"name": "w1"}).status_code == 403  # by the board's link only
    arrived = client.get("/?board_id=w1&shift=day")
    assert arrived.status_code == 302 and arrived.headers["Location"].endswith("/annotate")
    assert client.get("/done").headers["Location"].endswith("/annotate")  # no receipt before the work is done
    for item in ("r000", "r001"):
        assert client.post("/api/label", json={"id": item, "labels": {"sentiment": "positive"}}).status_code == 200
    html = client.get("/done").get_data(as_text=True)
    receipt = "TB-" + hashlib.sha256(b"pepper:w1").hexdigest()[:10]
    assert receipt in html and "Paste the receipt into the Toy Board." in html and "C1" not in html
    out = CliRunner().invoke(cli, ["export", str(client.config_path), "--participants"])
    assert out.exit_code == 0, out.output
    (row,) = map(json.loads, out.stdout.splitlines())
    assert row["outcome"] == "completed"
    assert row["participant"]["platform"] == "toyboard" and row["participant"]["session_id"] == "day"


def test_a_platform_name_is_registered_once(board: None) -> None:
    class Other(Board):
        pass

    with pytest.raises(ValueError, match="exists already"):
        register_platform(Other(), PlatformKind("toyboard"))
