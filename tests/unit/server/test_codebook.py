"""Issue 36 (codebook): ``codebook: true`` schemes with a tray of their codes; under ``codebook_mode:
extensible`` annotators add codes everyone can use, each label records the codebook revision it
was made under, and the export carries the codebook."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from click.testing import CliRunner

from potato.cli import cli
from potato.codebook import (Code, Codebook, CodebookFull, CodeRefused, CodeTaken, check_code, code_keys,
                             current_config, with_codes)
from potato.config import load_config, validate
from potato.db import Database
from potato.server import close_app, create_app
from potato.server.training.runs.bundle import job_schemes
from tests.conftest import ADMIN_KEY
from tests.harness.schemes import THEMES
from tests.harness.upstream import upstream


@pytest.fixture
def study(make_project: Callable[..., Path]) -> Iterator[Callable[..., Any]]:
    apps: list[Any] = []

    def _make(**overrides: Any) -> Any:
        path = make_project(n_items=3, annotation_schemes=THEMES, **overrides)
        app = create_app(load_config(path), {"TESTING": True, "POTATO_NO_DISPATCHER": True})
        apps.append(app)
        app.config_path = path
        return app

    yield _make
    for app in apps:
        close_app(app)


def signed_in(app: Any, name: str) -> Any:
    client = app.test_client()
    client.post("/login", data={"name": name})
    return client


def test_codebook_modes_validate() -> None:
    config = validate(upstream(annotation_schemes=THEMES, codebook_mode="extensible"), Path("/p/c.yaml")).config
    assert config is not None and config.codebook_mode == "extensible" and config.annotation_schemes[0].codebook
    fixed = validate(upstream(annotation_schemes=THEMES), Path("/p/c.yaml")).config
    assert fixed is not None and fixed.codebook_mode == "fixed"  # upstream's default outside qualitative coding
    refused = validate(upstream(annotation_schemes=THEMES, codebook_mode="open"), Path("/p/c.yaml"))
    assert [e.message for e in refused.errors] == [
        "codebook_mode: open lets annotators rename, move and delete codes, which this server does not support; use "
        "fixed (a tray of the codes) or extensible (annotators may add codes)"]
    crowd = validate(upstream(annotation_schemes=THEMES, codebook_mode="extensible",
                              crowdsourcing={"provider": "prolific", "prolific": {"completion": {"code": "C"}}}),
                     Path("/p/c.yaml"))
    assert crowd.config is not None and crowd.config.codebook_mode == "fixed"
    assert any(w.message.startswith("codebook_mode: is extensible, but a crowdsourcing study's codebook stays fixed")
               for w in crowd.warnings)


def test_a_code_must_be_new_and_named() -> None:
    config = validate(upstream(annotation_schemes=THEMES, codebook_mode="extensible"), Path("/p/c.yaml")).config
    assert config is not None
    schemes = config.annotation_schemes
    with pytest.raises(CodeRefused, match="'Cost' is already a code of themes"):
        check_code(schemes, {}, "themes", " Cost ", "")
    with pytest.raises(CodeRefused, match="'WAIT' is already a code of themes"):
        check_code(schemes, {"themes": [Code("themes", "wait")]}, "themes", "WAIT", "")
    with pytest.raises(CodeRefused, match="is not a codebook scheme; codes are added to: themes"):
        check_code(schemes, {}, "other", "x", "")
    with pytest.raises(CodeRefused, match="A code is a name of 1 to 64 printable characters"):
        check_code(schemes, {}, "themes", "   ", "")
    extended = with_codes(schemes, {"themes": [Code("themes", "wait times", "Queues")]})
    assert extended[0].labels == ("cost", "trust", "wait times") and extended[0].options[-1].tooltip == "Queues"


def test_an_added_code_is_everyones_and_labels_keep_their_revision(study: Callable[..., Any]) -> None:
    app = study(codebook_mode="extensible")
    ana, ben = signed_in(app, "ana"), signed_in(app, "ben")
    assert "Money stops them" in ana.get("/annotate").get_data(as_text=True)  # the tray's definitions
    before = ana.post("/api/label", json={"id": "r000", "labels": {"themes": ["cost"]}, "go": "stay"})
    assert before.status_code == 200
    refused = ben.post("/api/label", json={"id": "r000", "labels": {"themes": ["wait times"]}, "go": "stay"})
    assert refused.status_code == 400  # not a code yet
    added = ana.post("/api/codebook", json={"scheme": "themes", "name": "wait times", "definition": "Queues, delays"})
    assert added.status_code == 201 and added.get_json()["revision"] == 1
    assert ben.post("/api/codebook", json={"scheme": "themes", "name": "Wait Times"}).status_code == 409
    item = ben.get("/api/move?go=stay&from=0").get_json()["item"]
    assert item["codebook"] == {"mode": "extensible", "revision": 1,  # cost and trust have keys 1 and 2
                                "codes": {"themes": [{"name": "wait times", "definition": "Queues, delays",
                                                      "key": "3"}]}}
    assert ben.post("/api/label", json={"id": "r000", "labels": {"themes": ["wait times", "trust"]},
                                        "go": "stay"}).status_code == 200
    assert re.search(r'value="wait times"\s+data-key="3"', ben.get("/annotate").get_data(as_text=True))  # a reload too
    labels = {(r["user"], r["schema"]): r for r in ana.get("/admin/api/labels", headers={"X-API-Key": ADMIN_KEY})
              .get_json()["labels"]}
    assert labels[("ana", "themes")]["codebook_revision"] == 0
    assert labels[("ben", "themes")]["codebook_revision"] == 1
    book = ana.get("/admin/api/codebook", headers={"X-API-Key": ADMIN_KEY}).get_json()
    assert book["revision"] == 1 and [c["name"] for c in book["schemes"]["themes"]] == ["cost", "trust", "wait times"]
    assert book["schemes"]["themes"][2]["added_by"] == "ana"
    out = CliRunner().invoke(cli, ["export", str(app.config_path), "--codebook"])
    assert out.exit_code == 0 and json.loads(out.stdout)["schemes"]["themes"][2]["definition"] == "Queues, delays"
    # A trainer learns the added code as a class.
    config = load_config(app.config_path)
    db = Database(config.database_path)
    try:
        assert job_schemes(current_config(config, db), ["themes"])[0].labels == ("cost", "trust", "wait times")
    finally:
        db.close()


def test_a_fixed_codebook_takes_no_new_codes(study: Callable[..., Any]) -> None:
    app = study()
    ana = signed_in(app, "ana")
    html = ana.get("/annotate").get_data(as_text=True)
    assert "Doubts the provider" in html and 'id="add-code"' not in html
    refused = ana.post("/api/codebook", json={"scheme": "themes", "name": "wait times"})
    assert refused.status_code == 403 and refused.get_json()["error"].startswith("This study's codebook is fixed")


LOOKALIKES = ["WAIT TIMES", "ｗａｉｔ ｔｉｍｅｓ", "wаit times", "wait tіmes", "waıt tımes", "wa\u0301it times",
              "wait  times", " Wait\ttimes "]
"""``wait times`` again: upper case, full-width letters, a Cyrillic а and і, dotless ı, a combining
accent, a doubled space, a tab. Each is the code already there, as it would be an annotator's name."""


