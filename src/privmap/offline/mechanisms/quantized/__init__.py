"""Seed 000: the mutual-information-optimal mapping, quantized (ratings) or exact (categorical tuples).

Private modules: ``_pipeline`` (the build: alphabet, prior, program (19), codebook step, integer
table, payload), ``_erasure`` (the exact mechanism's alphabet of tuples and erasures), ``_missing``
(the quantized alphabet under the "mask" and "impute" missing-answer policies), ``_codebook``
(released rows moved to the metric's optimum, then re-solved), ``_holdout`` (the cross-fitted
leakage for new users), ``_autotune`` (``--clusters auto`` / ``--smoothing auto``),
``_partitioned_build`` (the out-of-core build on Dask). The public names are re-exported by
:mod:`privmap.offline.mechanisms`.
"""
