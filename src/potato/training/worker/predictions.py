"""A trainer's predictions checked and put in the worker's terms, as pure functions.

Remote-safe: standard library only, Python 3.8. A trainer is code the worker does not control: what
it predicts is checked here (labels of the right type, spans inside the item's text, finite
confidences and probabilities in [0, 1]) before anything is scored or written, so a faulty trainer
fails its run with a message that names the item and schema instead of writing bad predictions.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Union

from potato.training.job import labels as labelling
from potato.training.job.schemes import Scheme
from potato.training.job.spans import MAIN, ScoredSpan, Texts, by_position
from potato.training.trainers.base import Prediction


def check_prediction(spec: Scheme, value: Any, where: str, text: Union[str, Texts]) -> Prediction | None:
    """A trainer's prediction in the worker's terms: a string (radio), a tuple in the scheme's label
    order (multiselect) or scored spans inside ``text`` (or, naming a field, inside that field's
    text) by position (span), and a finite confidence in [0, 1]."""
    if value is None:
        return None
    label, confidence = value[0], value[1]
    probabilities = _check_probabilities(value[2] if len(value) > 2 else None, where) if not spec.spans else None
    if spec.spans:
        texts = spec.marked_texts(text)
        label = tuple(sorted((_check_span(s, where, texts) for s in label), key=by_position))
    elif spec.multiselect:
        chosen = label if isinstance(label, (list, tuple)) else (str(label),)
        label = labelling.order_labels(chosen, spec.labels)
    elif not isinstance(label, str):
        raise TypeError(f"the trainer predicted {label!r} for {where}; a radio label must be a string")
    confidence = float(confidence)
    if not math.isfinite(confidence):
        raise ValueError(f"the trainer predicted confidence {confidence} for {where}")
    return Prediction(label, min(1.0, max(0.0, confidence)), probabilities)


def _check_probabilities(value: Any, where: str) -> Optional[Dict[str, float]]:
    """Each label's probability, as a trainer gives them: finite numbers in [0, 1] by label name."""
    if value is None:
        return None
    out = {}
    for label, p in dict(value).items():
        p = float(p)
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise ValueError(f"the trainer gave label {label!r} the probability {p} for {where}")
        out[str(label)] = p
    return out


def _check_span(value: Any, where: str, texts: Texts) -> ScoredSpan:
    start, end, label, confidence = tuple(value)[:4]
    field = value[4] if len(value) > 4 else MAIN
    if field not in texts:
        raise ValueError(f"the trainer predicted a span in field {field!r} for {where}, which marks "
                         f"{', '.join(repr(name) for name in texts)}")
    text = texts[field]
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
        raise ValueError(f"the trainer predicted a span at {start!r}-{end!r} for {where}, outside its "
                         f"{len(text)} characters")
    confidence = float(confidence)
    if not math.isfinite(confidence):
        raise ValueError(f"the trainer predicted confidence {confidence} for a span of {where}")
    return ScoredSpan(start, end, str(label), min(1.0, max(0.0, confidence)), field)
