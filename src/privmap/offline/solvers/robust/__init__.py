"""The robust program: confidence sets of priors, and tables whose worst-case leakage over them
is certified.

Private modules: ``_confidence`` (:func:`confidence_set` and its radii, :class:`ConfidenceSet`)
and ``_certified`` (the certified bounds, :func:`solve_robust`, and the figures a bundle's
inspection reports).
"""
from ._certified import (
    RobustResult,
    certified_leakage_bits,
    certified_max_output_leakage_bits,
    counts_from_prior,
    output_balls,
    robust_figures_of_table,
    solve_robust,
)
from ._confidence import (
    DEFAULT_CONFIDENCE,
    ConfidenceSet,
    confidence_set,
    joint_radius,
    l1_radius,
    max_entropy_point,
    min_entropy_point,
)

__all__ = ["ConfidenceSet", "confidence_set", "l1_radius", "joint_radius", "min_entropy_point",
           "max_entropy_point", "DEFAULT_CONFIDENCE", "certified_leakage_bits",
           "certified_max_output_leakage_bits", "solve_robust", "RobustResult", "output_balls",
           "counts_from_prior", "robust_figures_of_table"]
