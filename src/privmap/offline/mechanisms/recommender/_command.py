"""The recommender's part of ``privmap build --utility recommender``: its options from the
command's arguments, and its line of the build's report.

The command itself is seed 000's (:mod:`privmap.offline.mechanisms._seed000_command`): it reads
the quantized mapping's options the recommender wraps, and builds, signs and reports every
seed-000 bundle alike.
"""
from __future__ import annotations

from ._build import RecommenderOptions
from ._factors import DEFAULT_RANK

__all__ = ["command_options", "report_line"]


def command_options(mapping, *, factors: int | None, factor_reg) -> RecommenderOptions:
    """The options ``--utility recommender`` asks for around the quantized ``mapping``:
    ``--factors`` (None: the default rank) and ``--factor-reg`` (a penalty, or ``"auto"``: chosen
    by validation). Raises BuildError as :class:`RecommenderOptions` does."""
    return RecommenderOptions(mapping=mapping, rank=factors or DEFAULT_RANK,
                              reg=None if factor_reg == "auto" else factor_reg)


def report_line(metrics: dict, provenance: dict) -> str:
    """The build report's line on the factor model, from the bundle's ``metrics`` and
    ``provenance``."""
    return (f"  recommender: {metrics['rating_columns']} rating columns "
            f"({100 * metrics['missing_cell_fraction']:.1f} % blank), rank {metrics['factor_rank']} factors, "
            f"penalty {metrics['factor_reg']:g}; distortion in stars (RMS over the columns)"
            + ("; class-blind clusters" if provenance.get("class_blind") else ""))
