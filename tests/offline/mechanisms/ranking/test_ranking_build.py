"""The ranking-grade build: the score space the device repeats, distances that are score
differences, releases that rank better than popularity, and the bundle it writes."""
from __future__ import annotations

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from privmap.offline import BuildError, CrossFitting, Dataset, QuantizedOptions, declare
from privmap.offline.bundle import check_bundle, encode_payload, sign_bundle
from privmap.offline.data import synthetic_ratings
from privmap.offline.measures import hide_ratings
from privmap.offline.measures._service_ranking import RankingService
from privmap.offline.mechanisms import ranking
from privmap.offline.mechanisms.ranking import RankingOptions, fit_score_space, view_of_ranking
from privmap.offline.mechanisms.table import view_release

NOW = 1_800_000_000


@pytest.fixture(scope="module")
def drawn():
    return synthetic_ratings(1200, 60, density=0.15, rng=4, popularity=1.5, taste=1.0, shift=0.6)


def dataset(drawn, rows):
    return Dataset(features=drawn.items, public=drawn.ratings[rows], private=drawn.private[rows],
                   classes=drawn.classes, private_name="group", categorical=False, sha256="0" * 64)


def options(clusters=16, delta_fraction=0.5, folds=0, **more):
    mapping = QuantizedOptions(clusters=clusters, delta_fraction=delta_fraction, issued_at=NOW,
                               declared=declare(None, ["1:5"], None),
                               cross_fitting=CrossFitting(folds=folds) if folds else None)
    return RankingOptions(mapping=mapping, **{"rank": 12, **more})


def signed(result):
    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    data = sign_bundle(encode_payload(result.payload), key)
    return data, check_bundle(data, key.public_key(), now=NOW)


@pytest.fixture(scope="module")
def built(drawn):
    result = ranking.build(dataset(drawn, slice(0, 840)), options(folds=3))
    return (result, *signed(result))


def test_the_score_space_embeds_unit_points_whose_distance_is_the_rms_score_difference(drawn):
    space = fit_score_space(drawn.ratings, rank=10, rng=np.random.default_rng(0))
    Z = space.points(drawn.ratings[:50])
    assert np.allclose(np.linalg.norm(Z, axis=1), 1.0)
    S = space.scores(Z)
    rms = np.sqrt(np.mean((S[:, None, :] - S[None, :, :]) ** 2, axis=2))
    gaps = np.linalg.norm(Z[:, None, :] - Z[None, :, :], axis=2)
    assert np.allclose(rms, gaps, rtol=1e-3, atol=1e-4)          # the basis is orthonormal up to fixed point
    assert space.embed.dtype == np.int64 and np.abs(space.embed).max() <= 32767


def test_only_which_items_are_rated_moves_a_point(drawn):
    space = fit_score_space(drawn.ratings, rank=10, rng=np.random.default_rng(0))
    other = np.where(np.isnan(drawn.ratings[:20]), np.nan, 6.0 - drawn.ratings[:20])
    assert np.array_equal(space.points(drawn.ratings[:20]), space.points(other))


def test_a_row_with_nothing_rated_is_refused(drawn):
    space = fit_score_space(drawn.ratings, rank=10, rng=np.random.default_rng(0))
    with pytest.raises(BuildError, match="no rated column"):
        space.points(np.full((1, 60), np.nan))


def test_the_device_embeds_and_releases_exactly_as_the_evaluation_view_does(drawn, built):
    result, _, bundle = built
    view = view_of_ranking(bundle)
    rows = drawn.ratings[840:900]
    cells = [["" if np.isnan(v) else int(v) for v in row] for row in rows]
    assert [bundle.lookup(row) for row in cells] == view.lookup(rows).tolist()
    for j in range(len(bundle.outputs)):
        assert bundle.representative(j) == view.outputs[j].tolist()


def test_the_bundle_declares_its_space_and_is_reproducible(drawn, built):
    result, data, bundle = built
    assert bundle.mechanism == "ranking" and len(bundle.space) == 12 and len(bundle.features) == 60
    assert result.metrics["score_rank"] == 12 and result.metrics["rating_columns"] == 60
    assert "holdout_leakage_bits" in result.metrics
    again, _ = signed(ranking.build(dataset(drawn, slice(0, 840)), options(folds=3)))
    assert again == data


def test_released_rows_rank_new_users_unseen_items_better_than_popularity(drawn, built):
    _, _, bundle = built
    train, heldout = drawn.ratings[:840], drawn.ratings[840:]
    hidden = hide_ratings(heldout, rng=0)
    service = RankingService(train, heldout, hidden)
    released = view_release(view_of_ranking(bundle), np.random.default_rng(1))(np.where(hidden, np.nan, heldout))
    figures = service.measure(released)
    assert figures["ranking_recall_released"] > figures["ranking_recall_popularity"]
    assert figures["ranking_value_kept"] > 0.2


def test_perfect_privacy_releases_one_list_whatever_the_user(drawn):
    result = ranking.build(dataset(drawn, slice(0, 600)), options(clusters=8, delta_fraction=1.0))
    _, bundle = signed(result)
    assert result.metrics["leakage_bits"] < 1e-9
    rows = [["" if np.isnan(v) else int(v) for v in row] for row in drawn.ratings[600:620]]
    assert len({tuple(bundle.sanitize(row)) for row in rows}) <= len(bundle.outputs)


@pytest.mark.parametrize("change, says", [({"rank": 1}, "2..64"), ({"penalty": 0.0}, "penalty"),
                                          ({"decimals": 7}, "decimals")])
def test_options_out_of_range_are_refused_at_construction(change, says):
    with pytest.raises(BuildError, match=says):
        options(**change)


def test_a_mapping_other_than_l2_on_masked_blanks_is_refused():
    mapping = QuantizedOptions(clusters=8, delta_fraction=0.5, metric="l1")
    with pytest.raises(BuildError, match="l2 metric"):
        RankingOptions(mapping=mapping)
