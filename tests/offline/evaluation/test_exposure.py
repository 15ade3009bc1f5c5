"""Exposure per user: the share whose release raises the odds of their own class 2x or 4x."""
import numpy as np
import pytest

from privmap.offline import BuildError
from privmap.offline.data import joint_prior
from privmap.offline.evaluation._exposure import users_exposure
from privmap.offline.measures import exposed_shares
from privmap.offline.mechanisms.table import view_from_table


def test_a_table_independent_of_the_input_exposes_no_one():
    prior = np.array([[0.3, 0.1], [0.2, 0.4]])
    assert exposed_shares(prior, np.full((2, 3), 1 / 3), prior) == (0.0, 0.0)


def test_the_identity_exposes_exactly_the_users_of_inputs_that_multiply_their_odds():
    prior = np.array([[0.27, 0.18, 0.05], [0.03, 0.12, 0.20]]) / 0.85
    p_a = prior.sum(axis=1)
    post = prior / prior.sum(axis=0)
    odds = post / (1 - post) / (p_a / (1 - p_a))[:, None]
    two, four = exposed_shares(prior, np.eye(3), prior)
    assert two == pytest.approx(prior[odds > 2].sum()) and four == pytest.approx(prior[odds > 4].sum())
    assert 0 < four <= two < 1 and (odds > 2).any() and not (odds > 2).all()


def test_an_output_that_makes_a_class_certain_exposes_its_users_at_every_factor():
    prior = np.array([[0.25, 0.25], [0.0, 0.5]])
    assert exposed_shares(prior, np.eye(2), prior, factors=(2.0, 1e6)) == (0.25, 0.25)


def test_factors_must_exceed_one_and_users_match_the_prior():
    prior = np.full((2, 2), 0.25)
    with pytest.raises(ValueError, match="above 1"):
        exposed_shares(prior, np.eye(2), prior, factors=(1.0,))
    with pytest.raises(ValueError, match="one shape"):
        exposed_shares(prior, np.eye(2), np.full((2, 3), 1 / 6))


def test_users_exposure_measures_the_rows_under_the_bundles_own_posterior():
    prior = np.array([[0.45, 0.05], [0.05, 0.45]])
    view = view_from_table("quantized", "l2", [[0.0], [1.0]], [[0.0], [1.0]], np.eye(2), ["f", "m"], ["x"], prior=prior)
    public = np.array([[0.0], [0.0], [1.0], [1.0]])
    codes = np.array([0, 1, 1, 1])                    # odds x9 for rows 0, 2, 3; x1/9 for row 1
    got = users_exposure(view, public, codes)
    assert got["exposed_2x"] == pytest.approx(0.75) and got["exposed_4x"] == pytest.approx(0.75)
    assert got["in_sample_exposed_2x"] == pytest.approx(0.9) and got["users"] == 4
    assert exposed_shares(prior, np.eye(2), joint_prior(codes, np.array([0, 0, 1, 1]), 2, 2))[0] == got["exposed_2x"]
    with pytest.raises(BuildError, match="prior"):
        plain = view_from_table("quantized", "l2", [[0.0], [1.0]], [[0.0], [1.0]], np.eye(2), ["f", "m"], ["x"])
        users_exposure(plain, public, codes)
