"""The profiles of a conjoint choice set and the choice among them (pure): upstream's ``conjoint``.

A set's profiles are the item's own (its list under ``profiles_field``) or made from the scheme's
attributes, one level of each per profile, drawn with a generator seeded by the scheme and the item:
every annotator sees the same set on an item (a fixed design), and the same on every visit, so a
choice always names the profiles it was made among. The stored choice holds those profiles, written
here from the item, never from what was sent.
"""

from __future__ import annotations

import json
import random
from typing import Any, Mapping, Sequence

NONE = "none"
"""The choice of none of the profiles (``show_none_option``), as upstream's page names it."""


class BadChoice(ValueError):
    """A choice that names no profile of the set; the message says which there are."""


def made_profiles(attributes: Sequence[tuple[str, Sequence[str]]], per_set: int, seed: str) -> list[dict[str, str]]:
    """``per_set`` profiles, each a level of every attribute, different from each other where the
    attributes allow as many."""
    draw = random.Random(seed)
    distinct = 1
    for _, levels in attributes:
        distinct *= max(len(levels), 1)
    out: list[dict[str, str]] = []
    while len(out) < per_set:
        profile = {name: draw.choice(list(levels)) for name, levels in attributes}
        if profile not in out or len(out) >= distinct:
            out.append(profile)
    return out


def item_profiles(value: Any) -> list[dict[str, str]]:
    """An item's own profiles: a list of objects, each attribute's level as text."""
    return [{str(k): v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in p.items()}
            for p in (value if isinstance(value, list) else []) if isinstance(p, dict)]


def stored_choice(value: Mapping[str, Any], profiles: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """A choice as stored: the profile chosen (its number, 1 for the first, or ``"none"``) and the
    profiles it was chosen among."""
    chosen = value["chosen_profile"]
    if chosen != NONE and not 1 <= chosen <= len(profiles):
        raise BadChoice(f"this set has {len(profiles)} profiles, numbered 1 to {len(profiles)}; there is no {chosen}"
                        if profiles else "this item has no profiles to choose among; leave the answer out")
    return {"chosen_profile": chosen, "profiles": [dict(p) for p in profiles]}
