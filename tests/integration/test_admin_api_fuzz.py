"""The admin API against its contract, docs/admin-api.yaml, on a live server under gunicorn.

Schemathesis generates requests from the OpenAPI file for every admin API route (valid ones and,
where the server validates a body, invalid ones), sends them with the admin key, with a wrong key
and with none, and checks each answer: never a 5xx, a documented status code, content type and
headers, a body that matches the documented schema, invalid input refused, and authentication
enforced. The contract describes backend, schema and item names in general; the test narrows those
to its project's names (``project_schema``), so that valid requests are valid for this server.

Wrong admin keys are throttled per client address (10 per 5 minutes, then 429 for every request
from that address with the header, even with the right key). The project sets ``trust_proxy``, and
every request here comes from an address of its own (``X-Forwarded-For``): so each wrong key,
including the one Schemathesis' ``ignored_auth`` check sends after every accepted request, is
answered as a wrong key (401), and the throttle itself is checked on one address on purpose.

Nothing trains: the test holds the dispatcher's lock (``training/dispatcher.lock``) for as long as
the server runs, so the runs that generated requests queue stay queued, and the one succeeded run
(for suggestions and ``decision-calibrate``) is reported through the agent protocol.

A second server is hit only with requests it must refuse (no key, wrong keys, a foreign origin,
invalid bodies, unknown runs, a throttled address): its labels, runs and their files must not change.

Generation is derandomized, so a run of this file is reproducible; a failure prints the request
as a curl command.
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import itertools
import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Set

import pytest
import requests
import schemathesis
import yaml
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from potato.config import load_config
from potato.config.schema import Config
from potato.training.job.schemes import CHOICE_TYPES, Scheme, SchemeType
from potato.server.auth import clean_user_name
from tests.harness import agents
from tests.harness.contract import call_and_check
from tests.conftest import ADMIN_KEY, base_config, truth
from tests.faults.matrix import fault
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SPEC = Path(__file__).resolve().parents[2] / "docs" / "admin-api.yaml"
RAW: Dict[str, Any] = yaml.safe_load(SPEC.read_text(encoding="utf-8"))

PROGRESS = "/admin/api/progress"
EXPORT = "/admin/api/export"
LABELS = "/admin/api/labels"
CODEBOOK = "/admin/api/codebook"
JUDGES = "/admin/api/judge-calibration"
TRAINING = "/admin/training/api"
BACKENDS = f"{TRAINING}/backends"
CHECK = f"{TRAINING}/backends/{{name}}/check"
AGENTS = f"{TRAINING}/agents"
TRAINERS = f"{TRAINING}/trainers"
RUNS = f"{TRAINING}/runs"
CURVE = f"{TRAINING}/learning-curve"
ACTIVE = f"{TRAINING}/active-learning"
RUN = f"{RUNS}/{{run_id}}"
CANCEL = f"{RUN}/cancel"
LOG = f"{RUN}/log"
EVENTS = f"{RUN}/events"
SUGGESTIONS = f"{RUN}/suggestions"
PUSH = f"{RUN}/push"
PLAIN_ROUTES = [(PROGRESS, "GET"), (EXPORT, "GET"), (LABELS, "GET"), (LABELS, "POST"), (CODEBOOK, "GET"),
                (BACKENDS, "GET"),
                (CHECK, "POST"), (AGENTS, "GET"), (TRAINERS, "GET"), (RUNS, "GET"), (RUNS, "POST"), (CURVE, "GET"),
                (ACTIVE, "GET")]
RUN_ROUTES = [(RUN, "GET"), (CANCEL, "POST"), (LOG, "GET"), (EVENTS, "GET"), (SUGGESTIONS, "GET")]
PUSH_ROUTES = [(PUSH, "GET"), (PUSH, "POST")]
"""Pushing to the Hugging Face Hub: no run of the test project can be pushed (its model stayed on the
agent's machine, or it has not succeeded), so a push is refused (409) whatever the request."""
JUDGE_ROUTES = [(JUDGES, "GET"), (f"{JUDGES}/run", "POST"), (f"{JUDGES}/report", "POST")]
"""judge_calibration's: the test project has none, so each answers its documented 404 whatever the request
(tests/e2e/test_judge_calibration.py runs them on a project that has judges)."""
ROUTES = PLAIN_ROUTES + RUN_ROUTES + PUSH_ROUTES + JUDGE_ROUTES
STRICT_BODIES = [(LABELS, "POST"), (RUNS, "POST")]
"""The routes that take a body; the server checks it, so invalid bodies (negative generation) must be refused."""

EXAMPLES = 80
REFUSED_EXAMPLES = 10
"""Fewer for requests refused before the route reads anything (no key, a wrong key)."""
AGENT_V1 = "/training/agent/v1"
THROTTLE_LIMIT = 10

SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def test_the_contract_covers_every_admin_api_route(make_project: Callable[..., Path]) -> None:
    """Every route under /admin/api and /admin/training/api is in the contract (and in ROUTES below),
    and the contract has no route the server lacks."""
    from potato.server import close_app, create_app

    config = load_config(make_project(n_items=4, model_training={"enabled": True}))
    app = create_app(config, {"TESTING": True, "POTATO_NO_DISPATCHER": True})
    try:
        served = {(re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule), method)
                  for rule in app.url_map.iter_rules()
                  if rule.rule.startswith(("/admin/api/", "/admin/training/api/"))
                  for method in rule.methods - {"HEAD", "OPTIONS"}}
    finally:
        close_app(app)
    documented = {(path, method.upper()) for path, ops in RAW["paths"].items() for method in ops
                  if method in ("get", "post", "put", "patch", "delete")}
    assert documented == served == set(ROUTES)
    schemathesis.openapi.from_path(SPEC)  # the file as written loads as OpenAPI


