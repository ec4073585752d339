"""The agent protocol's routes under ``/training/agent/v1/``.

docs/agent-protocol.yaml (OpenAPI) is the contract; docs/agent-protocol.md explains it. Any
authenticated request is a heartbeat. A backend token opens ``jobs/next`` for its backend; a
run token opens that run's routes only (403 on any other run's). The server never starts or
stops a worker here: it records what the agent reports, through :class:`RunRecorder`.

This module reads each request, checks its token and answers its errors (every error ``code`` of the
protocol is answered here, where tests/unit/test_agent_error_codes_contract.py collects them); the
long poll of ``jobs/next`` is :mod:`long_poll`, the bodies of its answers :mod:`replies`, the
bundle's ``Range`` header :mod:`ranges`, an upload's bytes on their way to disk :mod:`upload_stream`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, NoReturn

from flask import Blueprint, Flask, Response, abort, current_app, jsonify, make_response, request, send_file
from werkzeug.exceptions import RequestedRangeNotSatisfiable

import potato
from potato.server.jsonio import strict_loads
from potato.server.training.agent_protocol import wheel
from potato.server.training.agent_protocol.long_poll import wait_for_job
from potato.server.training.agent_protocol.ranges import byte_range
from potato.server.training.agent_protocol.replies import cancel_reply, give_back, job_reply, left_mid_run_message
from potato.server.training.agent_protocol.upload_stream import stream_to_file
from potato.server.training.runs import quota
from potato.server.context import Project, current_project
from potato.server.training.backends import Backend, Results, backends_of
from potato.server.training.runs.modelplace import ModelPlace
from potato.server.training.runs.recorder import RunRecorder, ReportAhead, WriteRateExceeded
from potato.server.training.runs.store import Run, RunState, RunStore
from potato.server.training.runs.tokens import (
    UNNAMED,
    BackendTokens,
    TokenStanding,
    agent_id_of,
    agent_info,
    same_hash,
    token_hash,
)
from potato.training.agent.protocol import EMPTY_UPLOAD, LONG_POLL_MAX_S, predictions_problem
from potato.training.job.results import Reason
from potato.training.launch.supervise import Stop

log = logging.getLogger(__name__)

bp = Blueprint("agent_api", __name__, url_prefix="/training/agent/v1")

MAX_EVENTS = 5000
MAX_SEQ = 2**53
"""Events a run may number (``seq`` + batch length at most this): far beyond any run, and exact in
every JSON reader and in SQLite."""
PREDICTIONS_UPLOAD = "predictions.upload.jsonl"


def _fail(status: int, message: str, code: str = "") -> NoReturn:
    abort(make_response(jsonify(error=message, code=code), status))


def _bearer() -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        _fail(401, "Send the token as 'Authorization: Bearer <token>'.", "no_token")
    return token.strip()


def _store() -> RunStore:
    store: RunStore = current_app.extensions["potato.runs"]
    return store


def _tokens() -> BackendTokens:
    tokens: BackendTokens = current_app.extensions["potato.agent_tokens"]
    return tokens


def _body() -> dict[str, Any]:
    """The request's JSON object, read as strictly as every other route's (jsonio): ``NaN`` and
    ``Infinity``, lone surrogates (text SQLite and UTF-8 files refuse) and deep nesting are 400s,
    before anything is recorded or a token is looked up."""
    try:
        body = strict_loads(request.get_data(cache=False) or b"null")
    except ValueError as exc:  # BadJson, JSONDecodeError and UnicodeDecodeError alike
        _fail(400, f"Send a JSON object (Content-Type: application/json): {str(exc)[:200]}.", "bad_request")
    if not isinstance(body, dict):
        _fail(400, "Send a JSON object (Content-Type: application/json).", "bad_request")
    return body


def register_command(backend: str) -> str:
    return f"potato training register {backend} config.yaml"


# -- jobs/next: an agent asks for work ----------------------------------------------------------

@bp.post("/jobs/next")
def jobs_next() -> Any:
    token = _bearer()
    body = _body()
    project = current_project()
    backend = _agent_backend(project, token, body)
    raw_agent = body.get("agent")
    agent: dict[str, Any] = raw_agent if isinstance(raw_agent, dict) else {}
    too_old = wheel.agent_too_old(agent.get("version"), request.url_root)
    if too_old:
        _fail(426, too_old, "agent_too_old")
    agent_id = agent_id_of(agent)
    host = str(agent.get("host") or request.remote_addr or "unknown")[:255]
    tokens = _tokens()
    tokens.seen(backend, agent_info(agent))
    try:
        wait = min(LONG_POLL_MAX_S, max(0.0, float(body.get("wait_s") or 0)))
    except (TypeError, ValueError, OverflowError):
        wait = 0.0
    return wait_for_job(project, _store(), tokens, backend, agent_id, host, wait)


def _agent_backend(project: Project, token: str, body: dict[str, Any]) -> str:
    """The body's ``backend``, an agent backend of this server that ``token`` is the current token of;
    else the 400 or 401 that says what to fix (``jobs/next`` and ``agents/leave`` alike).

    The token is checked first: a caller whose token is none of this server's gets the same 401
    whatever name it sends, so it cannot tell a backend that exists from one that does not (a 400 for
    an unknown name before the token was looked at told it which names exist, issue 42)."""
    backend = body.get("backend")
    name = backend if isinstance(backend, str) else ""
    tokens = _tokens()
    mine = tokens.backend_of(token)
    if mine is None:
        if name and tokens.verify(name, token) is TokenStanding.REPLACED:
            _fail(401, f"This token for backend '{name}' was replaced: the backend was registered again, which "
                       f"invalidates the old token. Get the new token from the server's admin "
                       f"(`{register_command(name)}` prints one), then restart the agent with it in "
                       "POTATO_TRAINING_TOKEN or --token-file.", "token_replaced")
        _unknown_token(name)
    backends = backends_of(project.config)
    if name not in backends or not backends[name].claimed_by_agents:
        _fail(400, f"Backend {str(backend)[:100]!r} is not an agent backend in this server's config; --backend must "
                   "be the name of a type: agent backend under model_training.backends."
                   + _agent_backends_for(mine, backends), "unknown_backend")
    if name != mine:
        _unknown_token(name)
    return name


def _unknown_token(name: str) -> NoReturn:
    """The 401 for a token that is not the current token of backend ``name`` (the caller's own word,
    echoed the same way whether such a backend exists or not)."""
    shown = name[:100] or "<backend>"
    _fail(401, f"The server does not know this token for backend '{shown}'. On the server run "
               f"`{register_command(shown)}` and start the agent with the token it prints.", "token_unknown")


# -- agents/leave: a stopping agent says so -----------------------------------------------------

@bp.post("/agents/leave")
def agents_leave() -> Any:
    """An agent's last word as it stops (Ctrl-C, SIGTERM, ``--once`` done). The check and the
    training page then say it left instead of "connected"; a long poll it left open claims no run
    (else the next run would wait for the job hand-over to time out, ``JOB_CONFIRM_S``); a job
    handed to it that it has not taken goes back to the queue now, and a run it executes without
    having reported how it ended fails now rather than after ``heartbeat_timeout_s``."""
    token = _bearer()
    body = _body()
    project = current_project()
    backend = _agent_backend(project, token, body)
    raw_agent = body.get("agent")
    agent_id = agent_id_of(raw_agent if isinstance(raw_agent, dict) else {})
    left_at = _tokens().leave(backend, agent_id)
    store = _store()
    for run in store.in_states([RunState.RUNNING]):
        if run.backend != backend or run.agent_id != agent_id:
            continue
        if not run.confirmed:
            give_back(project, store, run)
        elif agent_id != UNNAMED:  # agents without an id cannot be told apart: the heartbeat decides
            RunRecorder(project, store, run).fail(Reason.AGENT_LOST, left_mid_run_message(run))
    return jsonify(left_at=left_at)


def _agent_backends_for(mine: str, backends: dict[str, Backend]) -> str:
    """The config's agent backends, for a caller whose token is the current token of backend ``mine``
    (named first): only such a caller reaches this, never one that has shown no right to the names."""
    names = [name for name, b in backends.items() if b.claimed_by_agents]
    if mine not in names:
        return ""
    return (f" This token is for backend '{mine}': start the agent with --backend {mine}. "
            f"Agent backends: {', '.join(names)}.")


# -- the package: the exact Potato this server runs, for agents to install ----------------------

@bp.get("/package/")
def package_index() -> Any:
    """What to install: the version, the wheel's URL and the pip command (no token needed)."""
    url = request.url_root
    return jsonify(version=potato.__version__, wheel=wheel.wheel_name(), url=wheel.wheel_url(url),
                   install=wheel.agent_install_command(url, None))


