"""Annotations in the layout upstream Potato 2.x exports, for scripts written against its output.

Upstream keeps each answer as ``labels[schema][label_name] = value``, with the names its page
gives each kind of input: a radio or multiselect label is its own name and value, a likert point
its number (``"4": "4"``), a text box ``text_box``, a slider ``slider``, a number ``number``, a
drop-down ``select-one``, a scheme's free-text box ``free_response`` (next to the scheme's own
labels); values are text. Spans are not labels: they go under ``spans[schema]`` as the objects
its span manager saves (``schema``, ``name`` = the label, ``title`` = the label again, ``start``,
``end``, ``id`` = ``<schema>_<label>_<start>_<end>``) plus the ``text`` they cover and, on a field
other than the item's text, ``target_field``, in the order of their position. Its exporter writes one record per (annotator, item)
as ``annotations.jsonl`` (``instance_id``, ``user_id``, ``labels``, ``spans``, ``links``), or a
``.csv`` / ``.tsv`` with a ``schema.label_name`` column per answer and a ``schema._spans`` column
holding a scheme's spans as JSON text. Upstream reads
``output_annotation_format`` as that export's format (``json`` meaning ``jsonl``) and writes it
under ``<output_annotation_dir>/exports/<format>/``; so does this server. The functions at the end
read that layout back into this server's answers, for ``potato import-labels``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from potato.config.schema import FREE_RESPONSE, JUSTIFICATION, Config, free_response_name, justification_name
from potato.training.job.schemes import NEUTRAL, RIGHT, TAGGED_TURNS, WRONG, Scheme, SchemeType
from potato.training.job.private import write_atomic
from potato.training.job.turns import KEPT
from potato.labels import Label

FIXED_NAMES = {SchemeType.TEXT: "text_box", SchemeType.SLIDER: "slider", SchemeType.NUMBER: "number",
               SchemeType.SELECT: "select-one", SchemeType.TRIAGE: "decision"}
"""The one label name upstream gives the answer of these kinds of scheme (a text scheme without labels)."""
JSON_TEXT = (SchemeType.FAILURE_ATTRIBUTION, SchemeType.TEXT_EDIT, SchemeType.TRAJECTORY_EDIT,
             SchemeType.TOOL_CALL_REVIEW, SchemeType.HANDOFF_REVIEW, SchemeType.MULTIMODAL_REASONING,
             SchemeType.GUI_TRAJECTORY, SchemeType.SPEECH_TRANSCRIPT,
             SchemeType.AGENT_SCORECARD, SchemeType.EMERGENT_BEHAVIOR, SchemeType.TOOL_CONTENTION,
             SchemeType.VOICE_INTERACTION, SchemeType.AGENT_INTERACTION_GRAPH, SchemeType.TABLE_GRID, SchemeType.CARD_SORT,
             SchemeType.EXTRACTIVE_QA, SchemeType.CONJOINT, SchemeType.SPAN_LINK)
"""The kinds of answer upstream keeps as one JSON text, named by the scheme (its page's hidden input)."""
RANK_ORDER = "rank_order"
"""Upstream's label name of a ranking: the labels in order, joined by commas."""
PAIRWISE_NAMES = {"binary": "selection", "scale": "scale_value"}
"""The label name of a pairwise comparison's answer in upstream's layout (by dimension for the third mode)."""
SPANS_COLUMN = "_spans"
"""The csv/tsv column ``<schema>._spans`` holds a span scheme's spans as JSON text."""
RECORD_KEYS = ("instance_id", "user_id")
PARTICIPANT_COLUMNS = ("platform", "id", "session_id", "study_id")
"""A crowdsourcing participant's ids as csv/tsv columns ``participant.<key>``, after ``user_id``."""


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def upstream_labels(scheme: Scheme | None, value: Any) -> dict[str, str]:
    """One stored answer as upstream's ``{label_name: value}`` (pure)."""
    if scheme is not None and scheme.pairwise_mode in PAIRWISE_NAMES:
        return {PAIRWISE_NAMES[scheme.pairwise_mode]: _text(value)}
    if scheme is not None and scheme.annotation_type in JSON_TEXT:  # one JSON text, named by the scheme
        return {scheme.name: json.dumps(value, ensure_ascii=False)}
    if scheme is not None and scheme.annotation_type is SchemeType.RANKING and isinstance(value, list):
        return {RANK_ORDER: ",".join(str(v) for v in value)}  # the order, comma-joined, as upstream's input holds it
    if scheme is not None and scheme.depths and isinstance(value, list):  # a tree's picks, as upstream joins them
        return {scheme.name: ",".join(str(v) for v in value)}
    if isinstance(value, dict):  # a text scheme's boxes, or a comparison's choices, by label or dimension
        return {str(k): _text(v) for k, v in value.items()}
    if scheme is not None and scheme.annotation_type in FIXED_NAMES:
        return {FIXED_NAMES[scheme.annotation_type]: _text(value)}
    if scheme is not None and scheme.annotation_type is SchemeType.VAS:  # upstream names it by the scheme
        return {scheme.name: _text(value)}
    if isinstance(value, list):
        return {str(v): str(v) for v in value}
    return {_text(value): _text(value)}


TURN_DATA = "_data"
"""Upstream's label name for a turn-level answer: one JSON text holding every turn's answer."""


def _upstream_turn_value(scheme: Scheme, answer: Any) -> Any:
    """One turn's answer as upstream's page stores it: a likert point as its number (1 = the first),
    a slider's as a float, a number's and a text's as text."""
    kind = scheme.annotation_type
    if kind is SchemeType.LIKERT and answer in scheme.labels:
        return scheme.labels.index(answer) + 1
    if kind is SchemeType.SLIDER:
        return float(answer)
    if kind is SchemeType.NUMBER:
        return _text(answer)
    return answer


def upstream_turns(scheme: Scheme, value: Any) -> dict[str, str]:
    """A turn-level answer as upstream's ``{"_data": JSON text}`` (``{"v": 1, "schema_type", "turns":
    {turn id: {"value" or, for a multiselect, "values", "speaker", "step_type", "agent_id"}}}``); a
    dialogue's ``per_turn_ratings`` as ``{"_data": {turn's place: point}}``, a process reward as
    upstream's (:func:`upstream_steps`) (pure)."""
    if scheme.annotation_type is SchemeType.PROCESS_REWARD:
        return upstream_steps(scheme, value)
    if scheme.annotation_type in TAGGED_TURNS:
        return upstream_acts(scheme, value)
    if scheme.annotation_type is SchemeType.TRAJECTORY_EVAL:
        return upstream_verdicts(scheme, value)
    if scheme.rated_turns:  # a dialogue's per_turn_ratings: each turn's point by the turn's place
        points = {str(entry["index"]): _upstream_turn_value(scheme, entry.get("value"))
                  for entry in (value or {}).values() if isinstance(entry, dict)}
        return {TURN_DATA: json.dumps(points)}
    turns: dict[str, Any] = {}
    for turn_id, entry in (value or {}).items():
        if not isinstance(entry, dict):
            continue
        answer = entry.get("value")
        one: dict[str, Any] = ({"values": list(answer or ())} if scheme.multiselect
                               else {"value": _upstream_turn_value(scheme, answer)})
        one.update({key: entry[key] for key in KEPT if entry.get(key)})
        turns[turn_id] = one
    return {TURN_DATA: json.dumps({"v": 1, "schema_type": scheme.annotation_type.value, "turns": turns},
                                  ensure_ascii=False)}


REWARDS = {RIGHT: 1, NEUTRAL: 0, WRONG: -1}
"""A process reward's answers as upstream's rewards."""


def upstream_steps(scheme: Scheme, value: Any) -> dict[str, str]:
    """A process reward as upstream's page stores it: under the scheme's own name, one JSON text
    ``{"steps": [{"index", "reward", "source", "verified"}], "mode"}`` whose list is by the step's
    place (a step not marked: reward 0, or null where neutral is an answer) (pure)."""
    marked = {entry["index"]: REWARDS[entry["value"]] for entry in (value or {}).values()
              if isinstance(entry, dict) and entry.get("value") in REWARDS}
    unmarked = None if NEUTRAL in scheme.labels else 0
    steps = [{"index": i, "reward": marked[i], "source": "human", "verified": True} if i in marked else
             {"index": i, "reward": unmarked, "source": None, "verified": False}
             for i in range(max(marked) + 1 if marked else 0)]
    return {scheme.name: json.dumps({"steps": steps, "mode": "first_error" if scheme.first_error else "per_step"})}


def our_steps(scheme: Scheme, answer: Mapping[str, Any]) -> Any:
    """Upstream's process reward (:func:`upstream_steps`) as this server's ``{turn id: answer}``;
    a step upstream left unmarked is left out (pure). What does not read that way is handed back."""
    raw = answer.get(scheme.name) if set(answer) == {scheme.name} else None
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return dict(answer)
    steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, list):
        return dict(answer)
    by_reward = {reward: name for name, reward in REWARDS.items() if name in scheme.labels}
    out: dict[str, Any] = {}
    for place, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        reward, index = step.get("reward"), step.get("index", place)
        if reward is None or (reward == 0 and NEUTRAL not in scheme.labels):
            continue
        number = isinstance(reward, (int, float)) and not isinstance(reward, bool)
        out[f"t{index}"] = by_reward.get(reward, reward) if number else reward  # else refused by the import's check
    return out


