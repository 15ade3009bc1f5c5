"""The privacy funnel by greedy agglomerative merging (seed 003, Algorithms 1 and 2).

Private S and public X are categorical with a known joint ``p(s, x)``. The release Y is a
deterministic partition of X's symbols (a privacy-aware quantiser): leakage is I(S;Y) and
utility is the disclosure I(X;Y) = H(Y) (log-loss on both sides). Starting from Y = X, each
step merges the pair of groups that is still feasible (I(X;Y) >= R after the merge) and gives
the smallest I(S;Y) (Algorithm 1), or the largest (Algorithm 2, the "negligent" upper curve).

Proposition 1 gives the change of a merge without recomputing anything else:

    I(S;Y) - I(S;Y_ij) = p(i) D(P_S|i || P_S|ij) + p(j) D(P_S|j || P_S|ij),
    I(X;Y) - I(X;Y_ij) = p(ij) h(p(i) / p(ij)),

where ``p(ij) = p(i) + p(j)`` and ``P_S|ij`` is the mixture. Only pairs with the new group
change, so a merge costs O(|X| |S|) new pair costs plus heap pushes. Groups only lose
disclosure, so a pair that is infeasible now stays infeasible until one of its groups
merges (and then it is a different pair): a lazy heap needs no re-checks, and a run is
O(|X|^2 (|S| + log |X|)).

Tie rule (deterministic): among pairs of equal cost the one with the smaller group ids
``(i, j)``, ``i < j``, compared lexicographically, merges first. The X symbols are groups
``0 .. |X|-1``; the group made by the k-th merge gets id ``|X| + k``.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ..._errors import BuildError
from ..._information import mutual_information_bits

__all__ = ["FunnelResult", "greedy_funnel", "merge_gain_bits", "entropy_bits"]

#: Slack on the feasibility test I(X;Y_ij) >= R, in bits (float round-off of the running sum).
FEASIBILITY_SLACK_BITS = 1e-12


def entropy_bits(p) -> float:
    """H(p) in bits of a probability vector ``p`` (zeros ignored; any shape, summing to 1)."""
    p = np.asarray(p, dtype=float).ravel()
    p = p[p > 0]
    return float(-np.sum(p * np.log2(p)))


def _kl_bits(p, q) -> float:
    mask = p > 0
    return float(np.sum(p[mask] * (np.log2(p[mask]) - np.log2(q[mask]))))


def merge_gain_bits(joint_i: np.ndarray, joint_j: np.ndarray) -> float:
    """Proposition 1: the drop of I(S;Y) when groups i and j merge, in bits (>= 0).

    Parameters
    ----------
    joint_i, joint_j : ndarray, shape (|S|,)
        Columns p(s, y=i) and p(s, y=j) of the joint; their sums are p(i) and p(j).

    Returns
    -------
    float
        ``p(i) D(P_S|i || P_S|ij) + p(j) D(P_S|j || P_S|ij)``.
    """
    p_i, p_j = float(joint_i.sum()), float(joint_j.sum())
    if p_i <= 0 or p_j <= 0:
        return 0.0
    mixture = (joint_i + joint_j) / (p_i + p_j)
    return max(p_i * _kl_bits(joint_i / p_i, mixture) + p_j * _kl_bits(joint_j / p_j, mixture), 0.0)


def _disclosure_drop_bits(p_i: float, p_j: float) -> float:
    """I(X;Y) - I(X;Y_ij) = p(ij) h(p(i)/p(ij)) for a deterministic mapping, in bits."""
    total = p_i + p_j
    if p_i <= 0 or p_j <= 0:
        return 0.0
    a, b = p_i / total, p_j / total
    return float(-total * (a * np.log2(a) + b * np.log2(b)))


@dataclass(frozen=True)
class FunnelResult:
    """A greedy funnel run.

    Attributes
    ----------
    labels : ndarray of int64, shape (|X|,)
        Group of each X symbol, numbered 0.. in the order of each group's smallest member.
    groups : list of list of int
        Members (X symbol indexes, ascending) of each group, in group-number order.
    leakage_bits : float
        I(S;Y) of the final partition, recomputed from scratch (not the running sum).
    disclosure_bits : float
        I(X;Y) = H(Y) of the final partition, recomputed from scratch.
    path : ndarray, shape (merges + 1, 2)
        (I(X;Y), I(S;Y)) before any merge and after each merge, from the running sums.
    merges : list of tuple of int
        The group ids merged at each step (tie rule in the module docstring).
    """

    labels: np.ndarray
    groups: list
    leakage_bits: float
    disclosure_bits: float
    path: np.ndarray
    merges: list


def greedy_funnel(p_sx, r_bits: float, *, maximise: bool = False) -> FunnelResult:
    """Greedy privacy funnel: merge X symbols while I(X;Y) >= ``r_bits`` can still hold.

    Parameters
    ----------
    p_sx : array-like, shape (|S|, |X|)
        Joint distribution p(s, x) (non-negative; normalised here).
    r_bits : float
        Disclosure floor R in bits. ``R <= 0`` merges everything (I(X;Y) = I(S;Y) = 0);
        ``R = H(X)`` keeps Y = X. ``R > H(X)`` is infeasible.
    maximise : bool
        False: Algorithm 1 (least I(S;Y) per merge). True: Algorithm 2 (the "negligent"
        curve: largest I(S;Y) per merge).

    Returns
    -------
    FunnelResult

    Raises
    ------
    BuildError
        A prior that is not a finite non-negative 2-d array with mass, or R > H(X).
    """
    p = np.asarray(p_sx, dtype=float)
    if p.ndim != 2 or p.shape[1] < 1 or not np.all(np.isfinite(p)) or np.any(p < 0) or not p.sum() > 0:
        raise BuildError("p(s, x) must be a finite non-negative array of shape (|S|, |X|) with mass")
    if not np.isfinite(r_bits):
        raise BuildError(f"disclosure R must be finite, got {r_bits}")
    p = p / p.sum()
    n = p.shape[1]
    h_x = entropy_bits(p.sum(axis=0))
    if r_bits > h_x + FEASIBILITY_SLACK_BITS:
        raise BuildError(f"disclosure R = {r_bits:.6f} bits exceeds H(X) = {h_x:.6f} bits: infeasible")
    joint = {g: p[:, g].copy() for g in range(n)}
    mass = {g: float(p[:, g].sum()) for g in range(n)}
    members = {g: [g] for g in range(n)}
    sign = 1.0 if maximise else -1.0  # heap pops the smallest key; Algorithm 1 wants the largest gain

    def push(heap, i, j):
        gain = merge_gain_bits(joint[i], joint[j])
        heapq.heappush(heap, (sign * gain, i, j, gain, _disclosure_drop_bits(mass[i], mass[j])))

    heap: list = []
    for i in range(n):
        for j in range(i + 1, n):
            push(heap, i, j)
    disclosure = h_x
    leakage = mutual_information_bits(p)
    path = [(disclosure, leakage)]
    merges = []
    next_id = n
    while heap:
        _, i, j, gain, drop = heapq.heappop(heap)
        if i not in joint or j not in joint:
            continue  # stale: one of the pair has merged since
        if disclosure - drop < r_bits - FEASIBILITY_SLACK_BITS:
            continue  # infeasible now, and for good (disclosure only decreases)
        new = next_id
        next_id += 1
        joint[new] = joint.pop(i) + joint.pop(j)
        mass[new] = mass.pop(i) + mass.pop(j)
        members[new] = sorted(members.pop(i) + members.pop(j))
        disclosure -= drop
        leakage -= gain
        path.append((max(disclosure, 0.0), max(leakage, 0.0)))
        merges.append((i, j))
        for g in sorted(joint):
            if g != new:
                push(heap, g, new)
    groups = sorted(members.values(), key=lambda m: m[0])
    labels = np.empty(n, dtype=np.int64)
    for k, group in enumerate(groups):
        labels[group] = k
    p_sy = np.stack([p[:, g].sum(axis=1) for g in groups], axis=1)
    return FunnelResult(labels=labels, groups=groups, leakage_bits=mutual_information_bits(p_sy),
                        disclosure_bits=entropy_bits(p_sy.sum(axis=0)), path=np.array(path), merges=merges)