def test_a_code_that_looks_like_one_of_its_scheme_is_that_code(study: Callable[..., Any]) -> None:
    """Issue 42: look-alikes were new codes (the check compared ``casefold`` only)."""
    app = study(codebook_mode="extensible")
    ana = signed_in(app, "ana")
    assert ana.post("/api/codebook", json={"scheme": "themes", "name": "wait times"}).status_code == 201
    for name in LOOKALIKES:
        refused = ana.post("/api/codebook", json={"scheme": "themes", "name": name})
        assert refused.status_code == 409, name
        assert refused.get_json()["error"].endswith("pick 'wait times' from the list."), refused.get_json()
    cost = ana.post("/api/codebook", json={"scheme": "themes", "name": "cоst"})  # a Cyrillic о: the config's label
    assert cost.status_code == 409
    assert cost.get_json()["error"] == "'cоst' is already a code of themes (it looks like 'cost'): pick 'cost' from the list."
    stored = ana.get("/api/codebook").get_json()["schemes"]["themes"]
    assert [c["name"] for c in stored] == ["cost", "trust", "wait times"]
    # Full-width letters are stored as the annotator meant to type them, and spaces are tidied.
    assert ana.post("/api/codebook", json={"scheme": "themes", "name": " ｆｅｅｓ  hidden "}).get_json()["code"]["name"] \
        == "fees hidden"


