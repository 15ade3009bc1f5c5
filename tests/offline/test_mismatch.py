"""Theorem 1 / Proposition 1 bounds: shrink with n, flagged vacuous when they say nothing."""
import pytest

from privmap.offline._mismatch import mismatch_bound


def test_eps_solves_the_sanov_inequality_at_the_confidence():
    n, a, k = 10_000, 2, 16
    b = mismatch_bound(n, a, k, 1.0, 1.0, confidence=0.9)
    assert (n + 1) ** (a * k) * 2 ** (-2 * n * b.eps ** 2) == pytest.approx(0.1, rel=1e-6)


def test_bounds_shrink_as_samples_grow():
    small, large = mismatch_bound(10 ** 4, 2, 16, 3.0, 1.0), mismatch_bound(10 ** 8, 2, 16, 3.0, 1.0)
    assert large.eps < small.eps and large.leakage_bits < small.leakage_bits
    assert large.distortion == pytest.approx(3.0 * large.eps)


def test_small_samples_are_reported_vacuous_and_huge_ones_are_not():
    assert mismatch_bound(2258, 2, 64, 5.0, 1.0).vacuous
    assert not mismatch_bound(10 ** 9, 2, 8, 5.0, 1.0).vacuous


def test_invalid_arguments_raise():
    with pytest.raises(ValueError):
        mismatch_bound(0, 2, 2, 1.0, 1.0)
    with pytest.raises(ValueError):
        mismatch_bound(10, 2, 2, 1.0, 1.0, confidence=1.0)
