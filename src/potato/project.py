"""The running project: config, items and stores, shared by the server, the CLI and training."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from potato.config.schema import Config
from potato.db import Database
from potato.items import ItemSet, load_items
from potato.labels import LabelStore


@dataclass
class Project:
    config: Config
    items: ItemSet
    db: Database
    labels: LabelStore
    # Seams the training subsystem fills in (C5, C7); None when training is off.
    suggestions_for: Callable[[str], dict[str, Any]] | None = None
    on_labels_saved: Callable[[int], None] | None = None

    @classmethod
    def open(cls, config: Config) -> Project:
        items = load_items(
            config.data_files, config.item_properties.id_key, config.item_properties.text_key
        )
        db = Database(config.database_path)
        return cls(config=config, items=items, db=db, labels=LabelStore(db))
