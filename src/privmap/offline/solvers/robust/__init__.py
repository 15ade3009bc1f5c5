"""The robust program: confidence sets of priors, and tables whose worst-case leakage over them
is certified.

Private modules: ``_confidence`` (:func:`confidence_set` and its radii, :class:`ConfidenceSet`)
and ``_certified`` (the certified bounds, :func:`solve_robust`, and the figures a bundle's
inspection reports). The steps of the bounds' proofs are on this face too, each checkable alone:
the per-cluster bound (:func:`chi_square_bits`), the joint ellipsoid of binary posteriors
(:func:`joint_view`, :func:`binary_kl_nats`, :func:`penalised_max`, :func:`joint_bound_bits`,
:func:`joint_intervals_bits`) and the per-class ellipsoids (:class:`ClassView`,
:func:`class_inner_max`).
"""
from ._certified import (
    ClassView,
    RobustResult,
    binary_kl_nats,
    certified_leakage_bits,
    certified_max_output_leakage_bits,
    chi_square_bits,
    class_inner_max,
    counts_from_prior,
    joint_bound_bits,
    joint_intervals_bits,
    joint_view,
    output_balls,
    penalised_max,
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
           "counts_from_prior", "robust_figures_of_table", "chi_square_bits", "joint_view", "binary_kl_nats",
           "penalised_max", "joint_bound_bits", "joint_intervals_bits", "ClassView", "class_inner_max"]
