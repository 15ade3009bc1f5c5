"""The fast solver's path following: from the starting duals down the temperature to a certificate.

The smoothed dual Phi_tau (:mod:`._newton`) is maximised at a decreasing temperature tau
(nats), the entropic analogue of an interior-point method. :func:`run` drives the solver's
phases (:mod:`._newton`, :mod:`._pricing`, :mod:`._certify`), each a function of the one state
:class:`._state.FastState`, the path's own position included (:func:`path_step`):

- **Start** (:func:`start`): each output's codebook entry near the posterior of its
  cheapest input, mixed with p(a) (_START_MIX); tau and mu on the scale of I(A; C), the leakage
  without privacy. A warm start (:func:`warm_duals`) takes a previous answer's
  column posteriors and multiplier instead, and adds its table's pairs to the candidates.
- **Polish** (:func:`polish_answer`): an answer of this very instance from another solver
  (the conic reference's, accurate but uncertified) gives the duals: its dual codebook (defined
  for every output) and multiplier, or, without a codebook, its table's posteriors unmixed. Its
  table, mixed to meet the budget, is first certified as it is by one pricing pass at those
  duals (posteriors alone fall short where outputs the answer left nearly empty carry the other
  solver's round-off, which undercuts some rows: 8e-5 bits at K = 128 with 13 classes, against
  6e-8 by the codebook); where the bound falls short (a stalled iterate), the path starts from
  those duals at _POLISH_TAU times the starting tau instead of at the top.
- **Centring**: Newton steps at a fixed tau until the Newton decrement^2 is at most
  _CENTRED * tau.
- **Certifying** (:func:`follow_path`): once centred, the path's tangent gives duals
  extrapolated to tau = 0; a pricing pass over all pairs gives their proven bound, and the solver
  stops when the answer's leakage is within ``tol`` of the best bound so far. New pairs from the
  pass re-centre the path at a tau that sees them smoothly (_REHEAT), at most settings.reheat_max times
  the tau of the pass: late on the path a pass can find a few hundred pairs whose margins are
  hundreds of times tau, and re-centring that high throws away the small-tau centring, the
  dearest part of the path, pass after pass (on a fold of the UCI Adult K = 4096 build, until
  the Newton steps ran out; benchmarks/README.md). With more than two classes the new pairs join
  at the tau of the pass (settings.reheat_max_classes = 1): there late passes kept finding a few
  pairs, mostly of outputs the path is emptying, and re-centred the path up to 16 times higher
  pass after pass; on a fold of UCI Adult with 15 occupations private (K = 256) the path got no
  certificate in 2,000 Newton steps (180 CPU-s), and certifies in 436 without it (26.5 CPU-s,
  with :mod:`._newton`'s dense Gram matrix); seven classes (marital status): 375 steps and 7.7
  CPU-s before, 309 and 5.4 after. Where the pairs found are far from the path, the stall rule
  below still lifts tau, after settings.stalled_run cut steps.
- **Shrinking**: otherwise tau shrinks by an adapted factor along the tangent.
- **Stalls**: where the line search cuts Newton's step below settings.stalled_step settings.stalled_run times in a
  row at one tau, and the Newton systems there are solved tightly (not by the loose block-diagonal
  CG far up the path, whose inexact steps are cut for their own reasons: a heat there cost UCI
  Adult, sex private, K = 4096 at 0.7 x Delta0 half as much time again), the point is far from that
  tau's centre: at a small tau the soft minimum is nearly a hard one, the Hessian models it only
  within about tau of the point, and centring crawls (UCI Adult with race private, five classes,
  K = 256 at 0.3 x Delta0: 97 steps at one tau, the median step 1e-3 of Newton's; the path hit 2,000
  steps when the Newton systems were summed in another order). tau then rises by settings.stall_heat, which
  smooths the kinks, and the path comes down again along its tangent: 586 steps there instead of
  1,169. At most settings.stall_heats_max times per solve, so that a path stalling at every tau cannot
  cycle.

**Certificates from the path's tangent.** Near tau = 0 the dual path is nearly
linear, x(tau) = x* + tau x'(tau) + O(tau^2), and its tangent x' costs one more
solve with the same factors. Extrapolating to tau = 0 gives duals whose
exact LB is within O(tau^2) of the optimum, while the soft table's leakage is
within O(tau^2) too; so a certificate of 1e-6 bits needs tau near 1e-4, not
1e-7. The same tangent predicts the duals at the next, smaller tau.
"""
from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from ..._errors import SolverError
from .._result import SolveResult
from ._certify import finish, lower_bound, mixed_leakage, single_output, trivial
from ._newton import ascend, codebook, evaluate, factor, gradient, pad, primal, solves_tightly, tau_derivative, theta_only
from ._pricing import _N_ADD, add_candidates, pricing_pass, scan_minima, start_candidates
from ._state import LN2, FastState, leakage_nats

