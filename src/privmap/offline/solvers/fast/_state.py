"""The fast solver's state: one object that every phase reads and updates.

:class:`FastState` holds program (19)'s data in the form every phase reads (see :mod:`._solver`
for the method): the joint prior restricted to private classes with mass (``p``, shape
``(A, K)``), the *active rows* (inputs c with p(c) > 0, indices into the K rows of D) and their
posteriors ``alpha`` (``(A, R)``, p(a | c)), the distortion matrix ``D`` (``(K, K_out)``, the
caller's unit, ``inf`` = forbidden) and the budget ``delta`` (same unit), the gap to certify
``tol`` in nats, the thresholds the phases use (:class:`Settings`), and the counters every phase
adds to (``stats``, ``timing`` in seconds).

The phases fill in the rest, each in its own module and each callable alone on a state:

- the start (:func:`._path.start`): ``jmin`` (``(R,)``, each active row's cheapest output),
  ``tight`` (the budget equals the least distortion: every row stays on its cheapest outputs),
  ``tie`` (``(R,)``, the distortion up to which an output counts as cheapest when tight),
  ``budget`` (``not tight``: the multiplier is a variable), ``least`` (the least distortion any
  table reaches), ``scale`` (the starting temperature, nats), and the starting duals ``theta``
  (``(A, K_out)`` logits) and ``mu`` (nats per unit distortion);
- the pricing (:func:`._pricing.set_candidates`): the candidate lists, flat and sorted by row:
  ``cr`` (active-row index), ``cj`` (output), ``start`` (first position of each row), and per
  candidate ``c_alpha`` (``(A, n)``), ``c_pc``, ``c_d`` (finite) and ``c_low`` (the row's
  cheapest output); ``row_hits`` counts the passes that found each row wanting;
- the path (:func:`._path.begin_path`, :func:`._path.path_step`): ``ev``, the evaluation of the
  smoothed dual at the current duals and temperature (:func:`._newton.evaluate`), the best
  proven bound so far (``best_lb`` nats, at multiplier ``best_mu``), the first gap measured
  (``gap0``), the temperature of the last pricing pass (``priced_tau``), the factor by which
  the temperature shrinks next (``shrink``), the Newton steps at this temperature
  (``stage_steps``), those in a row cut short (``stalled``) and the last gap (``last_gap``).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

LN2 = math.log(2.0)


@dataclasses.dataclass(frozen=True)
class Settings:
    """The thresholds of the phases; the defaults are the solver's.

    The module docstrings of :mod:`._pricing`, :mod:`._newton` and :mod:`._path` say why. A test
    may change one to force a branch on a small instance.
    """

    chunk_elements: int = 1 << 16   # elements of one row chunk of a pass over D: 512 KiB, so a pass
                                    # reads D once from memory and its temporaries stay in cache
    n_start: int = 8                # candidates per row from the starting duals
    n_guard: int = 3                # starting rows per output and class whose posterior leans to it
    guard_columns: int = 64         # outputs per block when choosing guard rows
    widen_max: int = 4              # a row's intake doubles at each later pass that adds to it, up to
                                    # 2**widen_max times _N_ADD
    dense_max: int = 600            # dense Cholesky of the Newton system up to this many unknowns
    product_dense_max: int = 4096   # |A| > 2, tight solves: dense Cholesky of N (product_matrix) up to this many
    woodbury_max_rows: int = 2048   # |A| > 2: every system by the Woodbury identity up to this many active rows
    jacobi_tau: float = 3e-4        # above this fraction of the starting tau: CG preconditioned by N's
                                    # diagonal blocks, to a loose tolerance
    q_precond: float = 1e-4         # sparse path: cross terms with q_k q_l below this leave the preconditioner
    stalled_step: float = 1 / 64    # line searches cutting Newton's step below this, stalled_run
    stalled_run: int = 8            # times in a row at one tau: a stall (:mod:`._path`), and tau
    stall_heat: float = 4.0         # rises by this factor (at most to the starting tau),
    stall_heats_max: int = 16       # at most this many times in one solve (the race instance: 1 or 2)
    reheat_max: float = 16.0        # after pricing, tau rises at most this factor above the tau of the pass,
    reheat_max_classes: float = 1.0  # and at most this one with more than two classes: not at all (:mod:`._path`)


@dataclasses.dataclass(eq=False)
class FastState:
    """Program (19)'s data as the phases read it, and what they have found so far (module docstring).

    Made by :func:`set_up`; the fields after ``timing`` are set by the phases.
    """

    p_full: np.ndarray        # (n_private, K) the joint prior as given
    D: np.ndarray             # (K, K_out)
    delta: float
    tol: float                # nats
    max_iter: int
    progress: Callable[[float], None] | None
    settings: Settings
    K: int
    K_out: int
    p: np.ndarray             # (A, K): classes with mass only
    p_a: np.ndarray           # (A,)
    log_p_a: np.ndarray       # (A,)
    A: int
    p_c: np.ndarray           # (K,)
    rows: np.ndarray          # (R,) active rows
    alpha: np.ndarray         # (A, R) posteriors p(a|c)
    alpha_t: np.ndarray       # (R, A), contiguous
    has_inf: bool
    row_hits: np.ndarray      # (R,) pricing passes that found the row wanting
    stats: dict
    timing: dict
    zbuf: tuple | None = None          # the pricing's reused buffers (:func:`._pricing.z_block`)
    # the start
    jmin: np.ndarray | None = None
    tight: bool = False
    tie: np.ndarray | None = None
    budget: bool = False
    least: float = math.nan
    scale: float = math.nan
    theta: np.ndarray | None = None
    mu: float = 0.0
    # the candidate lists
    cr: np.ndarray | None = None
    cj: np.ndarray | None = None
    start: np.ndarray | None = None
    c_alpha: np.ndarray | None = None
    c_pc: np.ndarray | None = None
    c_d: np.ndarray | None = None
    c_low: np.ndarray | None = None
    # the path
    ev: dict | None = None
    best_lb: float = -math.inf
    best_mu: float = 0.0
    gap0: float | None = None
    priced_tau: float = math.inf
    shrink: float = math.nan
    stage_steps: int = 0
    stalled: int = 0
    last_gap: float = math.inf


def set_up(p_ac, D, delta, tol_bits, max_iter, progress=None, settings: Settings = Settings()) -> FastState:
    """The state of a fresh solve: the instance's arrays, no candidates, no duals yet.

    ``p_ac`` (n_private, K) and ``D`` (K, K_out) as checked by :func:`privmap.offline.solvers._problem.check_instance`;
    ``delta`` in D's unit; ``tol_bits`` in bits (kept in nats as ``tol``); ``max_iter`` Newton
    steps in all; ``progress`` a callable(float) or None. Raises nothing: the instance is checked
    before.
    """
    K, K_out = D.shape
    p_a = p_ac.sum(axis=1)
    keep = p_a > 0
    p = p_ac[keep]
    p_c = p_ac.sum(axis=0)
    rows = np.flatnonzero(p_c > 0)
    alpha = p[:, rows] / p_c[rows]
    return FastState(
        p_full=p_ac, D=D, delta=float(delta), tol=tol_bits * LN2, max_iter=max_iter, progress=progress,
        settings=settings, K=K, K_out=K_out, p=p, p_a=p_a[keep], log_p_a=np.log(p_a[keep]), A=p.shape[0],
        p_c=p_c, rows=rows, alpha=alpha, alpha_t=np.ascontiguousarray(alpha.T),
        has_inf=not bool(np.all(np.isfinite(D))), row_hits=np.zeros(rows.size, np.int64),
        stats={"newton_steps": 0, "evaluations": 0, "pricing_passes": 0, "added_candidates": 0, "stall_heats": 0},
        timing={"start": 0.0, "newton": 0.0, "pricing": 0.0})


def leakage_nats(P, log_p_a):
    """I(A; C_hat) in nats from P (A, K_out) = p(a, c_hat)."""
    S = P.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * (np.log(P) - np.log(S)[None, :] - log_p_a[:, None]), 0.0)
    return float(terms.sum())
