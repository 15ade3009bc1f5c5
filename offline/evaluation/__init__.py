"""Measuring what a bundle delivers: leakage, distortion, attacks, utility, curves and plots.

Private modules: ``_evaluate`` (a bundle or table measured on labelled rows), ``_attacks`` (MAP
and logistic-regression adversaries), ``_curve`` (privacy-distortion sweeps), ``_plots``
(matplotlib figures), ``_recommender`` (matrix-factorisation RMSE), ``_realvalued`` (attacks on
the nullspace and gaussian kinds), ``_baselines`` (constant release and randomized response, the
figures a bundle must beat).
"""
from ._evaluate import evaluate_view, view_from_payload, view_from_table
from ._realvalued import attack_scores, evaluate_payload, nullspace_experiment

__all__ = ["evaluate_view", "view_from_payload", "view_from_table",
           "attack_scores", "evaluate_payload", "nullspace_experiment"]