_START_MIX = 0.1                 # starting codebook: posterior of the cheapest input, mixed with p(a)
_TAU_SHRINK = 0.1                # first factor by which tau shrinks once centred (then adapted)
_EXTRAP_MAX = 0.5                # outputs whose logits would move more are not extrapolated
_PASS_EVERY = 0.5                # a pricing pass whenever tau fell by this factor since the last
_REHEAT = 0.3                    # after pricing, tau >= _REHEAT * median margin of new pairs (at most
                                 # Settings.reheat_max times the tau of the pass; reheat_max_classes
                                 # with more than two classes)
_CENTRED = 0.1                   # Newton decrement^2 <= _CENTRED * tau: near the centre
_BACKOFF_MAX = 1e4               # where no step ascends, tau backs off tenfold, up to this factor above
                                 # the starting tau (lopsided instances find none at 1 and 10 x it)
_TIGHT = 1e-3                    # centring tightly: decrement^2 <= tau * (_TIGHT * tol)^2
_TAU_MIN = 1e-6                  # give up below tau = _TAU_MIN * tol
_WARM_Q = 1e-9                   # warm start: table entries above this become starting candidates
_POLISH_TAU = 1e-2               # a polish that does not certify as given starts the path this far below
                                 # the starting tau (Clarabel's stalled iterates on UCI Adult, 5 to 15
                                 # classes, K = 64 and 128: 51 to 147 Newton steps; from 1e-1, 1e-3 and
                                 # 1e-4 up to 2.2 times as many, and one failure at 1e-4)
_POLISH_FLOOR = 1e-12            # posterior entries of a polished answer are floored here (a log of 0
                                 # would rule its class out of the output for good)


def run(state: FastState, warm: SolveResult | None = None, polish: SolveResult | None = None) -> SolveResult:
    """The driver: solve and certify.

    The trivial answers where they apply (:func:`start`), else the path from the starting duals
    (cold, or from ``warm``, a previous answer of the same shape), or the polish of ``polish``, an
    answer of this instance (:func:`polish_answer`).

    ``state`` fresh from :func:`._state.set_up`. Returns a :class:`SolveResult` whose ``table``
    is (K, K_out) and ``gap_bits`` <= tol_bits. Raises SolverError when no certificate is
    reached within ``max_iter`` Newton steps, the smoothing path runs out (tau below
    _TAU_MIN * tol) or no ascent direction is left.
    """
    answer = start(state, warm, polish)
    if answer is not None:
        return answer
    if polish is not None:
        return polish_answer(state, polish)
    return follow_path(state, evaluate(state, state.theta, state.mu, state.scale))


def start(state: FastState, warm: SolveResult | None = None, polish: SolveResult | None = None
          ) -> SolveResult | None:
    """The start: the cheapest outputs, the trivial answers, else the starting duals and candidates.

    Sets ``jmin``, ``least``, ``tight``, ``tie``, ``budget``; returns the proven answer of a trivial
    instance (one private class, or one output within budget for every row). Otherwise sets the
    starting duals ``theta`` (A, K_out) and ``mu``: each output's codebook entry near the
    posterior of its cheapest input, mixed with p(a) (_START_MIX), the multiplier and the
    temperature ``scale`` on the scale of the leakage without privacy, I(A; C); or those of
    ``warm`` or ``polish`` (:func:`warm_duals`), whose table's pairs join the starting candidates
    (:func:`._pricing.start_candidates`). Returns None then. Raises nothing.
    """
    t0 = time.perf_counter()
    state.jmin, dmin, col_arg, col_ok, col_cost = scan_minima(state)
    pc_row = state.p_c[state.rows]
    least = float(pc_row @ dmin)
    state.least = least
    if state.A <= 1:
        return trivial(state, "one private class has all the mass: leakage is 0")
    state.tight = state.delta <= least + 1e-12 * max(1.0, least)
    state.tie = dmin + 1e-12 * np.maximum(1.0, dmin)
    state.budget = not state.tight
    constant = float(col_cost.min())
    if constant <= state.delta:
        return single_output(state, int(np.argmin(col_cost)))

    theta = np.zeros((state.A, state.K_out))
    r0 = np.tile(state.p_a[:, None], (1, state.K_out))
    r0[:, col_ok] = (1 - _START_MIX) * state.alpha[:, col_arg[col_ok]] + _START_MIX * state.p_a[:, None]
    theta[:] = np.log(r0) - np.log(r0[-1])
    scale = max(leakage_nats(state.p[:, state.rows], state.log_p_a), state.tol)
    mu = 2.0 * scale / max(constant - least, 1e-300) if state.budget else 0.0
    r_w = j_w = np.zeros(0, np.int64)
    given = warm if polish is None else polish
    if given is not None:
        mu, r_w, j_w = warm_duals(state, given, theta, mu, polish=polish is not None)
    G0, _ = codebook(state, theta)
    start_candidates(state, G0, mu, r_w, j_w)
    state.scale = scale
    state.theta, state.mu = theta, mu
    state.timing["start"] = time.perf_counter() - t0
    return None


