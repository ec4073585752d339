"""What a push of a run's model to the Hugging Face Hub asks for and what it publishes, as pure
functions: the request's fields, the default repository name, and the generated model card.

Kept apart from the push's I/O (``hubpush``) so that every rule a request must meet and every line
of the card is tested without a token, a thread or the Hub.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from potato.config.schema import HUB_NAME
from potato.errors import PotatoError
from potato.server.training.runs.store import Run

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


def counted(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def trained_on_text(facts: CardFacts) -> str:
    n_train, n_holdout = _number(facts.metrics.get("n_train")), _number(facts.metrics.get("n_holdout"))
    parts = []
    if facts.n_items is not None:
        parts.append(counted(facts.n_items, "labelled item"))
    if n_train is not None and n_holdout is not None:
        parts.append(f"({int(n_train)} to train on, {int(n_holdout)} held out for the score)")
    if facts.n_annotators is not None:
        parts.append(f"from {counted(facts.n_annotators, 'annotator')}")
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
        held = f" ({counted(int(n_holdout), 'item')})" if n_holdout is not None else ""
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