@bp.get("/package/<name>")
def package_wheel(name: str) -> Any:
    if name != wheel.wheel_name():
        _fail(404, f"This server hands out {wheel.wheel_name()} (Potato {potato.__version__}), not {name[:120]}; "
                   f"GET {wheel.ROUTE}/ says what to install.", "no_such_package")
    try:
        data = wheel.wheel_bytes()
    except wheel.PackageUnavailable as exc:
        _fail(503, str(exc), "package_unavailable")
    return Response(data, mimetype="application/zip", headers={
        "Content-Disposition": f"attachment; filename={name}",
        "Cache-Control": "no-cache",  # the same name may carry other bytes after an upgrade of the server
    })


# -- one run's routes ---------------------------------------------------------------------------

def _run_for_token(run_id: str) -> Run:
    """The run ``run_id`` if the bearer token is its token: 403 for another run's token, else 401."""
    token = _bearer()
    store = _store()
    run = store.get(run_id)
    if run is not None and same_hash(run.token_hash, token):
        if run.confirmed:
            store.update(run.id, last_seen=time.time())  # the common case: a heartbeat, group-committed
            return run
        if store.confirm(run.id, token_hash(token), time.time()):  # the first use: one checked step
            return store.get(run.id) or run
    if store.by_token_hash(token_hash(token)) is not None:
        _fail(403, "This run token belongs to another run; a run token opens its own run's routes only.",
              "wrong_run")
    _fail(401, "The server does not know this run token.", "token_unknown")