def upstream_verdicts(scheme: Scheme, value: Any) -> dict[str, str]:
    """A trajectory evaluation as upstream's page stores it: under the scheme's own name, one JSON
    text ``{"steps": [{"step_index", "correctness", ...}], "score"}`` (the score where it is shown) (pure)."""
    steps = [{"step_index": entry["index"], **entry["value"]} for entry in (value or {}).values()
             if isinstance(entry, dict) and isinstance(entry.get("value"), dict)]
    out: dict[str, Any] = {"steps": steps}
    if scheme.max_score is not None:
        weights = dict(scheme.severities)
        lost = sum(abs(weights.get(step.get("severity", ""), 0)) for step in steps)
        out["score"] = max(0, scheme.max_score - lost)
    return {scheme.name: json.dumps(out, ensure_ascii=False)}


def our_verdicts(scheme: Scheme, answer: Mapping[str, Any]) -> Any:
    """Upstream's trajectory evaluation (:func:`upstream_verdicts`) as this server's ``{turn id:
    verdict}``; a step left without a correctness is left out (pure). What does not read that way is
    handed back."""
    raw = answer.get(scheme.name) if set(answer) == {scheme.name} else None
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return dict(answer)
    steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, list):
        return dict(answer)
    out: dict[str, Any] = {}
    for step in steps:
        if isinstance(step, dict) and step.get("correctness") is not None:
            out[f"t{step.get('step_index')}"] = {k: v for k, v in step.items() if k != "step_index" and v not in ("", None)}
    return out


