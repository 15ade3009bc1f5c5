"""Stage 3 of a build: the mechanisms, each turning a dataset into an unsigned payload.

Private modules: ``_pipeline`` (the quantized and exact MI-optimal mappings of seed 000 and the
:func:`build` entry point), ``_erasure`` (the exact mechanism's alphabet of tuples and erasures),
``_codebook`` (released rows moved to the metric's optimum, then re-solved), ``_holdout`` (the
cross-fitted leakage for new users), ``_autotune`` (``--clusters auto`` / ``--smoothing auto``).
"""
from ._pipeline import MECHANISMS, Build, BuildOptions, build

__all__ = ["build", "Build", "BuildOptions", "MECHANISMS"]