def _ended(run: Run) -> NoReturn:
    _fail(409, f"Run {run.id} has already ended ({run.state.value}"
               + (f": {run.message}" if run.message else "") + ").", "run_ended")


@bp.get("/runs/<run_id>")
def run_job(run_id: str) -> Any:
    run = _run_for_token(run_id)
    if run.state.terminal:
        _ended(run)
    return job_reply(current_project(), _store(), run)


@bp.get("/runs/<run_id>/bundle")
def run_bundle(run_id: str) -> Any:
    """The bundle, with ``Range`` support (206), so a broken download resumes. werkzeug is handed
    the range as :func:`byte_range` reads it (it would answer an HTML 416 to any header it cannot
    parse); it still weighs ``If-Range`` and ``If-None-Match``. A range with no byte of the bundle is
    a JSON 416 like every other error of the protocol."""
    run = _run_for_token(run_id)
    if run.state.terminal:
        _ended(run)
    path = _store().run_dir(run.id) / "bundle.tar.gz"
    if not path.exists():
        _fail(404, "This run has no bundle.", "no_bundle")
    size = path.stat().st_size
    asked = byte_range(request.headers.get("Range"), size)
    if asked is None:
        request.environ.pop("HTTP_RANGE", None)
    elif isinstance(asked, tuple):
        request.environ["HTTP_RANGE"] = f"bytes={asked[0]}-{asked[1]}"
    else:  # one werkzeug finds unsatisfiable too, unless If-Range says to send the whole bundle
        request.environ["HTTP_RANGE"] = f"bytes={size}-"
    try:
        response = send_file(path, mimetype="application/gzip", conditional=True,
                             etag=run.bundle_sha256 or True, max_age=0)
    except RequestedRangeNotSatisfiable:
        response = make_response(jsonify(
            error=f"The range asked for holds no byte of the bundle ({size} bytes): it starts at or past the end "
                  "(the partial file is already whole, or longer), or is bytes=-0. Delete the partial file and "
                  "download the whole bundle again, without a Range header.",
            code="range_not_satisfiable"), 416)
        response.headers["Content-Range"] = f"bytes */{size}"
        return response
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post("/runs/<run_id>/events")
def run_events(run_id: str) -> Any:
    """A batch of worker events plus the agent's own lines; answers whether to stop."""
    run = _run_for_token(run_id)
    body = _body()
    seq, events, lines = body.get("seq", 0), body.get("events", []), body.get("log", [])
    if (not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(events, list)
            or not 0 <= seq <= MAX_SEQ - len(events)
            or len(events) > MAX_EVENTS or not all(isinstance(e, dict) for e in events)
            or not isinstance(lines, list) or not all(isinstance(x, str) for x in lines)):
        _fail(400, f'Send {{"seq": <index of the first event: 0, then the count already sent; seq plus the batch '
                   f'at most 2^53>, "events": [objects, at most {MAX_EVENTS}], "log": [lines]}}.', "bad_request")
    if run.state.terminal:
        _ended(run)
    project = current_project()
    store = _store()
    recorder = RunRecorder(project, store, run)
    try:
        recorder.report(seq, events, lines, time.time())
    except ReportAhead as exc:  # the events it skips first: they may be on their way (issue 33)
        abort(make_response(jsonify(error=str(exc), code="seq_gap", expected_seq=exc.have), 400))
    except WriteRateExceeded as exc:
        response = make_response(jsonify(error=str(exc), code="too_fast"), 429)
        response.headers["Retry-After"] = str(exc.wait)
        abort(response)
    except quota.DiskReserve as exc:
        recorder.fail(Reason.ERROR, str(exc))
        _fail(507, str(exc), "disk_reserve")
    return jsonify(cancel_reply(project, store.get(run.id) or run))


