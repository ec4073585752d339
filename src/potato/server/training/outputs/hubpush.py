"""Publishing a run's model on the Hugging Face Hub: its ``artifacts/`` folder and a generated model
card, in one commit, from a thread of the server. This module holds the I/O (the pure request, card
and wording are in ``hubcard`` and ``hubmessages``): whether the model is here, the token, the push's
state file, and the thread that talks to the Hub through ``huggingface_hub``, an optional package (the
``hub`` extra); without it the server runs as ever and a push answers with the ``pip install``.

The token is read when a push starts (from ``model_training.hub.token_file``, else ``HF_TOKEN`` in the
server's environment), held in memory for that push only and handed to ``huggingface_hub`` as its
``token=`` argument; it is never written to the database, a run's folder, a log, the page, an error
message or a URL (every message is passed through :func:`redact` before it is kept).

A push's state is a file in the run's folder (``push.json``), so every gunicorn worker answers the
same; the push itself holds ``push.lock`` (``flock``) for as long as it runs, which makes pushes of
one run one at a time across workers, and tells a worker that finds ``pushing`` in the file with the
lock free that the push died with its process.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import logging
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from potato.config.schema import HubSettings
from potato.project import Project
from potato.server.training.backends import backends_of
from potato.server.training.outputs.hubcard import (
    CARD,
    CardFacts,
    PushRefused,
    PushRequest,
    SchemaFacts,
    counted,
    default_commit_message,
    default_repo_id,
    model_card,
    read_request,
)
from potato.server.training.outputs.hubmessages import (
    TOKENS_PAGE,
    hub_error_message,
    redact,
    stayed_reason,
    unreported_reason,
)
from potato.server.training.runs.modelplace import Kept
from potato.server.training.runs.recorder import RunLog
from potato.server.training.runs.store import Run, RunState, RunStore
from potato.training.job.private import write_atomic

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'potato-annotation[hub]'"
"""The extra that brings ``huggingface_hub`` (``pip install 'huggingface_hub>=0.24'`` does as well)."""
STATE_FILE = "push.json"
LOCK_FILE = "push.lock"


# -- what can be pushed ---------------------------------------------------------------------------

def model_files(folder: Path) -> list[tuple[str, Path]]:
    """(path in the repository, file) for each regular file under ``folder``, sorted. Links are never
    followed (a worker's link to a server file must not be published); the folder's own README.md
    gives way to the generated card."""
    out: list[tuple[str, Path]] = []
    if not folder.is_dir() or folder.is_symlink():
        return out
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".git"))
        for name in sorted(files):
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            if rel == CARD:
                continue
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode):
                out.append((rel, path))
    return out



def blocker(project: Project, store: RunStore, run: Run) -> str | None:
    """Why ``run`` cannot be pushed (it has not succeeded, or its model is not on this server), or None.
    Where the model is comes from the run's record; a run that recorded no place asks its backend
    whether its model files stay on the training machine."""
    if run.state is not RunState.SUCCEEDED:
        return f"Only a succeeded run's model can be pushed; run {run.id} is {run.state.value}."
    local = store.run_dir(run.id) / "artifacts"
    if run.model is not None and run.model.stayed:
        return stayed_reason(run.model, run.backend)
    if model_files(local):
        return None
    backend = backends_of(project.config).get(run.backend)
    if backend is not None and backend.results(project, run).kept is Kept.ON_AGENT:
        return unreported_reason(run.agent_host or "the training machine", run.backend)
    return (f"Run {run.id} left no model files on this server ({local} is missing or empty), so there is "
            "nothing to push; its trainer may save none.")


# -- the token ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Token:
    value: str = field(repr=False)
    source: str
    """Where it came from, for messages: never the token itself."""


def token_source(settings: HubSettings, environ: Mapping[str, str]) -> str | None:
    """Where a push would take its token from, or None when nowhere is set (pure)."""
    if settings.token_file is not None:
        return f"the file {settings.token_file} (model_training.hub.token_file)"
    if environ.get("HF_TOKEN", "").strip():
        return "HF_TOKEN in the server's environment"
    return None


def read_hub_token(settings: HubSettings, environ: Mapping[str, str]) -> Token:
    """The token for one push, read now (a rotated token file needs no restart)."""
    source = token_source(settings, environ)
    if source is None:
        raise PushRefused(409, "No Hugging Face token: set HF_TOKEN in the server's environment, or name a file "
                               "that holds one in model_training.hub.token_file (chmod 600), then restart the "
                               f"server. Create a token with write access at {TOKENS_PAGE}.")
    if settings.token_file is not None:
        try:
            value = settings.token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise PushRefused(409, f"The token file {settings.token_file} (model_training.hub.token_file) cannot be "
                                   f"read: {why}. Write a token with write access there and chmod 600 it.") from None
    else:
        value = environ.get("HF_TOKEN", "").strip()
    if not value:
        raise PushRefused(409, f"The token from {source} is empty; put a token with write access there "
                               f"(from {TOKENS_PAGE}).")
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise PushRefused(409, f"The token from {source} is not one word of text; it must hold the token alone.")
    return Token(value, source)


def token_problem(settings: HubSettings, environ: Mapping[str, str]) -> str | None:
    """Why a push started now would be refused for its token (none set, a token file that is missing,
    unreadable or empty), or None: the page turns the button off with this beside it rather than let
    the push fail. Read as a push reads it, so a token written to the file counts at once."""
    try:
        read_hub_token(settings, environ)
    except PushRefused as refused:
        return str(refused)
    return None


def hub_installed() -> bool:
    return importlib.util.find_spec("huggingface_hub") is not None


# -- the push's state ---------------------------------------------------------------------------------

def read_state(run_dir: Path) -> dict[str, Any] | None:
    """The last push of a run as recorded (None: never pushed). ``pushing`` with nobody holding the
    lock means the process that pushed ended first: that push failed."""
    try:
        state = json.loads((run_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    if state.get("state") == "pushing" and not lock_held(run_dir):
        state.update(state="failed", progress="", error="The push stopped before the Hub confirmed a commit: the "
                     "server (or its worker process) ended during it. Push again.")
    return state


def write_state(run_dir: Path, state: Mapping[str, Any]) -> None:
    """Atomically: a reader in another worker sees the old state or the new one."""
    write_atomic(run_dir / STATE_FILE, json.dumps(dict(state)))


def lock_held(run_dir: Path) -> bool:
    """Whether a push of this run is under way in some process (its lock is taken)."""
    try:
        fd = os.open(run_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def take_lock(run_dir: Path) -> int | None:
    """The push lock's descriptor, or None when another push of the run holds it; released by closing."""
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    for attempt in range(3):  # a reader's probe holds it for an instant
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            time.sleep(0.05 * (attempt + 1))
    os.close(fd)
    return None


def status(project: Project, store: RunStore, run: Run, environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """``GET .../push``: the run's last push (``idle`` when none) and what a new one would take."""
    hub = project.config.model_training.hub
    why = blocker(project, store, run)
    if why is None and not hub_installed():
        why = _not_installed()
    state = read_state(store.run_dir(run.id)) or {"state": "idle", "progress": "", "error": None}
    return {
        "state": state.get("state", "idle"),
        "progress": state.get("progress") or "",
        "error": state.get("error"),
        "repo_id": state.get("repo_id"),
        "repo_url": state.get("repo_url") if state.get("state") == "done" else None,
        "commit_url": state.get("commit_url") if state.get("state") == "done" else None,
        "private": state.get("private"),
        "files": state.get("files") or [],
        "started_at": state.get("started_at"),
        "finished_at": state.get("finished_at"),
        "default_repo_id": default_repo_id(project.config.annotation_task_name, run.trainer, hub.organization),
        "default_commit_message": default_commit_message(run),
        "can_push": why is None,
        "blocked": why,
        "token_from": token_source(hub, environ),
        "token_problem": token_problem(hub, environ),
    }


def _not_installed() -> str:
    return (f"Pushing to the Hugging Face Hub needs the huggingface_hub package on the server: {INSTALL_HINT} "
            "(or pip install 'huggingface_hub>=0.24') in the server's environment, then restart the server.")


# -- facts for the card ----------------------------------------------------------------------------------

def _labels_json(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def project_counts(project: Project, schemas: Iterable[str]) -> tuple[int, int]:
    """(labelled items, annotators) on ``schemas`` among the project's labels now (a run from before its
    bundle's were counted)."""
    wanted = set(schemas)
    items: set[str] = set()
    users: set[str] = set()
    for label in project.labels.iter_labels():
        if label.schema in wanted:
            items.add(label.item_id)
            users.add(label.user)
    return len(items), len(users)


def card_facts(project: Project, store: RunStore, run: Run, repo_id: str, files: Sequence[str]) -> CardFacts:
    run_dir = store.run_dir(run.id)
    found = _labels_json(run_dir / "artifacts").get("schemas")
    stored: dict[str, Any] = found if isinstance(found, dict) else {}
    by_name = {s.name: s for s in project.config.annotation_schemes}
    schemas = []
    for name in run.schemas:
        entry: dict[str, Any] = stored[name] if isinstance(stored.get(name), dict) else {}
        scheme = by_name.get(name)
        labels: list[Any] = entry["labels"] if isinstance(entry.get("labels"), list) else \
            list(scheme.labels if scheme else ())
        kind = entry.get("annotation_type") or (scheme.training_type if scheme else None) or "radio"
        schemas.append(SchemaFacts(name, str(kind), tuple(str(x) for x in labels)))
    base = run.params.get("base_model")
    lora = bool(run.params.get("lora"))
    for entry in stored.values():
        if isinstance(entry, dict):
            base = base or entry.get("base_model")
            lora = lora or bool(entry.get("lora"))
    counts = ((run.labelled_items, run.annotators) if run.labelled_items is not None and run.annotators is not None
              else project_counts(project, run.schemas))
    finished = time.strftime("%Y-%m-%d", time.gmtime(run.finished_at or run.created_at))
    return CardFacts(project=project.config.annotation_task_name, repo_id=repo_id, run_id=run.id,
                     trainer=run.trainer, schemas=tuple(schemas), metrics=dict(run.metrics), finished=finished,
                     files=tuple(files), base_model=str(base) if base else None, lora=lora,
                     n_items=counts[0], n_annotators=counts[1])


# -- the push -------------------------------------------------------------------------------------------

@dataclass
class Push:
    """One push in its thread: the files, the card, the token, and where its state goes."""

    run_id: str
    run_dir: Path
    request: PushRequest
    token: Token
    files: list[tuple[str, Path]]
    card: str
    lock_fd: int
    state: dict[str, Any] = field(default_factory=dict)

    def say(self, **fields: Any) -> None:
        for key in ("progress", "error"):
            if isinstance(fields.get(key), str):
                fields[key] = redact(fields[key], self.token.value)
        self.state.update(fields)
        write_state(self.run_dir, self.state)

    def run(self) -> None:
        """Create the repository if needed, then commit the model files and the card in one commit;
        ``done`` only once the Hub has confirmed that commit."""
        endpoint = "the Hugging Face Hub"
        phase = "creating the repository"
        try:
            from huggingface_hub import CommitOperationAdd, HfApi

            api = HfApi()
            endpoint = str(api.endpoint)
            self.say(progress=f"creating the repository {self.request.repo_id} on the Hub (if it is not there)")
            url = api.create_repo(self.request.repo_id, token=self.token.value, private=self.request.private,
                                  exist_ok=True)
            repo = str(getattr(url, "repo_id", None) or self.request.repo_id)
            phase = "uploading the files"
            size = sum(path.stat().st_size for _, path in self.files)
            self.say(repo_id=repo, progress=f"uploading {counted(len(self.files), 'model file')} "
                                            f"({size / 1e6:.1f} MB) and the model card to {repo} in one commit")
            operations = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(path)) for rel, path in self.files]
            operations.append(CommitOperationAdd(path_in_repo=CARD, path_or_fileobj=self.card.encode("utf-8")))
            info = api.create_commit(repo, operations=operations, commit_message=self.request.commit_message,
                                     token=self.token.value)
            oid = str(getattr(info, "oid", "") or "")
            if not oid:
                raise RuntimeError("the Hub answered the commit without a commit id")
            repo_url = str(getattr(info, "repo_url", "") or url)
            self.say(state="done", progress="", repo_url=repo_url, commit_url=str(info.commit_url), commit_oid=oid,
                     finished_at=time.time())
            RunLog(self.run_dir / "run.log").write(f"Pushed to the Hugging Face Hub: {repo_url} (commit {oid[:12]}, "
                                                   f"{counted(len(self.files) + 1, 'file')})")
            log.info("run %s: pushed to %s (commit %s)", self.run_id, repo_url, oid[:12])
        except Exception as exc:  # whatever ended the push, its state says so (a dying process: read_state)
            message = redact(hub_error_message(exc, repo_id=self.state.get("repo_id") or self.request.repo_id,
                                               token_from=self.token.source, endpoint=endpoint, phase=phase),
                             self.token.value)
            self.say(state="failed", progress="", error=message, finished_at=time.time())
            RunLog(self.run_dir / "run.log").write(f"Push to the Hugging Face Hub failed: {message}")
            log.warning("run %s: push to the Hub failed: %s", self.run_id, message)
        finally:
            os.close(self.lock_fd)


Starter = Callable[[Push], None]


def _thread(push: Push) -> None:
    threading.Thread(target=push.run, name=f"hub-push-{push.run_id}", daemon=True).start()


def start(project: Project, store: RunStore, run: Run, body: object, environ: Mapping[str, str] = os.environ,
          starter: Starter | None = None) -> dict[str, Any]:
    """``POST .../push``: check the request, the run and the setup, then push in a thread; the state
    the push starts in. :class:`PushRefused` says why not."""
    hub = project.config.model_training.hub
    why = blocker(project, store, run)  # whatever the request, a run without its model here cannot push
    if why is not None:
        raise PushRefused(409, why)
    request = read_request(body, default_repo_id(project.config.annotation_task_name, run.trainer, hub.organization),
                           default_commit_message(run))
    if not hub_installed():
        raise PushRefused(409, _not_installed())
    token = read_hub_token(hub, environ)
    run_dir = store.run_dir(run.id)
    files = model_files(run_dir / "artifacts")
    card = model_card(card_facts(project, store, run, request.repo_id, [rel for rel, _ in files]))
    lock_fd = take_lock(run_dir)
    if lock_fd is None:
        raise PushRefused(409, f"A push of run {run.id} is under way; wait for it to end (its state is at "
                               f"GET /admin/training/api/runs/{run.id}/push).")
    push = Push(run.id, run_dir, request, token, files, card, lock_fd)
    push.say(state="pushing", repo_id=request.repo_id, private=request.private, commit_message=request.commit_message,
             files=[rel for rel, _ in files] + [CARD], repo_url=None, commit_url=None, commit_oid=None, error=None,
             started_at=time.time(), finished_at=None, progress="starting the push")
    try:
        (starter or _thread)(push)
    except BaseException:
        os.close(lock_fd)
        raise
    return status(project, store, run, environ)
