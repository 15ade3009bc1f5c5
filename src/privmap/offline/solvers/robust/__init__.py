"""The robust program: confidence sets of priors, and tables certified over them.

What is certified of a table is its worst-case leakage over the priors of a confidence set.

Private modules: ``_confidence`` (:func:`confidence_set` and its radii, the :class:`ConfidenceSet` it
returns) and ``_certified`` (the certified bounds, :func:`solve_robust`, and the figures a bundle's
inspection reports). The steps of the bounds' proofs stay in ``_certified``, each checkable alone
there: the per-cluster bound (``chi_square_bits``), the joint ellipsoid of binary posteriors
(``joint_view``, ``binary_kl_nats``, ``penalised_max``, ``joint_bound_bits``,
``joint_intervals_bits``) and the per-class ellipsoids (``ClassView``, ``class_inner_max``).
"""
from ._certified import (
    certified_leakage_bits,
    certified_max_output_leakage_bits,
    counts_from_prior,
    robust_figures_of_table,
    solve_robust,
)
from ._confidence import DEFAULT_CONFIDENCE, ConfidenceSet, confidence_set, l1_radius

__all__ = ["confidence_set", "ConfidenceSet", "l1_radius", "DEFAULT_CONFIDENCE", "certified_leakage_bits",
           "certified_max_output_leakage_bits", "solve_robust", "counts_from_prior", "robust_figures_of_table"]
