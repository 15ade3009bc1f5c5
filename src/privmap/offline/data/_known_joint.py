"""A seeded population whose joint distribution p(a, x) is known.

So the leakage any table leaks to its new users is computable exactly: the ground truth of
the cross-fitted estimates.

The public rows take values on a finite grid (``dims`` integer features with ``levels`` values each),
the points weighted by a mixture of Gaussian bumps, and the private class follows a softmax of
random linear scores in the point's coordinates, scaled by ``strength`` (0: A independent of the
row). A table's population leakage is I(A; C^) of the joint p(a, c) that the device's lookup
(:func:`._distortion.nearest`) makes of p(a, x) over the table's inputs, pushed through the table
(:meth:`KnownJoint.leakage_bits`); rows drawn with :meth:`KnownJoint.sample` are a sample of that
population, so held-out rows are new users of any table built on others.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._dataset import Dataset
from ._distortion import nearest

__all__ = ["KnownJoint", "known_joint"]


@dataclass(frozen=True)
class KnownJoint:
    """A population over a finite grid of public rows with a known joint distribution.

    Attributes
    ----------
    points : ndarray, shape (M, d)
        The public rows the population takes (integer values).
    joint : ndarray, shape (n_classes, M)
        p(a, x), summing to 1.
    classes : tuple of str
    features : tuple of str
    """

    points: np.ndarray
    joint: np.ndarray
    classes: tuple[str, ...]
    features: tuple[str, ...]

    def sample(self, n: int, seed: int) -> Dataset:
        """``n`` rows drawn independently from p(a, x); a numeric :class:`Dataset`.

        Drawn with numpy's generator seeded by ``seed`` (every class drawn at least once, redrawing
        otherwise).
        """
        rng = np.random.default_rng(seed)
        flat = self.joint.ravel()
        while True:
            cells = rng.choice(flat.size, size=n, p=flat)
            private, point = np.divmod(cells, self.points.shape[0])
            if np.unique(private).size == len(self.classes):
                break
        return Dataset(features=self.features, public=self.points[point].astype(float), private=private,
                       classes=self.classes, private_name="a", categorical=False, sha256="0" * 64)

    def input_prior(self, inputs: np.ndarray, metric: str = "l2") -> np.ndarray:
        """The population's p(a, c) over a table's ``inputs`` (shape (K_in, d)); shape (n_classes, K_in).

        Each point is sent to its nearest input as the device sends it.
        """
        to = nearest(self.points.astype(float), np.asarray(inputs, dtype=float), metric)
        prior = np.zeros((len(self.classes), len(inputs)))
        np.add.at(prior.T, to, self.joint.T)
        return prior

    def leakage_bits(self, inputs: np.ndarray, q, metric: str = "l2") -> float:
        """I(A; C^) in bits that new users of the table face: exact, on the population.

        The table is ``inputs`` (K_in, d), ``q`` (K_in, K_out).
        """
        from .._information import leakage_bits
        return leakage_bits(self.input_prior(inputs, metric), q)

    def information_bits(self) -> float:
        """I(A; X) in bits on the population's rows: what the identity table would leak."""
        from .._information import mutual_information_bits
        return mutual_information_bits(self.joint)


def known_joint(*, classes: int = 2, dims: int = 3, levels: int = 10, strength: float = 1.0, bumps: int = 4,
                seed: int = 0) -> KnownJoint:
    """A seeded :class:`KnownJoint` of ``levels ** dims`` points.

    Parameters
    ----------
    classes : int
        Number of private classes (>= 2).
    dims, levels : int
        Public features and the integer values 0..levels-1 each takes.
    strength : float
        Scale of the class scores (0: A independent of the row; about 1 to 3: moderate to strong).
    bumps : int
        Gaussian bumps of the points' weights.
    seed : int

    Raises
    ------
    ValueError
        Fewer than 2 classes, levels or dims below 1, or a negative strength.
    """
    if classes < 2 or dims < 1 or levels < 1 or strength < 0:
        raise ValueError("known_joint needs classes >= 2, dims >= 1, levels >= 1 and strength >= 0")
    rng = np.random.default_rng(seed)
    axes = np.meshgrid(*[np.arange(levels)] * dims, indexing="ij")
    points = np.stack([a.ravel() for a in axes], axis=1)
    scaled = points / max(levels - 1, 1)
    centres = rng.random((bumps, dims))
    weight = np.exp(-((scaled[:, None, :] - centres[None]) ** 2).sum(axis=2) / 0.05).sum(axis=1) + 1e-3
    scores = strength * (scaled - 0.5) @ rng.normal(size=(dims, classes)) + rng.normal(scale=0.3, size=classes)
    posterior = np.exp(scores - scores.max(axis=1, keepdims=True))
    posterior /= posterior.sum(axis=1, keepdims=True)
    joint = (posterior * (weight / weight.sum())[:, None]).T
    return KnownJoint(points=points, joint=joint / joint.sum(), classes=tuple(f"c{i}" for i in range(classes)),
                      features=tuple(f"x{i}" for i in range(dims)))
