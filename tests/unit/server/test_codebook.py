"""Issue 36 (codebook): ``codebook: true`` schemes with a tray of their codes; under ``codebook_mode:
extensible`` annotators add codes everyone can use, each label records the codebook revision it
was made under, and the export carries the codebook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from click.testing import CliRunner

from potato.cli import cli
from potato.codebook import Code, CodeRefused, check_code, current_config, with_codes
from potato.config import load_config, validate
from potato.db import Database
from potato.server import close_app, create_app
from potato.server.training.runs.bundle import job_schemes
from tests.conftest import ADMIN_KEY
from tests.unit.test_upstream_configs import upstream

THEMES = [{"annotation_type": "multiselect", "name": "themes", "description": "Which themes appear?", "codebook": True,
           "labels": [{"name": "cost", "tooltip": "Money stops them"}, {"name": "trust", "tooltip": "Doubts the provider"}]}]


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
    assert item["codebook"] == {"mode": "extensible", "revision": 1,
                                "codes": {"themes": [{"name": "wait times", "definition": "Queues, delays"}]}}
    assert ben.post("/api/label", json={"id": "r000", "labels": {"themes": ["wait times", "trust"]},
                                        "go": "stay"}).status_code == 200
    assert 'value="wait times"' in ben.get("/annotate").get_data(as_text=True)  # a reload draws it too
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
