"""Seeded synthetic ratings: a latent-factor model with a private attribute and blanks missing not at random.

Real rating sets cannot ship with every test, and uniform random blanks are the easy case: people
rate what they like, so *which* cells are blank tells about the ratings (and, through them, about
the attribute). :func:`synthetic_ratings` draws such a set from one generator:

- each user's private class ``a`` uniformly among ``classes``;
- user factors ``u = m_a + e``: ``m_a ~ N(0, shift^2 I)`` per class (the attribute shifts the
  factors), ``e ~ N(0, I)``, shape (rank,); item factors ``v ~ N(0, I / rank)``;
- or, with ``ordered``, class means on a random walk: ``m_{a+1} = m_a + N(0, shift^2 I)``, the walk
  centred on 0, so that neighbouring classes differ little and the ends much (age bands: the
  young and the old differ in taste more than two neighbouring bands do);
- or several private attributes (``classes`` a tuple of counts): each user draws a class of each,
  independently and uniformly, and the attributes' class means add (``u = m_a + m'_b + e``), so
  that each attribute, and their joint class, shifts the factors;
- the rating every user would give every item: the scale's centre ``c = (lo + hi) / 2`` plus a user
  bias ``N(0, 0.4^2)``, an item bias ``N(0, 0.4^2)``, ``0.7 u . v`` and noise ``N(0, noise^2)``,
  rounded and clipped to the whole numbers ``lo..hi`` (standard deviation about 1.1 on 1..5 with
  the defaults);
- the cell is observed with probability ``sigmoid(b + p_i + selection * (r - c) + taste * u . v)``:
  ``p_i ~ N(0, popularity^2)`` makes some items much rated, ``selection`` > 0 makes high ratings
  likelier to be observed (missing not at random; 0 = at random), ``taste`` > 0 makes people watch
  what suits their taste whatever they then rate it (so that which items a user rated predicts
  which others they will: with ``taste`` 1 and ``popularity`` 1.5 an item-item ranker on a user's
  profile recalls about twice what the most popular items do, as on real movie ratings), and ``b``
  is set by bisection so that the expected share of observed cells is ``density``.

Every draw comes from ``rng``: the same generator state gives the same set.
:func:`synthetic_rating_chunks` draws a set too large for memory a chunk of users at a time, the
item side drawn once.
"""
from __future__ import annotations

import csv
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["SyntheticRatings", "synthetic_ratings", "synthetic_rating_chunks"]

#: Standard deviation of the user and of the item bias, in rating points.
BIAS_SD = 0.4
#: Weight of the factors' inner product in a rating, in rating points.
FACTOR_WEIGHT = 0.7


