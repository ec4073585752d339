"""``sklearn-token-classification``: spans from a per-token logistic regression, CPU only, no torch.

The light span trainer: it needs only scikit-learn, which every Potato image and the agent already
carry (imported inside functions, so the module itself is standard library only and Python 3.8
safe), and retrains on a few hundred items in about a second, so it can follow every few labels.

Tokens are words and single punctuation marks (:func:`potato.training.job.spans.simple_tokens`); each
gets a BIO tag from the annotators' majority spans (:func:`potato.training.job.spans.bio_tags`). A
token's features are its lowercased form, prefix and suffix, its shape (``Xxxx``, ``dd``), and the
same of its neighbours one and two places away, so a name's context counts as well as the name;
``DictVectorizer`` turns them into a sparse matrix and a multinomial ``LogisticRegression`` learns
the tags, one model per span schema. A prediction decodes the most probable tag of every token back
into spans (seqeval's reading of BIO); a span's confidence is the mean probability of its tokens'
tags, the item's the mean over all its tokens (low where the model is unsure anywhere: what an
uncertainty order wants).

Spans that BIO cannot hold (one inside another, or two sharing a word) are left out of training
with a warning. Artifacts: ``model.pkl`` (pickle of ``{"features": [...], "models": {schema:
{"vectorizer", "model"}}}``; load it with the same scikit-learn version) and ``labels.json``.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, ClassVar, Dict, List, Mapping, Sequence, Tuple

from potato.training.job.schemes import SchemeType
from potato.training.job.labels import label_spans
from potato.training.job.spans import OUTSIDE, bio_tags, simple_tokens, spans_from_tags
from potato.training.trainers.base import Example, JobItem, Param, Prediction, TrainContext, Trainer, labelled, write_labels_json

FEATURES = ("word", "prefix", "suffix", "shape")
"""What each token contributes, for itself and for its neighbours at -2, -1, +1 and +2."""
WINDOW = (-2, -1, 1, 2)


def _shape(word: str) -> str:
    out: List[str] = []
    for ch in word:
        kind = "X" if ch.isupper() else "x" if ch.islower() else "d" if ch.isdigit() else ch
        if not out or out[-1] != kind:
            out.append(kind)
    return "".join(out)


def _describe(word: str) -> Dict[str, str]:
    lower = word.lower()
    return {"word": lower, "prefix": lower[:3], "suffix": lower[-3:], "shape": _shape(word)}


def token_features(text: str, offsets: Sequence[Tuple[int, int]]) -> List[Dict[str, Any]]:
    """One feature dict per token of ``text`` (pure)."""
    described = [_describe(text[a:b]) for a, b in offsets]
    out = []
    for i, own in enumerate(described):
        row: Dict[str, Any] = {f"{key}={value}": 1.0 for key, value in own.items()}
        word = text[offsets[i][0]:offsets[i][1]]
        row["title"] = float(word.istitle())
        row["upper"] = float(word.isupper())
        row["digit"] = float(word.isdigit())
        for step in WINDOW:
            j = i + step
            if 0 <= j < len(described):
                for key in ("word", "shape"):
                    row[f"{step}:{key}={described[j][key]}"] = 1.0
            else:
                row[f"{step}:edge"] = 1.0
        out.append(row)
    return out


class _Constant:
    """Stands in for a model when every training token has one tag (no span marked yet)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag


class SklearnTokenTrainer(Trainer):
    name = "sklearn-token-classification"
    description = "Word features + logistic regression per token, for span schemes (scikit-learn; fast, CPU only)"
    requires = ("scikit-learn",)
    annotation_types = (SchemeType.SPAN,)
    params: ClassVar[Mapping[str, Param]] = {
        "C": Param(1.0, (float,), "inverse regularisation strength of the logistic regression", minimum=1e-6),
        "max_iter": Param(300, (int,), "most optimiser iterations per model", minimum=10),
    }

    def __init__(self, ctx: TrainContext) -> None:
        super().__init__(ctx)
        self.models: Dict[str, Dict[str, Any]] = {}

    @classmethod
    def required_modules(cls, params: Mapping[str, Any]) -> Tuple[str, ...]:
        return ("sklearn.feature_extraction", "sklearn.linear_model")

    def fit(self, examples: Sequence[Example]) -> None:
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.linear_model import LogisticRegression

        total = len(self.ctx.schemas)
        for step, spec in enumerate(self.ctx.schemas, 1):
            self.ctx.check_stop()
            rows: List[Dict[str, Any]] = []
            tags: List[str] = []
            left_out = 0
            for example, target in labelled(examples, spec.name):
                offsets = simple_tokens(example.text)
                item_tags, skipped = bio_tags(offsets, label_spans(target))
                left_out += len(skipped)
                rows.extend(token_features(example.text, offsets))
                tags.extend(item_tags)
            if left_out:
                self.ctx.warn(f"Schema '{spec.name}': {left_out} span(s) inside or across another span (or on "
                              "no word) were left out of training: one word carries one tag")
            vectorizer = DictVectorizer()
            if len(set(tags)) < 2:
                model: Any = _Constant(tags[0] if tags else OUTSIDE)
                vectorizer.fit(rows or [{}])
            else:
                model = LogisticRegression(C=float(self.ctx.params["C"]), max_iter=int(self.ctx.params["max_iter"]))
                model.fit(vectorizer.fit_transform(rows), tags)
            self.models[spec.name] = {"vectorizer": vectorizer, "model": model}
            self.ctx.log(f"Schema '{spec.name}': {len(tags)} tokens, tags {', '.join(sorted(set(tags))) or 'none'}")
            self.ctx.progress(step, total)

    def predict(self, items: Sequence[JobItem]) -> List[Dict[str, Prediction | None]]:
        out: List[Dict[str, Prediction | None]] = [{} for _ in items]
        for spec in self.ctx.schemas:
            self.ctx.check_stop()
            parts = self.models[spec.name]
            offsets = [simple_tokens(item.text) for item in items]
            model = parts["model"]
            if isinstance(model, _Constant):
                for i, item_offsets in enumerate(offsets):
                    tags = [model.tag] * len(item_offsets)
                    found = tuple(spans_from_tags(item_offsets, tags))
                    out[i][spec.name] = Prediction(found, 1.0)
                continue
            rows = [row for item, item_offsets in zip(items, offsets) for row in token_features(item.text, item_offsets)]
            probabilities = model.predict_proba(parts["vectorizer"].transform(rows)) if rows else []
            classes = list(model.classes_)
            at = 0
            for i, item_offsets in enumerate(offsets):
                block = probabilities[at:at + len(item_offsets)]
                at += len(item_offsets)
                best = [int(row.argmax()) for row in block]
                sure = [float(row[k]) for row, k in zip(block, best)]
                found = tuple(spans_from_tags(item_offsets, [classes[k] for k in best], sure))
                out[i][spec.name] = Prediction(found, sum(sure) / len(sure) if sure else 1.0)
        return out

    def save(self, artifacts_dir: Path) -> None:
        write_labels_json(artifacts_dir, self.name, self.ctx.schemas, self.ctx.class_labels)
        with open(str(artifacts_dir / "model.pkl"), "wb") as fh:
            pickle.dump({"features": list(FEATURES), "models": self.models}, fh, protocol=4)
