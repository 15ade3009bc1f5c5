"""The ranking mode's part of ``privmap build --utility ranking``: its options from the command's
arguments, and its line of the build's report.

The command itself is seed 000's (:mod:`privmap.offline.mechanisms._seed000_command`): it reads
the quantized mapping's options the ranking mode wraps, and builds, signs and reports every
seed-000 bundle alike.
"""
from __future__ import annotations

from ._build import RankingOptions
from ._model import DEFAULT_RANK

__all__ = ["command_options", "report_line"]


def command_options(mapping, *, factors: int | None, factor_reg) -> RankingOptions:
    """The options ``--utility ranking`` asks for around the quantized ``mapping``: ``--factors``
    as the score space's rank (None: the default). ``factor_reg``, the recommender's fold-in
    penalty, has no part in a score space and is not read. Raises BuildError as
    :class:`RankingOptions` does."""
    return RankingOptions(mapping=mapping, rank=factors or DEFAULT_RANK)


def report_line(metrics: dict, provenance: dict) -> str:
    """The build report's line on the score space, from the bundle's ``metrics`` and
    ``provenance``."""
    return (f"  ranking: {metrics['rating_columns']} item columns "
            f"({100 * metrics['missing_cell_fraction']:.1f} % blank), score space of rank "
            f"{metrics['score_rank']}; distortion in scores (RMS over the columns)"
            + ("; class-blind clusters" if provenance.get("class_blind") else ""))
