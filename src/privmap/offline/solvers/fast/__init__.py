"""privmap's certified solver of program (19): Newton's method on the smoothed dual, with pricing.

:func:`solve_fast` solves an instance and proves its answer within ``tol_bits`` (the method is in
the docstring of ``_solver``); it is the one name used outside this package. It is a driver
(``_path.run``) over phase functions that each take one explicit state (``_state.FastState``,
made by ``_state.set_up``, with its thresholds in ``_state.Settings``) and update it, so each
phase can be called, and tested, alone from its private module:

- the start (``_path.start``): cheapest outputs, trivial answers, starting duals and candidates;
- the smoothed dual and its Newton step (``_newton``: ``evaluate``, ``primal``, ``gradient``,
  ``factor`` with the matrices it factorises, ``woodbury`` with ``exact_product``, ``ascend``);
- the pricing (``_pricing``: ``pricing_pass``, ``set_candidates``, ``start_candidates``,
  ``guards``, ``most_violated``): candidate lists and the passes over all pairs;
- the certification (``_certify``: ``lower_bound``, ``mixed_leakage``, ``finish``): the proven
  bound, the returned table and its gap;
- the path (``_path``: ``begin_path``, ``path_step``, ``follow_path``, ``polish_answer``,
  ``warm_duals``): down the temperature to a certificate, cold, warm or polished.

Private modules: ``_solver`` (:func:`solve_fast`), ``_state``, ``_path``, ``_newton``,
``_pricing``, ``_certify``, one per phase.
"""
from ._solver import solve_fast

__all__ = ["solve_fast"]
