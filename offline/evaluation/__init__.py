"""Measuring what a bundle delivers: leakage, distortion, attacks, utility, curves and plots.

Private modules: ``_evaluate`` (a bundle or table measured on labelled rows), ``_attacks`` (MAP
and logistic-regression adversaries), ``_curve`` (privacy-distortion sweeps), ``_plots``
(matplotlib figures), ``_recommender`` (matrix-factorisation RMSE), ``_baselines`` (constant
release and randomized response, the figures a bundle must beat).
"""
from ._evaluate import evaluate_view, view_from_payload, view_from_table

__all__ = ["evaluate_view", "view_from_payload", "view_from_table"]
