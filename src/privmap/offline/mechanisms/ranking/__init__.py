"""The ranking mechanism: program (19) over the directions of users' item-item score rows.

It releases full rows of item scores that a service ranks directly (higher = recommend sooner).

Its face: :class:`RankingOptions` (the quantized mapping's options and the score space's),
:func:`build` (labelled ratings in memory -> :class:`~privmap.offline.mechanisms.Result`), the
score space and the evaluation view. Private modules: ``_options`` (:class:`RankingOptions`),
``_model`` (the score space: EASE on which items users rated, projected to rank k, in fixed
point), ``_build`` (the build on the quantized pipeline, and the payload made a ranking
bundle's), ``_command`` (its part of ``privmap build --utility ranking``: :data:`MODE`, the mode
the quantized command is handed), ``_partitioned`` (the same build on partitioned ratings, on
Dask), ``_view`` (the evaluation view: the released score rows measured on labelled rows).
"""
from ._build import build
from ._command import MODE
from ._model import DEFAULT_PENALTY, DEFAULT_RANK, fit_score_space
from ._options import RankingOptions
from ._view import ScoreView, view_of_ranking

__all__ = ["MODE", "RankingOptions", "build",
           "fit_score_space", "DEFAULT_RANK", "DEFAULT_PENALTY", "ScoreView", "view_of_ranking"]
