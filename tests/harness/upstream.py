"""Configs the way upstream Potato writes them, for the tests of its keys in-process and in the browser: a
whole config (``upstream``) and the schemes of display_logic (``PII``), free responses (``FREE``) and
upstream's likert, mapped multiselect and slider (``UPSTREAM_SCHEMES``)."""

from __future__ import annotations

from typing import Any


def upstream(**extra: Any) -> dict[str, Any]:
    """A config as upstream Potato's examples write one (their keys, their label mappings)."""
    raw: dict[str, Any] = {
        "port": 9001,
        "server_name": "potato annotator",
        "annotation_task_name": "Sentiment",
        "output_annotation_dir": "annotation_output/",
        "output_annotation_format": "json",
        "annotation_codebook_url": "",
        "data_files": ["data/reviews.json"],
        "item_properties": {"id_key": "id", "text_key": "text"},
        "user_config": {"allow_all_users": True, "users": []},
        "alert_time_each_instance": 10000000,
        "annotation_schemes": [{
            "annotation_type": "radio",
            "name": "sentiment",
            "description": "What kind of sentiment does the text hold?",
            "labels": [
                {"name": "positive", "tooltip": "Says something good", "key_value": "p"},
                {"name": "negative", "tooltip": "Says something bad", "key_value": "n"},
                {"name": "neutral", "tooltip": "Neither"},
            ],
            "sequential_key_binding": True,
        }],
        "site_dir": "default",
        "admin_api_key": "a-long-random-admin-key",
    }
    raw.update(extra)
    return raw


PII = [
    {"annotation_type": "radio", "name": "contains_pii", "labels": ["Yes", "No", "Uncertain"]},
    {"annotation_type": "multiselect", "name": "pii_types", "labels": ["Name", "SSN", "Other"],
     "display_logic": {"show_when": [{"schema": "contains_pii", "operator": "equals", "value": ["Yes", "Uncertain"]}]}},
    {"annotation_type": "text", "name": "other", "label_requirement": {"required": True},
     "display_logic": {"show_when": [{"schema": "pii_types", "operator": "contains", "value": "Other"}]}},
]

FREE = [
    {"annotation_type": "radio", "name": "contains_pii", "labels": ["Yes", "No"]},
    {"annotation_type": "multiselect", "name": "pii_types", "labels": ["Name", "Email"],
     "has_free_response": {"instruction": "Something else:"},
     "display_logic": {"show_when": [{"schema": "contains_pii", "operator": "equals", "value": "Yes"}]}},
    {"annotation_type": "radio", "name": "tone", "labels": ["calm", "angry"], "has_free_response": True},
]

UPSTREAM_SCHEMES = [
    {"annotation_type": "likert", "name": "helpful", "description": "How helpful is the review?", "size": 5,
     "min_label": "Not at all", "max_label": "Very", "sequential_key_binding": True,
     "label_requirement": {"required": True}},
    {"annotation_type": "multiselect", "name": "topics", "description": "Which topics does it mention?",
     "labels": [{"name": "price", "tooltip": "Cost, value for money", "key_value": "q"},
                {"name": "quality", "tooltip": "How well it is made", "key_value": "w"},
                {"name": "delivery", "tooltip": "Shipping and packaging", "key_value": "e"}],
     "sequential_key_binding": False},
    {"annotation_type": "slider", "name": "stars", "description": "Stars", "min_value": 0, "max_value": 10,
     "starting_value": 5},
]