@bp.put("/runs/<run_id>/predictions")
def run_predictions(run_id: str) -> Any:
    """``predictions.jsonl``, streamed to disk. Over ``max_predictions_mb``: 413, and the run fails
    with a message while its events, log and the project's labels stay as they were. Shorter than its
    Content-Length, empty, or ending in a cut-off line: 400, and the run's earlier upload stays."""
    run = _run_for_token(run_id)
    if run.state.terminal:
        _ended(run)
    project = current_project()
    limit_mb = project.config.model_training.max_predictions_mb
    limit = limit_mb * 1024 * 1024
    run_dir = _store().run_dir(run.id)
    part = run_dir / (PREDICTIONS_UPLOAD + ".part")

    def too_large(size: str) -> NoReturn:
        part.unlink(missing_ok=True)
        message = (f"The predictions upload ({size}) is larger than max_predictions_mb ({limit_mb} MB); raise "
                   "model_training.max_predictions_mb, or predict fewer items (writeback.include_unlabeled: false).")
        RunRecorder(project, _store(), run).fail(Reason.ERROR, message)
        _fail(413, message, "too_large")

    length = request.content_length
    if length is not None and length > limit:
        too_large(f"{length / 1e6:.1f} MB")
    reserve_mb = project.config.model_training.disk_reserve_mb

    def into_reserve(incoming: int) -> None:
        try:
            quota.check_reserve(run_dir, incoming, reserve_mb)
        except quota.DiskReserve as exc:
            part.unlink(missing_ok=True)
            RunRecorder(project, _store(), run).fail(Reason.ERROR, str(exc))
            _fail(507, str(exc), "disk_reserve")

    into_reserve(length or 0)
    request.max_content_length = None  # bounded here, by the project's own limit
    written = stream_to_file(request.stream, part, limit, length, lambda: too_large(f"over {limit_mb} MB"),
                             into_reserve)
    if length is not None and written != length:
        part.unlink(missing_ok=True)
        _fail(400, f"The upload ended after {written} of {length} bytes; send it again.", "incomplete")
    problem = predictions_problem(part)  # an empty or cut-off upload never replaces a whole one (issue 33)
    if problem is not None:
        part.unlink(missing_ok=True)
        code, what = problem
        earlier = " The run's earlier upload stays." if (run_dir / PREDICTIONS_UPLOAD).exists() else ""
        fix = (" A run that wrote no predictions sends no upload: its result then keeps the suggestions annotators "
               "see now." if code == EMPTY_UPLOAD else "")
        _fail(400, f"The predictions upload {what}; nothing of it was kept.{earlier} Send predictions.jsonl again, "
                   f"whole.{fix}", code)
    part.replace(run_dir / PREDICTIONS_UPLOAD)
    return jsonify(received_bytes=written)


