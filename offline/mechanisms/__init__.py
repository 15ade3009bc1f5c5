"""Stage 3 of a build: the mechanisms, each turning a dataset into an unsigned payload.

Private modules: ``_pipeline`` (the quantized and exact MI-optimal mappings of seed 000 and the
:func:`build` entry point), ``_erasure`` (the exact mechanism's alphabet of tuples and erasures),
``_missing`` (the quantized alphabet under the "mask" and "impute" missing-answer policies).
"""
from ._missing import DEFAULT_MISSING, MISSING_POLICIES
from ._pipeline import MECHANISMS, Build, BuildOptions, build

__all__ = ["build", "Build", "BuildOptions", "MECHANISMS", "MISSING_POLICIES", "DEFAULT_MISSING"]
