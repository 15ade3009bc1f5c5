"""What any release is measured by, whatever mechanism made it: attackers, drift, utility, plots.

A stage below the mechanisms (``tests/test_architecture.py``): each mechanism's evaluation view
and :mod:`privmap.offline.evaluation` measure a bundle with these.

Private modules: ``_attacks`` (the MAP adversary who knows the mapping, permutation bias, the
logistic-regression attacker's ROC points, prior-mismatch bounds), ``_drift`` (whether a
population has drifted from the prior a bundle was built on), ``_plots`` (matplotlib figures),
``_recommender`` (matrix-factorisation RMSE on true vs released ratings, seed 000's Table I),
``_service_utility`` (utility as the service sees it: a recommender's RMSE, value kept and
NDCG@10 on held-out users' hidden ratings with their true, released or no rows),
``_service_ranking`` (the top-k lists users receive: EASE on true profiles, popularity, released
rows, ranking value kept),
``_service_svd`` (the service's recommender, scikit-surprise's SVD), ``_exposure`` (the share of
users whose release raises the odds of their own class more than 2x or 4x).
"""
from .._attacker import AttackScores, cross_validated_scores, logistic_attack
from ._attacks import (
    map_accuracy,
    map_accuracy_after,
    map_guess,
    permutation_bias,
    prior_mismatch_bounds,
    roc_curve_points,
    split_rows,
)
from ._drift import drift_check, format_drift
from ._exposure import EXPOSURE_FACTORS, exposed_shares, exposure_line, payload_exposure
from ._plots import curve_title, have_matplotlib, plot_curve, plot_mapping_2d, plot_roc, pyplot
from ._recommender import rmse_true_vs_released
from ._service_ranking import LIKED, ease_weights
from ._service_utility import ServiceUtility, format_utility, hide_ratings, recommender_utility

__all__ = ["curve_title", "AttackScores", "logistic_attack", "cross_validated_scores", "split_rows", "pyplot", "map_accuracy",
           "map_accuracy_after", "map_guess", "permutation_bias", "prior_mismatch_bounds",
           "roc_curve_points", "drift_check", "format_drift", "have_matplotlib", "plot_curve", "plot_mapping_2d",
           "plot_roc", "rmse_true_vs_released",
           "ServiceUtility", "format_utility", "hide_ratings", "recommender_utility", "ease_weights",
           "LIKED", "EXPOSURE_FACTORS", "exposed_shares", "exposure_line", "payload_exposure"]
