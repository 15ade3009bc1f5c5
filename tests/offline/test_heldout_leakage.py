"""The held-out bracket of I(A; C^): its interval covers the population's leakage of a fixed table,
and is never narrower than the estimate's standard error, on a population of known joint distribution."""
import numpy as np
import pytest
from scipy import sparse

from privmap.offline._heldout_leakage import BETAS, bracket_terms, pooled_bracket
from privmap.offline._information import leakage_bits
from privmap.offline.data import joint_prior, known_joint


def _table(k_in, k_out, mass, rng):
    """A sparse row-stochastic table: each input's release spread over ``mass`` random outputs."""
    table = np.zeros((k_in, k_out))
    for c in range(k_in):
        table[c, rng.choice(k_out, size=mass, replace=False)] = rng.random(mass) + 0.1
    return table / table.sum(axis=1, keepdims=True)


def _declared(population, inputs_of, q, n, folds, seed):
    """The pooled interval of ``folds`` independent held-out samples of ``n`` rows, one table."""
    data = population.sample(n * folds, seed=seed)
    point = np.array([np.flatnonzero((population.points == row).all(axis=1))[0] for row in data.public.astype(int)])
    parts = [bracket_terms(data.private[f::folds], inputs_of[point[f::folds]], len(population.classes), q)
             for f in range(folds)]
    share = np.full(folds, 1.0 / folds)
    return pooled_bracket(parts, share, 0.95)


@pytest.mark.parametrize("classes, k_in, k_out, mass, n", [(2, 64, 64, 1, 150), (5, 32, 128, 3, 300),
                                                           (3, 200, 200, 2, 2000)])
def test_the_declared_interval_covers_a_fixed_tables_population_leakage(classes, k_in, k_out, mass, n):
    """Few rows per output (150 held-out rows a fold on 64 outputs) to many: over 40 samples the 95 %
    interval misses the exact leakage at most 5 times, and is never narrower than the standard error."""
    rng = np.random.default_rng(classes)
    population = known_joint(classes=classes, dims=2, levels=15, strength=2.0, seed=classes)
    inputs_of = rng.integers(0, k_in, len(population.points))        # each point's input symbol
    q = _table(k_in, k_out, mass, rng)
    prior = np.zeros((classes, k_in))
    np.add.at(prior.T, inputs_of, population.joint.T)
    truth = leakage_bits(prior, q)
    assert truth > 0.01
    misses, narrow = 0, 0
    for s in range(40):
        b = _declared(population, inputs_of, q, n, 2, seed=100 + s)
        misses += not (b.low <= truth <= b.high)
        narrow += (b.high - b.low) < b.standard_error
        assert b.lower <= b.upper and b.low <= b.estimate <= b.high
    assert misses <= 5 and narrow == 0


def test_the_upper_side_is_the_plug_in_and_the_lower_side_the_leave_one_out_cross_entropy():
    rng = np.random.default_rng(4)
    k_in, k_out, n, classes = 9, 7, 60, 3
    q = _table(k_in, k_out, 3, rng)
    private, symbols = rng.integers(0, classes, n), rng.integers(0, k_in, n)
    got = bracket_terms(private, symbols, classes, sparse.csr_matrix(q))
    counts = np.bincount(private, minlength=classes)
    loo = np.log2((counts[private] - 0.5) / (n - 1 + classes / 2))        # Krichevsky-Trofimov, row left out
    entropy = -np.sum(counts / n * np.log2(counts / n))
    assert got["upper"] == pytest.approx(leakage_bits(joint_prior(private, symbols, classes, k_in), q)
                                         - entropy - loo.mean())
    beta = BETAS[2]
    joint = np.array([q[symbols[private == a]].sum(axis=0) for a in range(classes)])
    terms = []
    for i in range(n):
        own = joint[private[i]] - q[symbols[i]]
        post = (own + beta * (counts[private[i]] - 0.5) / (n - 1 + classes / 2)) / (joint.sum(axis=0) - q[symbols[i]] + beta)
        terms.append(q[symbols[i]] @ np.log2(post) + entropy)
    assert got["lower"][2] == pytest.approx(np.mean(terms))
    assert got["lower_var"][2] == pytest.approx(np.var(terms))


def test_a_table_that_releases_nothing_of_the_class_is_bracketed_near_zero():
    rng = np.random.default_rng(2)
    private, symbols = rng.integers(0, 2, 5000), rng.integers(0, 50, 5000)
    b = pooled_bracket([bracket_terms(private[f::2], symbols[f::2], 2, np.full((50, 1), 1.0)) for f in range(2)],
                       np.array([0.5, 0.5]), 0.95)
    assert b.low == 0.0 and b.lower == pytest.approx(0.0, abs=1e-3) and b.upper == pytest.approx(0.0, abs=1e-3)
    assert b.high >= 2 * 1.959 * b.standard_error


def test_a_single_row_cannot_be_bracketed():
    with pytest.raises(ValueError, match="two rows"):
        bracket_terms(np.array([0]), np.array([0]), 2, np.eye(2))
