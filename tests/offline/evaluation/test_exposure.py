"""Exposure: the share of users whose release raises the odds of their own class past a factor."""
import numpy as np
import pytest
from privmap.offline.evaluation import exposed_share


def test_a_user_is_exposed_when_the_odds_of_their_own_class_rise_past_the_factor():
    posterior = np.array([[0.25, 0.75], [0.25, 0.75], [0.7, 0.3], [0.5, 0.5]])
    own = np.array([1, 0, 0, 1])
    prior = np.array([0.5, 0.5])
    # odds of the own class: 3, 1/3, 7/3, 1 against prior odds 1 (a fall in the odds exposes no one)
    assert exposed_share(posterior, own, prior, 2.0) == pytest.approx(0.5)
    assert exposed_share(posterior, own, prior, 4.0) == 0.0
    assert exposed_share(posterior, own, prior, 3.0) == 0.0           # raised 3x exactly is not more than 3x


def test_a_certain_posterior_exposes_and_a_skewed_prior_raises_the_bar():
    assert exposed_share([[0.0, 1.0]], [1], [0.5, 0.5], 1e9) == 1.0
    assert exposed_share([[0.1, 0.9]], [1], [0.2, 0.8], 2.0) == 1.0      # odds 9 against 4
    assert exposed_share([[0.1, 0.9]], [1], [0.1, 0.9], 2.0) == 0.0      # odds 9 against 9


def test_shapes_that_do_not_agree_are_refused():
    with pytest.raises(ValueError):
        exposed_share([[0.5, 0.5]], [0, 1], [0.5, 0.5], 2.0)
