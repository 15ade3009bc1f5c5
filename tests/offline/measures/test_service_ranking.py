"""The top-k lists users receive: EASE on true profiles, popularity, and released rows, by recall and NDCG."""
import numpy as np
import pytest

from privmap.offline.data import synthetic_ratings
from privmap.offline.measures import ServiceUtility, ease_weights, format_utility, hide_ratings
from privmap.offline.measures._service_ranking import RankingService


@pytest.fixture(scope="module")
def split():
    s = synthetic_ratings(900, 60, density=0.15, rng=3, popularity=1.5, taste=1.0)
    train, heldout = s.ratings[:600], s.ratings[600:]
    return train, heldout, hide_ratings(heldout, rng=0)


@pytest.fixture(scope="module")
def service(split):
    return RankingService(*split)


def test_ease_weights_have_a_zero_diagonal_and_reproduce_the_closed_form():
    X = (np.random.default_rng(0).random((50, 8)) < 0.3).astype(float)
    B = ease_weights(X, 5.0)
    P = np.linalg.inv(X.T @ X + 5.0 * np.eye(8))
    assert np.allclose(np.diag(B), 0.0)
    off = ~np.eye(8, dtype=bool)
    assert np.allclose(B[off], (-P / np.diag(P))[off])


def test_a_release_that_ranks_exactly_the_hidden_liked_items_first_has_recall_and_ndcg_one(service):
    oracle = np.where(service.relevant, 1.0, 0.0)
    recall, ndcg = service.figures(oracle)
    assert recall == pytest.approx(1.0) and ndcg == pytest.approx(1.0)


def test_seen_items_are_never_recommended_even_when_scored_highest(service):
    seen_first = np.where(service.seen, 100.0, np.where(service.relevant, 1.0, 0.0))
    assert service.figures(seen_first)[0] == pytest.approx(1.0)


def test_blank_released_cells_rank_after_every_scored_cell(service):
    blanks_on_relevant = np.where(service.relevant, np.nan, 0.0)
    assert service.figures(blanks_on_relevant)[0] == pytest.approx(0.0)


def test_the_popularity_list_released_to_everyone_keeps_no_ranking_value(service):
    r = service.measure(np.broadcast_to(service.popularity, service.seen.shape).copy())
    assert r["ranking_recall_released"] >= r["ranking_recall_popularity"]
    assert r["ranking_value_kept"] == pytest.approx(0.0, abs=0.02)


def test_on_taste_driven_blanks_ease_on_true_profiles_beats_popularity(service):
    base = service.baseline
    assert base["ranking_recall_true"] > base["ranking_recall_popularity"] + 0.01


def test_the_true_visible_profile_released_as_is_keeps_the_ranking_value_of_the_true_profile(split, service):
    train, heldout, hidden = split
    visible = np.where(hidden, np.nan, heldout)
    r = service.measure(visible)
    assert r["ranking_value_kept"] >= 0.9


def test_the_service_utility_reports_the_ranking_figures_beside_the_rating_figures(split):
    train, heldout, hidden = split
    service = ServiceUtility(train, heldout, hidden=hidden, epochs=5, seed=0)
    r = service.measure(service.visible)
    assert {"ranking_recall_true", "ranking_recall_popularity", "ranking_value_kept"} <= set(r)
    assert "ranking value kept" in format_utility(r)


def test_rows_of_other_columns_are_refused(split, service):
    with pytest.raises(ValueError, match="do not match"):
        service.measure(np.zeros((3, 4)))


def test_fewer_columns_than_the_list_length_rank_them_all():
    train = np.array([[5.0, 1.0], [4.0, np.nan], [np.nan, 5.0]])
    heldout = np.array([[5.0, 4.0], [2.0, 5.0]])
    hidden = np.array([[True, False], [False, True]])
    ranked = RankingService(train, heldout, hidden).figures(np.zeros((2, 2)))
    assert ranked == (1.0, 1.0)            # each user's one unseen item is their relevant one


def test_every_measure_of_one_split_shares_one_ranking_protocol_and_its_ease_weights(split):
    train, heldout, hidden = split
    first = ServiceUtility(train, heldout, hidden=hidden, epochs=5, seed=0)
    again = ServiceUtility(train, heldout, hidden=hidden, epochs=5, seed=0)
    other = ServiceUtility(train, heldout, hidden=hidden, epochs=5, seed=0, top=5)
    assert first.ranking is again.ranking and first.ranking.weights is again.ranking.weights
    assert other.ranking is not first.ranking and other.ranking.top == 5
