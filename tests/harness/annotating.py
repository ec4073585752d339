"""An annotator at a server under gunicorn, over HTTP as the annotation page talks to it: signed in, the
item the page shows first, a gold label sent."""

from __future__ import annotations

import json
from typing import Any, Dict

import requests

from tests.conftest import truth
from tests.harness.servers import ServerProcess


def signed_in(srv: ServerProcess, name: str) -> requests.Session:
    s = requests.Session()
    assert s.post(srv.url + "/login", data={"name": name}, allow_redirects=False).status_code == 302
    return s


def current_item(s: requests.Session, srv: ServerProcess) -> Dict[str, Any]:
    page = s.get(srv.url + "/annotate").text
    start = page.index('id="first-item"')
    body = page[page.index(">", start) + 1:page.index("</script>", start)]
    return json.loads(body)


def label(s: requests.Session, srv: ServerProcess, item_id: str) -> Dict[str, Any]:
    r = s.post(srv.url + "/api/label", json={"id": item_id, "labels": {"sentiment": truth(item_id)}})
    assert r.status_code == 200, r.text
    return r.json()["item"]