def test_look_alikes_added_at_the_same_moment_give_one_code(study: Callable[..., Any],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: four annotators adding case1word, CASE1WORD, ... at once all got 201: each read the
    codes before any had written its own. The codes are read inside the write now; here every add
    waits (a second at most) until the others have read them too, which is where the old code let
    all four through."""
    app = study(codebook_mode="extensible")
    names = ["case1word", "CASE1WORD", "Case1Word", "ｃａｓｅ１ｗｏｒｄ"]
    clients = [signed_in(app, f"annotator{i}") for i in range(len(names))]
    everyone_read = threading.Barrier(len(names))
    read = Codebook.added

    def added_then_wait(self: Codebook, *args: Any) -> Any:
        codes = read(self, *args)
        try:
            everyone_read.wait(timeout=1.0)
        except threading.BrokenBarrierError:
            pass  # the others wait for the write lock this add holds: it goes on alone
        return codes

    monkeypatch.setattr(Codebook, "added", added_then_wait)
    statuses: list[int] = []

    def add(client: Any, name: str) -> None:
        statuses.append(client.post("/api/codebook", json={"scheme": "themes", "name": name}).status_code)

    threads = [threading.Thread(target=add, args=pair) for pair in zip(clients, names)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    monkeypatch.setattr(Codebook, "added", read)
    assert sorted(statuses) == [201, 409, 409, 409]
    assert [c["name"] for c in clients[0].get("/api/codebook").get_json()["schemes"]["themes"]][2:] in (
        [["case1word"], ["CASE1WORD"], ["Case1Word"], ["case1word"]])


def test_codes_are_limited_per_annotator_and_per_project_and_the_admin_raises_the_limits(
        study: Callable[..., Any]) -> None:
    """Issue 42: one annotator added 3,000 codes in 31 s, and every page carried them all."""
    app = study(codebook_mode="extensible", codebook_max_codes=3, codebook_max_codes_per_annotator=2)
    ana, ben = signed_in(app, "ana"), signed_in(app, "ben")
    for name in ("fees", "queues"):
        assert ana.post("/api/codebook", json={"scheme": "themes", "name": name}).status_code == 201
    mine = ana.post("/api/codebook", json={"scheme": "themes", "name": "staff"})
    assert mine.status_code == 403
    assert mine.get_json()["error"] == (
        "You have added 2 codes, as many as one annotator may add in this study (codebook_max_codes_per_annotator: "
        "2). Ask the study's admin to raise codebook_max_codes_per_annotator in the config and restart the server, "
        "or pick a code from the list.")
    assert ben.post("/api/codebook", json={"scheme": "themes", "name": "staff"}).status_code == 201
    full = ben.post("/api/codebook", json={"scheme": "themes", "name": "parking"})
    assert full.status_code == 403 and "(codebook_max_codes: 3)" in full.get_json()["error"]
    assert "Ask the study's admin to raise codebook_max_codes in the config" in full.get_json()["error"]
    assert ben.get("/api/codebook").get_json()["revision"] == 3  # nothing more was stored
    raised = study(codebook_mode="extensible", codebook_max_codes=4)
    assert signed_in(raised, "ben").post("/api/codebook", json={"scheme": "themes", "name": "parking"}).status_code == 201


def test_the_codebook_limits_have_defaults_and_are_checked() -> None:
    config = validate(upstream(annotation_schemes=THEMES, codebook_mode="extensible"), Path("/p/c.yaml")).config
    assert config is not None and (config.codebook_max_codes, config.codebook_max_codes_per_annotator) == (200, 25)
    refused = validate(upstream(annotation_schemes=THEMES, codebook_mode="extensible", codebook_max_codes=0,
                                codebook_max_codes_per_annotator="many"), Path("/p/c.yaml"))
    assert [e.message for e in refused.errors] == [
        "codebook_max_codes: must be a whole number of at least 1, got 0",
        "codebook_max_codes_per_annotator: must be a whole number of at least 1, got 'many'"]
    assert issubclass(CodebookFull, CodeRefused) and issubclass(CodeTaken, CodeRefused)


def test_an_added_code_gets_the_next_free_key_while_one_is_left() -> None:
    labels = [{"name": "cost"}, {"name": "trust", "key_value": "4"}]
    schemes: list[dict[str, Any]] = [{**THEMES[0], "labels": labels},
               {"annotation_type": "radio", "name": "tone", "labels": ["calm", "angry"]}]
    config = validate(upstream(annotation_schemes=schemes, codebook_mode="extensible"), Path("/p/c.yaml")).config
    assert config is not None
    assert [o.key for s in config.annotation_schemes for o in s.options] == ["1", "4", "2", "3"]
    added = {"themes": [Code("themes", f"code{n}", revision=n) for n in range(1, 8)]}
    keys = code_keys(config.annotation_schemes, added)
    assert [keys.get(("themes", f"code{n}"), "") for n in range(1, 8)] == ["5", "6", "7", "8", "9", "", ""]
    extended = with_codes(config.annotation_schemes, added)
    assert [o.key for o in extended[0].options][2:] == ["5", "6", "7", "8", "9", "", ""]
    unkeyed = [{**schemes[0], "sequential_key_binding": False}, schemes[1]]
    config = validate(upstream(annotation_schemes=unkeyed, codebook_mode="extensible"), Path("/p/c.yaml")).config
    assert config is not None and code_keys(config.annotation_schemes, added) == {}
