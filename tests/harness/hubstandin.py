"""A stand-in for the Hugging Face Hub on loopback: the HTTP calls huggingface_hub (2.4) makes for
``create_repo`` and ``create_commit``, and what was committed, for tests to read back.

The real client is pointed at it with ``HF_ENDPOINT``. It answers the calls a push makes and nothing
else: ``POST /api/repos/create``, ``POST /api/validate-yaml`` (the model card's metadata must be a YAML
mapping), ``POST /api/models/<repo>/preupload/<rev>`` (every file as a regular git blob: tests keep
their model files small, so no LFS upload is needed), ``POST /api/models/<repo>/commit/<rev>`` (the
ndjson commit), ``GET /api/whoami-v2`` and ``GET /api/agent-harnesses`` (the client's own lookup for
its user-agent, asked without a token). Any other request is a 404 and is kept in ``unexpected``,
so a test sees when the client started asking for something new.

Only ``token`` is accepted (a wrong one is a 401, as the Hub answers a revoked token);
``fail_commit`` makes the commit endpoint answer 500 (nothing is committed), ``commit_delay_s`` makes it
slow, and ``redirect`` = (status, path) answers every API call with that redirect to ``path`` on the
stand-in, where a page that is not the Hub's API answers 200 (a Hub address that moved, a proxy's
sign-in page): what a client gets when it follows a redirect off the API. Every request's
``Authorization`` header is kept in ``auth_headers`` so a test can check the token only travelled there.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

import yaml

USER = "potato-tester"
"""The account the accepted token belongs to: a repo name without a namespace goes there."""

_REPO_CALL = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/(?P<call>preupload|commit)/(?P<rev>[^/?]+)$")


@dataclass
class Commit:
    repo_id: str
    revision: str
    summary: str
    description: str
    files: Dict[str, bytes]
    oid: str


@dataclass
class Repo:
    repo_id: str
    private: bool
    commits: List[Commit] = field(default_factory=list)


class HubStandIn:
    """``with HubStandIn(token) as hub:`` serves on ``hub.url`` until the block ends."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.fail_commit = False
        self.commit_delay_s = 0.0
        """How long the commit endpoint waits before it answers (a push that is still under way)."""
        self.redirect: Optional[Tuple[int, str]] = None
        """(status, path): every API call is answered with this redirect; ``path`` answers 200 with
        a JSON object that is not one the Hub sends."""
        self.repos: Dict[str, Repo] = {}
        self.requests: List[Tuple[str, str]] = []
        self.unexpected: List[Tuple[str, str]] = []
        self.auth_headers: List[str] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="hub-standin", daemon=True)

    def __enter__(self) -> HubStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def commits(self) -> List[Commit]:
        with self.lock:
            return [c for repo in self.repos.values() for c in repo.commits]

    # -- the calls ------------------------------------------------------------------------------

    def answer(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> Tuple[int, Dict[str, str], Any]:
        """(status, extra headers, JSON body) for one request."""
        path = path.split("?", 1)[0]
        with self.lock:
            self.requests.append((method, path))
            if "authorization" in headers:
                self.auth_headers.append(headers["authorization"])
        if method == "GET" and path == "/api/agent-harnesses":  # the client's best-effort user-agent lookup
            return 200, {}, {"standardEnvVars": [], "harnesses": {}}
        if self.redirect is not None:
            status, location = self.redirect
            if path == location:
                return 200, {}, {"page": "Sign in to continue"}
            return status, {"Location": f"{self.url}{location}"}, {"error": "Moved"}
        if headers.get("authorization") != f"Bearer {self.token}":
            # What the Hub answers a revoked or mistyped token.
            return 401, {"X-Error-Message": "Invalid credentials in Authorization header"}, {
                "error": "Invalid credentials in Authorization header"}
        if method == "GET" and path == "/api/whoami-v2":
            return 200, {}, {"type": "user", "name": USER, "auth": {"accessToken": {"role": "write"}}}
        if method == "POST" and path == "/api/repos/create":
            return self._create(json.loads(body or b"{}"))
        if method == "POST" and path == "/api/validate-yaml":
            return self._validate_yaml(json.loads(body or b"{}"))
        match = _REPO_CALL.match(path)
        if method == "POST" and match:
            repo_id, call, revision = match["repo"], match["call"], match["rev"]
            with self.lock:
                repo = self.repos.get(repo_id)
            if repo is None:
                return 404, {"X-Error-Code": "RepoNotFound"}, {"error": "Repository not found"}
            if call == "preupload":
                files = json.loads(body)["files"]
                return 200, {}, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                                            "oid": None} for f in files]}
            return self._commit(repo, revision, body)
        with self.lock:
            self.unexpected.append((method, path))
        return 404, {}, {"error": f"The stand-in Hub does not serve {method} {path}"}

    def _create(self, payload: Dict[str, Any]) -> Tuple[int, Dict[str, str], Any]:
        name, namespace = payload.get("name"), payload.get("organization") or USER
        if not isinstance(name, str) or not re.fullmatch(r"[\w][\w.-]*", name) or len(name) > 96:
            return 400, {}, {"error": "Invalid repo name"}
        repo_id = f"{namespace}/{name}"
        with self.lock:
            if repo_id in self.repos:
                return 409, {}, {"error": "You already created this model repo", "url": f"{self.url}/{repo_id}"}
            self.repos[repo_id] = Repo(repo_id, payload.get("visibility") == "private" or bool(payload.get("private")))
        return 200, {}, {"url": f"{self.url}/{repo_id}", "name": repo_id, "id": hashlib.sha1(repo_id.encode()).hexdigest()}

    def _validate_yaml(self, payload: Dict[str, Any]) -> Tuple[int, Dict[str, str], Any]:
        content = str(payload.get("content", ""))
        match = re.match(r"^---\n(.*?)\n---\n", content, re.S)
        try:
            meta = yaml.safe_load(match[1]) if match else None
        except yaml.YAMLError as exc:
            return 400, {}, {"errors": [{"message": f"not YAML: {exc}"}]}
        if not isinstance(meta, dict):
            return 400, {}, {"errors": [{"message": "README.md has no YAML metadata block"}]}
        return 200, {}, {"errors": [], "warnings": []}

    def _commit(self, repo: Repo, revision: str, body: bytes) -> Tuple[int, Dict[str, str], Any]:
        time.sleep(self.commit_delay_s)
        if self.fail_commit:
            return 500, {}, {"error": "Internal Error - We're working hard to fix this as soon as possible!"}
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        files: Dict[str, bytes] = {}
        for line in lines:
            if line["key"] == "file":
                value = line["value"]
                raw = value["content"]
                files[value["path"]] = base64.b64decode(raw) if value.get("encoding") == "base64" else raw.encode()
            elif line["key"] != "header":
                return 400, {}, {"error": f"the stand-in takes regular files only, not {line['key']}"}
        oid = hashlib.sha1(body).hexdigest()
        with self.lock:
            repo.commits.append(Commit(repo.repo_id, revision, header["summary"], header.get("description", ""),
                                       files, oid))
        return 200, {}, {"commitUrl": f"{self.url}/{repo.repo_id}/commit/{oid}", "commitOid": oid,
                         "success": True, "pullRequestUrl": None}

    def _handler(self) -> type:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra, payload = hub.answer(self.command, self.path, headers, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_HEAD = _serve

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                """Quiet: pytest shows what a test asserts."""

        return Handler


def card_metadata(readme: bytes) -> Optional[Dict[str, Any]]:
    """The YAML block at the top of a model card, as the Hub reads it."""
    match = re.match(r"^---\n(.*?)\n---\n", readme.decode("utf-8"), re.S)
    meta = yaml.safe_load(match[1]) if match else None
    return meta if isinstance(meta, dict) else None
