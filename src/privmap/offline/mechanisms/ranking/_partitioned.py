"""The ranking build on partitioned ratings (``privmap build DIR --utility ranking``).

The model modes' partitioned build
(:func:`privmap.offline.mechanisms.recommender.build_model_partitioned`) with the score space
as the model. The space is fitted on the seeded sample of rated rows as the in-memory build
fits it on all (EASE's item-item weights need the sample's m x m Gram matrix, not the users:
:data:`~privmap.offline.mechanisms.recommender._partitioned.SAMPLE_CELLS` bounds it), every partition's
users are embedded on the workers, and the payload is made a ranking bundle's by
:func:`._build.ranking_result`, as in memory. Its outputs are released where the mapping placed
them (no calibration pass).
"""
from __future__ import annotations

import os

import numpy as np

from ..._errors import BuildError
from ...data import Source
from .._result import Result
from ..recommender import PartitionedMode, build_model_partitioned
from ..table import IN_CORE_BYTES
from ._build import ranking_result, score_names
from ._model import fit_score_space
from ._options import RankingOptions

__all__ = ["build_partitioned", "RANKING"]


def _fit(R: np.ndarray, options: RankingOptions, progress) -> tuple:
    """The score space of the sample ``R`` as :func:`._build.prepare` fits it, and no penalty scores."""
    return fit_score_space(R, rank=options.rank, penalty=options.penalty,
                           rng=np.random.default_rng(options.mapping.seed)), {}


#: The ranking mode on partitioned ratings.
RANKING = PartitionedMode(stage="score-space", fit=_fit, width=lambda options: options.rank,
                          names=lambda space: score_names(space.rank),
                          finish=lambda built, fitted, options, folded: ranking_result(built, fitted, options))


def build_partitioned(src: Source, options: RankingOptions, client, *, kmeans: str = "minibatch", progress=None,
                      dask_progress: bool = False, scratch: str | os.PathLike | None = None,
                      in_core_bytes: int = IN_CORE_BYTES) -> Result:
    """Build a ranking bundle's payload from partitioned ratings (module docstring).

    Arguments, result and errors as
    :func:`privmap.offline.mechanisms.recommender.build_partitioned` with :class:`RankingOptions`.

    Raises
    ------
    BuildError
        Other options than :class:`RankingOptions`; as the recommender's partitioned build.
    """
    if not isinstance(options, RankingOptions):
        raise BuildError(f"the ranking build takes RankingOptions, got {type(options).__name__}")
    return build_model_partitioned(src, options, client, RANKING, kmeans=kmeans, progress=progress,
                                   dask_progress=dask_progress, scratch=scratch, in_core_bytes=in_core_bytes)
