"""Measuring what a bundle delivers: leakage, distortion, attacks, utility, curves and plots.

Private modules: ``_evaluate`` (a bundle or table measured on labelled rows), ``_attacks`` (MAP
and logistic-regression adversaries), ``_curve`` (privacy-distortion sweeps), ``_plots``
(matplotlib figures), ``_recommender`` (matrix-factorisation RMSE, seed 000's Table I),
``_service_utility`` (utility as the service sees it: a recommender's RMSE, value kept and NDCG@10
on held-out users' hidden ratings with their true, released or no rows), ``_service_svd``
(the service's recommender, scikit-surprise's SVD), ``_realvalued`` (attacks on
the nullspace and gaussian kinds), ``_baselines`` (constant release and randomized response, the
figures a bundle must beat), ``_bundle_report`` (a seed-000 bundle measured on labelled rows, as
``privmap evaluate`` and the notebook API report it), ``_funnel_curve`` (seed 003's greedy/negligent curves beside seed
000), ``_maxcorr_compare`` (a max-correlation bundle beside seed 000 on labelled rows).
"""
from ._evaluate import evaluate_view, view_from_payload, view_from_table
from ._funnel_curve import funnel_sweep
from ._maxcorr_compare import compare_max_correlation
from ._realvalued import attack_scores, evaluate_payload, nullspace_experiment
from ._service_utility import ServiceUtility, hide_ratings, recommender_utility

__all__ = ["evaluate_view", "view_from_payload", "view_from_table", "funnel_sweep", "compare_max_correlation",
           "attack_scores", "evaluate_payload", "nullspace_experiment", "ServiceUtility", "hide_ratings",
           "recommender_utility"]
