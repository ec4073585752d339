"""The control group's comparison (``ai_support.assist_holdout``) from what the project holds: the
labels, each annotator's group, what the help shows on each item and the imported reference
answers. Shown on the admin's Progress page and written by ``potato export --assist-comparison``."""

from __future__ import annotations

from typing import Any

from potato.labels import LabelSource
from potato.project import Project
from potato.study.assist import option_highlights
from potato.study.groups import AssistGroups
from potato.study.holdout import agreed_reference, compare
from potato.training.job.schemes import SchemeType


def assist_comparison(project: Project, llm: Any = None) -> dict[str, Any] | None:
    """Both groups' figures per single-choice question; None without a holdout. ``llm``: the app's
    :class:`~potato.server.assist.helper.Helper` where an LLM server is the help's source."""
    holdout = project.config.ai_support.holdout
    if holdout is None:
        return None
    schemas = [s.name for s in project.config.annotation_schemes if s.annotation_type is SchemeType.RADIO]
    labels = list(project.labels.iter_labels())
    human = [(lab.user, lab.item_id, lab.schema, lab.value) for lab in labels
             if lab.source is not LabelSource.IMPORT and lab.item_id in project.items]
    reference = agreed_reference((lab.item_id, lab.schema, lab.value) for lab in labels
                                 if lab.source is LabelSource.IMPORT)
    picks: dict[tuple[str, str], list[str]] = {}
    for item_id in sorted({row[1] for row in human}):
        for schema, options in _shown(project, item_id, llm).items():
            picks[(item_id, schema)] = options
    groups = AssistGroups(project.db).all()
    figures = compare(human, groups, picks, reference, schemas)
    return {"share": holdout.share, "train_on": holdout.train_on, "schemas": schemas,
            "groups": {name: f.to_json() for name, f in figures.items()}}


def _shown(project: Project, item_id: str, llm: Any) -> dict[str, list[str]]:
    """The options the help shows on the item now: the LLM's kept highlights, the run's top options
    under option highlighting, else the run's suggestion."""
    if llm is not None:
        return dict(llm.answered(project.items.get(item_id)))
    if project.suggestions_for is None:
        return {}
    suggestions = project.suggestions_for(item_id)
    highlights = option_highlights(project.config.ai_support, suggestions)
    for schema, suggestion in suggestions.items():
        if schema not in highlights and isinstance(suggestion.get("label"), str):
            highlights[schema] = [suggestion["label"]]
    return highlights