def polish_answer(state: FastState, given: SolveResult) -> SolveResult:
    """Certify ``given``, an answer of this instance, from its own duals, or follow the path from them.

    Its own duals: ``theta`` and ``mu`` set by :func:`start` through :func:`warm_duals` without
    mixing.

    Its table on the candidates (which hold its pairs above _WARM_Q), each row renormalised
    and mixed with the cheapest-output table to meet the budget, is returned when one pricing
    pass at these duals proves it within ``tol`` (``info["polish"] == "as given"``); otherwise
    the path starts from these duals at _POLISH_TAU times the starting tau (``"path"``).
    Raises SolverError as :func:`run` does.
    """
    tn = time.perf_counter()
    theta, least = state.theta, state.least
    mu = state.mu if state.budget else 0.0
    table = given.table
    start_of = state.start
    assert start_of is not None                 # start() made the candidate lists
    q = np.asarray(table[state.rows[state.cr], state.cj], dtype=float).ravel()
    q = q / np.repeat(np.maximum(np.add.reduceat(q, start_of), 1e-300), np.diff(np.r_[start_of, q.size]))
    as_given = {"q": q}
    P, J, Ed = primal(state, as_given)
    J_mix, mix = mixed_leakage(state, as_given, P, J, Ed, least)
    G, _ = codebook(state, theta)
    total, absolute, *_ = pricing_pass(state, G, mu, None, 0)
    lb = lower_bound(state, total, absolute, mu)
    state.timing["newton"] += time.perf_counter() - tn
    if J_mix - lb <= state.tol:
        try:
            result = finish(state, as_given, mix, lb, mu)
            result.info["polish"] = "as given"
            return result
        except SolverError:                   # the returned table's exact gap is above tol
            pass
    result = follow_path(state, evaluate(state, theta, mu, _POLISH_TAU * state.scale))
    result.info["polish"] = "path"
    return result


def warm_duals(state, warm, theta, mu, *, polish=False):
    """Start from a previous answer: its posteriors' logits into ``theta``, its multiplier and its pairs.

    Writes the logits of its outputs' posteriors into ``theta`` (A, K_out) in place (outputs it
    left empty keep theirs), and returns its multiplier in nats (``mu`` when it had none, NaN, or
    no budget binds) and its table's pairs above _WARM_Q (active-row indices, outputs) where
    allowed in D. A warm start mixes the posteriors with p(a) (_START_MIX) and takes them from
    those pairs; a ``polish`` takes them unmixed, floored at _POLISH_FLOOR, from every allowed
    entry (an output the answer left nearly empty keeps the posterior its solver gave it, not the
    cold start's), or, where it carries one, from its dual codebook (``SolveResult.codebook``:
    defined for every output, where posteriors of outputs at round-off undercut some rows' bound).
    """
    table = warm.table
    rows, cols = (table.nonzero() if sp.issparse(table) else np.nonzero(np.asarray(table)))
    vals = np.asarray(table[rows, cols]).ravel()
    pos = np.full(state.K, -1, np.int64)
    pos[state.rows] = np.arange(state.rows.size)
    allowed = pos[rows] >= 0
    allowed[allowed] = np.isfinite(state.D[rows[allowed], cols[allowed]])
    rows, cols, vals = rows[allowed], cols[allowed], vals[allowed]
    pairs = vals > _WARM_Q
    if polish and warm.codebook is not None:    # the other solver's duals, every output
        used = np.ones(state.K_out, dtype=bool)
        r = state.p_a[:, None] * np.exp(np.asarray(warm.codebook, dtype=float)[state.p_full.sum(axis=1) > 0])
        r = np.maximum(r / r.sum(axis=0), _POLISH_FLOOR)
    else:
        mass = slice(None) if polish else pairs
        P = np.zeros((state.A, state.K_out))
        for a in range(state.A):
            np.add.at(P[a], cols[mass], state.p[a, rows[mass]] * vals[mass])
        used = P.sum(axis=0) > 0
        if polish:
            r = np.maximum(P[:, used] / P[:, used].sum(axis=0), _POLISH_FLOOR)
        else:
            r = (1 - _START_MIX) * P[:, used] / P[:, used].sum(axis=0) + _START_MIX * state.p_a[:, None]
    theta[:, used] = np.log(r) - np.log(r[-1])
    if state.budget and math.isfinite(warm.multiplier) and warm.multiplier > 0:
        mu = float(warm.multiplier) * LN2
    return mu, pos[rows[pairs]], cols[pairs]


