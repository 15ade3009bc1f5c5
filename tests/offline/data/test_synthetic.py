"""The seeded rating generator: latent factors, a private attribute, blanks missing not at random."""
import json

import numpy as np
import pytest

from privmap.offline._attacker import logistic_attack
from privmap.offline.data import load_dataset, synthetic_ratings


def test_the_same_seed_draws_the_same_ratings_and_another_seed_other_ones():
    a = synthetic_ratings(200, 40, rng=5)
    b = synthetic_ratings(200, 40, rng=np.random.default_rng(5))
    c = synthetic_ratings(200, 40, rng=6)
    assert np.array_equal(a.ratings, b.ratings, equal_nan=True) and np.array_equal(a.private, b.private)
    assert not np.array_equal(a.ratings, c.ratings, equal_nan=True)


def test_the_share_of_observed_cells_is_the_density_asked_for():
    for density in (0.02, 0.1, 0.4):
        s = synthetic_ratings(1000, 200, density=density, rng=1)
        observed = ~np.isnan(s.ratings)
        assert s.observe_probability.mean() == pytest.approx(density, rel=1e-6)
        # 200,000 Bernoulli cells: the share is within 4 standard deviations of the density
        assert abs(observed.mean() - density) < 4 * np.sqrt(density * (1 - density) / observed.size)


def test_observed_ratings_are_the_complete_ones_whole_numbers_on_the_scale():
    s = synthetic_ratings(300, 50, rng=2, scale=(0, 3))
    observed = ~np.isnan(s.ratings)
    assert np.array_equal(s.ratings[observed], s.complete[observed])
    assert set(np.unique(s.complete)) <= {0.0, 1.0, 2.0, 3.0} and s.scale == (0, 3)


def test_high_ratings_are_observed_more_often_than_low_ones():
    s = synthetic_ratings(2000, 100, density=0.1, rng=3)
    observed = ~np.isnan(s.ratings)
    share = {r: observed[s.complete == r].mean() for r in (1.0, 3.0, 5.0)}
    assert share[1.0] < share[3.0] < share[5.0]
    assert np.nanmean(s.ratings) > s.complete.mean() + 0.5


def test_without_selection_the_blanks_are_missing_at_random():
    s = synthetic_ratings(2000, 100, density=0.1, rng=3, selection=0.0, popularity=0.0)
    assert np.nanmean(s.ratings) == pytest.approx(s.complete.mean(), abs=0.03)


def test_the_private_attribute_shifts_the_ratings_and_without_a_shift_it_does_not():
    def auc(shift):
        s = synthetic_ratings(1200, 40, rng=4, shift=shift)
        X, y = s.complete, s.private
        return logistic_attack(X[:800], y[:800], X[800:], y[800:], 2, C=1.0).roc_auc
    assert auc(1.0) > 0.8
    assert abs(auc(0.0) - 0.5) < 0.1


def test_every_class_is_drawn_and_named():
    s = synthetic_ratings(400, 10, classes=4, rng=0)
    assert s.classes == ("c0", "c1", "c2", "c3") and set(s.private) == {0, 1, 2, 3}


def test_the_csv_has_blank_cells_and_reads_back_as_privmap_reads_it(tmp_path):
    s = synthetic_ratings(120, 15, density=0.3, rng=7)
    path = s.write_csv(tmp_path / "r.csv", private="gender")
    assert ",," in path.read_text()
    ds = load_dataset(path, private="gender")
    assert ds.features == s.items
    assert np.array_equal(ds.public, s.ratings, equal_nan=True)
    assert [ds.classes[c] for c in ds.private] == [s.classes[c] for c in s.private]


@pytest.mark.parametrize("kwargs", [dict(density=0.0), dict(density=1.0), dict(classes=1), dict(rank=0),
                                    dict(noise=-1.0), dict(scale=(5, 1))])
def test_arguments_out_of_range_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        synthetic_ratings(10, 5, rng=0, **kwargs)


