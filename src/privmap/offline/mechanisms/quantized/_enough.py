"""Whether a build's users are enough for the ``auto`` search's attacker target, said before the work.

An AUC target (``--target-auc``) is met by the one-sided upper confidence bound of the
cross-fitted attacker's ROC AUC (:mod:`._autotune`). A useful release varies across users, and
one that tells the attacker nothing then gets an AUC of 0.5 with the standard error of an AUC at
chance over the users scored. Every user is scored once, in its held-out fold, and the folds'
errors pool to about the error over all n users. For one class of n_a users against the other
n - n_a, an attacker at chance scores each user's share of the other side below it uniformly on
[0, 1] (variance 1/12), so DeLong's variance is (1/12)(1/n_a + 1/(n - n_a)); the macro AUC of
more classes takes the mean of the classes' standard errors
(:func:`privmap.offline._attacker.auc_with_error`), and a binary attribute its one class's. Only
a release of a few distinct rows gets below that, its scores tied (with m equally likely rows the
variance is (1/12)(1 - 1/m^2); one row to everybody has none): a release that keeps no value. The
floor of the bound for a useful release is therefore

    0.5 + z * mean_a sqrt((1/12) (1/n_a + 1/(n - n_a))),    z = the normal quantile at the folds' confidence

from the class counts alone (a joint attribute's counts are its joint classes'). Where it is
above the target no useful candidate can meet it, and the search would end on one that releases
nearly one row to everybody, or on none: the build refuses at once instead, naming
the users needed. The error shrinks as 1 / sqrt(n) with the classes' shares kept, so that number
is n times the square of the floor's excess over 0.5 divided by the target's.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..._errors import DatasetError
from ...data import Dataset
from ..table import CONFIDENCE
from ._options import QuantizedOptions

if TYPE_CHECKING:
    from ..table import SourceSummary

__all__ = ["chance_auc_high", "users_needed", "check_enough_users"]


def _z() -> float:
    from scipy.stats import norm
    return float(norm.ppf(CONFIDENCE))


def chance_auc_high(counts) -> float:
    """The upper confidence bound of the AUC of an attacker at chance.

    Over users of these class ``counts`` (|A|,), each > 0, at the folds'
    :data:`privmap.offline.mechanisms.table._holdout.CONFIDENCE` (module docstring).
    """
    counts = np.asarray(counts, dtype=float)
    n = counts.sum()
    scored = counts[1:2] if len(counts) == 2 else counts
    error = float(np.mean(np.sqrt((1.0 / scored + 1.0 / (n - scored)) / 12.0)))
    return 0.5 + _z() * error


def users_needed(counts, target_auc: float) -> int | None:
    """The fewest users whose :func:`chance_auc_high` is at most ``target_auc``.

    The users are in the classes' shares of ``counts``; None when the counts meet the target
    already, or no number of users would (a target of 0.5 or less).
    """
    counts = np.asarray(counts, dtype=float)
    high = chance_auc_high(counts)
    if high <= target_auc:
        return None
    if target_auc <= 0.5:
        return None
    return int(math.ceil(counts.sum() * ((high - 0.5) / (target_auc - 0.5)) ** 2))


def check_enough_users(dataset: Dataset | SourceSummary, options: QuantizedOptions) -> None:
    """Refuse, before any work, an ``auto`` search whose AUC target the users cannot meet.

    No useful release of ``dataset``'s users (rows in memory, or a partitioned source's summary:
    its ``class_counts``, ``classes`` and ``private_name``) could be shown to meet it (module
    docstring).

    Raises
    ------
    DatasetError
        Naming the bound an attacker at chance gets, the smallest class and the users needed.
    """
    auto = options.auto
    if auto is None or auto.target_auc is None or options.folds < 2:
        return
    counts = np.asarray(dataset.class_counts)
    if len(counts) < 2 or counts.min() == 0:
        return                                       # the folds refuse these with their own message
    needed = users_needed(counts, auto.target_auc)
    if needed is None:
        return
    smallest = int(np.argmin(counts))
    raise DatasetError(
        f"too few users for --target-auc {auto.target_auc:g}: over {int(counts.sum()):,} users in "
        f"{len(counts)} classes of {dataset.private_name!r} (the smallest, {dataset.classes[smallest]!r}, "
        f"{int(counts[smallest]):,} users) a varied release that tells an attacker nothing has a "
        f"{100 * CONFIDENCE:g} % upper AUC bound of {chance_auc_high(counts):.3f}; the search needs at least "
        f"{needed:,} users in these proportions (or a looser target, or fewer classes)")
