"""A study with every kind of page (consent, instructions, training, surveys) and a Prolific hand-off,
as the study tests write it, and the steps a participant takes through it in Flask's test client."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

CONSENT = [
    {"id": "1", "name": "age_consent", "description": "I certify that I am at least 18 years of age.",
     "annotation_type": "radio", "labels": ["I agree", "I disagree"],
     "label_requirement": {"required_label": ["I agree"]}},
]
PRESTUDY = [  # upstream's docs' short form, with display_logic
    {"id": "native", "text": "Is English your native language?", "schema": "radio", "choices": ["Yes", "No"],
     "label_requirement": {"required": True}},
    {"id": "years", "text": "How many years have you spoken English?", "schema": "number",
     "display_logic": {"show_when": [{"schema": "native", "operator": "equals", "value": "No"}]},
     "label_requirement": {"required": True}},
]
INSTRUCTIONS_HTML = "<h2>How to label</h2><p>Positive means the reviewer liked it.</p>"
TRAINING = {"training_instances": [
    {"id": "t1", "text": "I loved it.", "correct_answers": {"sentiment": "positive"},
     "explanation": "Loving something is positive."},
    {"id": "t2", "text": "It broke at once.", "gold_label": {"sentiment": "negative"},
     "gold_reason": "Breaking is a defect: negative."},
]}
POSTSTUDY = [{"name": "debrief", "annotation_type": "pure_display", "allow_html": True,
              "description": "<p>Thank you. <strong>The study was about how people read reviews.</strong></p>"},
             {"name": "comments", "description": "Any comments?", "annotation_type": "text"},
             {"name": "satisfaction", "description": "How satisfied are you?", "annotation_type": "likert",
              "size": 5, "min_label": "Not", "max_label": "Very", "label_requirement": {"required": True}},
             {"name": "accent", "description": "Did the reviews' English read naturally to you?",
              "annotation_type": "radio", "labels": ["Yes", "No"], "label_requirement": {"required": True},
              "display_logic": {"show_when": [{"schema": "native", "operator": "equals", "value": "No"}]}},
             {"name": "honest", "description": "I answered honestly.", "annotation_type": "radio", "labels": ["Yes"],
              "label_requirement": {"required": True}}]
"""Upstream's consent and debrief pages show text between the questions (pure_display), ask for one
"I agree" or "Yes" (a radio question with a single label), and ask a question only of those whose
answer on an earlier page calls for it (display_logic naming the pre-study's question)."""
PHASES = {"order": ["consent", "instructions", "training", "prestudy", "annotation", "poststudy"],
          "consent": {"type": "consent", "file": "surveys/consent.json"},
          "instructions": {"type": "instructions", "file": "surveys/instructions.html"},
          "training": {"type": "training", "file": "surveys/training.json"},
          "prestudy": {"type": "prestudy", "file": "surveys/prestudy.json"},
          "poststudy": {"type": "poststudy", "file": "surveys/poststudy.json"}}
STUDY = {"phases": PHASES, "training": {"enabled": True, "passing_criteria": {"min_correct": 1, "max_mistakes": 3},
                                        "allow_retry": True},
         "export_include_phase_data": True, "export_annotation_format": ["csv"],
         "crowdsourcing": {"provider": "prolific", "prolific": {"completion": {
             "code": "C1ABCDEF", "screened_out_code": "C1SCREEN", "failed_code": "C1FAILED"}}}}


def write_surveys(root: Path) -> None:
    surveys = root / "surveys"
    surveys.mkdir(parents=True, exist_ok=True)
    (surveys / "consent.json").write_text(json.dumps(CONSENT), encoding="utf-8")
    (surveys / "prestudy.json").write_text(json.dumps(PRESTUDY), encoding="utf-8")
    (surveys / "instructions.html").write_text(INSTRUCTIONS_HTML, encoding="utf-8")
    (surveys / "training.json").write_text(json.dumps(TRAINING), encoding="utf-8")
    (surveys / "poststudy.json").write_text(json.dumps(POSTSTUDY), encoding="utf-8")


def page(client: Any) -> str:
    shown = client.get("/study")
    assert shown.status_code == 200, shown.headers.get("Location")
    return shown.get_data(as_text=True)


def post(client: Any, phase: str, **fields: Any) -> Any:
    if phase == "training" and "item" not in fields:  # the item the page shows, as its form sends it
        found = re.search(r'name="item" value="([^"]*)"', client.get("/study").get_data(as_text=True))
        fields["item"] = found.group(1) if found else ""
    return client.post("/study", data={"phase": phase, **fields})


def up_to_the_items(client: Any, pid: str, **prestudy: Any) -> None:
    """A Prolific participant through consent, instructions and training, answering the pre-study page."""
    client.get(f"/?PROLIFIC_PID={pid}")
    post(client, "consent", age_consent="I agree")
    post(client, "instructions")
    post(client, "training", sentiment="positive")
    post(client, "training", sentiment="negative")
    post(client, "prestudy", **prestudy)