def test_chunks_share_one_population_of_items_and_are_seeded():
    from privmap.offline.data import synthetic_rating_chunks
    chunks = list(synthetic_rating_chunks(2500, 60, chunk_users=1000, density=0.1, rng=3))
    assert [c.ratings.shape for c in chunks] == [(1000, 60), (1000, 60), (500, 60)]
    again = list(synthetic_rating_chunks(2500, 60, chunk_users=1000, density=0.1, rng=3))
    assert all(np.array_equal(a.ratings, b.ratings, equal_nan=True) for a, b in zip(chunks, again))
    assert not np.array_equal(chunks[0].ratings, chunks[1].ratings, equal_nan=True)
    # one item side: each item's mean complete rating agrees across chunks (1,000 users each, sd about 1.1)
    means = np.array([c.complete.mean(axis=0) for c in chunks[:2]])
    assert np.corrcoef(means)[0, 1] > 0.9
    observed = np.concatenate([~np.isnan(c.ratings) for c in chunks])
    assert abs(observed.mean() - 0.1) < 0.01
    assert {c.items for c in chunks} == {tuple(f"item{j}" for j in range(60))}


def test_chunks_of_no_user_are_refused():
    from privmap.offline.data import synthetic_rating_chunks
    with pytest.raises(ValueError, match="chunk_users"):
        next(synthetic_rating_chunks(10, 5, chunk_users=0, rng=1))


def test_taste_zero_draws_the_set_drawn_before_taste_existed_and_taste_makes_watching_follow_the_factors():
    plain = synthetic_ratings(200, 40, rng=5)
    zero = synthetic_ratings(200, 40, rng=5, taste=0.0)
    assert np.array_equal(np.isnan(plain.ratings), np.isnan(zero.ratings))
    assert np.array_equal(plain.observe_probability, zero.observe_probability)
    tasteful = synthetic_ratings(200, 40, rng=5, taste=2.0)
    assert not np.array_equal(tasteful.observe_probability, plain.observe_probability)
    with pytest.raises(ValueError, match="taste"):
        synthetic_ratings(10, 5, rng=0, taste=-1.0)


def _class_mean_distance(s, a, b):
    """The distance between two classes' mean complete rows, in rating points."""
    return float(np.linalg.norm(s.complete[s.private == a].mean(axis=0) - s.complete[s.private == b].mean(axis=0)))


def test_ordered_classes_draw_the_same_users_and_put_neighbours_closer_than_the_ends():
    plain = synthetic_ratings(3000, 100, classes=7, rng=8, shift=1.0)
    walk = synthetic_ratings(3000, 100, classes=7, rng=8, shift=1.0, ordered=True)
    assert np.array_equal(plain.private, walk.private)
    neighbours = np.mean([_class_mean_distance(walk, a, a + 1) for a in range(6)])
    assert _class_mean_distance(walk, 0, 6) > 1.5 * neighbours


def test_several_attributes_each_shift_the_ratings_and_private_is_their_joint_class():
    s = synthetic_ratings(2400, 60, classes=(2, 3), shift=(1.0, 0.0), rng=9)
    assert s.attributes.shape == (2400, 2) and s.classes == ("c0-c0", "c0-c1", "c0-c2", "c1-c0", "c1-c1", "c1-c2")
    assert np.array_equal(s.private, 3 * s.attributes[:, 0] + s.attributes[:, 1])

    def auc(column, n):
        X, y = s.complete, s.attributes[:, column]
        return logistic_attack(X[:1600], y[:1600], X[1600:], y[1600:], n, C=1.0).roc_auc
    assert auc(0, 2) > 0.8
    assert abs(auc(1, 3) - 0.5) < 0.1


def test_one_attribute_is_the_single_column_of_attributes():
    s = synthetic_ratings(300, 20, classes=4, rng=0)
    assert np.array_equal(s.attributes[:, 0], s.private)


def test_the_csv_of_several_attributes_reads_back_as_their_joint_class(tmp_path):
    s = synthetic_ratings(200, 12, density=0.3, classes=(2, 7), ordered=(False, True), rng=10)
    path = s.write_csv(tmp_path / "r.csv", private=("gender", "age"))
    ds = load_dataset(path, private=["gender", "age"])
    names = [s.classes[c].split("-") for c in s.private]
    assert [json.loads(ds.classes[c]) for c in ds.private] == names  # a joint class is named by its JSON array
    with pytest.raises(ValueError):
        s.write_csv(tmp_path / "bad.csv", private="gender")


@pytest.mark.parametrize("kwargs", [dict(classes=(2, 7), shift=(0.5,)), dict(classes=(2, 7), ordered=(True,)),
                                    dict(classes=(2, 1)), dict(classes=(2, 3), shift=(0.5, -1.0))])
def test_per_attribute_arguments_out_of_range_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        synthetic_ratings(10, 5, rng=0, **kwargs)
