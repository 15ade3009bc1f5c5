"""A narrowing gap as a progress fraction: the share of its decades covered, always in [0, 1]."""
import pytest

from privmap.offline.solvers._progress import log_fraction


@pytest.mark.parametrize("now, expected", [(1.0, 0.0), (1e-3, 0.5), (1e-6, 1.0), (1e-9, 1.0), (10.0, 0.0)])
def test_the_share_of_the_decades_from_the_first_gap_to_the_goal(now, expected):
    assert log_fraction(1.0, now, 1e-6) == pytest.approx(expected)


def test_a_first_gap_already_within_the_goal_is_done():
    assert log_fraction(1e-7, 1e-7, 1e-6) == 1.0


def test_a_goal_of_zero_reports_nothing_until_the_gap_closes():
    assert log_fraction(1.0, 0.5, 0.0) == 0.0
    assert log_fraction(1.0, 0.0, 0.0) == 1.0


@pytest.mark.parametrize("now", [float("inf"), float("nan")])
def test_a_gap_not_yet_measured_is_at_the_start(now):
    assert log_fraction(1.0, now, 1e-6) == 0.0
