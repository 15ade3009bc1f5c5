"""Utility as the service sees it: a recommender trained with the true, released or no held-out rows."""
import numpy as np
import pytest

from privmap.offline.data import synthetic_ratings
from privmap.offline.measures import ServiceUtility, format_utility, hide_ratings, recommender_utility
from privmap.offline.measures._service_svd import fit_svd
from privmap.offline.mechanisms.table import view_from_table
from privmap.offline.mechanisms.table._view import recommender_figures


@pytest.fixture(scope="module")
def ratings():
    s = synthetic_ratings(900, 60, density=0.15, rng=11)
    return s.ratings[:600], s.ratings[600:]


@pytest.fixture(scope="module")
def service(ratings):
    return ServiceUtility(*ratings, seed=0)


def test_value_kept_is_one_for_the_true_rows_and_zero_for_nothing(service):
    true = service.measure(service.visible)
    nothing = service.measure(np.full(service.heldout.shape, np.nan))
    assert true["rmse_released"] == true["rmse_true"] and true["value_kept"] == 1.0
    assert nothing["rmse_released"] == nothing["rmse_nothing"] and nothing["value_kept"] == 0.0
    assert true["ndcg_at_k_released"] == true["ndcg_at_k_true"]
    assert nothing["recall_at_k_released"] == nothing["recall_at_k_nothing"]


def test_the_true_rows_predict_the_hidden_ratings_better_than_no_row(service):
    base = service.baseline
    assert base["rmse_true"] < base["rmse_nothing"] - 0.01


def test_released_rows_that_scramble_the_ratings_keep_less_value_than_the_true_ones(service):
    rng = np.random.default_rng(0)
    shuffled = service.visible.copy()
    for row in shuffled:                               # each user's ratings moved to other items they rated
        rated = np.flatnonzero(~np.isnan(row))
        row[rated] = row[rng.permutation(rated)]
    flipped = 6.0 - service.visible                    # every rating mirrored on the 1..5 scale
    kept_shuffled = service.measure(shuffled)["value_kept"]
    kept_flipped = service.measure(flipped)["value_kept"]
    assert kept_flipped < 0 < kept_shuffled < 1


def test_blank_released_cells_are_not_ratings_and_dense_rows_are_accepted(service):
    visible = service.visible
    filled = np.where(np.isnan(visible), 3.0, visible)   # every column released
    r = service.measure(filled)
    assert r["released_cells_per_user"] == visible.shape[1]
    assert r["released_cells_per_user"] > r["visible_ratings_per_user"]
    assert r["rmse_released"] != r["rmse_true"]


def test_each_held_out_user_hides_a_tenth_of_their_ratings_and_keeps_one_visible():
    rows = np.full((4, 30), np.nan)
    rows[0, :20] = 4.0       # 20 ratings: 2 hidden
    rows[1, :2] = 3.0        # 2 ratings: 1 hidden, 1 visible
    rows[2, :1] = 5.0        # 1 rating: none hidden
    rows[3, :] = 1.0         # 30 ratings: 3 hidden
    hidden = hide_ratings(rows, 0.1, rng=0)
    assert hidden.sum(axis=1).tolist() == [2, 1, 0, 3]
    assert not np.any(hidden & np.isnan(rows))
    assert np.array_equal(hide_ratings(rows, 0.1, rng=0), hidden)


def test_the_release_sees_only_the_visible_cells(ratings):
    seen = {}

    def release(visible):
        seen["rows"] = visible.copy()
        return visible
    r = recommender_utility(*ratings, release, seed=3)
    service = ServiceUtility(*ratings, seed=3)
    assert np.array_equal(seen["rows"], service.visible, equal_nan=True)
    assert np.all(np.isnan(seen["rows"][service.hidden]))
    assert r["value_kept"] == 1.0 and r["hidden_ratings"] == int(service.hidden.sum())


def test_released_rows_as_an_array_need_their_hidden_cells(ratings):
    train, heldout = ratings
    with pytest.raises(ValueError, match="hidden"):
        recommender_utility(train, heldout, heldout)
    hidden = hide_ratings(heldout, rng=0)
    r = recommender_utility(train, heldout, np.where(hidden, np.nan, heldout), hidden=hidden, seed=0)
    assert r["value_kept"] == 1.0


def test_shapes_that_do_not_agree_raise(ratings):
    train, heldout = ratings
    with pytest.raises(ValueError):
        ServiceUtility(train, heldout[:, :10])
    with pytest.raises(ValueError):
        ServiceUtility(train, heldout).measure(heldout[:5])


def test_ndcg_and_recall_are_one_when_the_scores_are_the_hidden_ratings(service):
    truth = np.where(service.hidden, service.heldout, -10.0)     # hidden items first, in rating order
    assert service._ndcg(truth) == pytest.approx(1.0)
    assert service._recall(truth) == pytest.approx(1.0)
    assert service._ndcg(-truth) < 0.9


def test_the_vectorised_predictions_are_surprises_own():
    from surprise import SVD, Trainset
    s = synthetic_ratings(120, 30, density=0.2, rng=2)
    R = s.ratings.copy()
    R[7] = np.nan                                                # a user the model does not know
    model = fit_svd(R, scale=(1, 5), factors=8, seed=4)
    users = np.flatnonzero(~np.isnan(R).all(axis=1))
    items = np.flatnonzero(~np.isnan(R).all(axis=0))
    uid = {u: k for k, u in enumerate(users)}
    iid = {i: k for k, i in enumerate(items)}
    ur, ir = {}, {}
    for u, i in zip(*np.nonzero(~np.isnan(R))):
        ur.setdefault(uid[u], []).append((iid[i], R[u, i]))
        ir.setdefault(iid[i], []).append((uid[u], R[u, i]))
    trainset = Trainset(ur, ir, len(users), len(items), int((~np.isnan(R)).sum()), (1, 5), uid, iid)
    algo = SVD(n_factors=8, random_state=4).fit(trainset)
    pairs = [(0, 0), (7, 3), (50, 29), (119, 11)]
    want = [algo.predict(int(u), int(i)).est for u, i in pairs]
    got = model.predict(np.array([u for u, _ in pairs]), np.array([i for _, i in pairs]))
    assert got == pytest.approx(want, abs=1e-12)


def test_a_quantized_view_reports_the_recommender_figures_beside_the_true_and_empty_rows(ratings):
    train, heldout = ratings
    filled = np.where(np.isnan(train), 3.0, train)
    centers = np.vstack([filled[:300].mean(axis=0), filled[300:].mean(axis=0)]).round()
    view = view_from_table("quantized", "l2", centers, centers, np.eye(2), ["a", "b"],
                           [f"i{j}" for j in range(train.shape[1])])
    r = recommender_figures(view, train, heldout, seed=0)
    assert r["released_cells_per_user"] == train.shape[1]          # a representative row is dense
    assert r["value_kept"] is not None and r["value_kept"] < 1
    text = format_utility(r)
    assert "value kept" in text and "NDCG@10" in text
