"""The recommender's part of ``privmap build --utility recommender``: :data:`MODE`.

It is the mode the registry hands to the quantized command: its help, its options from the
command's arguments, its builds and its line of the build's report.

The command itself is the quantized mechanism's (:func:`privmap.offline.mechanisms.quantized.command_with`):
the recommender wraps the quantized mapping's options, and the table engine builds, signs and
reports its bundle as any table bundle.
"""
from __future__ import annotations

from ..quantized import Mode
from ._build import build
from ._factors import DEFAULT_RANK
from ._options import MECHANISM, REFUSED_MAPPING, RecommenderOptions
from ._partitioned import build_partitioned

__all__ = ["MODE", "command_options", "report_line"]


def command_options(mapping, *, factors: int | None, factor_reg) -> RecommenderOptions:
    """The options ``--utility recommender`` asks for around the quantized ``mapping``.

    ``--factors`` (None: the default rank) and ``--factor-reg`` (a penalty, or ``"auto"``: chosen
    by validation). Raises BuildError as :class:`RecommenderOptions` does.
    """
    return RecommenderOptions(mapping=mapping, rank=factors or DEFAULT_RANK,
                              reg=None if factor_reg == "auto" else factor_reg)


def report_line(metrics: dict, provenance: dict) -> str:
    """The build report's line on the factor model, from the bundle's ``metrics`` and ``provenance``."""
    return (f"  recommender: {metrics['rating_columns']} rating columns "
            f"({100 * metrics['missing_cell_fraction']:.1f} % blank), rank {metrics['factor_rank']} factors, "
            f"penalty {metrics['factor_reg']:g}; distortion in stars (RMS over the columns)"
            + ("; class-blind clusters" if provenance.get("class_blind") else ""))


#: ``--utility recommender`` of the quantized command.
MODE = Mode(MECHANISM, (
    "recommender: for ratings with blank cells, map users' latent taste (a factor model fitted here, folded in on "
    "the device) and release a full row of predicted ratings, distortion in stars (docs/recommender.md)"),
    command_options, build, build_partitioned, report_line, REFUSED_MAPPING)