# -- the contract, narrowed to the test project -----------------------------------------------------

def label_schema(scheme: Scheme) -> Dict[str, Any]:
    """What ``scheme.accepts`` takes, as JSON Schema (the kinds the test project has)."""
    if scheme.annotation_type in CHOICE_TYPES:
        return {"type": "string", "enum": list(scheme.labels)}
    if scheme.annotation_type is SchemeType.MULTISELECT:
        return {"type": "array", "uniqueItems": True, "items": {"type": "string", "enum": list(scheme.labels)}}
    if scheme.annotation_type is SchemeType.TEXT and not scheme.labels:
        return {"type": "string", "maxLength": scheme.max_length}
    raise NotImplementedError(scheme.annotation_type)


def project_schema(config: Config, item_ids: List[str], source_run: str) -> Any:
    """docs/admin-api.yaml with this project's names in place of the general ones."""
    raw = copy.deepcopy(RAW)
    schemas = raw["components"]["schemas"]
    backends = list(config.model_training.all_backends())
    trainable = [s.name for s in config.annotation_schemes if s.training_type]
    schemas["BackendName"] = {"type": "string", "enum": backends}
    schemas["TrainableSchema"] = {"type": "string", "enum": trainable}
    schemas["DefaultTrainerParams"] = {"$ref": {
        "sklearn-text-classification": "#/components/schemas/SklearnParams",
        "noop": "#/components/schemas/NoopParams"}[config.model_training.trainer]}
    schemas["SourceRun"] = {"type": "string", "enum": [source_run], "nullable": True}
    schemas["LabelEntry"] = {"anyOf": [
        {"type": "object", "required": ["id", "schema", "label"],
         "properties": {"id": {"type": "string", "enum": item_ids},
                        "schema": {"type": "string", "enum": [scheme.name]},
                        "label": label_schema(scheme)}}
        for scheme in config.annotation_schemes]}
    schema = schemathesis.openapi.from_dict(raw)
    # Keys are given per request below; NUL bytes only make `requests` refuse to send a header.
    schema.config.generation.update(with_security_parameters=False, allow_x00=False)
    # Valid requests are accepted, apart from an unknown run id (404) and the refusals this test asks for.
    schema.config.checks.positive_data_acceptance.expected_statuses = ["2xx", "401", "404", "429"]
    return schema


# -- the live server --------------------------------------------------------------------------------

_addresses = itertools.count(1)


def fresh_address() -> str:
    """A client address no other request of this session used (the throttle counts per address)."""
    n = next(_addresses)
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


@dataclass
class Live:
    srv: ServerProcess
    config_path: Path
    config: Config
    schema: Any
    succeeded: str
    queued: str

    @property
    def url(self) -> str:
        return self.srv.url

    @property
    def output_dir(self) -> Path:
        return self.config_path.parent / "annotation_output"

    def headers(self, key: Optional[str], address: Optional[str] = None) -> Dict[str, str]:
        """The request's credentials, from an address of its own unless one is given."""
        out = {"X-Forwarded-For": address or fresh_address()}
        if key is not None:
            out["X-API-Key"] = key
        return out

    def admin(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, self.url + path, headers=self.headers(ADMIN_KEY), timeout=30, **kwargs)