def follow_path(state: FastState, ev: dict) -> SolveResult:
    """Newton steps on Phi_tau from the evaluation ``ev`` (:func:`._newton.evaluate`) until a certificate.

    :func:`begin_path`, then :func:`path_step` until it answers. Returns the certified
    :class:`SolveResult`; raises SolverError as :func:`run` says.
    """
    begin_path(state, ev)
    while True:
        result = path_step(state)
        if result is not None:
            return result


def begin_path(state: FastState, ev: dict) -> None:
    """Set the path's state to its beginning at the evaluation ``ev``: no bound yet, no pass yet."""
    state.ev = ev
    state.best_lb, state.best_mu = -math.inf, 0.0
    state.gap0 = None
    state.priced_tau = math.inf
    state.shrink = _TAU_SHRINK
    state.stage_steps = 0
    state.stalled = 0
    state.last_gap = math.inf


def path_step(state: FastState) -> SolveResult | None:
    """One Newton step of the path from ``state.ev``; once centred, certify or shrink tau.

    tau shrinks along the path's tangent. Returns the certified :class:`SolveResult`, or None to
    go on (``state.ev`` and the path's fields updated). Its time counts as the path's
    (``timing["newton"]``).

    The dual path is close to linear in tau, x(tau) = x* + tau x' + O(tau^2), so the
    tangent extrapolated to tau = 0 gives duals whose exact bound LB is within O(tau^2)
    of the optimum, while the soft table at tau is within O(tau^2) of it too.

    Raises SolverError after ``max_iter`` Newton steps in all, where no step ascends even far above
    the starting tau, or where the path reaches tau = _TAU_MIN * tol without a certificate.
    """
    tn = time.perf_counter()
    try:
        done = _step(state)
    finally:
        state.timing["newton"] += time.perf_counter() - tn
    return None if done is None else finish(state, *done)