def upstream_acts(scheme: Scheme, value: Any) -> dict[str, str]:
    """A consensus tracker's tags as upstream's page stores them: under the scheme's own name, one JSON
    list ``[{"turn", "act", "ref", "agent_id"}]`` naming turns by their place (pure)."""
    entries = [entry for entry in (value or {}).values() if isinstance(entry, dict)]
    place = {turn_id: entry["index"] for turn_id, entry in (value or {}).items() if isinstance(entry, dict)}
    tags = []
    for entry in entries:
        answer = entry.get("value")
        act, ref = (answer.get("act"), answer.get("ref")) if isinstance(answer, dict) else (answer, None)
        tag: dict[str, Any] = {"turn": entry["index"], "act": act, "agent_id": entry.get("agent_id") or entry.get("speaker", "")}
        if ref is not None:
            tag["ref"] = place.get(ref, int(ref[1:]) if ref[1:].isdigit() else ref)
        tags.append(tag)
    return {scheme.name: json.dumps(tags, ensure_ascii=False)}


def our_acts(scheme: Scheme, answer: Mapping[str, Any]) -> Any:
    """Upstream's consensus tags (:func:`upstream_acts`) as this server's ``{turn id: act or {act, ref}}``
    (pure); what does not read that way is handed back."""
    raw = answer.get(scheme.name) if set(answer) == {scheme.name} else None
    try:
        tags = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return dict(answer)
    if not isinstance(tags, list):
        return dict(answer)
    out: dict[str, Any] = {}
    for tag in tags:
        if isinstance(tag, dict) and "turn" in tag:
            ref = tag.get("ref")
            out[f"t{tag['turn']}"] = {"act": tag.get("act"), "ref": f"t{ref}"} if ref is not None else tag.get("act")
    return out