def register(config_path: Path) -> str:
    return agents.register(config_path, "lab")[1]


def hold_dispatcher_lock(config: Config) -> IO[str]:
    """Take the lock the server's dispatcher needs before it starts any run: nothing trains."""
    path = config.training_dir / "dispatcher.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = path.open("a+")
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fh


def succeeded_run(url: str, backend_token: str, item_ids: List[str]) -> str:
    """A noop run on the agent backend, reported as an agent would: events, predictions, result."""
    admin = {"X-API-Key": ADMIN_KEY}
    r = requests.post(f"{url}{RUNS}", headers=admin, timeout=30,
                      json={"trainer": "noop", "schemas": ["sentiment", "aspects"], "backend": "lab"})
    assert r.status_code == 201, r.text
    run_id = str(r.json()["id"])
    r = requests.post(f"{url}{AGENT_V1}/jobs/next", timeout=30, headers={"Authorization": f"Bearer {backend_token}"},
                      json={"backend": "lab", "agent": {"id": "fuzz", "host": "fuzz"}, "wait_s": 0})
    assert r.status_code == 200 and r.json()["run_id"] == run_id, r.text
    bearer = {"Authorization": f"Bearer {r.json()['run_token']}"}
    events = [{"t": 1.0, "type": "step", "text": "training"},
              {"t": 2.0, "type": "progress", "step": 1, "total": 1, "loss": 0.5}]
    r = requests.post(f"{url}{AGENT_V1}/runs/{run_id}/events", headers=bearer, timeout=30,
                      json={"seq": 0, "events": events, "log": ["agent line"]})
    assert r.status_code == 200, r.text
    lines = "".join(json.dumps({"item_id": i, "schema": "sentiment", "label": truth(i), "confidence": 0.9}) + "\n"
                    + json.dumps({"item_id": i, "schema": "aspects", "label": ["price"], "confidence": 0.8}) + "\n"
                    for i in item_ids)  # both schemas it trained, as a calibration of it needs
    r = requests.put(f"{url}{AGENT_V1}/runs/{run_id}/predictions", headers=bearer, timeout=30,
                     data=lines.encode())
    assert r.status_code == 200, r.text
    r = requests.post(f"{url}{AGENT_V1}/runs/{run_id}/result", headers=bearer, timeout=30,
                      json={"exit_code": 0, "result": {"status": "succeeded", "metrics": {"holdout_accuracy": 1.0}}})
    assert r.status_code == 200 and r.json() == {"state": "succeeded"}, r.text
    return run_id


@pytest.fixture
def live(make_project: Callable[..., Path]) -> Iterator[Live]:
    # The aspects are a codebook, so /admin/api/codebook has one to give.
    schemes = [{**s, "codebook": True} if s["name"] == "aspects" else s for s in base_config()["annotation_schemes"]]
    config_path = make_project(n_items=12, trust_proxy=True, annotation_schemes=schemes, codebook_mode="extensible",
                               model_training={
        "enabled": True,
        "backends": {"lab": {"type": "agent"}},
        "writeback": {"schemas": ["sentiment"], "include_unlabeled": True},
    })
    config = load_config(config_path)
    token = register(config_path)
    lock = hold_dispatcher_lock(config)
    # One worker with 4 threads: a small footprint on a 2-core machine.
    srv = ServerProcess(config_path, extra_args=["--workers", "1", "--threads", "4"]).start()
    try:
        item_ids = [f"r{i:03d}" for i in range(12)]
        labels = [{"id": i, "schema": "sentiment", "label": truth(i)} for i in item_ids[:8]]
        r = requests.post(srv.url + LABELS, json={"user": "gold", "labels": labels}, timeout=30,
                          headers={"X-API-Key": ADMIN_KEY})
        assert r.status_code == 200, r.text
        succeeded = succeeded_run(srv.url, token, item_ids)
        r = requests.post(srv.url + RUNS, json={"trainer": "noop", "backend": "lab"}, timeout=30,
                          headers={"X-API-Key": ADMIN_KEY})
        assert r.status_code == 201, r.text
        yield Live(srv, config_path, config, project_schema(config, item_ids, succeeded), succeeded,
                   str(r.json()["id"]))
    finally:
        srv.stop()
        lock.close()


# -- sending and checking ---------------------------------------------------------------------------