def _step(state: FastState) -> tuple[dict, float, float, float] | None:
    """:func:`path_step`'s work: None to go on, or the arguments of :func:`._certify.finish`."""
    if state.stats["newton_steps"] >= state.max_iter:
        raise SolverError(
            f"fast solver: no certificate within {state.max_iter} Newton steps "
            f"(best gap {state.last_gap / LN2:.3g} bits, tol_bits {state.tol / LN2:.3g})")
    settings, ev, least = state.settings, state.ev, state.least
    assert ev is not None                       # begin_path set it, and every step leaves one
    P, J, Ed = primal(state, ev)
    g_theta, g_mu = gradient(state, ev, P)
    solve = factor(state, ev, P)
    if state.budget and ev["mu"] == 0.0 and g_mu <= 0.0:
        g_mu = 0.0                    # the bound mu >= 0 is active: step in theta only
        solve = theta_only(solve)
    d_theta, d_mu = solve(g_theta, g_mu)
    state.stats["newton_steps"] += 1
    state.stage_steps += 1
    dec = float(np.sum(g_theta * d_theta)) + (g_mu * d_mu if state.budget else 0.0)
    tau = ev["tau"]
    if dec > _CENTRED * tau:
        trial, step = ascend(state, ev, P, d_theta, d_mu, dec)
        if trial is None:             # no ascent from here: back off to a larger tau
            if tau > _BACKOFF_MAX * state.scale:
                raise SolverError(f"fast solver: no ascent direction at tau = {tau:.3g}")
            state.ev = evaluate(state, ev["theta"], ev["mu"], 10.0 * tau)
            state.shrink = max(state.shrink, 0.5)
            return None
        state.ev = trial
        state.stalled = state.stalled + 1 if step < settings.stalled_step and solves_tightly(state, tau) else 0
        if (state.stalled >= settings.stalled_run and tau < state.scale            # far from this tau's centre
                and state.stats["stall_heats"] < settings.stall_heats_max):
            state.ev = evaluate(state, trial["theta"], trial["mu"], min(settings.stall_heat * tau, state.scale))
            state.stalled = 0
            state.stats["stall_heats"] += 1
        return None
    state.stalled = 0
    # near the centre at this tau: extrapolate the duals to tau = 0, measure the gap
    t_theta, t_mu = solve(*tau_derivative(state, ev))
    step0 = tau * t_theta
    wild = np.abs(step0).max(axis=0) > _EXTRAP_MAX   # outputs with next to no curvature
    step0[:, wild] = 0.0
    theta0 = ev["theta"] - pad(step0)
    mu0 = max(ev["mu"] - tau * t_mu, 0.0) if state.budget else 0.0
    ev0 = evaluate(state, theta0, mu0, tau)
    J_mix, mix = mixed_leakage(state, ev, P, J, Ed, least)
    cand_lb = float(state.p_c[state.rows] @ ev0["zmin"]) - mu0 * state.delta
    gap = J_mix - cand_lb
    state.gap0 = state.gap0 if state.gap0 is not None else max(gap, state.tol)
    report_gap(state, gap, state.gap0)
    if gap <= 0.5 * state.tol or (tau <= _PASS_EVERY * min(state.priced_tau, state.scale)):
        state.priced_tau = tau
        total, absolute, nr, nc, margin = pricing_pass(state, ev0["G"], mu0, ev0["zmin"], _N_ADD)
        lb = lower_bound(state, total, absolute, mu0)
        if lb > state.best_lb:
            state.best_lb, state.best_mu = lb, mu0
        state.last_gap = J_mix - state.best_lb
        if J_mix - state.best_lb <= state.tol:
            return ev, mix, state.best_lb, state.best_mu
        if nr.size:
            # new candidates beat their rows by some margin: re-centre at a tau that
            # sees them smoothly, from duals predicted along the tangent
            add_candidates(state, nr, nc)
            cap = settings.reheat_max if state.A == 2 else settings.reheat_max_classes
            new_tau = min(max(tau, _REHEAT * float(np.median(margin))), state.scale, cap * tau)
            state.priced_tau = new_tau
            state.ev = along_tangent(state, ev, t_theta, t_mu, new_tau)
            state.stage_steps = 0
            return None
    # Phi_tau + tau * entropy equals J + mu (E d - delta) at the exact centre; when the
    # soft table is what keeps the gap open, centre tightly before going on
    entropy = -float(state.c_pc @ (ev["q"] * np.log(np.maximum(ev["q"], 1e-300))))
    primal_err = J_mix - (ev["phi"] + tau * entropy)
    if primal_err > 0.25 * gap and dec > tau * (_TIGHT * state.tol) ** 2:
        trial, _ = ascend(state, ev, P, d_theta, d_mu, dec)
        if trial is not None:
            state.ev = trial
            return None
    if tau <= _TAU_MIN * state.tol:
        raise SolverError(
            f"fast solver: the smoothing path reached tau = {tau:.3g} without a certificate "
            f"(gap {gap / LN2:.3g} bits, tol_bits {state.tol / LN2:.3g})")
    # predictor: follow the tangent to the next tau; shrink faster while stages are cheap
    state.shrink = max(state.shrink * 0.5, 0.02) if state.stage_steps <= 2 else \
        min(state.shrink * 2.0, 0.5) if state.stage_steps > 5 else state.shrink
    state.stage_steps = 0
    state.ev = along_tangent(state, ev, t_theta, t_mu, tau * state.shrink)
    return None


def along_tangent(state: FastState, ev: dict, t_theta, t_mu, new_tau) -> dict:
    """Duals predicted at new_tau from the path's tangent at ev (kept if mu would go < 0)."""
    tau = ev["tau"]
    mu1 = ev["mu"] + (new_tau - tau) * t_mu if state.budget else 0.0
    if state.budget and mu1 <= 0:
        return evaluate(state, ev["theta"], ev["mu"], new_tau)
    return evaluate(state, ev["theta"] + (new_tau - tau) * pad(t_theta), mu1, new_tau)


def report_gap(state: FastState, gap, gap0) -> None:
    """Report progress in [0, 0.95] from how far the gap (nats) fell from ``gap0`` towards ``tol``."""
    if state.progress is None or gap0 is None:
        return
    done = math.log(max(gap0, 1e-300) / max(gap, 1e-300)) / max(math.log(max(gap0, 1e-300) / state.tol), 1e-9)
    state.progress(float(min(max(0.9 * done, 0.0), 0.95)))
