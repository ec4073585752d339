"""``--quick`` for every benchmark: the same code on sizes that take seconds, so CI runs each one
and none can break unseen. Its figures mean little and nobody asserts them; a benchmark's own
defaults stay the ones its README quotes."""

from __future__ import annotations

import argparse
from typing import Any, Sequence


def add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="small sizes that run in seconds (what CI runs; the figures mean little)")


def parse(parser: argparse.ArgumentParser, small: dict[str, Any], argv: Sequence[str] | None = None
          ) -> argparse.Namespace:
    """Parse, and with ``--quick`` replace each option in ``small`` that was left at its default."""
    add(parser)
    args = parser.parse_args(argv)
    if args.quick:
        for name, value in small.items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)
    return args