def send_refused_for_the_run(live: Live, case: schemathesis.Case, headers: Dict[str, str]) -> Any:
    """A valid request that the route refuses for the run's sake, whatever the request (a push of a run
    whose model is not on the server): every check but "valid data is accepted"."""
    try:
        return case.call_and_validate(base_url=live.url, headers=headers, timeout=60,
                                      excluded_checks=[schemathesis.checks.positive_data_acceptance])
    except Exception as exc:
        raise AssertionError(f"{exc}\n--- {live.srv.log_path} (tail) ---\n{live.srv.output()[-4000:]}") from exc


def fuzz_pushes(live: Live, examples: int) -> List[int]:
    """The push routes on the real runs: the state says why not (200), a push is refused (409), an
    invalid body too (400 or 409); on generated run ids 404."""
    seen: List[int] = []
    for run_id in (live.succeeded, live.queued):
        params = {"run_id": run_id}
        seen += fuzz(live, PUSH, "GET", GenerationMode.POSITIVE, ADMIN_KEY, params, examples=examples, expect={200})
        seen += fuzz(live, PUSH, "POST", GenerationMode.POSITIVE, ADMIN_KEY, params, examples=examples,
                     expect={409}, sender=send_refused_for_the_run)
        seen += fuzz(live, PUSH, "POST", GenerationMode.NEGATIVE, ADMIN_KEY, params, examples=examples,
                     expect={400, 409}, sender=send_refused_for_the_run)  # some "invalid" bodies are valid
    for path, method in PUSH_ROUTES:
        seen += fuzz(live, path, method, GenerationMode.POSITIVE, ADMIN_KEY, examples=REFUSED_EXAMPLES, expect={404})
    return seen


def send(live: Live, case: schemathesis.Case, headers: Dict[str, str]) -> Any:
    return call_and_check(live.srv, case, headers)


def fuzz(live: Live, path: str, method: str, mode: GenerationMode, key: Optional[str],
         path_parameters: Optional[Dict[str, str]] = None, examples: int = EXAMPLES,
         expect: Optional[Set[int]] = None, sender: Callable[..., Any] = send) -> List[int]:
    """Up to ``examples`` generated requests to one route, each from an address of its own, with
    ``key`` (None: no header); the status codes seen, each one in ``expect`` when given."""
    operation = live.schema[path][method]
    strategy = operation.as_strategy(mode, path_parameters=path_parameters)
    seen: List[int] = []

    @settings(SETTINGS, max_examples=examples)
    @given(case=strategy)
    def one(case: schemathesis.Case) -> None:
        body: Any = case.body
        if (path, method) == (LABELS, "POST") and mode is GenerationMode.POSITIVE and isinstance(body, dict) \
                and isinstance(body.get("user"), str) and clean_user_name(body["user"]) is None:
            # A valid name is 1 to 64 printable characters once whitespace is collapsed, which
            # JSON Schema cannot say (UserName in the contract describes it).
            body["user"] = "fuzz annotator"
        headers = live.headers(key)
        response = sender(live, case, headers)
        seen.append(response.status_code)
        if expect is not None:
            assert response.status_code in expect, (
                f"{method} {path} answered {response.status_code}, not one of {sorted(expect)}: "
                f"{response.text[:300]}\n{case.as_curl_command(headers=headers, base_url=live.url)}")

    one()
    return seen


def statuses_of(live: Live, key: Optional[str], expect: Set[int], examples: int,
                modes: tuple = (GenerationMode.POSITIVE,)) -> List[int]:
    """Every route, with ``key``, on a real run and on generated run ids."""
    seen: List[int] = []
    for path, method in ROUTES:
        for mode in modes:
            if mode is GenerationMode.NEGATIVE and (path, method) not in STRICT_BODIES:
                continue
            params = {"run_id": live.queued} if (path, method) in RUN_ROUTES else None
            seen += fuzz(live, path, method, mode, key, params, examples=examples, expect=expect)
    return seen


def run_states(live: Live) -> Dict[str, str]:
    conn = sqlite3.connect(f"file:{live.output_dir / 'potato.sqlite3'}?mode=ro", uri=True, timeout=10)
    try:
        return dict(conn.execute("SELECT id, state FROM runs").fetchall())
    finally:
        conn.close()


