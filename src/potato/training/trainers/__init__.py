"""The trainer registry: name -> ``"module:Class"``, imported only when a run needs it.

Remote-safe: standard library only, Python 3.8. Importing a trainer module is cheap (trainer
modules import their heavy packages inside functions), so :func:`available_trainers` reads each
class's own description and requirements: one source of truth, no list to keep in step.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from potato.errors import TrainingError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from potato.training.trainers.base import Trainer

TRAINERS: dict[str, str] = {
    "sklearn-text-classification": "potato.training.trainers.sklearn_text:SklearnTextTrainer",
    "sklearn-token-classification": "potato.training.trainers.sklearn_tokens:SklearnTokenTrainer",
    "hf-text-classification": "potato.training.trainers.hf_text:HfTextTrainer",
    "hf-token-classification": "potato.training.trainers.hf_tokens:HfTokenTrainer",
    "hf-llm-classification": "potato.training.trainers.hf_llm:HfLlmTrainer",
    "hf-llm-preference": "potato.training.trainers.hf_llm_preference:HfLlmPreferenceTrainer",
    "decision-calibrate": "potato.training.trainers.decision_calibrate:DecisionCalibrateTrainer",
    "llm-zero-shot": "potato.training.trainers.llm_zero_shot:LlmZeroShotTrainer",
    "noop": "potato.training.trainers.noop:NoopTrainer",
}
"""Every trainer a job may name."""

CLASSIFIES = ("radio", "multiselect")
"""The kinds of scheme a trainer learns unless it says otherwise: one label, or a set of them."""


class UnknownTrainer(TrainingError):
    """A job or request names a trainer that does not exist; the message lists those that do."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"Unknown trainer '{name}'. Valid trainers are: {', '.join(sorted(TRAINERS))}")


@dataclass(frozen=True)
class TrainerInfo:
    """What the server shows about a trainer without running it."""

    name: str
    description: str
    requires: tuple[str, ...]
    local_only: bool
    uses_device: bool
    params: dict[str, str]
    """parameter name -> help text (with its default)."""
    shown: tuple[str, ...] = ()
    """Parameters the form shows unfolded: the required ones and those most runs set."""
    required: tuple[str, ...] = ()
    """Parameters a run must be given (``Param.required``): the form marks them."""
    reports_loss: bool = False
    """Whether its progress events carry a training loss (the page's loss chart)."""
    annotation_types: tuple[str, ...] = CLASSIFIES
    """The kinds of scheme it learns (radio, multiselect, span, pairwise)."""
    learns_from_labels: bool = True
    """False: it predicts without learning (llm-zero-shot), so a run needs no label and writeback
    suggests on every item."""


def get_trainer(name: str) -> type[Trainer]:
    """The trainer class for ``name``. :class:`UnknownTrainer` for a name not in :data:`TRAINERS`;
    ``ImportError`` if its module cannot be imported (the worker reports that as ``Trainer '<name>' could not be imported``)."""
    target = TRAINERS.get(name)
    if target is None:
        raise UnknownTrainer(name)
    module_name, _, class_name = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, class_name)  # type: ignore[no-any-return]


def trainers_for(kinds: Iterable[str]) -> list[TrainerInfo]:
    """The trainers that learn at least one of ``kinds`` of scheme (a project's: what a check lists)."""
    wanted = set(kinds)
    return [t for t in available_trainers() if wanted & set(t.annotation_types)]


def available_trainers() -> list[TrainerInfo]:
    """Every trainer with its one-line description, pip requirements and parameters, by name."""
    out = []
    for name in sorted(TRAINERS):
        cls = get_trainer(name)
        params = {
            key: f"{p.help} (default: {p.default!r})" if not p.required else f"{p.help} (required)"
            for key, p in cls.params.items()
        }
        shown = tuple(key for key, p in cls.params.items() if p.required or p.shown)
        out.append(TrainerInfo(name, cls.description, tuple(cls.requires), bool(cls.local_only),
                               bool(cls.uses_device), params, shown,
                               tuple(key for key, p in cls.params.items() if p.required), bool(cls.reports_loss),
                               tuple(t.value for t in cls.annotation_types), bool(cls.learns_from_labels)))
    return out
