"""Issue 33 item 6: the black-box probe's requests again, on a live server under gunicorn, each answer
checked against the contracts (docs/agent-protocol.yaml, docs/admin-api.yaml) with Schemathesis'
checks: documented status, content type, headers and body.

What the probe found: the bundle's ``Range`` edge cases answered an HTML 416 (``bytes=-0``, a suffix
longer than the bundle, ``bytes=5-2``, ``bytes=abc``, several ranges); ``POST .../push`` took
``repo_id: ""``, which its schema refuses; a 414 no contract mentioned; an error code outside the
documented enum (``no_such_package``); ``trainers`` advertised ``source_predictions`` for
decision-calibrate while a run request takes ``source_run``; a push whose Hub answer was redirected
ended as ``KeyError: 'url'``.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import re
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Dict, Iterator

import pytest
import requests
import schemathesis
import yaml

from tests.harness import agents
from tests.conftest import ADMIN_KEY, base_config, review_items, truth
from tests.harness.contract import call_and_check
from tests.harness.hubstandin import HubStandIn
from tests.harness.servers import ServerProcess

pytestmark = pytest.mark.integration

DOCS = Path(__file__).resolve().parents[2] / "docs"
AGENT_SPEC = schemathesis.openapi.from_path(DOCS / "agent-protocol.yaml")
ADMIN_SPEC = schemathesis.openapi.from_path(DOCS / "admin-api.yaml")
for _spec in (AGENT_SPEC, ADMIN_SPEC):
    _spec.config.generation.update(with_security_parameters=False, allow_x00=False)
    # A range with no byte of the bundle is a documented 416, a bad push body a documented 400.
    _spec.config.checks.positive_data_acceptance.expected_statuses = ["2xx", "400", "416"]
ADMIN_RAW: Dict[str, Any] = yaml.safe_load((DOCS / "admin-api.yaml").read_text(encoding="utf-8"))
AGENT_RAW: Dict[str, Any] = yaml.safe_load((DOCS / "agent-protocol.yaml").read_text(encoding="utf-8"))
V1 = "/training/agent/v1"
BUNDLE = f"{V1}/runs/{{run_id}}/bundle"
PACKAGE = f"{V1}/package/{{wheel}}"
TRAINING = "/admin/training/api"
PUSH = f"{TRAINING}/runs/{{run_id}}/push"
TRAINERS = f"{TRAINING}/trainers"
RUNS = f"{TRAINING}/runs"
_addresses = itertools.count(1)


def admin() -> Dict[str, str]:
    """The admin key, from an address of its own: Schemathesis' ignored_auth check sends each request
    again with a wrong key, which the throttle counts per address (trust_proxy is on)."""
    n = next(_addresses)
    return {"X-API-Key": ADMIN_KEY, "X-Forwarded-For": f"10.33.{n >> 8 & 255}.{n & 255}"}


ADMIN = {"X-API-Key": ADMIN_KEY}


@dataclass
class Live:
    srv: ServerProcess
    hub: HubStandIn
    root: Path
    pushable: str
    """A succeeded run whose model files are on the server."""
    running: str
    run_token: str
    bundle: bytes

    def run_dir(self, run_id: str) -> Path:
        return self.root / "annotation_output" / "training" / "runs" / run_id


def hold_dispatcher_lock(root: Path) -> IO[str]:
    """The lock the dispatcher takes before it starts a run: no run starts on the local backend."""
    path = root / "annotation_output" / "training" / "dispatcher.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = path.open("a+")
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fh


def claim(url: str, backend_token: str) -> Dict[str, Any]:
    r = requests.post(f"{url}{RUNS}", headers=ADMIN, timeout=30,
                      json={"trainer": "noop", "schemas": ["sentiment"], "backend": "lab"})
    assert r.status_code == 201, r.text
    r = requests.post(f"{url}{V1}/jobs/next", headers={"Authorization": f"Bearer {backend_token}"}, timeout=30,
                      json={"backend": "lab", "agent": {"id": "probe", "host": "probe"}, "wait_s": 0})
    assert r.status_code == 200, r.text
    job: Dict[str, Any] = r.json()
    return job


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("probe") / "project"
    (root / "data").mkdir(parents=True)
    (root / "data" / "reviews.json").write_text(json.dumps(review_items(12)), encoding="utf-8")
    raw = base_config()
    raw["trust_proxy"] = True
    raw["model_training"] = {"enabled": True, "backends": {"lab": {"type": "agent"}},
                             "writeback": {"schemas": ["sentiment"], "include_unlabeled": True}}
    config_path = root / "config.yaml"
    config_path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    config_path.chmod(0o600)
    backend_token = agents.register(config_path, "lab")[1]
    lock = hold_dispatcher_lock(root)
    hf_token = "hf_" + secrets.token_urlsafe(24)
    with HubStandIn(hf_token) as hub:
        srv = ServerProcess(config_path, extra_args=["--workers", "1", "--threads", "4"],
                            env={"HF_ENDPOINT": hub.url, "HF_TOKEN": hf_token,
                                 "HF_HOME": str(root.parent / "hf-home")}).start()
        try:
            labels = [{"id": f"r{i:03d}", "schema": "sentiment", "label": truth(f"r{i:03d}")} for i in range(8)]
            r = requests.post(srv.url + "/admin/api/labels", json={"user": "gold", "labels": labels}, headers=ADMIN,
                              timeout=30)
            assert r.status_code == 200, r.text
            # A run reported as succeeded by its agent, whose model files are then on the server.
            job = claim(srv.url, backend_token)
            bearer = {"Authorization": f"Bearer {job['run_token']}"}
            lines = "".join(json.dumps({"item_id": f"r{i:03d}", "schema": "sentiment", "label": truth(f"r{i:03d}"),
                                        "confidence": 0.9}) + "\n" for i in range(12))
            r = requests.put(f"{srv.url}{V1}/runs/{job['run_id']}/predictions", headers=bearer,
                             data=lines.encode(), timeout=30)
            assert r.status_code == 200, r.text
            r = requests.post(f"{srv.url}{V1}/runs/{job['run_id']}/result", headers=bearer, timeout=30,
                              json={"exit_code": 0, "result": {"status": "succeeded",
                                                               "metrics": {"holdout_accuracy": 1.0}}})
            assert r.status_code == 200 and r.json() == {"state": "succeeded"}, r.text
            artifacts = root / "annotation_output" / "training" / "runs" / job["run_id"] / "artifacts"
            artifacts.mkdir()
            (artifacts / "model.pkl").write_bytes(b"\x80\x04model")
            # A run an agent holds now: its bundle.
            running = claim(srv.url, backend_token)
            r = requests.get(f"{srv.url}{V1}/runs/{running['run_id']}/bundle", timeout=30,
                             headers={"Authorization": f"Bearer {running['run_token']}"})
            assert r.status_code == 200 and len(r.content) == running["bundle"]["size"]
            yield Live(srv, hub, root, job["run_id"], running["run_id"], running["run_token"], r.content)
        finally:
            srv.stop()
            lock.close()


def test_the_bundle_s_range_edge_cases_answer_as_rfc_9110_and_the_contract_say(live: Live) -> None:
    auth = {"Authorization": f"Bearer {live.run_token}"}
    size = len(live.bundle)
    answers = {}
    for header in ["bytes=-0", f"bytes=-{size + 1000}", "bytes=5-2", "bytes=abc", "bytes=0-9,20-29",
                   f"bytes={size}-", f"bytes={size + 5}-{size + 10}", "bytes=10-"]:
        case = AGENT_SPEC[BUNDLE]["GET"].Case(path_parameters={"run_id": live.running}, headers={"Range": header})
        response = call_and_check(live.srv, case, auth)
        answers[header] = response
        assert "text/html" not in response.headers.get("content-type", [""])[0], header
    for header in ("bytes=-0", f"bytes={size}-", f"bytes={size + 5}-{size + 10}"):
        response = answers[header]
        assert response.status_code == 416, (header, response.status_code)
        assert response.json()["code"] == "range_not_satisfiable"
        assert response.headers["content-range"] == [f"bytes */{size}"]
    suffix = answers[f"bytes=-{size + 1000}"]
    assert suffix.status_code == 206 and suffix.content == live.bundle
    assert suffix.headers["content-range"] == [f"bytes 0-{size - 1}/{size}"]
    for header in ("bytes=5-2", "bytes=abc", "bytes=0-9,20-29"):
        assert answers[header].status_code == 200 and answers[header].content == live.bundle, header
    assert answers["bytes=10-"].status_code == 206 and answers["bytes=10-"].content == live.bundle[10:]


def test_an_unknown_wheel_is_answered_with_a_code_of_the_enum(live: Live) -> None:
    case = AGENT_SPEC[PACKAGE]["GET"].Case(path_parameters={"wheel": "potato_annotation-0.0.1-py3-none-any.whl"})
    response = call_and_check(live.srv, case, {})
    assert response.status_code == 404 and response.json()["code"] == "no_such_package"


def test_an_empty_repo_id_is_refused_as_its_schema_says(live: Live) -> None:
    schema = ADMIN_RAW["components"]["schemas"]["PushRequest"]["properties"]["repo_id"]
    assert schema["minLength"] == 1
    for body in ({"repo_id": ""}, {"repo_id": " "}, {"repo_id": " my-lab/model "}):
        assert not re.search(schema["pattern"], body["repo_id"])  # the contract refuses it...
        case = ADMIN_SPEC[PUSH]["POST"].Case(path_parameters={"run_id": live.pushable}, body=body)
        response = call_and_check(live.srv, case, admin())
        assert response.status_code == 400, (body, response.text)  # ...and so does the server
    assert response.json()["error"].startswith("' my-lab/model ' is not a repository name the Hub takes")
    assert live.hub.requests == [] or all(path == "/api/agent-harnesses" for _, path in live.hub.requests)


def push_and_wait(live: Live, body: Dict[str, Any]) -> Dict[str, Any]:
    case = ADMIN_SPEC[PUSH]["POST"].Case(path_parameters={"run_id": live.pushable}, body=body)
    response = call_and_check(live.srv, case, admin())
    assert response.status_code == 202, response.text
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        case = ADMIN_SPEC[PUSH]["GET"].Case(path_parameters={"run_id": live.pushable})
        state: Dict[str, Any] = call_and_check(live.srv, case, admin()).json()
        if state["state"] != "pushing":
            return state
        time.sleep(0.2)
    raise AssertionError(f"the push did not end: {state}")


def test_a_push_whose_hub_answer_is_redirected_fails_in_plain_words(live: Live) -> None:
    live.hub.redirect = (302, "/login")
    try:
        state = push_and_wait(live, {"repo_id": "my-lab/probe-model"})
    finally:
        live.hub.redirect = None
    assert state["state"] == "failed" and "KeyError" not in state["error"], state
    assert state["error"].startswith(f"The answer to creating the repository did not come from the Hub's API: "
                                     f"{live.hub.url} answered without the 'url' the Hub sends. A redirect")
    assert ("POST", "/api/repos/create") in live.hub.requests and ("GET", "/login") in live.hub.requests
    log = (live.run_dir(live.pushable) / "run.log").read_text()
    assert "Push to the Hugging Face Hub failed: The answer to creating the repository" in log
    # The Hub answering as itself again, the same push goes through.
    state = push_and_wait(live, {"repo_id": "my-lab/probe-model"})
    assert state["state"] == "done", state
    assert [c.repo_id for c in live.hub.commits] == ["my-lab/probe-model"]


def test_the_trainers_listing_advertises_the_parameters_a_run_request_takes(live: Live) -> None:
    response = call_and_check(live.srv, ADMIN_SPEC[TRAINERS]["GET"].Case(), admin())
    calibrate = next(t for t in response.json()["trainers"] if t["name"] == "decision-calibrate")
    assert set(calibrate["params"]) == {"source_run", "method"}
    assert set(calibrate["shown"]) <= set(calibrate["params"])
    allowed = ADMIN_RAW["components"]["schemas"]["CalibrateParams"]["properties"]
    assert set(calibrate["params"]) <= set(allowed)
    # What it advertises is what a request may send.
    case = ADMIN_SPEC[RUNS]["POST"].Case(body={"trainer": "decision-calibrate", "schemas": ["sentiment"],
                                               "backend": "local",
                                               "params": {"source_run": live.pushable, "method": "platt"}})
    response = call_and_check(live.srv, case, admin())
    assert response.status_code == 201, response.text
    r = requests.post(f"{live.srv.url}{RUNS}/{response.json()['id']}/cancel", headers=ADMIN, timeout=30)
    assert r.status_code == 202, r.text


def raw_request_line(url: str, target: str) -> bytes:
    """The status line of the answer to ``GET <target>`` sent as is."""
    host, port = url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {ADMIN_KEY}\r\n"
                     "Connection: close\r\n\r\n".encode())
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n", 1)[0]


def test_a_request_line_over_the_limit_is_the_414_both_contracts_document(live: Live) -> None:
    for target in (f"/admin/api/labels?user={'a' * 5000}", f"{V1}/runs/{live.running}?x={'a' * 5000}"):
        assert raw_request_line(live.srv.url, target).startswith(b"HTTP/1.1 414 ")
    assert raw_request_line(live.srv.url, f"/admin/api/labels?user={'a' * 3000}").startswith(b"HTTP/1.1 200 ")
    for raw in (ADMIN_RAW, AGENT_RAW):
        text = " ".join(raw["info"]["description"].split())
        assert "`414` for a request line" in text and "over 4094 bytes" in text