def snapshot(live: Live) -> Dict[str, Any]:
    """What the refused requests must leave alone: the labels, annotators, runs, suggestions and the
    runs' files (the throttle's own table is expected to count the wrong keys)."""
    conn = sqlite3.connect(f"file:{live.output_dir / 'potato.sqlite3'}?mode=ro", uri=True, timeout=10)
    try:
        tables = {table: sorted(map(tuple, conn.execute(f"SELECT * FROM {table}").fetchall()), key=repr)
                  for table in ("labels", "users", "runs", "suggestions", "meta")}
    finally:
        conn.close()
    runs_dir = live.output_dir / "training" / "runs"
    files = {str(p.relative_to(runs_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(runs_dir.rglob("*")) if p.is_file()}
    return {"tables": tables, "files": files}


def throttle_one_address(live: Live) -> str:
    """Ten wrong keys from one address (each a 401), then the eleventh is a 429 with Retry-After."""
    address = fresh_address()
    wrong = live.headers("not-the-admin-key", address)
    for i in range(THROTTLE_LIMIT + 1):
        response = send(live, live.schema[PROGRESS]["GET"].Case(), wrong)
        expected = 401 if i < THROTTLE_LIMIT else 429
        assert response.status_code == expected, (i, response.status_code, response.text)
    assert 1 <= int(response.headers["retry-after"][0]) <= 300
    return address


# -- the tests --------------------------------------------------------------------------------------

@fault("Annotators and the server",
       "Generated requests (schemathesis) on every admin API route, valid and invalid, with the key, a wrong key "
       "and none",
       "Every answer is documented (docs/admin-api.yaml): never a 5xx, the right status, content type and headers; "
       "without the right key always 401, and 429 after 10 wrong keys from one address",
       "The documented JSON answers and errors")
def test_every_route_answers_as_documented(live: Live) -> None:
    schema = live.schema
    own = live.headers(ADMIN_KEY)

    # The seeded data, read back through the contract.
    response = send(live, schema[RUN]["GET"].Case(path_parameters={"run_id": live.succeeded}), own)
    assert response.json()["state"] == "succeeded" and "Run succeeded" in response.json()["log_tail"]
    response = send(live, schema[EVENTS]["GET"].Case(path_parameters={"run_id": live.succeeded},
                                                      query={"after": "1"}), own)
    assert response.json()["next"] == 2 and [e["type"] for e in response.json()["events"]] == ["progress"]
    response = send(live, schema[SUGGESTIONS]["GET"].Case(path_parameters={"run_id": live.succeeded}), own)
    assert response.json()["count"] == 12 and response.json()["shown"]["sentiment"]["run_id"] == live.succeeded
    response = send(live, schema[SUGGESTIONS]["GET"].Case(path_parameters={"run_id": live.succeeded},
                                                          query={"format": "jsonl"}), own)
    assert response.headers["content-type"][0] == "application/x-ndjson"
    assert len(response.text.splitlines()) == 12
    response = send(live, schema[EXPORT]["GET"].Case(), own)
    assert len(response.text.splitlines()) == 8
    # The documented refusals of a valid-looking request.
    response = send(live, schema[CHECK]["POST"].Case(path_parameters={"name": "nowhere"}), own)
    assert response.status_code == 409 and "lab" in response.json()["error"]
    response = send(live, schema[RUNS]["POST"].Case(body={"trainer": "noop", "backend": "nowhere"}), own)
    assert response.status_code == 409 and response.json()["backends"] == ["local", "lab"]
    response = send(live, schema[LABELS]["POST"].Case(
        body={"user": "gold", "labels": [{"id": "r000", "schema": "sentiment", "label": "maybe"}]}), own)
    assert response.status_code == 400 and len(response.json()["problems"]) == 1

    # Every route fuzzed with the key: valid requests on the real runs and on generated run ids,
    # invalid bodies where the route takes one.
    accepted = {200, 201, 202}
    for path, method in ROUTES:
        if (path, method) in PUSH_ROUTES:
            continue  # fuzz_pushes below
        if (path, method) in JUDGE_ROUTES:
            fuzz(live, path, method, GenerationMode.POSITIVE, ADMIN_KEY, examples=REFUSED_EXAMPLES, expect={404})
            continue
        if (path, method) in STRICT_BODIES:
            fuzz(live, path, method, GenerationMode.NEGATIVE, ADMIN_KEY, expect={400, 409})
        if (path, method) in RUN_ROUTES:
            for run_id in (live.succeeded, live.queued):
                fuzz(live, path, method, GenerationMode.POSITIVE, ADMIN_KEY, {"run_id": run_id}, expect=accepted)
            fuzz(live, path, method, GenerationMode.POSITIVE, ADMIN_KEY, examples=REFUSED_EXAMPLES, expect={404})
        else:
            fuzz(live, path, method, GenerationMode.POSITIVE, ADMIN_KEY, expect=accepted)
    state = send(live, schema[PUSH]["GET"].Case(path_parameters={"run_id": live.succeeded}), own).json()
    assert state["can_push"] is False and "agent backend 'lab'" in state["blocked"]
    fuzz_pushes(live, EXAMPLES)

    # Without the key, and with a wrong one: 401 on every route, whatever the request.
    statuses_of(live, None, {401}, REFUSED_EXAMPLES, (GenerationMode.POSITIVE, GenerationMode.NEGATIVE))
    statuses_of(live, "not-the-admin-key", {401}, REFUSED_EXAMPLES)

    # The throttle: after 10 wrong keys an address gets 429 even with the right key; others do not.
    address = throttle_one_address(live)
    response = send(live, schema[PROGRESS]["GET"].Case(), live.headers(ADMIN_KEY, address))
    assert response.status_code == 429
    assert send(live, schema[PROGRESS]["GET"].Case(), live.headers(ADMIN_KEY)).status_code == 200

    # The queued runs the valid requests made are cancelled; none ever started.
    states = run_states(live)
    assert states[live.succeeded] == "succeeded"
    assert set(states.values()) <= {"queued", "cancelled", "succeeded"}, states
    for run_id, state in states.items():
        if state == "queued":
            response = send(live, schema[CANCEL]["POST"].Case(path_parameters={"run_id": run_id}),
                            live.headers(ADMIN_KEY))
            assert response.status_code == 202 and response.json()["state"] == "cancelled"
    assert "queued" not in run_states(live).values()


@fault("Annotators and the server",
       "Refused requests on every admin API route: no key, wrong keys, a throttled address, another site's "
       "origin, invalid bodies, unknown runs",
       "The labels, runs, suggestions and run files stay as they were",
       "401, 429, 403, 400, 409 or 404 as documented",
       "nothing")
def test_refused_requests_change_nothing(live: Live) -> None:
    schema = live.schema
    before = snapshot(live)
    statuses: List[int] = []

    # No key, and wrong keys, on every route: valid and invalid requests alike are 401.
    statuses += statuses_of(live, None, {401}, EXAMPLES, (GenerationMode.POSITIVE, GenerationMode.NEGATIVE))
    statuses += statuses_of(live, "not-the-admin-key", {401}, REFUSED_EXAMPLES,
                            (GenerationMode.POSITIVE, GenerationMode.NEGATIVE))
    # A write from another site's page, riding on a browser's cookie: refused before anything else.
    writes: List[tuple] = [(LABELS, "POST", {"body": {"user": "x", "labels": []}}),
                           (RUNS, "POST", {"body": {"trainer": "noop", "backend": "lab"}}),
                           (CANCEL, "POST", {"path_parameters": {"run_id": live.queued}}),
                           (CHECK, "POST", {"path_parameters": {"name": "lab"}})]
    for path, method, kwargs in writes:
        headers = {**live.headers(None), "Origin": "https://elsewhere.example"}
        response = send(live, schema[path][method].Case(**kwargs), headers)
        assert response.status_code == 403, (path, response.text)
        statuses.append(403)
    # The key with invalid bodies, and with unknown runs.
    for path, method in STRICT_BODIES:
        statuses += fuzz(live, path, method, GenerationMode.NEGATIVE, ADMIN_KEY, expect={400, 409})
    for path, method in RUN_ROUTES:
        statuses += fuzz(live, path, method, GenerationMode.POSITIVE, ADMIN_KEY, examples=REFUSED_EXAMPLES,
                         expect={404})
    statuses += fuzz_pushes(live, REFUSED_EXAMPLES)  # refused pushes leave the runs' files alone
    # A throttled address: even the right key and valid requests are refused.
    address = throttle_one_address(live)
    throttled = live.headers(ADMIN_KEY, address)
    for case in [schema[LABELS]["POST"].Case(body={"user": "gold", "labels": [
                     {"id": "r000", "schema": "sentiment", "label": "negative"}]}),
                 schema[RUNS]["POST"].Case(body={"trainer": "noop", "backend": "lab"}),
                 schema[CANCEL]["POST"].Case(path_parameters={"run_id": live.queued})]:
        response = send(live, case, throttled)
        assert response.status_code == 429, response.text
        statuses.append(429)
    assert {400, 401, 403, 404, 409, 429} <= set(statuses)

    assert snapshot(live) == before
    assert run_states(live)[live.queued] == "queued"
