"""The ranking mode's part of ``privmap build --utility ranking``: :data:`MODE`.

It is the mode the registry hands to the quantized command: its help, its options from the
command's arguments, its builds and its line of the build's report.

The command itself is the quantized mechanism's (:func:`privmap.offline.mechanisms.quantized.command_with`):
the ranking mode wraps the quantized mapping's options, and the table engine builds, signs and
reports its bundle as any table bundle.
"""
from __future__ import annotations

from ..quantized import Mode
from ._build import build
from ._model import DEFAULT_RANK
from ._options import MECHANISM, REFUSED_MAPPING, RankingOptions
from ._partitioned import build_partitioned

__all__ = ["MODE", "command_options", "report_line"]


def command_options(mapping, *, factors: int | None, factor_reg) -> RankingOptions:
    """The options ``--utility ranking`` asks for around the quantized ``mapping``.

    ``--factors`` is the score space's rank (None: the default). ``factor_reg``, the recommender's
    fold-in penalty, has no part in a score space and is not read. Raises BuildError as
    :class:`RankingOptions` does.
    """
    return RankingOptions(mapping=mapping, rank=factors or DEFAULT_RANK)


def report_line(metrics: dict, provenance: dict) -> str:
    """The build report's line on the score space, from the bundle's ``metrics`` and ``provenance``."""
    return (f"  ranking: {metrics['rating_columns']} item columns "
            f"({100 * metrics['missing_cell_fraction']:.1f} % blank), score space of rank "
            f"{metrics['score_rank']}; distortion in scores (RMS over the columns)"
            + ("; class-blind clusters" if provenance.get("class_blind") else ""))


#: ``--utility ranking`` of the quantized command.
MODE = Mode(MECHANISM, (
    "ranking: for rating or watch data with blank cells, map the direction of users' item-item score rows (which "
    "items they rated, embedded on the device) and release a full row of item scores a service ranks directly, "
    "higher = recommend sooner (docs/ranking.md)"),
    command_options, build, build_partitioned, report_line, REFUSED_MAPPING)
