"""Publishing a run's model on the Hugging Face Hub: its ``artifacts/`` folder and a generated model
card, in one commit, from a thread of the server.

Pure parts first (what a request may ask, the default repository name, the model card, why a run
cannot be pushed, what a Hub error means in plain words), then the I/O: the token, the push's state
file, and the thread that talks to the Hub through ``huggingface_hub``, an optional package (the
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
import re
import stat
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import yaml

from potato.config.schema import HUB_NAME, AgentBackendSettings, Config, HubSettings, RemoteHost
from potato.config.schema import BackendSettings
from potato.errors import PotatoError
from potato.project import Project
from potato.server.training.runs.recorder import RunLog
from potato.server.training.runs.store import Run, RunState, RunStore

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'potato-annotation[hub]'"
"""The extra that brings ``huggingface_hub`` (``pip install 'huggingface_hub>=0.24'`` does as well)."""
TOKENS_PAGE = "https://huggingface.co/settings/tokens"
STATE_FILE = "push.json"
LOCK_FILE = "push.lock"
MAX_MESSAGE = 1000
"""Characters a commit message may have."""
CARD = "README.md"


class PushRefused(PotatoError):
    """A push that cannot start: ``status`` is the HTTP answer (400: the request; 409: the run or the
    server's setup), the message says why and what to do."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# -- names --------------------------------------------------------------------------------------

def slug(text: str) -> str:
    """``text`` as a repository name: lower case, runs of anything but letters and digits as one
    ``-``, at most 96 characters (pure)."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return out[:96].rstrip("-") or "potato-model"


def default_repo_id(project_name: str, trainer: str, organization: str | None) -> str:
    """``<organization>/<project>-<trainer>``; without an organization just the name, which the Hub
    puts under the token's own account (pure)."""
    name = slug(f"{project_name}-{trainer}")
    return f"{organization}/{name}" if organization else name


def default_commit_message(run: Run) -> str:
    return f"Upload the {run.trainer} model of Potato run {run.id}"


def repo_id_problem(repo_id: str) -> str | None:
    """Why the Hub would refuse ``repo_id`` (``name`` or ``namespace/name``), or None (pure)."""
    parts = repo_id.split("/")
    good = (1 <= len(parts) <= 2
            and all(re.fullmatch(HUB_NAME, p) and "--" not in p and ".." not in p for p in parts)
            and not repo_id.endswith(".git"))
    if good:
        return None
    shown = repo_id if len(repo_id) <= 120 else repo_id[:117] + "..."
    return (f"{shown!r} is not a repository name the Hub takes: write name or namespace/name, each part of letters, "
            "digits, '-', '_' and '.' (not at its start or end, no '--' or '..'), at most 96 characters, "
            "e.g. my-lab/review-sentiment.")


@dataclass(frozen=True)
class PushRequest:
    repo_id: str
    private: bool
    commit_message: str


def read_request(body: object, default_repo: str, default_message: str) -> PushRequest:
    """What a push request asks for, checked exactly as docs/admin-api.yaml's PushRequest says (pure).
    A field left out or null takes its default: the project's repository name, private, and a message
    naming the run; an empty or blank commit message too. A repo_id is taken as written: an empty one
    names no repository, so it is refused rather than read as "the default"."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise PushRefused(400, 'Send a JSON object: {"repo_id": "my-lab/my-model", "private": true, '
                               '"commit_message": "..."} (each may be left out).')
    repo_id = body.get("repo_id")
    if repo_id is not None and not isinstance(repo_id, str):
        raise PushRefused(400, "repo_id must be text: the repository as name or namespace/name.")
    if repo_id is not None and not repo_id.strip():
        raise PushRefused(400, f"repo_id is empty: name the repository as name or namespace/name, or leave repo_id "
                               f"out (or null) to push to {default_repo}.")
    repo_id = default_repo if repo_id is None else repo_id
    problem = repo_id_problem(repo_id)
    if problem:
        raise PushRefused(400, problem)
    private = body.get("private")
    if private is not None and not isinstance(private, bool):
        raise PushRefused(400, "private must be true or false (a new repository is private unless you say false).")
    message = body.get("commit_message")
    if message is not None and not isinstance(message, str):
        raise PushRefused(400, "commit_message must be text.")
    if message is not None and len(message) > MAX_MESSAGE:
        raise PushRefused(400, f"commit_message has {len(message)} characters; keep it to {MAX_MESSAGE} or fewer.")
    message = (message or "").strip() or default_message
    return PushRequest(repo_id, True if private is None else private, message)


# -- the model card -------------------------------------------------------------------------------

@dataclass(frozen=True)
class SchemaFacts:
    name: str
    kind: str
    """``radio``, ``multiselect`` or ``span``: what the model predicts for the schema."""
    labels: tuple[str, ...]


@dataclass(frozen=True)
class CardFacts:
    """Everything the model card says, gathered before it is written."""

    project: str
    repo_id: str
    run_id: str
    trainer: str
    schemas: tuple[SchemaFacts, ...]
    metrics: Mapping[str, Any]
    finished: str
    """The day the run finished, ``YYYY-MM-DD`` (UTC)."""
    files: tuple[str, ...]
    base_model: str | None = None
    lora: bool = False
    n_items: int | None = None
    """Labelled items the run had: trained on plus held out."""
    n_annotators: int | None = None


_LIBRARIES = {"sklearn": "sklearn", "hf": "transformers"}
_KIND_WORDS = {"radio": "one label per item", "multiselect": "any number of labels per item",
               "span": "labelled spans of the text"}


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) < 1e300:
        return float(value)
    return None


def schema_scores(facts: CardFacts, schema: SchemaFacts) -> list[tuple[str, str, float]]:
    """(metric type as the Hub names it, the card's name for it, value) of one schema's holdout score;
    a run of one schema that recorded only the overall keys takes those (pure)."""
    m = facts.metrics

    def get(key: str) -> float | None:
        value = _number(m.get(f"{schema.name}/{key}"))
        if value is None and len(facts.schemas) == 1 and schema.kind != "span":
            value = _number(m.get(key))
        return value

    wanted = ((("f1", "span F1", "holdout_f1"), ("precision", "span precision", "holdout_precision"),
               ("recall", "span recall", "holdout_recall")) if schema.kind == "span" else
              (("accuracy", "accuracy", "holdout_accuracy"), ("f1", "macro-F1", "holdout_macro_f1")))
    return [(kind, name, value) for kind, name, key in wanted if (value := get(key)) is not None]


def _task(kind: str) -> str:
    return "token-classification" if kind == "span" else "text-classification"


def _is_hub_name(name: str) -> bool:
    return repo_id_problem(name) is None and not name.startswith((".", "~"))


def card_metadata(facts: CardFacts) -> dict[str, Any]:
    """The YAML block at the top of the card: what the Hub indexes and shows beside it (pure)."""
    family = facts.trainer.split("-", 1)[0]
    library = "peft" if facts.lora and family == "hf" else _LIBRARIES.get(family)
    tasks = sorted({_task(s.kind) for s in facts.schemas})
    meta: dict[str, Any] = {}
    if library:
        meta["library_name"] = library
    if len(tasks) == 1:
        meta["pipeline_tag"] = tasks[0]
    meta["tags"] = ["potato-annotation", facts.trainer, *tasks]
    if facts.base_model and _is_hub_name(facts.base_model):
        meta["base_model"] = facts.base_model
    name = facts.repo_id.split("/")[-1]
    results = []
    for schema in facts.schemas:
        scores = schema_scores(facts, schema)
        if not scores:
            continue
        results.append({
            "task": {"type": _task(schema.kind), "name": f"{schema.name} ({_KIND_WORDS.get(schema.kind, schema.kind)})"},
            "dataset": {"type": slug(facts.project), "name": f"{facts.project}: holdout split of the labelled items",
                        "split": "holdout"},
            "metrics": [{"type": kind, "value": round(value, 4), "name": f"Holdout {label}"}
                        for kind, label, value in scores],
        })
    if results:
        meta["model-index"] = [{"name": name, "results": results}]
    meta["potato"] = {
        "run_id": facts.run_id,
        "trainer": facts.trainer,
        "labels": {s.name: list(s.labels) for s in facts.schemas},
        "trained_on": {k: v for k, v in (("labelled_items", facts.n_items), ("annotators", facts.n_annotators))
                       if v is not None},
    }
    return meta


def _cell(text: object) -> str:
    """Text safe inside a markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def trained_on_text(facts: CardFacts) -> str:
    n_train, n_holdout = _number(facts.metrics.get("n_train")), _number(facts.metrics.get("n_holdout"))
    parts = []
    if facts.n_items is not None:
        parts.append(_count(facts.n_items, "labelled item"))
    if n_train is not None and n_holdout is not None:
        parts.append(f"({int(n_train)} to train on, {int(n_holdout)} held out for the score)")
    if facts.n_annotators is not None:
        parts.append(f"from {_count(facts.n_annotators, 'annotator')}")
    return " ".join(parts) or "not recorded"


def model_card(facts: CardFacts) -> str:
    """README.md for the repository: the metadata block, then what a reader needs to trust and use the
    model (pure)."""
    meta = yaml.safe_dump(card_metadata(facts), sort_keys=False, allow_unicode=True, width=1000)
    name = facts.repo_id.split("/")[-1]
    kinds = sorted({_KIND_WORDS.get(s.kind, s.kind) for s in facts.schemas})
    base = facts.base_model
    if base and not _is_hub_name(base):
        base = f"a local model folder on the training machine ({Path(base).name})"
    elif base:
        base = f"[`{base}`](https://huggingface.co/{base})"
    lines = [
        "---", meta.rstrip("\n"), "---", "",
        f"# {name}", "",
        f"A model trained by a Potato annotation server on the labels of its project \u201c{facts.project}\u201d: "
        f"it predicts {', '.join(kinds)}.", "",
        "| | |", "|---|---|",
        f"| Trainer | `{_cell(facts.trainer)}` |",
        f"| Base model | {_cell(base) if base else 'none (trained from scratch)'}{' (LoRA adapter)' if facts.lora else ''} |",
        f"| Trained on | {_cell(trained_on_text(facts))} |",
        f"| Run | `{_cell(facts.run_id)}`, finished {facts.finished} (UTC) |",
        "",
        "## Labels", "",
    ]
    for schema in facts.schemas:
        labels = ", ".join(f"`{label}`" for label in schema.labels) or "(none recorded)"
        lines.append(f"- **{schema.name}** ({_KIND_WORDS.get(schema.kind, schema.kind)}): {labels}")
    lines += ["", "## Holdout scores", ""]
    n_holdout = _number(facts.metrics.get("n_holdout"))
    rows = [(s.name, label, value) for s in facts.schemas for _, label, value in schema_scores(facts, s)]
    if rows:
        held = f" ({_count(int(n_holdout), 'item')})" if n_holdout is not None else ""
        rules = [("each item's label is the one most of its annotators chose"
                  if any(s.kind != "span" for s in facts.schemas) else ""),
                 ("a span counts only when its start, end and label are all right"
                  if any(s.kind == "span" for s in facts.schemas) else "")]
        lines += [f"Scored on the labelled items the model did not train on{held}: "
                  f"{'; '.join(r for r in rules if r)}.", "", "| Schema | Metric | Score |", "|---|---|---|"]
        lines += [f"| {_cell(schema)} | {label} | {value:.3f} |" for schema, label, value in rows]
    else:
        lines.append("No holdout score: the run had too few labelled items to hold some out.")
    lines += ["", "## Files", ""]
    lines += [f"- `{_cell(path)}`" for path in facts.files]
    if facts.trainer.startswith("sklearn-"):
        lines += ["", "`model.pkl` is a Python pickle: load it only if you trust this repository, with the "
                      "scikit-learn version it was saved with. `labels.json` gives each schema's label order."]
    elif facts.trainer.startswith("hf-"):
        lines += ["", "Each schema's model is a folder that `transformers` (and `peft`, for a LoRA adapter) loads "
                      "with `from_pretrained`; `labels.json` names the folders and each schema's label order."]
    lines += ["", f"Pushed from the training page of a Potato annotation server (run `{facts.run_id}`).", ""]
    return "\n".join(lines)


# -- what can be pushed ---------------------------------------------------------------------------

_PARTIAL = re.compile(r" \(and on (?P<host>[^:()]+):(?P<path>.+)\)$")
_TOTAL = re.compile(r"over max_artifacts_total_mb \((?P<mb>\d+) MB\)")
_LEFT = re.compile(r"Left on \S+ \(over max_artifact_mb (?P<mb>\d+) MB\): (?P<name>.+?) \(\d+ MB\)")


def where_stayed(artifact_uri: str | None, local: Path) -> tuple[str, str, bool] | None:
    """(host, folder, partial) when the run's model files stayed (all, or ``partial``: some) on the
    training machine, from the ``artifact_uri`` its backend recorded; None when none stayed (pure)."""
    if not artifact_uri:
        return None
    if artifact_uri.startswith(str(local)):
        match = _PARTIAL.search(artifact_uri[len(str(local)):])
        return (match["host"], match["path"], True) if match else None
    if not artifact_uri.startswith("/") and ":" in artifact_uri:
        host, folder = artifact_uri.split(":", 1)
        return host, folder, False
    return None


def stayed_reason(host: str, folder: str, partial: bool, backend_name: str, backend: BackendSettings | None,
                  log_text: str) -> str:
    """Why a run's model is not on this server, from its backend's settings and what run.log recorded
    of the copy-back, with what to do (pure)."""
    upload = f"hf upload <repo> {folder}"
    if partial:
        left = [m["name"] for m in _LEFT.finditer(log_text)]
        limit = next((m["mb"] for m in _LEFT.finditer(log_text)), None)
        if limit is None and isinstance(backend, RemoteHost):
            limit = str(backend.max_artifact_mb)
        files = f" ({', '.join(left)})" if left else ""
        return (f"Part of the model stayed on {host} at {folder}{files}: those files exceeded max_artifact_mb"
                f"{f' ({limit} MB)' if limit else ''} of backend '{backend_name}', so this server holds only part "
                f"of the model, which would not load from the Hub. Raise max_artifact_mb and train again, or push "
                f"the whole folder from {host}: {upload}")
    total = _TOTAL.search(log_text)
    if total:
        why = (f"the model files together exceeded max_artifacts_total_mb ({total['mb']} MB) of backend "
               f"'{backend_name}', so none was copied back")
        fix = f"Raise max_artifacts_total_mb and train again, or push it from {host}: {upload}"
    elif isinstance(backend, RemoteHost) and not backend.fetch_artifacts:
        why = f"fetch_artifacts is off for backend '{backend_name}'"
        fix = f"Set fetch_artifacts: true there and train again, or push it from {host}: {upload}"
    elif isinstance(backend, AgentBackendSettings):
        why = f"runs on the agent backend '{backend_name}' keep their model files on the training machine"
        fix = f"Push it from {host}: {upload}"
    else:
        why = "it was not copied back to this server"
        fix = f"Push it from {host}: {upload}"
    return f"The model stayed on {host} at {folder}: {why}. This server has no copy to push. {fix}"


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


def _log_end(path: Path, size: int = 256 * 1024) -> str:
    """The end of run.log, where the copy-back's lines are (the log may be tens of MB)."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - size))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def blocker(config: Config, store: RunStore, run: Run) -> str | None:
    """Why ``run`` cannot be pushed (it has not succeeded, or its model is not on this server), or None."""
    if run.state is not RunState.SUCCEEDED:
        return f"Only a succeeded run's model can be pushed; run {run.id} is {run.state.value}."
    run_dir = store.run_dir(run.id)
    local = run_dir / "artifacts"
    stayed = where_stayed(run.artifact_uri, local)
    if stayed is not None:
        host, folder, partial = stayed
        settings = config.model_training.all_backends().get(run.backend)
        return stayed_reason(host, folder, partial, run.backend, settings, _log_end(run_dir / "run.log"))
    if model_files(local):
        return None
    settings = config.model_training.all_backends().get(run.backend)
    if isinstance(settings, AgentBackendSettings):
        machine = run.agent_host or "the training machine"
        return (f"The model stayed on {machine}: runs on the agent backend '{run.backend}' keep their model files "
                "in the agent's --workdir (jobs/<run>/artifacts), and this one reported no folder. This server has "
                f"no copy to push. Push it from {machine}: hf upload <repo> <that folder>")
    return (f"Run {run.id} left no model files on this server ({local} is missing or empty), so there is "
            "nothing to push; its trainer may save none.")


# -- what a Hub error means -------------------------------------------------------------------------

_NETWORK = {"TransportError", "NetworkError", "ConnectError", "TimeoutException", "ProxyError", "RemoteProtocolError",
            "ConnectionError", "TimeoutError"}


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _phase(exc: BaseException, default: str) -> str:
    """What the push was doing when the Hub answered, from the request's path."""
    try:
        path = str(exc.response.request.url)  # type: ignore[attr-defined]
    except Exception:
        try:  # no answer at all (a network error): the request it was sending
            path = str(exc.request.url)  # type: ignore[attr-defined]
        except Exception:
            return default
    for marker, words in (("/commit/", "committing the files"), ("/preupload/", "preparing the upload"),
                          ("/validate-yaml", "checking the model card"), ("/repos/create", "creating the repository"),
                          ("/info/lfs", "uploading the large files"), ("xet", "uploading the large files")):
        if marker in path:
            return words
    return default


def _server_words(exc: BaseException) -> str:
    words = getattr(exc, "server_message", None)
    if not isinstance(words, str) or not words.strip():
        return ""
    return ": " + " ".join(words.split())[:300]


def not_the_hub_message(exc: KeyError | json.JSONDecodeError, *, endpoint: str, doing: str) -> str:
    """An answer that is not the Hub API's (pure): huggingface_hub follows redirects, and a redirect off
    the API (an address that moved, a proxy's sign-in page) ends in a page without the fields it reads
    (``KeyError: 'url'``) or in no JSON at all."""
    lacked = f"without the {exc.args[0]!r} the Hub sends" if isinstance(exc, KeyError) and exc.args else "not in JSON"
    outcome = ("the Hub did not confirm a commit, so look at the repository before you push again"
               if doing == "committing the files" else "nothing was pushed")
    return (f"The answer to {doing} did not come from the Hub's API: {endpoint} answered {lacked}. A redirect to "
            "another address (which huggingface_hub follows) or a proxy answering in the Hub's place does this. Check "
            "that HF_ENDPOINT in the server's environment, if set, is the Hub's https address, and that a proxy lets "
            f"this server through (HTTPS_PROXY); {outcome}.")


def hub_error_message(exc: BaseException, *, repo_id: str, token_from: str, endpoint: str, phase: str) -> str:
    """The Hub's refusal or failure in plain words, with what to do (pure: reads only the exception)."""
    doing = _phase(exc, phase)
    status = _status(exc)
    said = _server_words(exc)
    namespace = repo_id.split("/")[0] if "/" in repo_id else "your account"
    if status == 401:
        return (f"The Hub refused the token (HTTP 401 while {doing}): it is wrong, expired or revoked. The token "
                f"comes from {token_from}; put a token with write access there (from {TOKENS_PAGE}) and push again.")
    if status == 403:
        return (f"The Hub refused to let this token write to {repo_id} (HTTP 403 while {doing}{said}). Use a token "
                f"with write access to {namespace} (a fine-grained token needs it granted for that namespace); the "
                f"token comes from {token_from}.")
    if status == 404:
        return (f"The Hub has no repository {repo_id} that this token may see (HTTP 404 while {doing}{said}). Check "
                f"the namespace: a user or organization the token's account belongs to.")
    if status in (400, 422) and doing == "creating the repository":
        return (f"The Hub refused the repository name {repo_id} (HTTP {status}{said}). Pick another name: letters, "
                "digits, '-', '_' and '.', at most 96 characters.")
    if status == 429:
        return f"The Hub is limiting this account's requests (HTTP 429 while {doing}); push again in a few minutes."
    if status is not None and status >= 500:
        return (f"The Hub failed on its side (HTTP {status} while {doing}{said}) and confirmed no commit. Push "
                "again later; https://status.huggingface.co says whether the Hub has trouble.")
    if status is not None:
        return f"The Hub answered HTTP {status} while {doing}{said}; nothing was pushed."
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "HFValidationError" in names:
        return f"{repo_id!r} is not a repository name the Hub takes: {exc}"
    if isinstance(exc, ValueError) and "metadata in README.md" in str(exc):
        return f"The Hub refused the model card's metadata ({' '.join(str(exc).split())[:300]}); nothing was pushed."
    if isinstance(exc, (KeyError, json.JSONDecodeError)):
        return not_the_hub_message(exc, endpoint=endpoint, doing=doing)
    if "OfflineModeIsEnabled" in names:
        return ("The server's environment sets HF_HUB_OFFLINE, which keeps huggingface_hub off the network; unset it "
                "for the server (the workers' own setting is apart) and restart it to push.")
    if names & _NETWORK or isinstance(exc, (ConnectionError, TimeoutError)):
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        outcome = ("the Hub did not confirm the commit, so look at the repository before you push again"
                   if doing == "committing the files" else "nothing was pushed")
        return (f"Could not reach the Hub at {endpoint} while {doing} ({reason}). Check that this server can open "
                f"https connections there (a proxy needs HTTPS_PROXY in the server's environment); {outcome}.")
    return f"The push failed while {doing}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` blotted out, the last guard before a message is kept anywhere."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "[token]")
    return text


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


def read_token(settings: HubSettings, environ: Mapping[str, str]) -> Token:
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
        read_token(settings, environ)
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
    tmp = run_dir / f".{STATE_FILE}.{os.getpid()}.{threading.get_ident()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(dict(state), fh)
    os.replace(tmp, run_dir / STATE_FILE)


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
    why = blocker(project.config, store, run)
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


def bundle_counts(bundle: Path) -> tuple[int, int] | None:
    """(labelled items, annotators) of the labels the run was given, from its bundle's labels.jsonl."""
    try:
        with tarfile.open(bundle, "r:gz") as tar:
            member = tar.extractfile("labels.jsonl")
            if member is None:
                return None
            items: set[str] = set()
            users: set[str] = set()
            for line in member:
                row = json.loads(line)
                items.add(str(row.get("item_id")))
                users.add(str(row.get("user")))
    except (OSError, KeyError, ValueError, tarfile.TarError):
        return None
    return len(items), len(users)


def project_counts(project: Project, schemas: Iterable[str]) -> tuple[int, int]:
    """(labelled items, annotators) on ``schemas`` among the project's labels now (a run without its bundle)."""
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
    counts = bundle_counts(run_dir / "bundle.tar.gz") or project_counts(project, run.schemas)
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
            self.say(repo_id=repo, progress=f"uploading {_count(len(self.files), 'model file')} "
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
                                                   f"{_count(len(self.files) + 1, 'file')})")
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
    why = blocker(project.config, store, run)  # whatever the request, a run without its model here cannot push
    if why is not None:
        raise PushRefused(409, why)
    request = read_request(body, default_repo_id(project.config.annotation_task_name, run.trainer, hub.organization),
                           default_commit_message(run))
    if not hub_installed():
        raise PushRefused(409, _not_installed())
    token = read_token(hub, environ)
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