def our_turns(scheme: Scheme, answer: Mapping[str, Any]) -> Any:
    """Upstream's ``{"_data": JSON text}`` as this server's ``{turn id: answer}`` (pure; the inverse of
    :func:`upstream_turns`, the turns' place and text filled in again by the import's check). What does
    not read that way is handed back as it is, for the check to refuse with what is valid."""
    if scheme.annotation_type is SchemeType.PROCESS_REWARD:
        return our_steps(scheme, answer)
    if scheme.annotation_type in TAGGED_TURNS:
        return our_acts(scheme, answer)
    if scheme.annotation_type is SchemeType.TRAJECTORY_EVAL:
        return our_verdicts(scheme, answer)
    raw = answer.get(TURN_DATA) if set(answer) == {TURN_DATA} else None
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return dict(answer)
    if scheme.rated_turns and isinstance(data, dict) and "turns" not in data:  # {turn's place: point}
        data = {"turns": {f"t{place}": {"value": point} for place, point in data.items()}}
    turns = data.get("turns") if isinstance(data, dict) else None
    if not isinstance(turns, dict):
        return dict(answer)
    out: dict[str, Any] = {}
    for turn_id, one in turns.items():
        if not isinstance(one, dict):
            out[turn_id] = one
            continue
        got = one.get("values", one.get("value"))
        kind = scheme.annotation_type
        if kind is SchemeType.LIKERT and isinstance(got, int) and not isinstance(got, bool) \
                and 1 <= got <= len(scheme.labels):
            got = scheme.labels[got - 1]
        elif kind in (SchemeType.NUMBER, SchemeType.SLIDER) and isinstance(got, str):
            try:
                got = float(got) if any(c in got for c in ".eE") else int(got)
            except ValueError:
                pass
        if kind is SchemeType.SLIDER and isinstance(got, float) and got.is_integer():
            got = int(got)
        out[str(turn_id)] = got
    return out


def upstream_spans(schema: str, value: Any) -> list[dict[str, Any]]:
    """One stored span answer as upstream's span objects, keys in its order (pure). An empty list
    (nothing to mark) has no spans, as upstream keeps none; a ``run_id`` is this server's, not upstream's."""
    return [{"schema": schema, "name": span["label"], "title": span["label"], "start": span["start"],
             "end": span["end"], "id": f"{schema}_{span['label']}_{span['start']}_{span['end']}",
             "text": span.get("text", ""), **({"target_field": span["field"]} if span.get("field") else {})}
            for span in value if isinstance(span, dict)] if isinstance(value, list) else []


def _in_order(answers: dict[str, Any], order: dict[str, int]) -> dict[str, Any]:
    return dict(sorted(answers.items(), key=lambda kv: order.get(kv[0], len(order))))