@dataclass(frozen=True)
class SyntheticRatings:
    """A drawn rating set.

    Attributes
    ----------
    ratings : ndarray of float, shape (n_users, n_items)
        The observed ratings, whole numbers in ``scale``; NaN = not rated (a blank cell).
    complete : ndarray of float, shape (n_users, n_items)
        The rating every user would give every item (the observed ones included, equal to them).
    private : ndarray of int64, shape (n_users,)
        Each user's private class, an index into ``classes``; with several attributes the joint
        class, ``numpy.ravel_multi_index`` of the row of ``attributes`` (every combination counted,
        drawn or not).
    classes : tuple of str
        Class names, ``"c0"``, ``"c1"``, ...; with several attributes the joint classes',
        ``"c0-c3"`` (each attribute's class name, joined by ``-``).
    items : tuple of str
        Item (column) names, ``"item0"``, ``"item1"``, ...
    observe_probability : ndarray of float, shape (n_users, n_items)
        The probability each cell had of being observed.
    scale : tuple of int
        The lowest and highest rating.
    attributes : ndarray of int64, shape (n_users, n_attributes)
        Each user's class of each private attribute (one column for one attribute: ``private``),
        an index into that attribute's ``"c0"``, ``"c1"``, ...
    """

    ratings: np.ndarray
    complete: np.ndarray
    private: np.ndarray
    classes: tuple[str, ...]
    items: tuple[str, ...]
    observe_probability: np.ndarray
    scale: tuple[int, int]
    attributes: np.ndarray

    def write_csv(self, path, *, private: str | tuple[str, ...] = "private") -> pathlib.Path:
        """Write the observed ratings as a labelled CSV ``privmap build`` reads.

        Header: the item names, then ``private`` (a name, or one per attribute: the columns of
        ``privmap build --private COL1,COL2``); one row per user, a blank cell where the user did
        not rate the item, whole numbers elsewhere, the class names last (``"c0"``, ...). Returns
        ``path``; raises ValueError when ``private`` names another number of attributes.
        """
        names = (private,) if isinstance(private, str) else tuple(private)
        if len(names) != self.attributes.shape[1]:
            raise ValueError(f"{self.attributes.shape[1]} private attribute(s), {len(names)} column name(s) given")
        path = pathlib.Path(path)
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow([*self.items, *names])
            for row, codes in zip(self.ratings, self.attributes):
                w.writerow(["" if np.isnan(x) else str(int(x)) for x in row] + [f"c{a}" for a in codes])
        return path


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _intercept(z: np.ndarray, density: float) -> float:
    """The b with mean(sigmoid(b + z)) = density, by bisection (the mean increases with b)."""
    lo, hi = -50.0 - float(z.max()), 50.0 - float(z.min())
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if float(np.mean(_sigmoid(mid + z))) < density:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def synthetic_ratings(n_users: int, n_items: int, *, rank: int = 5, density: float = 0.05,
                      classes: int | tuple[int, ...] = 2, rng: np.random.Generator | int,
                      shift: float | tuple[float, ...] = 0.5, selection: float = 1.0, noise: float = 0.5,
                      popularity: float = 1.0, scale: tuple[int, int] = (1, 5), taste: float = 0.0,
                      ordered: bool | tuple[bool, ...] = False) -> SyntheticRatings:
    """Draw a rating set from the latent-factor model of this module.

    Parameters
    ----------
    n_users, n_items : int
        Rows and columns, each at least 1.
    rank : int
        Latent dimension (at least 1).
    density : float
        Expected share of observed cells, in (0, 1).
    classes : int or tuple of int
        Number of private classes (at least 2), drawn uniformly; or one such number per private
        attribute, their class means added (module docstring; ``private`` is then the joint class).
    rng : numpy.random.Generator or int
        The generator (or a seed for a new one); required, so that every set is reproducible.
    shift : float or tuple of float
        Standard deviation of each class's mean user factor (with ``ordered``: of each step between
        neighbouring classes), in units of the user factors' own spread (0: the attribute does not
        touch the ratings); one value for every attribute or one per attribute.
    selection : float
        Log-odds of a cell being observed per rating point above the scale's centre (0: blanks
        at random).
    noise : float
        Standard deviation of the rating noise, in rating points.
    popularity : float
        Standard deviation of the items' log-odds of being rated.
    scale : (int, int)
        Lowest and highest rating.
    taste : float
        Log-odds of a cell being observed per unit of the user's and item's factor product (0:
        which items a user rates depends on their ratings and the items' popularity alone). It
        draws nothing, so a set with ``taste`` 0 is the one drawn before it existed.
    ordered : bool or tuple of bool
        Class means on a random walk (module docstring), for an attribute whose classes are
        ordered, as age bands are; one value for every attribute or one per attribute. It draws
        what the unordered means draw, in the same order: only the means differ.

    Returns
    -------
    SyntheticRatings

    Raises
    ------
    ValueError
        A size below its minimum, ``density`` outside (0, 1), a negative spread, an empty scale, or
        ``shift`` or ``ordered`` given per attribute for another number of attributes.
    """
    counts = tuple(int(c) for c in classes) if isinstance(classes, tuple) else (int(classes),)
    shifts, walks = _per_attribute(shift, len(counts), "shift"), _per_attribute(ordered, len(counts), "ordered")
    lo, hi = _checked(n_users, n_items, rank, density, min(counts), min(shifts), noise, popularity, scale, taste)
    rng = np.random.default_rng(rng)
    attributes = np.stack([rng.integers(0, c, n_users).astype(np.int64) for c in counts], axis=1)
    effect = np.zeros((n_users, rank))
    for column, (c, spread, walk) in enumerate(zip(counts, shifts, walks)):
        class_means = spread * rng.standard_normal((c, rank))
        if walk:
            class_means = np.cumsum(class_means, axis=0)
            class_means -= class_means.mean(axis=0)
        effect += class_means[attributes[:, column]]
    U = effect + rng.standard_normal((n_users, rank))
    V = rng.standard_normal((n_items, rank)) / np.sqrt(rank)
    complete = _complete(lo, hi, BIAS_SD * rng.standard_normal((n_users, 1)), BIAS_SD * rng.standard_normal((1, n_items)),
                         U, V, noise * rng.standard_normal((n_users, n_items)))
    z = popularity * rng.standard_normal((1, n_items)) + selection * (complete - 0.5 * (lo + hi)) + taste * (U @ V.T)
    p = _sigmoid(_intercept(z, density) + z)
    return _drawn(complete, p, rng.random((n_users, n_items)) < p, attributes, counts, lo, hi)


