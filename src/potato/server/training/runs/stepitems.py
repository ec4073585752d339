"""The steps of traces as a run's items, for a question asked on each step (a step classifier).

The bundle's side of :mod:`potato.training.job.tracesteps`: each step a question is asked on
becomes an item of the bundle (the step with the trace before it), each stored step answer a label
on it; predictions for those items come back as one suggestion per trace, an answer per step.
Pure apart from the config's reading of an item's turns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from potato import defaults
from potato.config.schema import Config
from potato.items import Item, ItemSet
from potato.training.job.schemes import RIGHT, WRONG, Scheme
from potato.training.job.tracesteps import PLACE_FIELD, STEP_FIELD, TRACE_FIELD, from_first_error, first_error, \
    split_step_id, step_id, step_text
from potato.training.job.turns import Turn, answer_of, is_empty


def turn_line(turn: Turn) -> str:
    """One turn as a step classifier reads it: its speaker, then its text."""
    return f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text


@dataclass(frozen=True)
class StepQuestions:
    """A run's questions asked on each step (the config's schemes, learnt step by step)."""

    config: Config
    schemes: tuple[Scheme, ...]
    context_chars: int = defaults.STEP_CONTEXT_CHARS

    @classmethod
    def of(cls, config: Config, names: Iterable[str]) -> "StepQuestions":
        wanted = set(names)
        return cls(config, tuple(s for s in config.annotation_schemes if s.name in wanted and s.learnt_by_step),
                   config.model_training.step_context_chars)

    def __bool__(self) -> bool:
        return bool(self.schemes)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(s.name for s in self.schemes)

    def _source(self, scheme: Scheme) -> str:
        assert scheme.turns is not None
        return scheme.turns.source

    def item_rows(self, item: Item) -> Iterator[dict[str, Any]]:
        """``items.jsonl`` lines for ``item``'s asked steps: each step once per source, whichever of
        the questions on that source asks it, with the turns before it as context."""
        if not self.schemes:
            return
        turns = self.config.item_turns(item)
        for source in dict.fromkeys(self._source(s) for s in self.schemes):
            found = turns.get(source, [])
            asked = {t.id for s in self.schemes if self._source(s) == source for t in s.turns.bound(found)}  # type: ignore[union-attr]
            lines = [turn_line(t) for t in found]
            for turn in found:
                if turn.id in asked:
                    yield {"id": step_id(item.id, source, turn.id),
                           "text": step_text(lines[turn.index], lines[:turn.index], self.context_chars),
                           TRACE_FIELD: item.id, PLACE_FIELD: turn.index, STEP_FIELD: turn.id}

    def label_rows(self, item_id: str, schema: str, value: Any, user: str) -> list[dict[str, Any]]:
        """A stored step answer as ``labels.jsonl`` lines, one per answered step, on the step items."""
        scheme = next(s for s in self.schemes if s.name == schema)
        if not isinstance(value, dict):
            return []
        out = []
        for turn_id, entry in value.items():
            label = scheme.step_label(answer_of(entry))
            if not is_empty(label):
                out.append({"item_id": step_id(item_id, self._source(scheme), turn_id), "schema": schema,
                            "label": label, "user": user})
        return out

    def suggestions(self, rows: Iterable[Mapping[str, Any]], items: ItemSet) -> Iterator[dict[str, Any]]:
        """Prediction lines for step items joined into one line per trace and question: the label is
        the answer per step as an annotator gives it (accepting it stores exactly that), the
        confidence the mean of the steps', and ``steps`` each step's confidence by its id. In
        first_error mode the steps before the first one predicted wrong are right and the rest wrong,
        as an annotator's answer must be. Lines of other items pass through unchanged; lines of a
        trace no longer in ``items`` are dropped."""
        joined: dict[tuple[str, str], dict[str, Any]] = {}
        for row in rows:
            where = split_step_id(str(row.get("item_id", "")))
            scheme = next((s for s in self.schemes if s.name == row.get("schema")), None)
            if where is None:
                yield dict(row)
                continue
            trace, source, turn_id = where
            if scheme is None or source != self._source(scheme) or trace not in items:
                continue
            entry = joined.setdefault((trace, scheme.name), {"steps": {}, "confidence": {}})
            entry["steps"][turn_id] = row.get("label")
            entry["confidence"][turn_id] = row.get("confidence")
        for (trace, schema), entry in joined.items():
            scheme = next(s for s in self.schemes if s.name == schema)
            confidences = [c for c in entry["confidence"].values() if isinstance(c, (int, float))]
            if len(confidences) != len(entry["confidence"]):
                continue  # a step without a confidence: the line is not one the writeback can show
            labels = entry["steps"]
            if scheme.first_error:
                labels = self._first_error_answer(scheme, items.get(trace), labels)
            yield {"item_id": trace, "schema": schema,
                   "label": {turn_id: scheme.step_answer(label) for turn_id, label in labels.items()},
                   "confidence": sum(confidences) / len(confidences), "steps": entry["confidence"]}

    def _first_error_answer(self, scheme: Scheme, item: Item, labels: Mapping[str, Any]) -> dict[str, Any]:
        """A process reward's predicted steps as a first_error answer: right up to the first step the
        model calls wrong, wrong from it on."""
        places = {t.id: t.index for t in self.config.item_turns(item).get(self._source(scheme), [])}
        known = {places[t]: t for t in labels if t in places}
        first = first_error(((place, labels[t]) for place, t in known.items()), scheme.step_mistakes or (WRONG,))
        marks = from_first_error(sorted(known), first, RIGHT, WRONG)
        return {known[place]: mark for place, mark in sorted(marks.items())}