def records(config: Config, labels: Iterable[Label],
            participants: Mapping[str, Mapping[str, Any]] | None = None) -> Iterator[dict[str, Any]]:
    """Upstream's records, one per (annotator, item), from labels sorted by user then item; each
    record's answers in the config's scheme order, as the page asks them. An annotator who came
    from a crowdsourcing platform has its ids under ``participant`` (upstream leaves them out)."""
    participants = participants or {}
    order = {s.name: i for i, s in enumerate(config.annotation_schemes)}

    def done(record: dict[str, Any]) -> dict[str, Any]:
        record["labels"], record["spans"] = _in_order(record["labels"], order), _in_order(record["spans"], order)
        return record

    current: dict[str, Any] | None = None
    for lab in labels:
        if current is None or (current["user_id"], current["instance_id"]) != (lab.user, lab.item_id):
            if current is not None:
                yield done(current)
            current = {"instance_id": lab.item_id, "user_id": lab.user, "labels": {}, "spans": {}, "links": {}}
            if lab.user in participants:
                current["participant"] = dict(participants[lab.user])
        scheme = config.scheme(lab.schema)
        if scheme is not None and scheme.annotation_type is SchemeType.SPAN:
            if spans := upstream_spans(lab.schema, lab.value):
                current["spans"][lab.schema] = spans
        elif scheme is not None and scheme.turns is not None:
            current["labels"][lab.schema] = upstream_turns(scheme, lab.value)
        elif scheme is not None and scheme.justification:  # upstream's page writes both parts, empty or not
            why = lab.value if isinstance(lab.value, dict) else {}
            current["labels"].setdefault(scheme.free_response_of, {})[JUSTIFICATION] = json.dumps(
                {"reasons": why.get("reasons", []), "rationale": why.get("rationale", "")}, ensure_ascii=False)
        elif scheme is not None and scheme.free_response_of:
            current["labels"].setdefault(scheme.free_response_of, {})[FREE_RESPONSE] = _text(lab.value)
        else:
            current["labels"].setdefault(lab.schema, {}).update(upstream_labels(scheme, lab.value))
    if current is not None:
        yield done(current)


def render(fmt: str, rows: list[dict[str, Any]]) -> str:
    """The export file's text for ``rows`` in ``fmt`` (pure)."""
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    present = [key for key in PARTICIPANT_COLUMNS if any(key in row.get("participant", {}) for row in rows)]
    columns: list[str] = ["instance_id", "user_id", *(f"participant.{key}" for key in present)]
    flat = []
    for row in rows:
        out = {"instance_id": row["instance_id"], "user_id": row["user_id"]}
        who = row.get("participant", {})
        out.update({f"participant.{key}": who[key] for key in present if key in who})
        for schema, answer in row["labels"].items():
            for label_name, value in answer.items():
                column = f"{schema}.{label_name}"
                if column not in columns:
                    columns.append(column)
                out[column] = value
        for schema, spans in row["spans"].items():
            column = f"{schema}._spans"
            if column not in columns:
                columns.append(column)
            out[column] = json.dumps(spans)  # ASCII-escaped, as upstream's exporter writes the cell
        flat.append(out)
    buffer = io.StringIO(newline="")
    # Lines end in \r\n, as upstream's exporter (the csv module's default) writes them.
    writer = csv.DictWriter(buffer, fieldnames=columns, delimiter="\t" if fmt == "tsv" else ",")
    writer.writeheader()
    writer.writerows(flat)
    return buffer.getvalue()


def write(config: Config, labels: Iterable[Label], fmt: str, folder: Path,
          participants: Mapping[str, Mapping[str, Any]] | None = None,
          phase_answers: Iterable[Mapping[str, Any]] | None = None) -> tuple[Path, int]:
    """Write ``folder/annotations.<fmt>`` whole or not at all (a reader never sees half a file); with
    ``phase_answers`` (``export_include_phase_data``), ``phase_responses.<fmt>`` beside it."""
    rows = list(records(config, labels, participants))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"annotations.{fmt}"
    write_atomic(path, render(fmt, rows), newline="")
    if phase_answers is not None:
        write_atomic(folder / f"phase_responses.{fmt}", render_phase_rows(fmt, phase_rows(config, phase_answers)),
                     newline="")
    return path, len(rows)


PHASE_COLUMNS = ("user_id", "phase", "schema", "label_name", "value")


