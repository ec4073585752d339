"""Annotation schemes that suites of more than one kind ask their questions with: a span scheme in
upstream's shape (labels as names or mappings with colour, key and tooltip; sequential key binding), a
radio question, and a ``codebook: true`` scheme."""

from __future__ import annotations

NER = {
    "annotation_type": "span",
    "name": "entities",
    "title": "Mark the named entities",
    "labels": [
        {"name": "PER", "tooltip": "A person", "key_value": "p", "color": "#e6194b"},
        {"name": "ORG", "tooltip": "An organisation", "color": "#3cb44b"},
        "LOC",
    ],
    "sequential_key_binding": True,
}

RADIO = {"annotation_type": "radio", "name": "sentiment", "description": "Is this review positive or negative?",
         "labels": ["positive", "negative"]}

THEMES = [{"annotation_type": "multiselect", "name": "themes", "description": "Which themes appear?", "codebook": True,
           "labels": [{"name": "cost", "tooltip": "Money stops them"}, {"name": "trust", "tooltip": "Doubts the provider"}]}]
