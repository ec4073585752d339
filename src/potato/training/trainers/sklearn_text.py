"""``sklearn-text-classification``: tf-idf over word uni+bigrams and logistic regression, CPU only.

The light trainer: it needs only scikit-learn (imported inside functions, so the module itself is
standard library only and Python 3.8 safe) and trains 100k short texts in seconds on 2 cores.

Features: the words' uni- and bigrams are hashed into ``max_features`` columns (scikit-learn's
``HashingVectorizer``; default 2^20) and weighted by tf-idf with sublinear tf; every n-gram
counts (min_df 1). Hashing instead of a vocabulary is for speed: building the vocabulary of
100k texts' bigrams took 4-7 s of a 10 s budget, hashing them takes 1.2 s, and at 2^20 columns
collisions between the n-grams of short texts are rare. One vectoriser, fitted on the training
texts, serves every schema.

Models, one per schema (solvers chosen for speed on sparse tf-idf, measured on 100k texts):

- radio, two labels: ``LogisticRegression(solver="liblinear", dual=True)`` (0.8 s).
- radio, three or more: multinomial ``LogisticRegression(solver="saga")`` (1.5-4 s; liblinear
  cannot do multinomial, lbfgs took 8-11 s).
- multiselect: one liblinear model per label (one-vs-rest), a label on at p >= 0.5.
- a schema whose training items all share one answer: a constant prediction, confidence 1.0.

Artifacts: ``model.pkl`` (pickle of ``{"vectorizer", "tfidf", "models"}``; load it with the same
scikit-learn version) and ``labels.json``.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from potato.training.trainers.base import (
    Example,
    JobItem,
    Param,
    Prediction,
    TrainContext,
    Trainer,
    labelled,
    multiselect_prediction,
    radio_prediction,
    write_labels_json,
)

PREDICT_BATCH = 20000
"""Items vectorised and scored per batch in predict (bounds memory, lets a stop request in)."""


class _Constant:
    """Stands in for a model when a label never varies in training: always the same probabilities."""

    def __init__(self, probabilities: dict[str, float]) -> None:
        self.probabilities = probabilities


class SklearnTextTrainer(Trainer):
    name = "sklearn-text-classification"
    description = "TF-IDF word n-grams + logistic regression (scikit-learn; fast, CPU only)"
    requires = ("scikit-learn",)
    params: ClassVar[Mapping[str, Param]] = {
        "max_features": Param(2 ** 20, (int,), "number of hashed n-gram features", minimum=16),
        "C": Param(1.0, (float,), "inverse regularisation strength of the logistic regression", minimum=1e-6),
        "ngram_max": Param(2, (int,), "longest word n-gram (1: words only, 2: words and word pairs)", minimum=1),
    }

    def __init__(self, ctx: TrainContext) -> None:
        super().__init__(ctx)
        self.vectorizer: Any = None
        self.tfidf: Any = None
        self.models: dict[str, Any] = {}
        self._warned_convergence = False

    @classmethod
    def required_modules(cls, params: Mapping[str, Any]) -> tuple[str, ...]:
        return ("sklearn.feature_extraction.text", "sklearn.linear_model")

    def fit(self, examples: Sequence[Example]) -> None:
        from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer

        params = self.ctx.params
        self.vectorizer = HashingVectorizer(
            ngram_range=(1, int(params["ngram_max"])), n_features=int(params["max_features"]),
            alternate_sign=False, norm=None,
        )
        self.tfidf = TfidfTransformer(sublinear_tf=True)
        self.ctx.log(f"vectorising {len(examples)} training texts")
        matrix = self.tfidf.fit_transform(self.vectorizer.transform([ex.text for ex in examples]))
        row_of = {ex.id: i for i, ex in enumerate(examples)}
        total = len(self.ctx.schemas)
        for step, spec in enumerate(self.ctx.schemas, 1):
            self.ctx.check_stop()
            self.ctx.step(f"training {spec.name} ({step} of {total})")
            rows = labelled(examples, spec.name)
            x = matrix[[row_of[ex.id] for ex, _ in rows]]
            labels = self.ctx.class_labels[spec.name]
            if spec.multiselect:
                self.models[spec.name] = {
                    label: self._binary(x, [label in target for _, target in rows]) for label in labels
                }
            else:
                self.models[spec.name] = self._radio(x, [str(target) for _, target in rows])
            self.ctx.progress(step, total)

    def _radio(self, x: Any, y: list[str]) -> Any:
        from sklearn.linear_model import LogisticRegression

        classes = sorted(set(y))
        if len(classes) == 1:
            return _Constant({classes[0]: 1.0})
        if len(classes) == 2:
            model = LogisticRegression(C=self.ctx.params["C"], solver="liblinear", dual=True,
                                       random_state=self.ctx.seed)
        else:
            model = LogisticRegression(C=self.ctx.params["C"], solver="saga", max_iter=100, tol=1e-3,
                                       random_state=self.ctx.seed)
        return self._fit_quietly(model, x, y)

    def _binary(self, x: Any, y: list[bool]) -> Any:
        from sklearn.linear_model import LogisticRegression

        if all(y) or not any(y):
            return _Constant({"on": 1.0 if y[0] else 0.0})
        model = LogisticRegression(C=self.ctx.params["C"], solver="liblinear", dual=True,
                                   random_state=self.ctx.seed)
        return self._fit_quietly(model, x, y)

    def _fit_quietly(self, model: Any, x: Any, y: Sequence[Any]) -> Any:
        """Fit, turning scikit-learn's ConvergenceWarning into a run-log warning (it is advice, not an
        error: the model is usable) and sparsifying the weights (most hashed columns are unused)."""
        from sklearn.exceptions import ConvergenceWarning

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(x, y)
        for w in caught:
            if not issubclass(w.category, ConvergenceWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            elif not self._warned_convergence:
                self._warned_convergence = True
                self.ctx.warn("logistic regression stopped before it converged; the model is usable, and a "
                              "smaller C (stronger regularisation) converges sooner")
        model.sparsify()
        return model

    @staticmethod
    def _radio_probabilities(model: Any, x: Any) -> list[dict[str, float]]:
        """One {label: p} per row of ``x``."""
        if isinstance(model, _Constant):
            return [dict(model.probabilities) for _ in range(x.shape[0])]
        classes = [str(c) for c in model.classes_]
        return [dict(zip(classes, (float(p) for p in row))) for row in model.predict_proba(x)]

    @staticmethod
    def _on_probabilities(model: Any, x: Any) -> list[float]:
        """p(label on) per row of ``x`` for one multiselect label's model."""
        if isinstance(model, _Constant):
            return [model.probabilities["on"]] * x.shape[0]
        column = list(model.classes_).index(True)
        return [float(p) for p in model.predict_proba(x)[:, column]]

    def predict(self, items: Sequence[JobItem]) -> list[dict[str, Prediction | None]]:
        out: list[dict[str, Prediction | None]] = []
        total = max(1, (len(items) + PREDICT_BATCH - 1) // PREDICT_BATCH)
        for batch_no, start in enumerate(range(0, len(items), PREDICT_BATCH), 1):
            self.ctx.check_stop()
            batch = items[start:start + PREDICT_BATCH]
            x = self.tfidf.transform(self.vectorizer.transform([item.text for item in batch]))
            per_schema: dict[str, list[Prediction]] = {}
            for spec in self.ctx.schemas:
                model = self.models[spec.name]
                if spec.multiselect:
                    columns = {label: self._on_probabilities(sub, x) for label, sub in model.items()}
                    per_schema[spec.name] = [
                        multiselect_prediction({label: column[i] for label, column in columns.items()})
                        for i in range(len(batch))
                    ]
                else:
                    per_schema[spec.name] = [radio_prediction(p) for p in self._radio_probabilities(model, x)]
            for i in range(len(batch)):
                out.append({name: preds[i] for name, preds in per_schema.items()})
            self.ctx.progress(batch_no, total)
        return out

    def save(self, artifacts_dir: Path) -> None:
        write_labels_json(artifacts_dir, self.name, self.ctx.schemas, self.ctx.class_labels)
        with open(str(artifacts_dir / "model.pkl"), "wb") as fh:
            pickle.dump({"vectorizer": self.vectorizer, "tfidf": self.tfidf, "models": self.models}, fh,
                        protocol=4)