def phase_rows(config: Config, answers: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The study pages' answers as upstream's phase_responses rows, one per label name (pure)."""
    out: list[dict[str, Any]] = []
    for answer in answers:
        phase = config.phases.get(answer["phase"]) if config.phases else None
        scheme = next((q for q in phase.questions if q.name == answer["schema"]), None) if phase else None
        for label_name, value in upstream_labels(scheme, answer["label"]).items():
            out.append({"user_id": answer["user"], "phase": answer["phase"], "schema": answer["schema"],
                        "label_name": label_name, "value": value})
    return out


def render_phase_rows(fmt: str, rows: list[dict[str, Any]]) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=PHASE_COLUMNS, delimiter="\t" if fmt == "tsv" else ",")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def default_folder(config: Config, fmt: str) -> Path:
    return config.output_annotation_dir / "exports" / fmt


# -- reading upstream's layout back (``potato import-labels``) -------------------------------------

def is_record(data: object) -> bool:
    """Whether a parsed line or csv row is one of upstream's records rather than one of our entries."""
    return isinstance(data, dict) and "instance_id" in data and "schema" not in data


def our_value(scheme: Scheme, answer: Mapping[str, Any]) -> Any:
    """Upstream's ``{label_name: value}`` for one scheme as the value this server stores: the inverse
    of :func:`upstream_labels`, numbers still as text (pure). An answer that fits no reading is handed
    back as it is, for the import's check to refuse with the scheme's valid answers."""
    kind = scheme.annotation_type
    if scheme.pairwise_mode in PAIRWISE_NAMES:
        name = PAIRWISE_NAMES[scheme.pairwise_mode]
        return answer[name] if set(answer) == {name} else dict(answer)
    if kind is SchemeType.RANKING:
        return _picks(answer[RANK_ORDER], scheme.labels) if set(answer) == {RANK_ORDER} else list(answer)
    if kind in JSON_TEXT:
        return _json_text(answer[scheme.name]) if set(answer) == {scheme.name} else dict(answer)
    if scheme.depths and set(answer) == {scheme.name} and isinstance(answer[scheme.name], str):
        return _picks(answer[scheme.name], scheme.labels)
    if (kind is SchemeType.TEXT and scheme.labels) or scheme.by_rows:
        return dict(answer)
    if kind in FIXED_NAMES:
        return answer[FIXED_NAMES[kind]] if set(answer) == {FIXED_NAMES[kind]} else dict(answer)
    if kind is SchemeType.VAS:
        return answer[scheme.name] if set(answer) == {scheme.name} else dict(answer)
    if kind in (SchemeType.SOFT_LABEL, SchemeType.CONSTANT_SUM, SchemeType.RANGE_SLIDER):  # numbers as text: numbers again
        return {k: _number(v) for k, v in answer.items()}
    if kind is SchemeType.MULTISELECT:
        return list(answer)
    return next(iter(answer)) if len(answer) == 1 else list(answer)


def _number(raw: Any) -> Any:
    """A number written as text, as a number (an int where it is whole); anything else as it is."""
    try:
        number = float(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw
    return int(number) if isinstance(number, float) and number.is_integer() else number


def _json_text(raw: Any) -> Any:
    """An answer upstream keeps as JSON text (a failure attribution, a text edit) as the answer it holds;
    what does not read that way is handed back, for the check to refuse."""
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return raw


def _justification(raw: Any) -> Any:
    """Upstream's justification (JSON text of reasons and a rationale) as this server stores it, the
    empty parts left out; what does not read that way is handed back, for the check to refuse."""
    try:
        why = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return raw
    if not isinstance(why, dict):
        return raw
    return {key: value for key, value in why.items() if value not in ([], "", None)}


def _picks(joined: str, labels: Sequence[str]) -> list[str]:
    """Upstream's comma-joined picks of a tree (or a ranking's order) as its labels: a label with a comma in its name is
    put back together from the pieces (pure)."""
    out: list[str] = []
    piece = ""
    for part in joined.split(","):
        piece = part if not piece else piece + "," + part
        if piece in labels or piece.strip() in labels:
            out.append(piece if piece in labels else piece.strip())
            piece = ""
    return out + ([piece] if piece else [])


def our_spans(schema: str, spans: Any) -> tuple[Any, str | None]:
    """Upstream's span objects of one scheme as this server's ``{"start", "end", "label", "text",
    "field"}`` (``name`` is the label, ``target_field`` the field; ``schema``, ``title`` and ``id`` are
    upstream's bookkeeping), and a problem for a span this server cannot keep: a discontinuous one.
    An empty ``text`` is upstream's "could not slice it", not a claim about the offsets, so it is dropped."""
    if not isinstance(spans, list):
        return spans, None
    out: list[Any] = []
    for number, span in enumerate(spans, 1):
        if not isinstance(span, dict):
            out.append(span)
            continue
        where = f"the spans of '{schema}': span {number} {json.dumps(span, ensure_ascii=False)}"
        if span.get("additional_parts"):
            return spans, (f"{where} is discontinuous (additional_parts), which this server does not store; "
                           "split it into one span per stretch of text, or leave it out")
        ours = {"start": span.get("start"), "end": span.get("end"), "label": span.get("name", span.get("label"))}
        if span.get("text"):
            ours["text"] = span["text"]
        if span.get("target_field"):  # checked with the spans: a field the scheme marks, the item's text key too
            ours["field"] = span["target_field"]
        out.append(ours)
    return out, None


def record_from_row(config: Config, row: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A csv/tsv row of upstream's export as its jsonl record (``labels`` and ``spans``), and problems
    with its cells (pure). A column ``<schema>.<label_name>`` is split after the longest scheme name
    it starts with, so a scheme or label named with a dot is read as it was written."""
    record: dict[str, Any] = {key: row.get(key) for key in RECORD_KEYS}
    labels: dict[str, dict[str, Any]] = {}
    spans: dict[str, Any] = {}
    problems: list[str] = []
    names = sorted((s.name for s in config.annotation_schemes), key=len, reverse=True)
    for column, cell in row.items():
        if column in RECORD_KEYS or cell in (None, ""):
            continue
        if column.partition(".")[0] == "participant" and "participant" not in names:
            continue  # a platform's ids, written beside the answers by this server's export
        schema = next((n for n in names if column.startswith(n + ".")), column.partition(".")[0])
        label_name = column[len(schema) + 1:]
        if label_name == SPANS_COLUMN:
            try:
                spans[schema] = json.loads(cell)
            except json.JSONDecodeError as exc:
                problems.append(f"column {column} is not JSON ({exc.msg}); it holds the spans as upstream "
                                'writes them: [{"name": label, "start": int, "end": int, ...}]')
        else:
            labels.setdefault(schema, {})[label_name] = cell
    record.update(labels=labels, spans=spans)
    return record, problems


def answers_from_record(config: Config, record: Mapping[str, Any]) -> tuple[list[tuple[str, Any]], list[str]]:
    """One record of upstream's export as ``(schema, value)`` answers in this server's shapes, and
    problems with its layout (pure). The annotator (``user_id``) is not read: an import names whose
    labels they become. A schema this config lacks is passed on for the import to name."""
    labels, spans = record.get("labels", {}), record.get("spans", {})
    labels, spans = {} if labels is None else labels, {} if spans is None else spans
    if not isinstance(labels, dict) or not all(isinstance(v, dict) for v in labels.values()):
        return [], ['"labels" must map each scheme to {label_name: value}, as upstream Potato exports it']
    if not isinstance(spans, dict):
        return [], ['"spans" must map each span scheme to its list of spans, as upstream Potato exports it']
    answers: list[tuple[str, Any]] = []
    problems: list[str] = []
    for schema, answer in labels.items():
        scheme = config.scheme(schema)
        if scheme is None:
            answers.append((schema, answer))
            continue
        if scheme.turns is not None:
            answers.append((schema, our_turns(scheme, answer)))
            continue
        rest = dict(answer)
        if FREE_RESPONSE in rest and config.scheme(free_response_name(schema)) is not None:
            answers.append((free_response_name(schema), rest.pop(FREE_RESPONSE)))
        if JUSTIFICATION in rest and config.scheme(justification_name(schema)) is not None:
            answers.append((justification_name(schema), _justification(rest.pop(JUSTIFICATION))))
        if rest:
            answers.append((schema, our_value(scheme, rest)))
    for schema, value in spans.items():
        ours, problem = our_spans(schema, value)
        if problem:
            problems.append(problem)
        else:
            answers.append((schema, ours))
    return answers, problems
