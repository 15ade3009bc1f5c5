"""The fast solver's path following: from the starting duals down the temperature to a certificate.

The smoothed dual Phi_tau (:mod:`._fast_newton`) is maximised at a decreasing temperature tau
(nats), the entropic analogue of an interior-point method. :class:`_DualNewton` assembles the
solver's parts (:mod:`._fast_newton`, :mod:`._fast_pricing`, :mod:`._fast_certify` over
:mod:`._fast_instance`) and drives them:

- **Start** (:meth:`_DualNewton.run`): each output's codebook entry near the posterior of its
  cheapest input, mixed with p(a) (_START_MIX); tau and mu on the scale of I(A; C), the leakage
  without privacy. A warm start (:meth:`_DualNewton._warm_duals`) takes a previous answer's
  column posteriors and multiplier instead, and adds its table's pairs to the candidates.
- **Polish** (:meth:`_DualNewton._polish`): an answer of this very instance from another solver
  (the conic reference's, accurate but uncertified) gives the duals: its dual codebook (defined
  for every output) and multiplier, or, without a codebook, its table's posteriors unmixed. Its
  table, mixed to meet the budget, is first certified as it is by one pricing pass at those
  duals (posteriors alone fall short where outputs the answer left nearly empty carry the other
  solver's round-off, which undercuts some rows: 8e-5 bits at K = 128 with 13 classes, against
  6e-8 by the codebook); where the bound falls short (a stalled iterate), the path starts from
  those duals at _POLISH_TAU times the starting tau instead of at the top.
- **Centring**: Newton steps at a fixed tau until the Newton decrement^2 is at most
  _CENTRED * tau.
- **Certifying** (:meth:`_DualNewton._follow_path`): once centred, the path's tangent gives duals
  extrapolated to tau = 0; a pricing pass over all pairs gives their proven bound, and the solver
  stops when the answer's leakage is within ``tol`` of the best bound so far. New pairs from the
  pass re-centre the path at a tau that sees them smoothly (_REHEAT), at most _REHEAT_MAX times
  the tau of the pass: late on the path a pass can find a few hundred pairs whose margins are
  hundreds of times tau, and re-centring that high throws away the small-tau centring, the
  dearest part of the path, pass after pass (on a fold of the UCI Adult K = 4096 build, until
  the Newton steps ran out; benchmarks/README.md).
- **Shrinking**: otherwise tau shrinks by an adapted factor along the tangent.
- **Stalls**: where the line search cuts Newton's step below _STALLED_STEP _STALLED_RUN times in a
  row at one tau, and the Newton systems there are solved tightly (not by the loose block-diagonal
  CG far up the path, whose inexact steps are cut for their own reasons: a heat there cost UCI
  Adult, sex private, K = 4096 at 0.7 x Delta0 half as much time again), the point is far from that
  tau's centre: at a small tau the soft minimum is nearly a hard one, the Hessian models it only
  within about tau of the point, and centring crawls (UCI Adult with race private, five classes,
  K = 256 at 0.3 x Delta0: 97 steps at one tau, the median step 1e-3 of Newton's; the path hit 2,000
  steps when the Newton systems were summed in another order). tau then rises by _STALL_HEAT, which
  smooths the kinks, and the path comes down again along its tangent: 586 steps there instead of
  1,169. At most _STALL_HEATS_MAX times per solve, so that a path stalling at every tau cannot
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
from ._certify import _Certification
from ._state import _LN2, _Instance, _leakage_nats
from ._newton import _NewtonCore, _pad
from ._pricing import _N_ADD, _Pricing
from .._result import SolveResult

_START_MIX = 0.1                 # starting codebook: posterior of the cheapest input, mixed with p(a)
_TAU_SHRINK = 0.1                # first factor by which tau shrinks once centred (then adapted)
_EXTRAP_MAX = 0.5                # outputs whose logits would move more are not extrapolated
_PASS_EVERY = 0.5                # a pricing pass whenever tau fell by this factor since the last
_REHEAT = 0.3                    # after pricing, tau >= _REHEAT * median margin of new pairs,
_REHEAT_MAX = 16.0               # but at most this factor above the tau of the pass (module docstring)
_CENTRED = 0.1                   # Newton decrement^2 <= _CENTRED * tau: near the centre
_STALLED_STEP = 1 / 64           # line searches cutting Newton's step below this, _STALLED_RUN
_STALLED_RUN = 8                 # times in a row at one tau: a stall (module docstring), and tau
_STALL_HEAT = 4.0                # rises by this factor (at most to the starting tau),
_STALL_HEATS_MAX = 16            # at most this many times in one solve (the race instance: 1 or 2)
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


class _DualNewton(_Certification, _Pricing, _NewtonCore, _Instance):
    """The fast solver: its parts (module docstring) and the path that drives them.

    Constructed as :class:`._fast_instance._Instance` (``p_ac`` (n_private, K), ``D``
    (K, K_out), ``delta``, ``tol_bits``, ``max_iter``, ``progress``), then :meth:`run` once.
    """

    def run(self, warm: SolveResult | None = None, polish: SolveResult | None = None) -> SolveResult:
        """Solve and certify: the trivial answers where they apply, else the path from the
        starting duals (cold, or from ``warm``, a previous answer of the same shape), or the
        polish of ``polish``, an answer of this instance (:meth:`_polish`).

        Returns a :class:`SolveResult` whose ``table`` is (K, K_out) and ``gap_bits`` <= tol_bits.
        Raises SolverError when no certificate is reached within ``max_iter`` Newton steps, the
        smoothing path runs out (tau below _TAU_MIN * tol) or no ascent direction is left.
        """
        t0 = time.perf_counter()
        self.jmin, dmin, col_arg, col_ok, col_cost = self._scan_minima()
        pc_row = self.p_c[self.rows]
        least = float(pc_row @ dmin)
        if self.A <= 1:
            return self._trivial("one private class has all the mass: leakage is 0")
        self.tight = self.delta <= least + 1e-12 * max(1.0, least)
        self.tie = dmin + 1e-12 * np.maximum(1.0, dmin)
        self.budget = not self.tight
        constant = float(col_cost.min())
        if constant <= self.delta:
            return self._single_output(int(np.argmin(col_cost)))

        # starting duals: each output's codebook entry near the posterior of its cheapest input; the
        # multiplier and temperature on the scale of the leakage without privacy, I(A; C)
        theta = np.zeros((self.A, self.K_out))
        r0 = np.tile(self.p_a[:, None], (1, self.K_out))
        r0[:, col_ok] = (1 - _START_MIX) * self.alpha[:, col_arg[col_ok]] + _START_MIX * self.p_a[:, None]
        theta[:] = np.log(r0) - np.log(r0[-1])
        scale = max(_leakage_nats(self.p[:, self.rows], self.log_p_a), self.tol)
        mu = 2.0 * scale / max(constant - least, 1e-300) if self.budget else 0.0
        r_w = j_w = np.zeros(0, np.int64)
        given = warm if polish is None else polish
        if given is not None:
            mu, r_w, j_w = self._warm_duals(given, theta, mu, polish=polish is not None)
        G0, _ = self._codebook(theta)
        self._start_candidates(G0, mu, r_w, j_w)
        self.scale = scale
        self.timing["start"] = time.perf_counter() - t0
        if polish is not None:
            return self._polish(polish, theta, mu, least)
        return self._follow_path(self._evaluate(theta, mu, scale), least)

    def _polish(self, given, theta, mu, least):
        """Certify ``given``, an answer of this instance, from its own duals (``theta`` (A, K_out)
        and ``mu``, set by :meth:`_warm_duals` without mixing), or follow the path from them.

        Its table on the candidates (which hold its pairs above _WARM_Q), each row renormalised
        and mixed with the cheapest-output table to meet the budget, is returned when one pricing
        pass at these duals proves it within ``tol`` (``info["polish"] == "as given"``); otherwise
        the path starts from these duals at _POLISH_TAU times the starting tau (``"path"``).
        Raises SolverError as :meth:`run` does.
        """
        tn = time.perf_counter()
        mu = mu if self.budget else 0.0
        table = given.table
        q = np.asarray(table[self.rows[self.cr], self.cj], dtype=float).ravel()
        q = q / np.repeat(np.maximum(np.add.reduceat(q, self.start), 1e-300), np.diff(np.r_[self.start, q.size]))
        as_given = {"q": q}
        P, J, Ed = self._primal(as_given)
        J_mix, mix = self._mixed_leakage(as_given, P, J, Ed, least)
        G, _ = self._codebook(theta)
        total, absolute, *_ = self._pass(G, mu, None, 0)
        lb = self._lower_bound(total, absolute, mu)
        self.timing["newton"] += time.perf_counter() - tn
        if J_mix - lb <= self.tol:
            try:
                result = self._finish(as_given, mix, lb, mu)
                result.info["polish"] = "as given"
                return result
            except SolverError:                   # the returned table's exact gap is above tol
                pass
        result = self._follow_path(self._evaluate(theta, mu, _POLISH_TAU * self.scale), least)
        result.info["polish"] = "path"
        return result

    def _warm_duals(self, warm, theta, mu, *, polish=False):
        """Start from a previous answer: writes the logits of its outputs' posteriors into
        ``theta`` (A, K_out) in place (outputs it left empty keep theirs), and returns its
        multiplier in nats (``mu`` when it had none, NaN, or no budget binds) and its table's
        pairs above _WARM_Q (active-row indices, outputs) where allowed in D. A warm start mixes
        the posteriors with p(a) (_START_MIX) and takes them from those pairs; a ``polish`` takes
        them unmixed, floored at _POLISH_FLOOR, from every allowed entry (an output the answer
        left nearly empty keeps the posterior its solver gave it, not the cold start's), or, where
        it carries one, from its dual codebook (``SolveResult.codebook``: defined for every
        output, where posteriors of outputs at round-off undercut some rows' bound)."""
        table = warm.table
        rows, cols = (table.nonzero() if sp.issparse(table) else np.nonzero(np.asarray(table)))
        vals = np.asarray(table[rows, cols]).ravel()
        pos = np.full(self.K, -1, np.int64)
        pos[self.rows] = np.arange(self.rows.size)
        allowed = pos[rows] >= 0
        allowed[allowed] = np.isfinite(self.D[rows[allowed], cols[allowed]])
        rows, cols, vals = rows[allowed], cols[allowed], vals[allowed]
        pairs = vals > _WARM_Q
        if polish and warm.codebook is not None:    # the other solver's duals, every output
            used = np.ones(self.K_out, dtype=bool)
            r = self.p_a[:, None] * np.exp(np.asarray(warm.codebook, dtype=float)[self.p_full.sum(axis=1) > 0])
            r = np.maximum(r / r.sum(axis=0), _POLISH_FLOOR)
        else:
            mass = slice(None) if polish else pairs
            P = np.zeros((self.A, self.K_out))
            for a in range(self.A):
                np.add.at(P[a], cols[mass], self.p[a, rows[mass]] * vals[mass])
            used = P.sum(axis=0) > 0
            if polish:
                r = np.maximum(P[:, used] / P[:, used].sum(axis=0), _POLISH_FLOOR)
            else:
                r = (1 - _START_MIX) * P[:, used] / P[:, used].sum(axis=0) + _START_MIX * self.p_a[:, None]
        theta[:, used] = np.log(r) - np.log(r[-1])
        if self.budget and math.isfinite(warm.multiplier) and warm.multiplier > 0:
            mu = float(warm.multiplier) * _LN2
        return mu, pos[rows[pairs]], cols[pairs]

    def _follow_path(self, ev, least):
        """Newton steps on Phi_tau; once centred, certify or shrink tau along the path's tangent.

        The dual path is close to linear in tau, x(tau) = x* + tau x' + O(tau^2), so the
        tangent extrapolated to tau = 0 gives duals whose exact bound LB is within O(tau^2)
        of the optimum, while the soft table at tau is within O(tau^2) of it too.

        ``ev`` is the evaluation at the starting duals (:meth:`._fast_newton._NewtonCore._evaluate`),
        ``least`` the least distortion any table reaches (D's unit). Returns the certified
        :class:`SolveResult`; raises SolverError as :meth:`run` says.
        """
        tn = time.perf_counter()
        best_lb, best_mu = -math.inf, 0.0
        gap0 = None
        priced_tau = math.inf            # tau of the last pricing pass
        shrink = _TAU_SHRINK
        stage_steps = 0
        stalled = 0                      # Newton steps in a row cut below _STALLED_STEP at this tau
        self._last_gap = math.inf
        while True:
            if self.stats["newton_steps"] >= self.max_iter:
                self.timing["newton"] += time.perf_counter() - tn
                raise SolverError(
                    f"fast solver: no certificate within {self.max_iter} Newton steps "
                    f"(best gap {self._last_gap / _LN2:.3g} bits, tol_bits {self.tol / _LN2:.3g})")
            P, J, Ed = self._primal(ev)
            g_theta, g_mu = self._gradient(ev, P)
            solve = self._factor(ev, P)
            if self.budget and ev["mu"] == 0.0 and g_mu <= 0.0:
                g_mu = 0.0                    # the bound mu >= 0 is active: step in theta only
                solve = self._theta_only(solve)
            d_theta, d_mu = solve(g_theta, g_mu)
            self.stats["newton_steps"] += 1
            stage_steps += 1
            dec = float(np.sum(g_theta * d_theta)) + (g_mu * d_mu if self.budget else 0.0)
            tau = ev["tau"]
            if dec > _CENTRED * tau:
                trial, step = self._ascend(ev, P, d_theta, d_mu, dec)
                if trial is None:             # no ascent from here: back off to a larger tau
                    if tau > _BACKOFF_MAX * self.scale:
                        self.timing["newton"] += time.perf_counter() - tn
                        raise SolverError(f"fast solver: no ascent direction at tau = {tau:.3g}")
                    ev = self._evaluate(ev["theta"], ev["mu"], 10.0 * tau)
                    shrink = max(shrink, 0.5)
                    continue
                ev = trial
                stalled = stalled + 1 if step < _STALLED_STEP and self._solves_tightly(tau) else 0
                if (stalled >= _STALLED_RUN and tau < self.scale            # far from this tau's centre
                        and self.stats["stall_heats"] < _STALL_HEATS_MAX):
                    ev = self._evaluate(ev["theta"], ev["mu"], min(_STALL_HEAT * tau, self.scale))
                    stalled = 0
                    self.stats["stall_heats"] += 1
                continue
            stalled = 0
            # near the centre at this tau: extrapolate the duals to tau = 0, measure the gap
            t_theta, t_mu = solve(*self._tau_derivative(ev))
            step0 = tau * t_theta
            wild = np.abs(step0).max(axis=0) > _EXTRAP_MAX   # outputs with next to no curvature
            step0[:, wild] = 0.0
            theta0 = ev["theta"] - _pad(step0)
            mu0 = max(ev["mu"] - tau * t_mu, 0.0) if self.budget else 0.0
            ev0 = self._evaluate(theta0, mu0, tau)
            J_mix, mix = self._mixed_leakage(ev, P, J, Ed, least)
            cand_lb = float(self.p_c[self.rows] @ ev0["zmin"]) - mu0 * self.delta
            gap = J_mix - cand_lb
            gap0 = gap0 if gap0 is not None else max(gap, self.tol)
            self._report_gap(gap, gap0)
            if gap <= 0.5 * self.tol or (tau <= _PASS_EVERY * min(priced_tau, self.scale)):
                priced_tau = tau
                total, absolute, nr, nc, margin = self._pass(ev0["G"], mu0, ev0["zmin"], _N_ADD)
                lb = self._lower_bound(total, absolute, mu0)
                if lb > best_lb:
                    best_lb, best_mu = lb, mu0
                self._last_gap = J_mix - best_lb
                if J_mix - best_lb <= self.tol:
                    self.timing["newton"] += time.perf_counter() - tn
                    return self._finish(ev, mix, best_lb, best_mu)
                if nr.size:
                    # new candidates beat their rows by some margin: re-centre at a tau that
                    # sees them smoothly, from duals predicted along the tangent
                    self._add_candidates(nr, nc)
                    new_tau = min(max(tau, _REHEAT * float(np.median(margin))), self.scale, _REHEAT_MAX * tau)
                    priced_tau = new_tau
                    ev = self._along_tangent(ev, t_theta, t_mu, new_tau)
                    stage_steps = 0
                    continue
            # Phi_tau + tau * entropy equals J + mu (E d - delta) at the exact centre; when the
            # soft table is what keeps the gap open, centre tightly before going on
            entropy = -float(self.c_pc @ (ev["q"] * np.log(np.maximum(ev["q"], 1e-300))))
            primal_err = J_mix - (ev["phi"] + tau * entropy)
            if primal_err > 0.25 * gap and dec > tau * (_TIGHT * self.tol) ** 2:
                trial, _ = self._ascend(ev, P, d_theta, d_mu, dec)
                if trial is not None:
                    ev = trial
                    continue
            if tau <= _TAU_MIN * self.tol:
                self.timing["newton"] += time.perf_counter() - tn
                raise SolverError(
                    f"fast solver: the smoothing path reached tau = {tau:.3g} without a certificate "
                    f"(gap {gap / _LN2:.3g} bits, tol_bits {self.tol / _LN2:.3g})")
            # predictor: follow the tangent to the next tau; shrink faster while stages are cheap
            shrink = max(shrink * 0.5, 0.02) if stage_steps <= 2 else \
                min(shrink * 2.0, 0.5) if stage_steps > 5 else shrink
            stage_steps = 0
            ev = self._along_tangent(ev, t_theta, t_mu, tau * shrink)

    def _along_tangent(self, ev, t_theta, t_mu, new_tau):
        """Duals predicted at new_tau from the path's tangent at ev (kept if mu would go < 0)."""
        tau = ev["tau"]
        mu1 = ev["mu"] + (new_tau - tau) * t_mu if self.budget else 0.0
        if self.budget and mu1 <= 0:
            return self._evaluate(ev["theta"], ev["mu"], new_tau)
        return self._evaluate(ev["theta"] + (new_tau - tau) * _pad(t_theta), mu1, new_tau)

    def _report_gap(self, gap, gap0):
        """Report progress in [0, 0.95] from how far the gap (nats) fell from ``gap0`` towards ``tol``."""
        if self.progress is None or gap0 is None:
            return
        done = math.log(max(gap0, 1e-300) / max(gap, 1e-300)) / max(math.log(max(gap0, 1e-300) / self.tol), 1e-9)
        self.progress(float(min(max(0.9 * done, 0.0), 0.95)))
