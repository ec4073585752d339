"""The agent protocol against its contract, docs/agent-protocol.yaml, on a live server under gunicorn.

Schemathesis generates requests from the OpenAPI file for every route (valid ones and, where the
server validates the body, invalid ones), sends them with the right credentials and with wrong
ones, and checks each answer: never a 5xx, a documented status code, content type and headers,
a body that matches the documented schema, invalid input refused, and authentication enforced.

A second run is hit only with requests the server must refuse (wrong or missing tokens, another
run's token, malformed bodies with its own token); its database row and its files must not
change, apart from ``last_seen`` (any request with the run's own token is a heartbeat).

Generation is derandomized, so a run of this file is reproducible; a failure prints the request
as a curl command.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from potato.training.agent.protocol import RETRY_AFTER_S
from tests.harness import agents
from tests.harness.contract import call_and_check
from tests.conftest import ADMIN_KEY, truth
from tests.harness.servers import ServerProcess
from tests.faults.matrix import fault

pytestmark = [pytest.mark.integration]

SPEC = Path(__file__).resolve().parents[2] / "docs" / "agent-protocol.yaml"
V1 = "/training/agent/v1"
JOBS_NEXT = f"{V1}/jobs/next"
LEAVE = f"{V1}/agents/leave"
"""The other backend-token route: an agent that stops says so (issue 33 item 11)."""
RUN = f"{V1}/runs/{{run_id}}"
BUNDLE = f"{RUN}/bundle"
EVENTS = f"{RUN}/events"
PREDICTIONS = f"{RUN}/predictions"
RESULT = f"{RUN}/result"
RUN_ROUTES = [(RUN, "GET"), (BUNDLE, "GET"), (EVENTS, "POST"), (PREDICTIONS, "PUT"), (RESULT, "POST")]
STRICT_BODIES = [(JOBS_NEXT, "POST"), (LEAVE, "POST"), (EVENTS, "POST"), (RESULT, "POST")]
"""Routes whose body the server validates, so invalid bodies (negative generation) must be refused.
The predictions upload accepts any bytes and the GET routes have no body."""
EXAMPLES = 30
WRONG_TOKEN_EXAMPLES = 10
"""Fewer for a wrong token: the server refuses it before it reads the body."""
ADMIN = {"X-API-Key": ADMIN_KEY}

SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

SCHEMA = schemathesis.openapi.from_path(SPEC)
# Tokens are given per request below; NUL bytes only make `requests` refuse to send a header.
SCHEMA.config.generation.update(with_security_parameters=False, allow_x00=False)
# A valid Range past the end of the bundle is answered 416 (documented), not 2xx.
SCHEMA.config.checks.positive_data_acceptance.expected_statuses = ["2xx", "3xx", "401", "403", "404", "409", "416"]


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: Any, value: Any) -> bytes:
    """The predictions upload goes as the bytes it is (Schemathesis has no serializer for ndjson)."""
    data = getattr(value, "data", value)  # format: binary comes as a Binary wrapper
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    return (json.dumps(data) + "\n").encode("utf-8")


# -- the live server ------------------------------------------------------------------------------

@dataclass
class Live:
    srv: ServerProcess
    config_path: Path
    backend_token: str
    replaced_token: str
    run_tokens: Dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.srv.url

    @property
    def output_dir(self) -> Path:
        return self.config_path.parent / "annotation_output"

    def run_dir(self, run_id: str) -> Path:
        return self.output_dir / "training" / "runs" / run_id

    def admin_run(self, run_id: str) -> Dict[str, Any]:
        r = requests.get(f"{self.url}/admin/training/api/runs/{run_id}", headers=ADMIN, timeout=10)
        assert r.status_code == 200, r.text
        return r.json()

    def create_run(self) -> str:
        r = requests.post(f"{self.url}/admin/training/api/runs", headers=ADMIN, timeout=10,
                          json={"trainer": "noop", "schemas": ["sentiment"], "backend": "lab"})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    def claim(self, expected_run: str) -> Dict[str, Any]:
        """A real ``jobs/next`` claims the queued run; its reply is checked against the contract."""
        case = SCHEMA[JOBS_NEXT]["POST"].Case(
            body={"backend": "lab", "agent": {"id": "fuzz", "host": "fuzz"}, "wait_s": 0})
        response = send(self, case, bearer(self.backend_token))
        assert response.status_code == 200, response.text
        job = response.json()
        assert job["run_id"] == expected_run
        self.run_tokens[job["run_id"]] = job["run_token"]
        return job


def register(config_path: Path) -> str:
    return agents.register(config_path, "lab")[1]


@pytest.fixture
def live(make_project: Callable[..., Path]) -> Iterator[Live]:
    config_path = make_project(n_items=12, model_training={
        "enabled": True,
        "max_predictions_mb": 1,
        "backends": {"lab": {"type": "agent"}},
    })
    replaced = register(config_path)
    token = register(config_path)  # registering again replaces the first token
    # One worker with 4 threads: one long-poll slot, and a small footprint on a 2-core machine.
    srv = ServerProcess(config_path, extra_args=["--workers", "1", "--threads", "4"]).start()
    try:
        labels = [{"id": f"r{i:03d}", "schema": "sentiment", "label": truth(f"r{i:03d}")} for i in range(8)]
        r = requests.post(srv.url + "/admin/api/labels", json={"user": "gold", "labels": labels}, headers=ADMIN,
                          timeout=10)
        assert r.status_code == 200, r.text
        yield Live(srv, config_path, token, replaced)
    finally:
        srv.stop()


# -- sending and checking -------------------------------------------------------------------------

def bearer(token: str) -> Dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def send(live: Live, case: schemathesis.Case, auth: Dict[str, str]) -> Any:
    return call_and_check(live.srv, case, auth)


def short_long_poll(case: schemathesis.Case) -> None:
    """jobs/next holds a request for up to ``wait_s`` (25) seconds; keep the fuzz quick. Only
    numeric values are shortened; anything else the server reads as 0 anyway."""
    body: Any = case.body
    if not isinstance(body, dict) or "wait_s" not in body or isinstance(body["wait_s"], bool):
        return
    try:
        wait = float(body["wait_s"])
    except (TypeError, ValueError, OverflowError):
        return
    if wait > 0.05:
        body["wait_s"] = 0.05


def fuzz(live: Live, path: str, method: str, mode: GenerationMode, auth: Dict[str, str],
         run_id: Optional[str] = None, refused: bool = False, examples: int = EXAMPLES) -> List[int]:
    """Up to ``examples`` generated requests to one route; the status codes seen."""
    operation = SCHEMA[path][method]
    strategy = operation.as_strategy(mode, path_parameters={"run_id": run_id} if run_id else None)
    seen: List[int] = []

    @settings(SETTINGS, max_examples=examples)
    @given(case=strategy)
    def one(case: schemathesis.Case) -> None:
        if path in (JOBS_NEXT, LEAVE):
            short_long_poll(case)
            if mode is GenerationMode.POSITIVE and isinstance(case.body, dict):
                case.body["backend"] = "lab"  # a valid body names a backend of this server
        if path == EVENTS and mode is GenerationMode.POSITIVE and isinstance(case.body, dict) \
                and isinstance(case.body.get("seq"), int) and not isinstance(case.body["seq"], bool):
            # A valid report starts at the server's count or below it (a resend: the events it has are
            # skipped); one past it is refused as seq_gap, as documented.
            case.body["seq"] = 0
        if path == PREDICTIONS and mode is GenerationMode.POSITIVE and isinstance(case.body, (bytes, str)):
            # A valid upload is whole: a line that is not blank, and a newline after the last one (an
            # empty or cut-off upload is refused with 400, as documented). Text: bytes set here would
            # count as a schema-violating body (schemathesis does not validate binary).
            text = case.body.decode("latin-1") if isinstance(case.body, bytes) else case.body
            case.body = (text if text.strip() else "{}") + "\n"
        response = send(live, case, auth)
        seen.append(response.status_code)
        if refused:
            sent = auth.get("Authorization", "no Authorization")[:12] + "..."  # not the whole token
            assert 400 <= response.status_code < 500, (
                f"{method} {path} with {sent!r} was not refused: {response.status_code} "
                f"{response.text[:300]}\n{case.as_curl_command(headers=auth, base_url=live.url)}")

    one()
    return seen


# -- what the run looks like on the server --------------------------------------------------------

def snapshot(live: Live, run_id: str) -> Dict[str, Any]:
    """Everything the server keeps of a run: its database row and the files in its folder."""
    conn = sqlite3.connect(f"file:{live.output_dir / 'potato.sqlite3'}?mode=ro", uri=True, timeout=10)
    try:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
    finally:
        conn.close()
    row.pop("last_seen")  # a request with the run's own token is a heartbeat, even a refused one
    folder = live.run_dir(run_id)
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}
    return {"row": row, "files": files}


def post_events(live: Live, run_id: str, seq: int, events: List[Dict[str, Any]], log: List[str]) -> Dict[str, Any]:
    body: Dict[str, Any] = {"seq": seq, "events": events, "log": log}
    case = SCHEMA[EVENTS]["POST"].Case(path_parameters={"run_id": run_id}, body=body)
    response = send(live, case, bearer(live.run_tokens[run_id]))
    assert response.status_code == 200, response.text
    reply: Dict[str, Any] = response.json()
    return reply


def event_lines(live: Live, run_id: str) -> List[Dict[str, Any]]:
    path = live.run_dir(run_id) / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# -- the tests ------------------------------------------------------------------------------------

@fault("The agent and its reports",
       "Generated requests (schemathesis) on every agent route, valid and invalid, with every kind of token",
       "Every answer is documented: never a 5xx, the right status, content type and headers",
       "The documented JSON errors")
def test_every_route_answers_as_documented(live: Live) -> None:
    run_id = live.create_run()
    job = live.claim(run_id)
    token = bearer(job["run_token"])
    run = {"run_id": run_id}

    # The job again, without its token.
    response = send(live, SCHEMA[RUN]["GET"].Case(path_parameters=run), token)
    assert response.status_code == 200 and "run_token" not in response.json()

    # The bundle: whole (its sha256 is the announced one), then a resumed part.
    response = send(live, SCHEMA[BUNDLE]["GET"].Case(path_parameters=run), token)
    assert response.status_code == 200
    bundle = response.content
    assert len(bundle) == job["bundle"]["size"]
    assert hashlib.sha256(bundle).hexdigest() == job["bundle"]["sha256"]
    response = send(live, SCHEMA[BUNDLE]["GET"].Case(path_parameters=run, headers={"Range": "bytes=100-"}), token)
    assert response.status_code == 206 and response.content == bundle[100:]

    # Numbered events: a batch sent again is not recorded twice; an overlapping one adds the new part.
    first = [{"t": 1.0, "type": "step", "text": "one"}, {"t": 2.0, "type": "progress", "step": 1, "total": 4}]
    assert post_events(live, run_id, 0, first, ["agent line"]) == {"cancel": False}
    assert post_events(live, run_id, 0, first, []) == {"cancel": False}
    assert post_events(live, run_id, 1, [first[1], {"t": 3.0, "type": "log", "text": "three"}], []) == {
        "cancel": False}
    assert [e["t"] for e in event_lines(live, run_id)] == [1.0, 2.0, 3.0]

    # Every route fuzzed with the right credentials, the result last (it ends the run).
    for path, method in [(JOBS_NEXT, "POST"), *RUN_ROUTES]:
        auth = bearer(live.backend_token) if path == JOBS_NEXT else token
        rid = None if path == JOBS_NEXT else run_id
        if path == RESULT:
            # A cancel reaches the agent in the reply to its next report.
            r = requests.post(f"{live.url}/admin/training/api/runs/{run_id}/cancel", headers=ADMIN, timeout=10)
            assert r.status_code == 202, r.text
            reply = post_events(live, run_id, snapshot(live, run_id)["row"]["events_seen"], [], [])
            assert reply["cancel"] is True and reply["reason"] == "cancelled", reply
        if (path, method) in STRICT_BODIES:
            fuzz(live, path, method, GenerationMode.NEGATIVE, auth, rid)
        fuzz(live, path, method, GenerationMode.POSITIVE, auth, rid)
    assert live.admin_run(run_id)["state"] in ("failed", "cancelled", "succeeded")
    # An agent saying it stops (after its run, as the reference agent does).
    fuzz(live, LEAVE, "POST", GenerationMode.NEGATIVE, bearer(live.backend_token))
    fuzz(live, LEAVE, "POST", GenerationMode.POSITIVE, bearer(live.backend_token))

    # The run has ended; a wrong token is still refused as such (401 before 409).
    for auth in [{}, {"Authorization": "Basic Zm9vOmJhcg=="}, bearer(live.replaced_token)]:
        fuzz(live, JOBS_NEXT, "POST", GenerationMode.POSITIVE, auth, refused=True, examples=5)
        fuzz(live, LEAVE, "POST", GenerationMode.POSITIVE, auth, refused=True, examples=5)
        for path, method in RUN_ROUTES:
            assert set(fuzz(live, path, method, GenerationMode.POSITIVE, auth, run_id, refused=True,
                            examples=5)) == {401}


@fault("The agent and its reports",
       "Refused requests (wrong token, bad body) on every agent route",
       "The run's record and files stay byte for byte as they were",
       "Nothing changes")
def test_refused_requests_change_nothing(live: Live) -> None:
    # An ended run, so that its token is "another run's token" for the run under test.
    other = live.create_run()
    live.claim(other)
    case = SCHEMA[RESULT]["POST"].Case(path_parameters={"run_id": other},
                                       body={"exit_code": None, "stop": {"reason": "cancelled", "message": "fuzz"}})
    response = send(live, case, bearer(live.run_tokens[other]))
    assert response.status_code == 200 and response.json() == {"state": "cancelled"}

    run_id = live.create_run()
    live.claim(run_id)
    post_events(live, run_id, 0, [{"t": 1.0, "type": "step", "text": "training"}], ["agent line"])
    before = snapshot(live, run_id)
    assert set(before["files"]) == {"bundle.tar.gz", "run.log", "events.jsonl", "agent.log"}

    own = bearer(live.run_tokens[run_id])
    wrong = [{}, {"Authorization": "Bearer "}, bearer("not-a-token"), bearer(live.replaced_token),
             bearer(live.backend_token), bearer(live.run_tokens[other])]
    statuses: List[int] = []
    for auth in wrong:
        if auth != bearer(live.backend_token):  # the one token jobs/next takes
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                statuses += fuzz(live, JOBS_NEXT, "POST", mode, auth, refused=True, examples=WRONG_TOKEN_EXAMPLES)
                statuses += fuzz(live, LEAVE, "POST", mode, auth, refused=True, examples=WRONG_TOKEN_EXAMPLES)
        for path, method in RUN_ROUTES:
            statuses += fuzz(live, path, method, GenerationMode.POSITIVE, auth, run_id, refused=True,
                             examples=WRONG_TOKEN_EXAMPLES)
    # The run's own token with bodies the server must refuse.
    for path, method in [(EVENTS, "POST"), (RESULT, "POST")]:
        statuses += fuzz(live, path, method, GenerationMode.NEGATIVE, own, run_id, refused=True)
    assert {400, 401, 403} <= set(statuses)

    assert snapshot(live, run_id) == before
    assert live.admin_run(run_id)["state"] == "running"

    # No long-poll thread free: 204 at once, with Retry-After. The server has one slot (one worker,
    # 4 threads); a thread keeps it busy with long polls of its own.
    stop = threading.Event()

    def hold_the_slot() -> None:
        while not stop.is_set():
            requests.post(live.url + JOBS_NEXT, json={"backend": "lab", "wait_s": 1}, timeout=30,
                          headers=bearer(live.backend_token))

    holder = threading.Thread(target=hold_the_slot, daemon=True)
    holder.start()
    retry_after: List[str] = []
    try:
        for _ in range(20):
            time.sleep(0.25)
            response = send(live, SCHEMA[JOBS_NEXT]["POST"].Case(body={"backend": "lab", "wait_s": 0.05}),
                            bearer(live.backend_token))
            assert response.status_code == 204
            retry_after = response.headers.get("retry-after", [])
            if retry_after:
                break
    finally:
        stop.set()
        holder.join(10)
    assert retry_after and RETRY_AFTER_S[0] <= int(retry_after[0]) <= RETRY_AFTER_S[1]

    # Over max_predictions_mb (1 MB here): 413, and the run fails saying why.
    big = b'{"item_id": "r000", "schema": "sentiment", "label": "positive", "confidence": 0.5}\n' * 14000
    case = SCHEMA[PREDICTIONS]["PUT"].Case(path_parameters={"run_id": run_id}, body=big,
                                           media_type="application/x-ndjson")
    response = send(live, case, own)
    assert response.status_code == 413 and response.json()["code"] == "too_large"
    ended = live.admin_run(run_id)
    assert ended["state"] == "failed" and "max_predictions_mb" in ended["message"]
    # The run is over: its own token now gets 409 on every route.
    for path, method in RUN_ROUTES:
        body: Any = {} if method == "POST" else (b"" if method == "PUT" else None)
        kwargs: Dict[str, Any] = {"path_parameters": {"run_id": run_id}}
        if body is not None:
            kwargs["body"] = body
        response = send(live, SCHEMA[path][method].Case(**kwargs), own)
        assert response.status_code == 409 and response.json()["code"] == "run_ended", (path, response.text)