@bp.post("/runs/<run_id>/result")
def run_result(run_id: str) -> Any:
    """How the worker ended; the server finishes the run (scores, predictions, writeback)."""
    run = _run_for_token(run_id)
    body = _body()
    exit_code, result, stop_body = body.get("exit_code"), body.get("result"), body.get("stop")
    uri, lines, model = body.get("artifact_uri"), body.get("log", []), body.get("model")
    if ((exit_code is not None and (not isinstance(exit_code, int) or isinstance(exit_code, bool)))
            or (result is not None and not isinstance(result, dict))
            or (stop_body is not None and not (isinstance(stop_body, dict) and isinstance(stop_body.get("message"), str)))
            or (uri is not None and not isinstance(uri, str))
            or (model is not None and not (isinstance(model, dict) and isinstance(model.get("host"), str)
                                           and isinstance(model.get("folder"), str)))
            or not isinstance(lines, list) or not all(isinstance(x, str) for x in lines)):
        _fail(400, 'Send {"exit_code": int|null, "result": object|null, "stop": {"reason", "message"}|null, '
                   '"artifact_uri": str|null, "model": {"host", "folder"}|null, "log": [lines]}.', "bad_request")
    if run.state.terminal:
        _ended(run)
    stop = None
    if stop_body is not None:
        stop = Stop(Reason.of(stop_body.get("reason")), stop_body["message"][:2000], 0.0)
    project = current_project()
    store = _store()
    recorder = RunRecorder(project, store, run)
    recorder.agent_log(lines)
    run_dir = store.run_dir(run.id)
    predictions = run_dir / PREDICTIONS_UPLOAD
    backend = backends_of(project.config).get(run.backend)
    where = backend.results(project, run) if backend is not None else Results()
    if where.artifacts is None and uri and not where.fetch:
        stayed = ModelPlace(host=model["host"][:255], host_folder=model["folder"][:1000],
                            kept=where.kept) if model else None
        recorder.place_model(uri[:1000], stayed)
        recorder.log.write(f"Model files stay on the training machine: {uri[:1000]}")
    state = recorder.finish(exit_code, result, stop, predictions if predictions.exists() else None, where.artifacts,
                            hold_copying=where.fetch)
    if backend is not None:
        backend.finished(project, run)
    return jsonify(state=state.value)


@bp.errorhandler(500)
def internal_error(exc: Exception) -> Any:
    """An agent reads JSON, never an HTML page: an unexpected failure says so and what to do."""
    log.error("agent protocol: %s %s failed: %s", request.method, request.path, exc)
    return jsonify(error="The server failed on this request (its log says why); send it again later.",
                   code="server_error"), 500


HTTP_ERROR_CODES = {400: "bad_request", 404: "no_such_route", 405: "no_such_route", 408: "too_slow",
                    413: "too_large", 416: "range_not_satisfiable", 429: "too_fast", 507: "disk_full"}
"""The ``code`` of an error that the app answers around the routes rather than a route itself (a path
or method no route serves, a body over the app's 64 MB, a body that arrived too slowly, a full disk);
any other 4xx is ``bad_request``, any other 5xx ``server_error``."""


def error_code(status: int) -> str:
    return HTTP_ERROR_CODES.get(status) or ("server_error" if status >= 500 else "bad_request")


@bp.after_request
def json_errors(response: Response) -> Response:
    """Every error answer of the protocol is ``{"error", "code"}`` (the contract's Error), also those
    of the app's own handlers (413, 408, 507: JSON without a code) and of werkzeug (an HTML page)."""
    if response.status_code < 400:
        return response
    body = response.get_json(silent=True) if response.is_json else None
    said = body.get("error") if isinstance(body, dict) else None
    if isinstance(said, str) and isinstance(body, dict) and isinstance(body.get("code"), str):
        return response
    error = said if isinstance(said, str) else f"The server answered {response.status} to this request."
    response.set_data(json.dumps({"error": error, "code": error_code(response.status_code)}))
    response.mimetype = "application/json"
    return response


def init_app(app: Flask, long_poll_slots: int) -> None:
    project: Project = app.extensions["potato"]
    app.extensions["potato.agent_tokens"] = BackendTokens(project.db)
    app.extensions["potato.long_polls"] = threading.BoundedSemaphore(max(1, long_poll_slots))
    app.register_blueprint(bp)