def synthetic_rating_chunks(n_users: int, n_items: int, *, chunk_users: int, rank: int = 5, density: float = 0.05,
                            classes: int = 2, rng: np.random.Generator | int, shift: float = 0.5,
                            selection: float = 1.0, noise: float = 0.5, popularity: float = 1.0,
                            scale: tuple[int, int] = (1, 5), taste: float = 0.0) -> Iterator[SyntheticRatings]:
    """A rating set too large for memory, drawn ``chunk_users`` users at a time.

    Drawn from the model of :func:`synthetic_ratings` (same parameters): one population of items
    whatever the chunk.

    The item side (class means, item factors and biases, the items' popularity) is drawn once;
    the observation intercept ``b`` is set on the first chunk (the expected density of later
    chunks is the target's to within that chunk's sampling noise); each chunk then draws its
    users. The draws differ from :func:`synthetic_ratings`' order, so the set is not that
    function's for the same generator.

    Yields
    ------
    SyntheticRatings
        Users ``chunk_users`` at a time (the last chunk the rest), each of shape
        (rows, ``n_items``), the ``items`` and ``classes`` shared.

    Raises
    ------
    ValueError
        As :func:`synthetic_ratings`, or ``chunk_users`` below 1.
    """
    if chunk_users < 1:
        raise ValueError(f"chunk_users must be at least 1, got {chunk_users}")
    lo, hi = _checked(n_users, n_items, rank, density, classes, shift, noise, popularity, scale, taste)
    rng = np.random.default_rng(rng)
    class_means = shift * rng.standard_normal((classes, rank))
    V = rng.standard_normal((n_items, rank)) / np.sqrt(rank)
    item_bias = BIAS_SD * rng.standard_normal((1, n_items))
    liked = popularity * rng.standard_normal((1, n_items))
    intercept = None
    for start in range(0, n_users, chunk_users):
        n = min(chunk_users, n_users - start)
        private = rng.integers(0, classes, n).astype(np.int64)
        U = class_means[private] + rng.standard_normal((n, rank))
        complete = _complete(lo, hi, BIAS_SD * rng.standard_normal((n, 1)), item_bias, U, V,
                             noise * rng.standard_normal((n, n_items)))
        z = liked + selection * (complete - 0.5 * (lo + hi)) + taste * (U @ V.T)
        intercept = _intercept(z, density) if intercept is None else intercept
        p = _sigmoid(intercept + z)
        yield _drawn(complete, p, rng.random((n, n_items)) < p, private[:, None], (classes,), lo, hi)


def _checked(n_users, n_items, rank, density, classes, shift, noise, popularity, scale, taste) -> tuple[int, int]:
    """The scale's whole-number ends, once every parameter is checked (ValueError otherwise)."""
    if n_users < 1 or n_items < 1 or rank < 1:
        raise ValueError(f"n_users, n_items and rank must be at least 1, got {n_users}, {n_items}, {rank}")
    if not 0.0 < density < 1.0:
        raise ValueError(f"density must lie in (0, 1), got {density}")
    if classes < 2:
        raise ValueError(f"classes must be at least 2, got {classes}")
    if min(shift, noise, popularity, taste) < 0:
        raise ValueError("shift, noise, popularity and taste must be >= 0")
    lo, hi = int(scale[0]), int(scale[1])
    if hi <= lo:
        raise ValueError(f"scale must run from a lower to a higher whole number, got {scale}")
    return lo, hi


def _per_attribute(value, n_attributes: int, name: str) -> tuple:
    """``value`` once per attribute: a tuple as given (ValueError for another length), else repeated."""
    if isinstance(value, tuple):
        if len(value) != n_attributes:
            raise ValueError(f"{name} given for {len(value)} attributes, classes for {n_attributes}")
        return value
    return (value,) * n_attributes


def _complete(lo: int, hi: int, user_bias, item_bias, U, V, noise) -> np.ndarray:
    """Every user's rating of every item (n, m), rounded and clipped to lo..hi.

    The scale's centre, the biases (n, 1) and (1, m), the factors' weighted inner product and the
    noise (n, m).
    """
    score = 0.5 * (lo + hi) + user_bias + item_bias + FACTOR_WEIGHT * (U @ V.T) + noise
    return np.clip(np.rint(score), lo, hi)


def _drawn(complete, p, observed, attributes: np.ndarray, counts: tuple[int, ...], lo: int, hi: int) -> SyntheticRatings:
    """The set of the observed cells, its joint class codes and names read off ``attributes`` (n, len(counts))."""
    private = np.ravel_multi_index(tuple(attributes.T), counts).astype(np.int64)
    names = ["-".join(f"c{a}" for a in codes) for codes in np.ndindex(*counts)]
    return SyntheticRatings(ratings=np.where(observed, complete, np.nan), complete=complete, private=private,
                            classes=tuple(names), items=tuple(f"item{j}" for j in range(complete.shape[1])),
                            observe_probability=p, scale=(lo, hi), attributes=attributes)
